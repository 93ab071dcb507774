// CPU Smith-Waterman with GATK's semantics (SmithWatermanJavaAligner is the
// specification; see SPEC.md section 4).
//
// The score recurrence is GATK's: a cell takes the best of the diagonal step,
// the best horizontal gap (insertion) and the best vertical gap (deletion),
// where a "best gap" is carried along the row/column and is replaced by a
// freshly opened gap only when that is strictly better than extending the old
// one. Ties prefer diagonal, then insertion, then deletion; scores are floored
// at -1e8. The backtrack value of a cell is 0 (diagonal), -k (insertion of k)
// or +k (deletion of k), so traceback jumps whole gaps.
//
// Evaluation order: anti-diagonals (d = i + j), vectorised along i with GCC
// vector extensions. All cells of one anti-diagonal are independent; the
// per-row and per-column gap state of GATK's row-major loop become per-slot
// state carried from diagonal d-1 to d, so results are bit-identical to the
// row-major order. The backtrack matrix is stored diagonal-major as int16.
//
// Integer safety: the dispatcher (dispatch_sw.cc) admits a pair only when
// max(|match|, |mismatch|, |open|, |extend|) * (len(ref) + len(alt) + 2)
// <= 2^29, which keeps every score, gap value and GATK's "minus infinity"
// (INT_MIN/2) plus extensions within int32.
#include "sw_cpu.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "../common/errors.h"
#include "../common/thread_pool.h"

namespace pyphmm {

namespace {

constexpr int32_t kFloor = -100000000;      // GATK's MATRIX_MIN_CUTOFF (-1e8)
constexpr int32_t kLowInit = INT_MIN / 2;   // GATK's initial "best gap"
constexpr int kPad = 32;                    // slack for full-width vector tails
// Buffers above this many bytes are released after the call instead of being
// kept for the next call of the same thread.
constexpr size_t kKeepBytes = size_t(64) << 20;

struct Op {
    char op;
    int32_t len;
};

// Per-thread scratch, grown on demand and reused across calls.
struct Workspace {
    std::vector<int32_t> refi, altr;              // bases widened to int32, alt reversed
    std::vector<int32_t> h[3], e[2], kh[2], f[2], kv[2];
    std::vector<int16_t> bt;                      // diagonal-major backtrack
    std::vector<int64_t> diag_start;              // index of cell (lo(d), d-lo(d)) in bt
    std::vector<int32_t> last_col, last_row;      // H[i][n], H[m][j]
    std::vector<int32_t> row0, col0;              // edge initialisation
    std::vector<Op> ops;

