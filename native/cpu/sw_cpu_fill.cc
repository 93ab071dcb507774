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
#include <string>

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
constexpr int kPad = 64;                   // slack for full-width vector tails (W <= 32)
constexpr int kAbsShift = 3;               // the absolute fill's block width, 8 cells

// The difference fill's "no gap yet" (GATK's INT_MIN/2) as its stored
// df + extend or de + extend: any value below open works, since open then
// beats it, as GATK's open beats INT_MIN/2 + extend.
constexpr int16_t kNoGap16 = -16384;
constexpr int kMaxDiffParam = 4096;

// Whether the difference fill is exact for these parameters. For i, j >= 1,
// with P = max |parameter| and open <= extend <= 0 (a gap costs most when
// opened, as in all of GATK's sets):
// - dh(i, j) >= open: H[i][j] >= E[i][j] >= H[i][j-1] + open (dv alike);
// - dh(i, j) <= max(match, mismatch, 0) - open: the diagonal candidate is
//   at most B + max(match, mismatch) and H[i][j-1] >= F[i][j-1] >= B + open;
//   E[i][j] <= H[i][j-1]; and a deletion of length k ending at (i, j)
//   exceeds H[i][j-1] by at most dh(i-k, j) (the same gap ends at (i, j-1)),
//   which by induction down to row 0 (dh(0, j) <= 0) obeys the same bound;
//   column 0 gives the same with extend >= open.
// So |dh|, |dv| <= 2P, de and df lie in [-3P, 0], every intermediate of the
// kernel in [-4P, 2P], all exact in int16 for P <= 4096. Scores must also
// stay above GATK's -1e8 floor, which differences cannot apply.
bool floor_reachable(const pyphmm_sw_params& p, int m, int n) {
    int64_t worst = std::max({std::llabs(int64_t(p.match)), std::llabs(int64_t(p.mismatch)),
                              std::llabs(int64_t(p.gap_open)), std::llabs(int64_t(p.gap_extend))});
    return worst * (int64_t(m) + n + 2) >= -int64_t(kFloor);
}

bool diff_admissible(const pyphmm_sw_params& p, int m, int n) {
    const int worst = std::max({std::abs(p.match), std::abs(p.mismatch), std::abs(p.gap_open), std::abs(p.gap_extend)});
    return p.gap_open <= p.gap_extend && p.gap_extend <= 0 && worst <= kMaxDiffParam && !floor_reachable(p, m, n);
}

// Sizes the workspace for an m x n fill in blocks of 2^lane_shift cells and
// writes the inputs, the edges and diagonal 1 of both fills' state.
void prepare(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
             bool edge_gaps, int lane_shift) {
    const size_t slots = static_cast<size_t>(m) + 1 + kPad;
    if (ws.ref16.size() < slots) ws.ref16.resize(slots, 0);
    if (ws.alt16.size() < static_cast<size_t>(n) + kPad) ws.alt16.resize(static_cast<size_t>(n) + kPad, 0);
    // Padding lanes compare bases against -1 / -2 so they never match.
    for (int i = 0; i < m; ++i) ws.ref16[i] = ref[i];
    for (int i = m; i < m + kPad; ++i) ws.ref16[i] = -1;
    for (int k = 0; k < n; ++k) ws.alt16[k] = alt[n - 1 - k];
    for (int k = n; k < n + kPad; ++k) ws.alt16[k] = -2;

    ws.row0.resize(static_cast<size_t>(n) + 1);
    ws.col0.resize(static_cast<size_t>(m) + 1);
    ws.row0[0] = ws.col0[0] = 0;
    int32_t v = p.gap_open;
    for (int j = 1; j <= n; ++j, v += p.gap_extend) ws.row0[j] = edge_gaps ? v : 0;
    v = p.gap_open;
    for (int i = 1; i <= m; ++i, v += p.gap_extend) ws.col0[i] = edge_gaps ? v : 0;
    ws.last_col.resize(static_cast<size_t>(m) + 1);
    ws.last_row.resize(static_cast<size_t>(n) + 1);

    // Each diagonal wastes less than one block: < W/2 bytes.
    ws.lane_shift = lane_shift;
    const int w = 1 << lane_shift;
    const size_t bytes = (static_cast<size_t>(m) * n + static_cast<size_t>(m + n) * w) / 2 + w;
    if (ws.bt.size() < bytes) ws.bt.resize(bytes);
    ws.blk_start.resize(static_cast<size_t>(m) + n + 1);
}

