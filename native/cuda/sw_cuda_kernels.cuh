// Device code of the GPU Smith-Waterman (see sw_cuda.cu for the design).
// Kept in a header so that tests/native/sw_cuda_emu.cc can run these exact
// kernels on the CPU (with emulated lanes and shuffles) where no GPU is.
#pragma once
#include <cstdint>
#include <type_traits>

#include "cuda/sw_layout.h"
#include "pyphmm.h"

namespace pyphmm {
namespace sw_gpu {

// ---- stage 1: fill -----------------------------------------------------------------

// H of the first row / column: gap penalties for INDEL and LEADING_INDEL, else 0.
__device__ __forceinline__ int32_t edge_score(int x, bool edge_gaps, int32_t open, int32_t extend) {
    return (edge_gaps && x > 0) ? open + (x - 1) * extend : 0;
}

// What a lane hands to the next lane after each step: the cell of its last
// column in the row it just computed. kh and y are packed into one word
// (both are below 2^16: lengths are at most 32767 plus a stripe of padding).
struct RowEnd {
    int32_t h;      // H(i, j)
    int32_t e;      // row i's best insertion gap at j
    uint32_t kh_y;  // (that gap's length << 16) | diagonal run length at (i, j)
    int32_t base;   // ref[i - 1]
};

__device__ __forceinline__ RowEnd shift_from_previous_lane(const RowEnd& v, int P) {
    RowEnd r;
    r.h = __shfl_up_sync(0xffffffffu, v.h, 1, P);
    r.e = __shfl_up_sync(0xffffffffu, v.e, 1, P);
    r.kh_y = __shfl_up_sync(0xffffffffu, v.kh_y, 1, P);
    r.base = __shfl_up_sync(0xffffffffu, v.base, 1, P);
    return r;
}

// One stripe of one pair. Per alt column (lane registers): H and Y of the
// row above and the column's best deletion gap (F, KV), which GATK keeps per
// column. The row's best insertion gap (E, KH) travels left to right with
// the row, from column to column within a lane and by shuffle between lanes;
// lane 0 takes it from column 0 (first stripe) or from the boundary column
// the previous stripe's last lane left in scratch. Ties and the floor are
// GATK's, so every cell equals the CPU's row-major result.
template <int P, int K>
__device__ __forceinline__ void sweep_stripe(const PairDesc& p, int c, int lane, const uint8_t* __restrict__ ref,
                                             const uint8_t* __restrict__ alt, short2* __restrict__ btp,
                                             int32_t* __restrict__ last_col, int32_t* __restrict__ last_row,
                                             int32_t* __restrict__ scr) {
    const int m = p.m, n = p.n;
    const int32_t open = p.open, extend = p.extend, match = p.match, mismatch = p.mismatch;
    const bool edge_gaps = p.strategy == PYPHMM_SW_INDEL || p.strategy == PYPHMM_SW_LEADING_INDEL;
    const int stripes = (n + P * K - 1) / (P * K);
    const int T = stripe_lanes(c, n, P, K);
    const int j0 = c * P * K + lane * K + 1;  // this lane's first column
    const bool active = lane < T;
    const bool boundary_out = lane == P - 1 && c + 1 < stripes;
    const int32_t* in_col = scr + (c & 1) * 3 * m;   // column c*R, from the previous stripe
    int32_t* out_col = scr + ((c + 1) & 1) * 3 * m;  // column (c+1)*R, for the next stripe

    int32_t a[K], hp[K], yp[K], f[K], kv[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = j0 + k;
        a[k] = j <= n ? alt[j - 1] : -1;                 // -1 never equals a base: padding columns never match
        hp[k] = edge_score(j, edge_gaps, open, extend);  // H(0, j)
        yp[k] = 0;
        f[k] = kLowInit;
        kv[k] = 0;
    }
    int32_t diag_h = edge_score(j0 - 1, edge_gaps, open, extend);  // H(i-1, j0-1), row 0 to start
    int32_t diag_y = 0;
    RowEnd out{0, 0, 0, 0};
    int32_t next_base = lane == 0 ? ref[0] : 0;
    int64_t base = static_cast<int64_t>(c) * m * P * K;
    const int steps = m + T - 1;
    for (int s = 0; s < steps; ++s) {
        RowEnd in = shift_from_previous_lane(out, P);
        const int i = s - lane + 1;
        if (lane == 0 && i <= m) {  // column j0 - 1 comes from outside the warp
            in.base = next_base;
            if (i < m) next_base = ref[i];  // issued a step ahead
            if (c == 0) {
                in.h = edge_score(i, edge_gaps, open, extend);
                in.e = kLowInit;
                in.kh_y = 0;
            } else {
                in.h = in_col[i - 1];
                in.e = in_col[m + i - 1];
                in.kh_y = static_cast<uint32_t>(in_col[2 * m + i - 1]);
            }
        }
        const int lo = step_lane_lo(s, m);
        const int cnt = step_lane_count(s, m, T);
        if (active && i >= 1 && i <= m) {
            int32_t h = in.h, e = in.e, kh = static_cast<int32_t>(in.kh_y >> 16);
            int32_t dh = diag_h, dy = diag_y, y = 0;
            short2* cell = btp + base + (lane - lo);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int32_t diag = dh + (in.base == a[k] ? match : mismatch);
                // deletion: column j's best gap, from (i-1, j)
                const int32_t open_v = hp[k] + open;
                const int32_t ext_v = f[k] + extend;
                const bool new_v = open_v > ext_v;
                const int32_t down = new_v ? open_v : ext_v;
                const int32_t kd = new_v ? 1 : kv[k] + 1;
                // insertion: row i's best gap, from (i, j-1)
                const int32_t open_h = h + open;
                const int32_t ext_h = e + extend;
                const bool new_h = open_h > ext_h;
                const int32_t right = new_h ? open_h : ext_h;
                const int32_t ki = new_h ? 1 : kh + 1;

                int32_t best, back;
                if (diag >= down && diag >= right) {
                    best = diag;
                    back = 0;
                    y = dy + 1;
                } else if (right >= down) {
                    best = right;
                    back = -ki;
                    y = 0;
                } else {
                    best = down;
                    back = kd;
                    y = 0;
                }
                best = max(best, kFloor);
                cell[k * cnt] = make_short2(static_cast<short>(back), static_cast<short>(y));
                dh = hp[k];  // H(i-1, j) is the next column's diagonal
                dy = yp[k];
                hp[k] = best;
                yp[k] = y;
                f[k] = down;
                kv[k] = kd;
                h = best;
                e = right;
                kh = ki;
                if (j0 + k == n) last_col[i] = best;
            }
            if (i == m) {
#pragma unroll
                for (int k = 0; k < K; ++k)
                    if (j0 + k <= n) last_row[j0 + k] = hp[k];
            }
            diag_h = in.h;
            diag_y = static_cast<int32_t>(in.kh_y & 0xffffu);
            out.h = h;
            out.e = e;
            out.kh_y = (static_cast<uint32_t>(kh) << 16) | static_cast<uint32_t>(y);
            out.base = in.base;
            if (boundary_out) {
                out_col[i - 1] = h;
                out_col[m + i - 1] = e;
                out_col[2 * m + i - 1] = static_cast<int32_t>(out.kh_y);
            }
        }
        base += static_cast<int64_t>(cnt) * K;
    }
}

// One group of P lanes per pair (P = kWarp on the GPU: a warp per pair), K
// alt columns per lane; pairs of this launch all use the same K.
template <int P, int K>
__global__ void __launch_bounds__(kFillThreads)
    sw_warp_fill_kernel(const PairDesc* __restrict__ pairs, int count, const uint8_t* __restrict__ refs,
                        const uint8_t* __restrict__ alts, short2* __restrict__ bt, int32_t* __restrict__ edges,
                        int32_t* __restrict__ scratch) {
    const int64_t g = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / P;
    if (g >= count) return;  // whole groups leave together
    const int lane = threadIdx.x % P;
    const PairDesc p = pairs[g];
    const uint8_t* ref = refs + p.ref;
    const uint8_t* alt = alts + p.alt;
    int32_t* last_col = edges + p.edge;
    int32_t* last_row = last_col + p.m + 1;
    const int stripes = (p.n + P * K - 1) / (P * K);
    for (int c = 0; c < stripes; ++c) {
        sweep_stripe<P, K>(p, c, lane, ref, alt, bt + p.bt, last_col, last_row, scratch + p.scratch);
        __syncwarp();  // the boundary column written by the last lane is read by lane 0 next
    }
}

// ---- stage 2: traceback ------------------------------------------------------------

// Consolidating CIGAR writer that receives elements last-to-first and writes
// characters backwards from the end of the pair's slot.
struct RevCigar {
    char* slot;
    int64_t pos;  // next free character, counting down
    char op = 0;
    int64_t len = 0;

