// The score fill of the CPU Smith-Waterman with GATK's semantics
// (SmithWatermanJavaAligner is the specification; docs/SMITH_WATERMAN.md).
//
// The score recurrence is GATK's: a cell takes the best of the diagonal step,
// the best horizontal gap (insertion) and the best vertical gap (deletion),
// where a "best gap" is carried along the row/column and is replaced by a
// freshly opened gap only when that is strictly better than extending it.
// Ties prefer diagonal, then insertion, then deletion; scores are floored at
// -1e8.
//
// Two fills write the same backtrack bits (layout in sw_cpu_fill.h):
// - the difference fill (sw_cpu_diff_kernel.h): int16 differences between
//   neighbouring cells, anti-diagonals vectorised along i, one source for
//   every width: 32 lanes (AVX-512), 16 (AVX2), 8 (NEON, and the baseline:
//   SSE2 on x86-64, GCC vector extensions elsewhere). Every pair whose
//   parameters keep the differences within int16 and the floor out of reach
//   (diff_admissible) takes it: all of GATK's parameter sets;
// - the absolute fill: GATK's int32 scores cell by cell on the same
//   diagonals, for every other admitted pair (exotic parameters, or scores
//   that can reach the floor).
#include "sw_cpu_fill.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "../common/config.h"
#include "cpu_arch.h"