// Diagonal 1, cells (0, 1) and (1, 0), of the difference fill.
void prepare_diff(Workspace& ws, int m) {
    const size_t slots = static_cast<size_t>(m) + 1 + kPad;
    for (auto* a : {&ws.dh[0], &ws.dh[1], &ws.dv[0], &ws.dv[1], &ws.de[0], &ws.de[1], &ws.df[0], &ws.df[1]})
        if (a->size() < slots) a->resize(slots, 0);
    ws.dh[0][0] = static_cast<int16_t>(ws.row0[1]);
    ws.df[0][0] = kNoGap16;
    ws.dv[0][1] = static_cast<int16_t>(ws.col0[1]);
    ws.de[0][1] = kNoGap16;
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
                const unsigned bits = (gap > diag ? kGap : 0u) | (down > right ? kDown : 0u) |
                                      (open_h > ext_h ? kNewH : 0u) | (open_v > ext_v ? kNewV : 0u);
                for (int q = 0; q < 4; ++q) planes[q] |= static_cast<uint8_t>(((bits >> q) & 1u) << k);
            }
            std::memcpy(out, planes, 4);
        }
        if (d > n) ws.last_col[d - n] = h0[d - n];
        if (d > m) ws.last_row[d - m] = h0[m];
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
}

#define SW_OP __attribute__((always_inline)) static inline

// The baseline: 8 int16 lanes with GCC vector extensions (SSE2 on x86-64,
// Advanced SIMD or scalar code elsewhere).
namespace base {
struct Ops {
    static constexpr int kShift = 3;
    static constexpr bool kPaired = false;
    typedef int16_t V __attribute__((vector_size(16)));
    typedef V M;
    SW_OP V load(const int16_t* p) {
        V v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    SW_OP void store(int16_t* p, V v) { std::memcpy(p, &v, sizeof v); }
    SW_OP V set1(int x) { return V{} + static_cast<int16_t>(x); }
    SW_OP V add(V a, V b) { return a + b; }
    SW_OP V sub(V a, V b) { return a - b; }
    SW_OP V max(V a, V b) { return a > b ? a : b; }
    SW_OP V subst(V a, V b, V match, V mis) { return a == b ? match : mis; }
    SW_OP M gt(V a, V b) { return a > b; }
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
}  // namespace base

}  // namespace
}  // namespace sw_cpu
}  // namespace pyphmm

#include "sw_cpu_fill_isa.h"

namespace pyphmm {
namespace sw_cpu {
namespace {

using FillFn = void (*)(Workspace&, int, int, const pyphmm_sw_params&);
struct Fill {
    const char* name;
    FillFn fn;
    int lane_shift;
    bool paired;
    bool usable;
};

// The widest fill this CPU runs, or the one PYPHMM_SW_ISA names (a testing
// aid: sse or portable, avx2, avx512 on x86-64; neon or portable on AArch64;
// a fill the CPU cannot run is refused with a note).
const Fill& pick_fill() {
    static const Fill portable{"portable", base::diff_fill, base::Ops::kShift, base::Ops::kPaired, true};
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    static const Fill fills[] = {
        {"avx512", avx512::diff_fill, avx512::Ops::kShift, avx512::Ops::kPaired,
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")},
        {"avx2", avx2::diff_fill, avx2::Ops::kShift, avx2::Ops::kPaired, __builtin_cpu_supports("avx2") != 0},
        {"sse", base::diff_fill, base::Ops::kShift, base::Ops::kPaired, true},
    };
#elif defined(__aarch64__)
    static const Fill fills[] = {{"neon", neon::diff_fill, neon::Ops::kShift, neon::Ops::kPaired, cpu_has_neon()}};
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
    std::fprintf(stderr, "pyphmm: warning: PYPHMM_SW_ISA=%s is not available here; using %s\n", force, best->name);
    return *best;
}

}  // namespace

void fill(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
          bool edge_gaps) {
    static const Fill& chosen = pick_fill();
    if (diff_admissible(p, m, n)) {
        prepare(ws, ref, m, alt, n, p, edge_gaps, chosen.lane_shift);
        ws.paired = chosen.paired;
        prepare_diff(ws, m);
        chosen.fn(ws, m, n, p);
    } else {
        prepare(ws, ref, m, alt, n, p, edge_gaps, kAbsShift);
        ws.paired = false;
        absolute_fill(ws, m, n, p);
    }
}

}  // namespace sw_cpu
}  // namespace pyphmm