    __device__ void flush() {
        if (!op || len == 0) return;
        slot[--pos] = op;
        int64_t v = len;
        do {
            slot[--pos] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v);
        op = 0;
        len = 0;
    }
    __device__ void add(char o, int64_t l) {
        if (l == 0) return;
        if (o != op) flush();
        op = o;
        len += l;
    }
};

// GATK's start cell: INDEL starts at the corner; otherwise the last column's
// maximum (bottom-most among equals), then, except for LEADING_INDEL, a
// last-row cell that is better or equally good and closer to the diagonal.
// Returns the alt bases past the start (the trailing overhang).
__device__ inline int64_t start_cell(const PairDesc& p, const int32_t* last_col, const int32_t* last_row, int& p1,
                                     int& p2) {
    const int m = p.m, n = p.n;
    if (p.strategy == PYPHMM_SW_INDEL) {
        p1 = m;
        p2 = n;
        return 0;
    }
    int64_t segment = 0;
    int32_t best = INT32_MIN;
    p1 = 0;
    p2 = n;
    for (int i = 1; i <= m; ++i)
        if (last_col[i] >= best) {
            p1 = i;
            best = last_col[i];
        }
    if (p.strategy != PYPHMM_SW_LEADING_INDEL) {
        for (int j = 1; j <= n; ++j) {
            const int32_t s = last_row[j];
            if (s > best || (s == best && abs(m - j) < abs(p1 - p2))) {
                p1 = m;
                p2 = j;
                best = s;
                segment = n - j;
            }
        }
    }
    return segment;
}

// One thread per pair: follows the backtrack from the start cell, jumping
// whole gap runs (x) and whole diagonal runs (y), and writes the CIGAR to the
// pair's slot; CIGARs shorter than kShortCigar are also copied to a compact
// slot so that only those come back to the host.
__global__ void sw_traceback_kernel(const PairDesc* __restrict__ pairs, int count, const short2* __restrict__ bt,
                                    const int32_t* __restrict__ edges, char* __restrict__ cigars,
                                    char* __restrict__ short_cigars, int32_t* __restrict__ cigar_lens,
                                    int32_t* __restrict__ offsets) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    const PairDesc p = pairs[k];
    const int m = p.m, n = p.n;
    const int32_t* last_col = edges + p.edge;
    const int32_t* last_row = last_col + m + 1;
    const short2* btp = bt + p.bt;
    const int strategy = p.strategy;