    void trim() {
        if (bt.capacity() * sizeof(int16_t) > kKeepBytes) std::vector<int16_t>().swap(bt);
    }
};

template <typename V>
__attribute__((always_inline)) static inline V loadv(const int32_t* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}

template <typename V>
__attribute__((always_inline)) static inline void storev(int32_t* p, V v) {
    std::memcpy(p, &v, sizeof(V));
}

// Vector types per width (GCC ignores vector_size on dependent typedefs).
template <int W>
struct Vec;
template <>
struct Vec<4> {
    typedef int32_t V __attribute__((vector_size(16)));
    typedef int16_t V16 __attribute__((vector_size(8)));
};
template <>
struct Vec<8> {
    typedef int32_t V __attribute__((vector_size(32)));
    typedef int16_t V16 __attribute__((vector_size(16)));
};
template <>
struct Vec<16> {
    typedef int32_t V __attribute__((vector_size(64)));
    typedef int16_t V16 __attribute__((vector_size(32)));
};

// Fills the diagonal-major backtrack matrix and the last row/column scores.
// W is the vector width in int32 lanes.
template <int W>
__attribute__((always_inline)) inline void fill_matrix(Workspace& ws, const uint8_t* ref, int m,
                                                       const uint8_t* alt, int n,
                                                       const pyphmm_sw_params& p, bool edge_gaps) {
    typedef typename Vec<W>::V V;
    typedef typename Vec<W>::V16 V16;

    const size_t slots = static_cast<size_t>(m) + 1 + kPad;
    for (auto* v : {&ws.h[0], &ws.h[1], &ws.h[2], &ws.e[0], &ws.e[1], &ws.kh[0], &ws.kh[1], &ws.f[0],
                    &ws.f[1], &ws.kv[0], &ws.kv[1]})
        if (v->size() < slots) v->resize(slots, 0);
    if (ws.refi.size() < slots) ws.refi.resize(slots, 0);
    if (ws.altr.size() < static_cast<size_t>(n) + kPad) ws.altr.resize(static_cast<size_t>(n) + kPad, 0);
    // Padding lanes compare bases against -1 / -2 so they never form cells.
    for (int i = 0; i < m; ++i) ws.refi[i] = ref[i];
    for (int i = m; i < m + kPad; ++i) ws.refi[i] = -1;
    for (int k = 0; k < n; ++k) ws.altr[k] = alt[n - 1 - k];
    for (int k = n; k < n + kPad; ++k) ws.altr[k] = -2;

    ws.row0.assign(static_cast<size_t>(n) + 1, 0);
    ws.col0.assign(static_cast<size_t>(m) + 1, 0);
    if (edge_gaps) {
        int32_t v = p.gap_open;
        for (int j = 1; j <= n; ++j, v += p.gap_extend) ws.row0[j] = v;
        v = p.gap_open;
        for (int i = 1; i <= m; ++i, v += p.gap_extend) ws.col0[i] = v;
    }
    ws.last_col.assign(static_cast<size_t>(m) + 1, 0);
    ws.last_row.assign(static_cast<size_t>(n) + 1, 0);

    ws.diag_start.resize(static_cast<size_t>(m) + n + 2);
    int64_t total = 0;
    for (int d = 2; d <= m + n; ++d) {
        int lo = std::max(1, d - n), hi = std::min(m, d - 1);
        ws.diag_start[d] = total;
        total += hi - lo + 1;
    }
    if (ws.bt.size() < static_cast<size_t>(total) + kPad) ws.bt.resize(static_cast<size_t>(total) + kPad);

    // Diagonal 0 (the corner) and 1 (two boundary cells).
    int32_t *h2 = ws.h[0].data(), *h1 = ws.h[1].data(), *h0 = ws.h[2].data();
    int32_t *e1 = ws.e[0].data(), *e0 = ws.e[1].data();
    int32_t *kh1 = ws.kh[0].data(), *kh0 = ws.kh[1].data();
    int32_t *f1 = ws.f[0].data(), *f0 = ws.f[1].data();
    int32_t *kv1 = ws.kv[0].data(), *kv0 = ws.kv[1].data();
    h2[0] = 0;
    h1[0] = ws.row0[1];
    h1[1] = ws.col0[1];
    e1[1] = kLowInit;
    kh1[1] = 0;
    f1[0] = kLowInit;
    kv1[0] = 0;

    const V vmatch = V{} + p.match, vmis = V{} + p.mismatch, vopen = V{} + p.gap_open,
            vext = V{} + p.gap_extend, vfloor = V{} + kFloor, vone = V{} + 1, vzero = V{};
    const int32_t* refi = ws.refi.data();
    const int32_t* altr = ws.altr.data();
    int16_t* bt = ws.bt.data();

    for (int d = 2; d <= m + n; ++d) {
        const int lo = std::max(1, d - n), hi = std::min(m, d - 1);
        int16_t* btd = bt + ws.diag_start[d] - lo;
        const int32_t* alt_d = altr + (n - d);   // alt[d - i - 1] == alt_d[i]
        for (int i = lo; i <= hi; i += W) {
            V rb = loadv<V>(refi + i - 1);
            V ab = loadv<V>(alt_d + i);
            V diag = loadv<V>(h2 + i - 1) + ((rb == ab) ? vmatch : vmis);
            // vertical gap (deletion), state of column j carried from (i-1, j)
            V open_v = loadv<V>(h1 + i - 1) + vopen;
            V ext_v = loadv<V>(f1 + i - 1) + vext;
            V new_v = open_v > ext_v;
            V down = new_v ? open_v : ext_v;
            V kd = new_v ? vone : loadv<V>(kv1 + i - 1) + vone;
            // horizontal gap (insertion), state of row i carried from (i, j-1)
            V open_h = loadv<V>(h1 + i) + vopen;
            V ext_h = loadv<V>(e1 + i) + vext;
            V new_h = open_h > ext_h;
            V right = new_h ? open_h : ext_h;
            V ki = new_h ? vone : loadv<V>(kh1 + i) + vone;

            V take_diag = (diag >= down) & (diag >= right);
            V take_right = right >= down;
            V best = take_diag ? diag : (take_right ? right : down);
            best = best > vfloor ? best : vfloor;
            V back = take_diag ? vzero : (take_right ? -ki : kd);

            storev(h0 + i, best);
            storev(f0 + i, down);
            storev(kv0 + i, kd);
            storev(e0 + i, right);
            storev(kh0 + i, ki);
            V16 b16 = __builtin_convertvector(back, V16);
            std::memcpy(btd + i, &b16, sizeof(V16));
        }
        if (d - n >= 1) ws.last_col[d - n] = h0[d - n];
        if (hi == m) ws.last_row[d - m] = h0[m];
        // Boundary slots for the next diagonals (written after the vector
        // loop, whose padding lanes may have run over them).
        if (d <= n) {
            h0[0] = ws.row0[d];
            f0[0] = kLowInit;
            kv0[0] = 0;
        }
        if (d <= m) {
            h0[d] = ws.col0[d];
            e0[d] = kLowInit;
            kh0[d] = 0;
        }
        int32_t* t = h2;
        h2 = h1;
        h1 = h0;
        h0 = t;
        std::swap(e0, e1);
        std::swap(kh0, kh1);
        std::swap(f0, f1);
        std::swap(kv0, kv1);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void fill_avx512(Workspace& ws, const uint8_t* ref,
                                                                     int m, const uint8_t* alt, int n,
                                                                     const pyphmm_sw_params& p, bool edge) {
    fill_matrix<8>(ws, ref, m, alt, n, p, edge);
}

__attribute__((target("avx2"))) void fill_avx2(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt,
                                               int n, const pyphmm_sw_params& p, bool edge) {
    fill_matrix<8>(ws, ref, m, alt, n, p, edge);
}

void fill_sse(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
              bool edge) {
    fill_matrix<4>(ws, ref, m, alt, n, p, edge);
}

using FillFn = void (*)(Workspace&, const uint8_t*, int, const uint8_t*, int, const pyphmm_sw_params&, bool);

FillFn pick_fill() {
    const char* force = std::getenv("PYPHMM_SW_ISA");  // testing aid: sse, avx2, avx512
    if (force && !std::strcmp(force, "sse")) return fill_sse;
    if (force && !std::strcmp(force, "avx2") && __builtin_cpu_supports("avx2")) return fill_avx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return fill_avx512;
    if (__builtin_cpu_supports("avx2")) return fill_avx2;
    return fill_sse;
}

const FillFn g_fill = pick_fill();

// Last occurrence of alt in ref, or -1 (GATK's Utils.lastIndexOf).
int last_index_of(const uint8_t* ref, int m, const uint8_t* alt, int n) {
    for (int pos = m - n; pos >= 0; --pos)
        if (ref[pos] == alt[0] && std::memcmp(ref + pos, alt, n) == 0) return pos;
    return -1;
}

// Writes "<len><op>" at out, returns the number of characters written.
int put_element(char* out, int32_t len, char op) {
    char tmp[12];
    int k = 0;
    do {
        tmp[k++] = static_cast<char>('0' + len % 10);
        len /= 10;
    } while (len);
    for (int t = 0; t < k; ++t) out[t] = tmp[k - 1 - t];
    out[k] = op;
    return k + 1;
}

// Writes the CIGAR from elements listed last-to-first, dropping zero-length
// elements and merging equal neighbours (GATK's consolidateCigar).
void write_cigar(const std::vector<Op>& rev, char* out) {
    char* w = out;
    char cur = 0;
    int64_t run = 0;
    for (size_t k = rev.size(); k-- > 0;) {
        const Op& o = rev[k];
        if (o.len == 0) continue;
        if (cur && o.op != cur) {
            w += put_element(w, static_cast<int32_t>(run), cur);
            run = 0;
        }
        cur = o.op;
        run += o.len;
    }
    if (run > 0) w += put_element(w, static_cast<int32_t>(run), cur);
    *w = '\0';
}

}  // namespace

// Aligns one pair (already validated). Returns the alignment offset and
// writes the NUL-terminated CIGAR.
int32_t sw_align_one(const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
                     int strategy, char* cigar) {
    static thread_local Workspace ws;
    if (strategy == PYPHMM_SW_SOFTCLIP || strategy == PYPHMM_SW_IGNORE) {
        int pos = n <= m ? last_index_of(ref, m, alt, n) : -1;
        if (pos >= 0) {
            int k = put_element(cigar, n, 'M');
            cigar[k] = '\0';
            return pos;
        }
    }
    const bool edge = strategy == PYPHMM_SW_INDEL || strategy == PYPHMM_SW_LEADING_INDEL;
    g_fill(ws, ref, m, alt, n, p, edge);

    int p1 = 0, p2 = 0;
    int32_t segment = 0;
    if (strategy == PYPHMM_SW_INDEL) {
        p1 = m;
        p2 = n;
    } else {
        int32_t best = INT_MIN;
        p2 = n;
        for (int i = 1; i <= m; ++i)
            if (ws.last_col[i] >= best) {
                p1 = i;
                best = ws.last_col[i];
            }
        if (strategy != PYPHMM_SW_LEADING_INDEL) {
            for (int j = 1; j <= n; ++j) {
                int32_t s = ws.last_row[j];
                if (s > best || (s == best && std::abs(m - j) < std::abs(p1 - p2))) {
                    p1 = m;
                    p2 = j;
                    best = s;
                    segment = n - j;
                }
            }
        }
    }
    std::vector<Op>& ops = ws.ops;
    ops.clear();
    if (segment > 0 && strategy == PYPHMM_SW_SOFTCLIP) {
        ops.push_back({'S', segment});
        segment = 0;
    }
    const int16_t* bt = ws.bt.data();
    char state = 'M';
    do {
        const int d = p1 + p2;
        const int lo = std::max(1, d - n);
        const int32_t b = bt[ws.diag_start[d] + (p1 - lo)];
        char next;
        int32_t step;
        if (b > 0) {
            next = 'D';
            step = b;
            p1 -= b;
        } else if (b < 0) {
            next = 'I';
            step = -b;
            p2 += b;
        } else {
            next = 'M';
            step = 1;
            --p1;
            --p2;
        }
        if (next == state) {
            segment += step;
        } else {
            ops.push_back({state, segment});
            segment = step;
            state = next;
        }
    } while (p1 > 0 && p2 > 0);

    int32_t offset;
    if (strategy == PYPHMM_SW_SOFTCLIP) {
        ops.push_back({state, segment});
        if (p2 > 0) ops.push_back({'S', p2});
        offset = p1;
    } else if (strategy == PYPHMM_SW_IGNORE) {
        ops.push_back({state, segment + p2});
        offset = p1 - p2;
    } else {
        ops.push_back({state, segment});
        if (p1 > 0)
            ops.push_back({'D', p1});
        else if (p2 > 0)
            ops.push_back({'I', p2});
        offset = 0;
    }
    write_cigar(ops, cigar);
    ws.trim();
    return offset;
}

int cpu_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                 int32_t* alignment_offsets, int threads, pyphmm_stats* stats, pyphmm_error* error) {
    auto start = std::chrono::steady_clock::now();
    const int64_t n = batch.num_pairs;
    std::atomic<int> failed{0};
    auto one = [&](int64_t i) {
        const int64_t r0 = batch.ref_offsets[i], a0 = batch.alt_offsets[i];
        const int m = static_cast<int>(batch.ref_offsets[i + 1] - r0);
        const int la = static_cast<int>(batch.alt_offsets[i + 1] - a0);
        const pyphmm_sw_params& p = batch.params[batch.per_pair ? i : 0];
        const int s = batch.strategies[batch.per_pair ? i : 0];
        try {
            alignment_offsets[i] = sw_align_one(batch.ref + r0, m, batch.alt + a0, la, p, s,
                                                cigars + cigar_offsets[i]);
        } catch (const std::bad_alloc&) {
            int expected = 0;
            failed.compare_exchange_strong(expected, PYPHMM_E_NOMEM);
        } catch (...) {
            int expected = 0;
            failed.compare_exchange_strong(expected, PYPHMM_E_INTERNAL);
        }
    };
    if (n == 1 || threads == 1) {
        for (int64_t i = 0; i < n; ++i) one(i);
    } else {
        parallel_for(n, threads, one);
    }
    if (failed.load() == PYPHMM_E_NOMEM)
        return set_error(error, PYPHMM_E_NOMEM, "out of host memory for the Smith-Waterman matrices");
    if (failed.load())
        return set_error(error, PYPHMM_E_INTERNAL, "internal error in the CPU Smith-Waterman");
    if (stats) {
        int64_t cells = 0;
        for (int64_t i = 0; i < n; ++i)
            cells += (batch.ref_offsets[i + 1] - batch.ref_offsets[i]) *
                     (batch.alt_offsets[i + 1] - batch.alt_offsets[i]);
        stats->pairs = n;
        stats->cells = cells;
        stats->backend_used = PYPHMM_BACKEND_CPU;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