namespace pyphmm {
namespace sw_cpu {

namespace {

constexpr int32_t kFloor = -100000000;     // GATK's MATRIX_MIN_CUTOFF (-1e8)
constexpr int32_t kLowInit = INT_MIN / 2;  // GATK's initial "best gap"
constexpr int kPad = 128;                  // slack for full-width vector tails (W <= 64)
static_assert(kStateStride >= 2 * (PYPHMM_SW_MAX_LENGTH + 1 + kPad), "slot arrays overlap");
constexpr int kAbsShift = 3;  // the absolute fill's block width, 8 cells

// Whether scores can fall to GATK's -1e8 floor, which differences cannot
// apply. Every score is at least -(max |parameter|) * (m + n): a boundary
// cell costs at most |open| + |extend| per step and each diagonal step at
// most |mismatch| more.
bool floor_reachable(const pyphmm_sw_params& p, int m, int n) {
    int64_t worst = std::max({std::llabs(int64_t(p.match)), std::llabs(int64_t(p.mismatch)),
                              std::llabs(int64_t(p.gap_open)), std::llabs(int64_t(p.gap_extend))});
    return worst * (int64_t(m) + n + 2) >= -int64_t(kFloor);
}

// The narrowest lane (1 or 2 bytes) that holds every value of the
// difference fill exactly, or 0 (absolute fill). For i, j >= 1 and
// open <= extend <= 0 (a gap costs most when opened, as in all of GATK's
// sets), with D = max(match, mismatch, open) - open:
// - dh(i, j) >= open: H[i][j] >= E[i][j] >= H[i][j-1] + open (dv alike);
// - dh(i, j) <= D: the diagonal candidate is at most
//   B + max(match, mismatch) while H[i][j-1] >= F[i][j-1] >= B + open;
//   E[i][j] <= H[i][j-1]; and a deletion of length k ending at (i, j)
//   exceeds H[i][j-1] by at most dh(i-k, j) (the same gap ends at (i, j-1)),
//   which by induction down to row 0 (dh(0, j) <= 0) obeys the same bound;
//   column 0 gives the same with extend >= open;
// - so the candidates minus B lie in [min(2 open, match, mismatch), D], and
//   F[i][j] - H[i][j-1] in [2 open - D, D]: F[i][j] >= H[i-1][j] + open and
//   H[i-1][j] - H[i][j-1] = dh(i-1, j) - dv(i, j-1) >= open - D (E alike).
// The kernel (sw_cpu_diff_kernel.h) keeps these shifted by extend (its
// state) or 2 extend (its candidates); a gap opened from the cell, h + open
// - extend, is at least min(match, mismatch) - 3 extend + open and at most h.
// Its values then lie in [lo, hi] below, and wrapping arithmetic is exact
// when every value fits.
int diff_lane_bytes(const pyphmm_sw_params& p, int m, int n) {
    if (p.gap_open > p.gap_extend || p.gap_extend > 0 || floor_reachable(p, m, n)) return 0;
    const int64_t open = p.gap_open, ext = p.gap_extend;
    const int64_t s_min = std::min(p.match, p.mismatch);
    const int64_t d = std::max<int64_t>(std::max(p.match, p.mismatch), open) - open;
    const int64_t lo = std::min({2 * open - 2 * ext, 2 * open - d - ext, s_min - 2 * ext, s_min - 3 * ext + open});
    const int64_t hi = d - 2 * ext;
    if (lo > INT8_MIN && hi <= INT8_MAX) return 1;
    if (lo > INT16_MIN && hi <= INT16_MAX) return 2;
    return 0;
}

template <typename T>
T* lanes(std::vector<int16_t>& v) {
    return reinterpret_cast<T*>(v.data());  // int8_t: char-type access
}

// Sizes the workspace for an m x n fill in blocks of 2^lane_shift cells and
// writes the inputs, the edges and diagonal 1 of both fills' state.
template <typename T>
void put_sequences(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n) {
    T* r = lanes<T>(ws.ref16);
    T* a = lanes<T>(ws.alt16);
    // Lanes past a diagonal's end read the padding; their cells are never used.
    for (int i = 0; i < m; ++i) r[i] = static_cast<T>(ref[i]);
    for (int i = m; i < m + kPad; ++i) r[i] = 0;
    for (int k = 0; k < n; ++k) a[k] = static_cast<T>(alt[n - 1 - k]);
    for (int k = n; k < n + kPad; ++k) a[k] = 0;
}

// lane_bytes: 1 or 2 (the difference fill's lanes), 4 (the absolute fill,
// which reads int16 bases and the edge scores row0 / col0).
void prepare(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
             bool edge_gaps, int lane_shift, int lane_bytes) {
    const size_t slots = static_cast<size_t>(m) + 1 + kPad;
    if (ws.ref16.size() < slots) ws.ref16.resize(slots, 0);
    if (ws.alt16.size() < static_cast<size_t>(n) + kPad) ws.alt16.resize(static_cast<size_t>(n) + kPad, 0);
    if (lane_bytes == 1)
        put_sequences<int8_t>(ws, ref, m, alt, n);
    else
        put_sequences<int16_t>(ws, ref, m, alt, n);

    if (lane_bytes == 4) {  // the absolute fill's edges (the difference fill's are constants)
        ws.row0.resize(static_cast<size_t>(n) + 1);
        ws.col0.resize(static_cast<size_t>(m) + 1);
        ws.row0[0] = ws.col0[0] = 0;
        int32_t v = p.gap_open;
        for (int j = 1; j <= n; ++j, v += p.gap_extend) ws.row0[j] = edge_gaps ? v : 0;
        v = p.gap_open;
        for (int i = 1; i <= m; ++i, v += p.gap_extend) ws.col0[i] = edge_gaps ? v : 0;
    }
    ws.last_col.resize(static_cast<size_t>(m) + 1);
    ws.last_row.resize(static_cast<size_t>(n) + 1);

    // Each diagonal wastes less than one block: < W/2 bytes.
    ws.lane_shift = lane_shift;
    const int w = 1 << lane_shift;
    const size_t bytes = (static_cast<size_t>(m) * n + static_cast<size_t>(m + n) * w) / 2 + w;
    if (ws.bt.size() < bytes) {
        if (ws.bt.capacity() < bytes) {  // a new buffer, with room to grow: the old bits need no copy
            Bits().swap(ws.bt);
            ws.bt.reserve(bytes + bytes / 2);
        }
        ws.bt.resize(bytes);
    }
    ws.blk_start.resize(static_cast<size_t>(m) + n + 1);
}

// Room for the difference fill's slot arrays (MemSweep in
// sw_cpu_diff_kernel.h: eight arrays kStateStride bytes apart from a 64-byte
// boundary), which writes its own diagonal 1.
void size_diff_state(Workspace& ws) {
    const size_t size = 4 * static_cast<size_t>(kStateStride) + 32;  // and up to 64 bytes to a line boundary
    if (ws.diag.size() < size) ws.diag.resize(size);
}

// The absolute fill: GATK's int32 scores with the -1e8 floor, one cell at a
// time along the same diagonals, in blocks of 8 cells. Slot arrays hold row
// i's cell of diagonals d-2 (h2), d-1 (h1, e1, f1) and d (h0, e0, f0); e is
// row i's best horizontal gap, f column j's best vertical gap.
void absolute_fill(Workspace& ws, int m, int n, const pyphmm_sw_params& p) {
    const size_t slots = static_cast<size_t>(m) + 2;
    for (auto* a : {&ws.h[0], &ws.h[1], &ws.h[2], &ws.e[0], &ws.e[1], &ws.f[0], &ws.f[1]})
        if (a->size() < slots) a->resize(slots);
    int32_t *h2 = ws.h[0].data(), *h1 = ws.h[1].data(), *h0 = ws.h[2].data();
    int32_t *e1 = ws.e[0].data(), *e0 = ws.e[1].data(), *f1 = ws.f[0].data(), *f0 = ws.f[1].data();
    h2[0] = 0;
    h1[0] = ws.row0[1];
    h1[1] = ws.col0[1];
    f1[0] = e1[1] = kLowInit;
    uint8_t* out = ws.bt.data();
    ColRowMax best;
    for (int d = 2; d <= m + n; ++d) {
        const int lo = std::max(1, d - n), hi = std::min(m, d - 1);
        ws.blk_start[d] = out - ws.bt.data();
        for (int i0 = lo; i0 <= hi; i0 += 8, out += 4) {
            uint8_t planes[4] = {0, 0, 0, 0};
            for (int k = 0; k < 8 && i0 + k <= hi; ++k) {
                const int i = i0 + k, j = d - i;
                const int32_t diag = h2[i - 1] + (ws.ref16[i - 1] == ws.alt16[n - j] ? p.match : p.mismatch);
                const int32_t open_v = h1[i - 1] + p.gap_open, ext_v = f1[i - 1] + p.gap_extend;
                const int32_t open_h = h1[i] + p.gap_open, ext_h = e1[i] + p.gap_extend;
                const int32_t down = std::max(open_v, ext_v), right = std::max(open_h, ext_h);
                const int32_t gap = std::max(down, right);
                h0[i] = std::max({diag, gap, kFloor});
                f0[i] = down;
                e0[i] = right;
                // kNewH, kNewV: whether cells (i, j+1) and (i+1, j) open their gaps here.
                const int32_t open_next = h0[i] + p.gap_open;
                const unsigned bits = (gap > diag ? kGap : 0u) | (down > right ? kDown : 0u) |
                                      (open_next > right + p.gap_extend ? kNewH : 0u) |
                                      (open_next > down + p.gap_extend ? kNewV : 0u);
                for (int q = 0; q < 4; ++q) planes[q] |= static_cast<uint8_t>(((bits >> q) & 1u) << k);
            }
            std::memcpy(out, planes, 4);
        }
        if (d > n) best.col(ws.last_col.data(), d - n, h0[d - n]);
        if (d > m) best.row(ws.last_row.data(), d - m, h0[m]);
        if (d <= n) {
            h0[0] = ws.row0[d];
            f0[0] = kLowInit;
        }
        if (d <= m) {
            h0[d] = ws.col0[d];
            e0[d] = kLowInit;
        }
        int32_t* t = h2;
        h2 = h1;
        h1 = h0;
        h0 = t;
        std::swap(e0, e1);
        std::swap(f0, f1);
    }
    ws.best = best;
}

#define SW_OP __attribute__((always_inline)) static inline

// The baseline: 8 int16 lanes with GCC vector extensions (SSE2 on x86-64,
// Advanced SIMD or scalar code elsewhere); no int8 instance.
namespace base {
namespace w16 {
struct Ops {
    typedef int16_t T;
    static constexpr int kShift = 3;
    static constexpr BtLayout kLayout = kPlanar;
    static constexpr bool kShiftByLoad = true;  // see MemSweep
    typedef int16_t V __attribute__((vector_size(16)));
    typedef V M;
    SW_OP V load(const T* p) {
        V v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    SW_OP void store(T* p, V v) { std::memcpy(p, &v, sizeof v); }
    SW_OP V set1(int x) { return V{} + static_cast<T>(x); }
    SW_OP V add(V a, V b) { return a + b; }
    SW_OP V sub(V a, V b) { return a - b; }
    SW_OP V max(V a, V b) { return a > b ? a : b; }
    SW_OP V subst(V a, V b, V match, V mis) { return a == b ? match : mis; }
    SW_OP M gt(V a, V b) { return a > b; }
#if defined(__x86_64__) || defined(__i386__)
    // Byte shifts and an or: SSE2 has no palignr, and GCC builds the
    // two-source shuffle below lane by lane there.
    SW_OP V shift_up(V v, V before) {
        return (V)_mm_or_si128(_mm_slli_si128((__m128i)v, 2), _mm_srli_si128((__m128i)before, 14));
    }
    SW_OP V shift_down(V v, V after) {
        return (V)_mm_or_si128(_mm_srli_si128((__m128i)v, 2), _mm_slli_si128((__m128i)after, 14));
    }
#else
    SW_OP V shift_up(V v, V before) { return __builtin_shuffle(before, v, V{7, 8, 9, 10, 11, 12, 13, 14}); }
    SW_OP V shift_down(V v, V after) { return __builtin_shuffle(v, after, V{1, 2, 3, 4, 5, 6, 7, 8}); }
#endif
    SW_OP V blend(M m, V a, V b) { return m ? b : a; }
    SW_OP M lanes_from(int x) {
        const V iota{0, 1, 2, 3, 4, 5, 6, 7};
        return iota >= set1(x < 0 ? 0 : x > 8 ? 8 : x);
    }
    SW_OP T first(V v) { return v[0]; }
    SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) {
#if defined(__x86_64__) || defined(__i386__)
        const uint16_t lo = static_cast<uint16_t>(_mm_movemask_epi8(_mm_packs_epi16((__m128i)gap, (__m128i)down)));
        const uint16_t hi = static_cast<uint16_t>(_mm_movemask_epi8(_mm_packs_epi16((__m128i)new_h, (__m128i)new_v)));
        std::memcpy(out, &lo, 2);
        std::memcpy(out + 2, &hi, 2);
#else
        const M planes[4] = {gap, down, new_h, new_v};
        for (int q = 0; q < 4; ++q) {
            unsigned b = 0;
            for (int k = 0; k < 8; ++k) b |= (planes[q][k] & 1u) << k;
            out[q] = static_cast<uint8_t>(b);
        }
#endif
    }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w16
}  // namespace base

}  // namespace
}  // namespace sw_cpu
}  // namespace pyphmm

#include "sw_cpu_fill_isa.h"

namespace pyphmm {
namespace sw_cpu {
namespace {

using FillFn = void (*)(Workspace&, int, int, const pyphmm_sw_params&, bool);

// One instance of the difference fill: its entry points (reuse: the
// prefix-reuse form, sw_cpu_fill.h) and block layout.
struct Kernel {
    FillFn fn, reuse;
    int lane_shift;
    BtLayout layout;
};
#define SW_KERNEL(ns) \
    Kernel { ns::diff_fill, ns::reuse_fill, ns::Ops::kShift, ns::Ops::kLayout }

// An instruction set's difference fills: int8 lanes (null where it has
// none) and int16 lanes.
struct Fill {
    const char* name;
    Kernel k8, k16;
    bool usable;
};

// The widest fill this CPU runs, or the one PYPHMM_DEV's sw_isa names (a testing
// aid: sse or portable, avx2, avx512, avx512vbmi on x86-64; neon or portable on AArch64;
// a fill the CPU cannot run is refused with a note).
const Fill& pick_fill() {
    static const Fill portable{"portable", {nullptr, nullptr, 0, kPlanar}, SW_KERNEL(base::w16), true};
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    static const Fill fills[] = {
#if defined(PYPHMM_SW_EMULATE_AVX512)
        {"avx512vbmi", SW_KERNEL(avx512vbmi::w8), SW_KERNEL(avx512::w16), true},
        {"avx512", SW_KERNEL(avx512::w8), SW_KERNEL(avx512::w16), true},
#else
        {"avx512vbmi", SW_KERNEL(avx512vbmi::w8), SW_KERNEL(avx512::w16),
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi")},
        {"avx512", SW_KERNEL(avx512::w8), SW_KERNEL(avx512::w16),
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")},
#endif
        {"avx2", SW_KERNEL(avx2::w8), SW_KERNEL(avx2::w16), __builtin_cpu_supports("avx2") != 0},
        {"sse", {nullptr, nullptr, 0, kPlanar}, SW_KERNEL(base::w16), true},
    };
#elif defined(__aarch64__)
    static const Fill fills[] = {{"neon", SW_KERNEL(neon::w8), SW_KERNEL(neon::w16), cpu_has_neon()}};
#else
    static const Fill fills[] = {portable};
#endif
    const Fill* best = &portable;
    for (const Fill& f : fills)
        if (f.usable) {
            best = &f;
            break;
        }
    const std::string forced = config::get_string(config::Knob::kSwIsa);
    const char* force = forced.c_str();
    if (!*force) return *best;
    if (!std::strcmp(force, portable.name)) return portable;
    for (const Fill& f : fills)
        if (f.usable && !std::strcmp(force, f.name)) return f;
    std::fprintf(stderr, "pyphmm: warning: PYPHMM_DEV's sw_isa=%s is not available here; using %s\n", force,
                 best->name);
    return *best;
}

// Whether a pair takes part in prefix reuse: both sequences long (a
// haplotype against its reference window) and of about the same length,
// which leaves out a read against its haplotype, where alts share no prefix.
bool reuse_shape(int m, int n) {
    return m >= kResumeMinLength && n >= kResumeMinLength && m <= kResumeMaxLength && n <= kResumeMaxLength &&
           4 * static_cast<int64_t>(n) >= 3 * static_cast<int64_t>(m);
}

// The column a fill of (ref, alt) may resume at from base b: the alts'
// common prefix rounded down to a checkpoint, below n; 0 for none.
int resume_column(const FillBase& b, const void* kernel, const uint8_t* ref, int m, const uint8_t* alt, int n,
                  const pyphmm_sw_params& p, bool edge_gaps) {
    if (!b.valid || b.kernel != kernel || b.m != m || b.edge_gaps != edge_gaps ||
        b.segments.size() >= static_cast<size_t>(kMaxSegments) || b.params.match != p.match ||
        b.params.mismatch != p.mismatch || b.params.gap_open != p.gap_open || b.params.gap_extend != p.gap_extend ||
        std::memcmp(b.ref.data(), ref, static_cast<size_t>(m)) != 0)
        return 0;
    const int most = std::min(n - 1, b.n - 1);
    int common = 0;
    while (common < most && alt[common] == b.alt[common]) ++common;
    return common / kResumeStep * kResumeStep;
}

}  // namespace

void keep_base(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
               bool edge_gaps) {
    if (!ws.capture) return;
    ws.capture = false;
    FillBase& b = ws.bases[ws.to_base];
    const int from = ws.resume_from;
    // Columns below `from` stay where the base resumed from had them (which
    // may be b itself: its list is read before it is replaced).
    std::vector<BtSegment>& keep = ws.scratch;
    keep.clear();
    if (from)
        for (BtSegment s : ws.bases[ws.from_base].segments)
            if (s.from < from) {
                s.to = std::min(s.to, from);
                keep.push_back(s);
            }
    b.segments.swap(keep);
    // This fill's bits go to a store no base reads.
    auto read = [&](size_t k) {
        for (const FillBase& o : ws.bases)
            if (&o == &b || o.valid)
                for (const BtSegment& s : o.segments)
                    if (s.store == static_cast<int>(k)) return true;
        return false;
    };
    size_t slot = 0;
    while (slot < ws.stores.size() && read(slot)) ++slot;
    if (slot == ws.stores.size()) ws.stores.emplace_back();
    BtStore& st = ws.stores[slot];
    st.bt.swap(ws.bt);
    st.blk_start.swap(ws.blk_start);
    st.n = n;
    b.segments.push_back({from, n + 1, static_cast<int>(slot)});
    b.stamp = ++ws.stamp;
    b.ref.assign(ref, ref + m);
    b.alt.assign(alt, alt + n);
    b.params = p;
    b.edge_gaps = edge_gaps;
    b.m = m;
    b.n = n;
    b.last_row.swap(ws.last_row);
    b.valid = true;
}

void fill(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
          bool edge_gaps) {
    ws.resume_from = 0;
    ws.capture = false;
    static const Fill& chosen = pick_fill();
    int bytes = diff_lane_bytes(p, m, n);
    if (bytes == 1 && !chosen.k8.fn) bytes = 2;
    if (bytes == 0) {
        prepare(ws, ref, m, alt, n, p, edge_gaps, kAbsShift, 4);
        ws.layout = kPlanar;
        absolute_fill(ws, m, n, p);
        return;
    }
    const Kernel& k = bytes == 1 ? chosen.k8 : chosen.k16;
    prepare(ws, ref, m, alt, n, p, edge_gaps, k.lane_shift, bytes);
    ws.layout = k.layout;
    size_diff_state(ws);
    if (!reuse_shape(m, n) || !config::on(config::Knob::kSwReuse)) return k.fn(ws, m, n, p, edge_gaps);
    const void* kernel = &k;
    // Resume from the base sharing the longest prefix; become the base that
    // is free or oldest, invalid until keep_base (if it is the one resumed
    // from, its bits, checkpoints below the column and last row serve this
    // fill first).
    ws.resume_from = 0;
    int to = 0;
    for (int b = 0; b < kBases; ++b) {
        const int from = resume_column(ws.bases[b], kernel, ref, m, alt, n, p, edge_gaps);
        if (from > ws.resume_from) {
            ws.resume_from = from;
            ws.from_base = b;
        }
        const FillBase& t = ws.bases[to];
        if (t.valid && (!ws.bases[b].valid || ws.bases[b].stamp < t.stamp)) to = b;
    }
    const bool repeated = ws.last_ref.size() == static_cast<size_t>(m) && ws.last_edge == edge_gaps &&
                          std::memcmp(&ws.last_params, &p, sizeof p) == 0 &&
                          std::memcmp(ws.last_ref.data(), ref, static_cast<size_t>(m)) == 0;
    if (!repeated) {
        ws.last_ref.assign(ref, ref + m);
        ws.last_params = p;
        ws.last_edge = edge_gaps;
    }
    if (ws.resume_from) {
        ws.bases[ws.from_base].used = true;
        ws.unused = 0;
    } else if (ws.unused >= kUnusedLimit && !repeated) {
        return k.fn(ws, m, n, p, edge_gaps);  // checkpoints have gone unused: none
    }
    ws.to_base = to;
    FillBase& t = ws.bases[to];
    if (t.valid && !t.used) ++ws.unused;
    t.valid = false;
    t.used = false;
    t.kernel = kernel;
    const size_t words = 2 * (static_cast<size_t>(m) + 1);  // lanes a checkpoint
    const size_t all = static_cast<size_t>((n - 1) / kResumeStep) * words;
    if (t.ck.size() < all) t.ck.resize(all);
    if (ws.resume_from && to != ws.from_base) {  // the checkpoints below the column, which the fill does not write
        const size_t below = static_cast<size_t>(ws.resume_from / kResumeStep) * words;
        std::memcpy(t.ck.data(), ws.bases[ws.from_base].ck.data(), below * sizeof(int16_t));
    }
    ws.capture = true;
    k.reuse(ws, m, n, p, edge_gaps);
}

}  // namespace sw_cpu
}  // namespace pyphmm