    int p1, p2;
    int64_t segment = start_cell(p, last_col, last_row, p1, p2);
    const int64_t cap = 2 * (static_cast<int64_t>(m) + n) + 1;
    char* slot = cigars + p.cigar;
    RevCigar w{slot, cap};
    if (segment > 0 && strategy == PYPHMM_SW_SOFTCLIP) {
        w.add('S', segment);
        segment = 0;
    }
    char state = 'M';
    do {
        const short2 c = btp[backtrack_index(p1, p2, m, n, p.lanes, p.cols)];
        char next;
        int step;
        if (c.x > 0) {
            next = 'D';
            step = c.x;
            p1 -= step;
        } else if (c.x < 0) {
            next = 'I';
            step = -c.x;
            p2 -= step;
        } else {
            next = 'M';
            step = c.y;  // the whole run of diagonal moves ending here
            p1 -= step;
            p2 -= step;
        }
        if (next == state) {
            segment += step;
        } else {
            w.add(state, segment);
            segment = step;
            state = next;
        }
    } while (p1 > 0 && p2 > 0);

    int32_t offset;
    if (strategy == PYPHMM_SW_SOFTCLIP) {
        w.add(state, segment);
        if (p2 > 0) w.add('S', p2);
        offset = p1;
    } else if (strategy == PYPHMM_SW_IGNORE) {
        w.add(state, segment + p2);
        offset = p1 - p2;
    } else {
        w.add(state, segment);
        if (p1 > 0)
            w.add('D', p1);
        else if (p2 > 0)
            w.add('I', p2);
        offset = 0;
    }
    w.flush();
    const int64_t len = cap - w.pos;
    if (len < kShortCigar) {
        char* s = short_cigars + static_cast<int64_t>(k) * kShortCigar;
        for (int64_t t = 0; t < len; ++t) s[t] = slot[w.pos + t];
        s[len] = '\0';
    } else {  // move the string to the start of the slot
        for (int64_t t = 0; t < len; ++t) slot[t] = slot[w.pos + t];
        slot[len] = '\0';
    }
    cigar_lens[k] = static_cast<int32_t>(len);
    offsets[k] = offset;
}

}  // namespace sw_gpu
}  // namespace pyphmm
