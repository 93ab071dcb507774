// Device code of the GPU Smith-Waterman (see sw_cuda.cu for the design).
// Kept in a header so that tests/native/sw_cuda_emu.cc can run these exact
// kernels on the CPU (with emulated threads and barriers) where no GPU is.
#pragma once
#include <cstdint>

#include "pyphmm.h"

#ifndef SW_SHARED_STATE
#define SW_SHARED_STATE() extern __shared__ int32_t smem[]
#endif

namespace pyphmm {
namespace sw_gpu {

constexpr int32_t kFloor = -100000000;     // GATK's MATRIX_MIN_CUTOFF
constexpr int32_t kLowInit = INT32_MIN / 2;  // GATK's initial best gap
constexpr int kStateArrays = 14;           // per slot: 3 H, 3 Y, 2 E, 2 KH, 2 F, 2 KV
constexpr int kSmallRef = 850;             // refs up to this keep their state in 48 KB of shared memory
constexpr int kFillThreads = 128;
constexpr int kTraceThreads = 128;

struct PairDesc {
    int64_t ref;        // offset of ref in the chunk's sequence buffer
    int64_t alt;        // offset of alt
    int64_t bt;         // first short2 of this pair's backtrack matrix
    int64_t edge;       // last column (m + 1 ints) then last row (n + 1 ints)
    int64_t scratch;    // global state slice (large refs only), in ints
    int64_t cigar;      // first byte of this pair's CIGAR slot in the chunk buffer
    int32_t m, n;       // len(ref), len(alt)
    int32_t match, mismatch, open, extend;
    int32_t strategy;
    int32_t index;      // pair index in the caller's batch
};

// Cells (i, j), 1 <= i <= m, 1 <= j <= n, with i + j <= s.
__device__ __forceinline__ int64_t cells_upto(int64_t s, int64_t m, int64_t n) {
    auto tri = [](int64_t x) -> int64_t { return x >= 1 ? x * (x - 1) / 2 : 0; };
    return tri(s) - tri(s - m) - tri(s - n) + tri(s - m - n);
}

// Index of cell (i, j) in the diagonal-major matrix.
__device__ __forceinline__ int64_t cell_index(int i, int j, int m, int n) {
    const int d = i + j;
    const int lo = max(1, d - n);
    return cells_upto(d - 1, m, n) + (i - lo);
}

template <bool kShared>
__global__ void __launch_bounds__(kFillThreads)
sw_fill_kernel(const PairDesc* __restrict__ pairs, const uint8_t* __restrict__ seqs, short2* __restrict__ bt,
               int32_t* __restrict__ edges, int32_t* __restrict__ scratch) {
    SW_SHARED_STATE();
    const PairDesc p = pairs[blockIdx.x];
    const int m = p.m, n = p.n;
    const int S = m + 1;
    int32_t* base = kShared ? smem : scratch + p.scratch;
    // Slot arrays, each S ints: H (3 diagonals), Y (3), E, KH, F, KV (2 each).
    int32_t* const H = base;
    int32_t* const Y = base + 3 * S;
    int32_t* const E = base + 6 * S;
    int32_t* const KH = base + 8 * S;
    int32_t* const F = base + 10 * S;
    int32_t* const KV = base + 12 * S;
    const uint8_t* ref = seqs + p.ref;
    const uint8_t* alt = seqs + p.alt;
    const bool edge_gaps = p.strategy == PYPHMM_SW_INDEL || p.strategy == PYPHMM_SW_LEADING_INDEL;
    int32_t* last_col = edges + p.edge;
    int32_t* last_row = last_col + m + 1;
    short2* btp = bt + p.bt;

    if (threadIdx.x == 0) {
        H[0] = 0;                            // diagonal 0: the corner
        Y[0] = 0;
        H[S + 0] = edge_gaps ? p.open : 0;   // diagonal 1: (0, 1) and (1, 0)
        H[S + 1] = edge_gaps ? p.open : 0;
        Y[S + 0] = Y[S + 1] = 0;
        E[S + 1] = kLowInit;
        KH[S + 1] = 0;
        F[S + 0] = kLowInit;
        KV[S + 0] = 0;
    }
    __syncthreads();

    int64_t diag_base = 0;
    for (int d = 2; d <= m + n; ++d) {
        const int lo = max(1, d - n), hi = min(m, d - 1);
        const int r0 = (d % 3) * S, r1 = ((d + 2) % 3) * S, r2 = ((d + 1) % 3) * S;  // d, d-1, d-2
        const int q0 = (d & 1) * S, q1 = ((d + 1) & 1) * S;                            // d, d-1
        int32_t *h0 = H + r0, *h1 = H + r1, *h2 = H + r2;
        int32_t *y0 = Y + r0, *y2 = Y + r2;
        int32_t *e0 = E + q0, *e1 = E + q1;
        int32_t *kh0 = KH + q0, *kh1 = KH + q1;
        int32_t *f0 = F + q0, *f1 = F + q1;
        int32_t *kv0 = KV + q0, *kv1 = KV + q1;
        // Boundary slots of this diagonal (no cell of it writes them).
        if (threadIdx.x == 0) {
            if (d <= n) {
                h0[0] = edge_gaps ? p.open + (d - 1) * p.extend : 0;
                y0[0] = 0;
                f0[0] = kLowInit;
                kv0[0] = 0;
            }
            if (d <= m) {
                h0[d] = edge_gaps ? p.open + (d - 1) * p.extend : 0;
                y0[d] = 0;
                e0[d] = kLowInit;
                kh0[d] = 0;
            }
        }
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            const int j = d - i;
            const int32_t diag = h2[i - 1] + (ref[i - 1] == alt[j - 1] ? p.match : p.mismatch);
            // deletion: column j's best gap, from (i-1, j)
            const int32_t open_v = h1[i - 1] + p.open;
            const int32_t ext_v = f1[i - 1] + p.extend;
            const bool new_v = open_v > ext_v;
            const int32_t down = new_v ? open_v : ext_v;
            const int32_t kd = new_v ? 1 : kv1[i - 1] + 1;
            // insertion: row i's best gap, from (i, j-1)
            const int32_t open_h = h1[i] + p.open;
            const int32_t ext_h = e1[i] + p.extend;
            const bool new_h = open_h > ext_h;
            const int32_t right = new_h ? open_h : ext_h;
            const int32_t ki = new_h ? 1 : kh1[i] + 1;

            int32_t best, back, run;
            if (diag >= down && diag >= right) {
                best = diag;
                back = 0;
                run = y2[i - 1] + 1;
            } else if (right >= down) {
                best = right;
                back = -ki;
                run = 0;
            } else {
                best = down;
                back = kd;
                run = 0;
            }
            best = max(best, kFloor);
            h0[i] = best;
            y0[i] = run;
            f0[i] = down;
            kv0[i] = kd;
            e0[i] = right;
            kh0[i] = ki;
            btp[diag_base + (i - lo)] = make_short2(static_cast<short>(back), static_cast<short>(run));
            if (j == n) last_col[i] = best;
            if (i == m) last_row[j] = best;
        }
        diag_base += hi - lo + 1;
        __syncthreads();
    }
}

// Consolidating CIGAR writer that receives elements last-to-first and writes
// characters backwards from the end of the pair's slot.
struct RevCigar {
    char* slot;
    int64_t pos;     // next free character, counting down
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

__global__ void sw_traceback_kernel(const PairDesc* __restrict__ pairs, int count, const short2* __restrict__ bt,
                                    const int32_t* __restrict__ edges, char* __restrict__ cigars,
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
    int64_t segment = 0;
    if (strategy == PYPHMM_SW_INDEL) {
        p1 = m;
        p2 = n;
    } else {
        int32_t best = INT32_MIN;
        p1 = 0;
        p2 = n;
        for (int i = 1; i <= m; ++i)
            if (last_col[i] >= best) {
                p1 = i;
                best = last_col[i];
            }
        if (strategy != PYPHMM_SW_LEADING_INDEL) {
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
    }
    const int64_t cap = 2 * (static_cast<int64_t>(m) + n) + 1;
    char* slot = cigars + p.cigar;
    RevCigar w{slot, cap};
    if (segment > 0 && strategy == PYPHMM_SW_SOFTCLIP) {
        w.add('S', segment);
        segment = 0;
    }
    char state = 'M';
    do {
        const short2 c = btp[cell_index(p1, p2, m, n)];
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
            step = c.y;   // the whole run of diagonal moves ending here
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
    // Move the string to the start of the slot.
    const int64_t len = cap - w.pos;
    for (int64_t t = 0; t < len; ++t) slot[t] = slot[w.pos + t];
    slot[len] = '\0';
    offsets[k] = offset;
}

}  // namespace sw_gpu
}  // namespace pyphmm
