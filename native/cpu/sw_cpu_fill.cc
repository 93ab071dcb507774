// The score fill of the CPU Smith-Waterman with GATK's semantics
// (SmithWatermanJavaAligner is the specification; docs/SMITH_WATERMAN.md).
//
// The score recurrence is GATK's: a cell takes the best of the diagonal step,
// the best horizontal gap (insertion) and the best vertical gap (deletion),
// where a "best gap" is carried along the row/column and is replaced by a
// freshly opened gap only when that is strictly better than extending the old
// one. Ties prefer diagonal, then insertion, then deletion; scores are floored
// at -1e8.
//
// Evaluation order: anti-diagonals (d = i + j), vectorised along i: 16 int32
// lanes (AVX-512), 8 (AVX2) or 4 (NEON) with intrinsics, else 4 (SSE on
// x86-64, the portable path elsewhere) with GCC vector extensions. All cells
// of one anti-diagonal are independent; the per-row and per-column gap state
// of GATK's row-major loop become per-slot state carried from diagonal d-1 to
// d, so results are bit-identical to the row-major order.
//
// Backtrack: instead of GATK's gap lengths the fill stores 4 bits per cell
// (diagonal chosen, insertion chosen, horizontal / vertical gap opened here)
// as lane bitmasks, diagonal-major (BtBlock); the traceback recovers a gap's
// length from them.
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
constexpr int kPad = 32;                   // slack for full-width vector tails

// Sizes the workspace for an m x n fill of width W and writes the inputs,
// the edge values and diagonals 0 and 1.
void prepare(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
             bool edge_gaps, int lane_shift) {
    const size_t slots = static_cast<size_t>(m) + 1 + kPad;
    for (auto* v : {&ws.h[0], &ws.h[1], &ws.h[2], &ws.e[0], &ws.e[1], &ws.f[0], &ws.f[1]})
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

    ws.lane_shift = lane_shift;
    const int w = 1 << lane_shift;
    ws.blk_start.resize(static_cast<size_t>(m) + n + 2);
    int64_t total = 0;
    for (int d = 2; d <= m + n; ++d) {
        int lo = std::max(1, d - n), hi = std::min(m, d - 1);
        ws.blk_start[d] = total;
        total += (hi - lo + w) >> lane_shift;
    }
    if (ws.bt.size() < static_cast<size_t>(total)) ws.bt.resize(static_cast<size_t>(total));

    // Diagonal 0 (the corner) and 1 (two boundary cells); see Diagonals.
    ws.h[0][0] = 0;
    ws.h[1][0] = ws.row0[1];
    ws.h[1][1] = ws.col0[1];
    ws.e[0][1] = kLowInit;
    ws.f[0][0] = kLowInit;
}

// The scalar side of the anti-diagonal sweep: the rotating slot arrays
// (index i holds row i's cell of the diagonal), boundary cells and the
// last row / column. Slot arrays of diagonal d: h0 e0 f0 (written), of d-1:
// h1 e1 f1, of d-2: h2. e carries row i's best horizontal gap, f column j's
// best vertical gap.
struct Diagonals {
    Workspace& ws;
    const int m, n;
    int32_t *h2, *h1, *h0, *e1, *e0, *f1, *f0;

    Diagonals(Workspace& w, int m_, int n_)
        : ws(w),
          m(m_),
          n(n_),
          h2(w.h[0].data()),
          h1(w.h[1].data()),
          h0(w.h[2].data()),
          e1(w.e[0].data()),
          e0(w.e[1].data()),
          f1(w.f[0].data()),
          f0(w.f[1].data()) {}

    int lo(int d) const { return std::max(1, d - n); }
    int hi(int d) const { return std::min(m, d - 1); }
    BtBlock* blocks(int d) const { return ws.bt.data() + ws.blk_start[d]; }

    // After the vector pass over diagonal d: records the last row / column
    // and writes the boundary slots of d (after the pass, whose padding
    // lanes may have run over them), then rotates.
    __attribute__((always_inline)) void finish(int d) {
        if (d - n >= 1) ws.last_col[d - n] = h0[d - n];
        if (hi(d) == m) ws.last_row[d - m] = h0[m];
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
};

template <int W>
struct Consts {
    typedef typename Vec<W>::V V;
    V match, mis, open, ext, floor;
    __attribute__((always_inline)) explicit Consts(const pyphmm_sw_params& p)
        : match(V{} + p.match),
          mis(V{} + p.mismatch),
          open(V{} + p.gap_open),
          ext(V{} + p.gap_extend),
          floor(V{} + kFloor) {}
};

// Lane masks (-1 / 0) of one vector of cells, as in BtBlock.
template <int W>
struct Masks {
    typename Vec<W>::V diag, right, new_h, new_v;
};

// GATK's cell rule for cells i..i+W-1 of diagonal d (alt_d[i] is the alt base
// of row i's cell): writes the score and both best gaps, returns the masks.
template <int W>
__attribute__((always_inline)) inline Masks<W> cells(Diagonals& s, const int32_t* refi, const int32_t* alt_d, int i,
                                                     const Consts<W>& c) {
    typedef typename Vec<W>::V V;
    V diag = loadv<V>(s.h2 + i - 1) + ((loadv<V>(refi + i - 1) == loadv<V>(alt_d + i)) ? c.match : c.mis);
    // vertical gap (deletion): column j's state, carried from (i-1, j)
    V open_v = loadv<V>(s.h1 + i - 1) + c.open;
    V ext_v = loadv<V>(s.f1 + i - 1) + c.ext;
    V new_v = open_v > ext_v;
    V down = new_v ? open_v : ext_v;
    // horizontal gap (insertion): row i's state, carried from (i, j-1)
    V open_h = loadv<V>(s.h1 + i) + c.open;
    V ext_h = loadv<V>(s.e1 + i) + c.ext;
    V new_h = open_h > ext_h;
    V right = new_h ? open_h : ext_h;
    // The score is the maximum whatever the tie order; ties matter only to
    // the backtrack masks.
    V best = diag > down ? diag : down;
    best = best > right ? best : right;
    best = best > c.floor ? best : c.floor;
    storev(s.h0 + i, best);
    storev(s.f0 + i, down);
    storev(s.e0 + i, right);
    return {(diag >= down) & (diag >= right), right >= down, new_h, new_v};
}

// Bits of a 4-lane mask (baseline SSE on x86; lane by lane elsewhere).
__attribute__((always_inline)) inline uint16_t bits(Vec<4>::V v) {
#if defined(__x86_64__) || defined(__i386__)
    return static_cast<uint16_t>(_mm_movemask_ps(_mm_castsi128_ps(reinterpret_cast<__m128i>(v))));
#else
    return static_cast<uint16_t>((v[0] & 1) | (v[1] & 2) | (v[2] & 4) | (v[3] & 8));
#endif
}

// The fill with GCC vector extensions, W lanes: the SSE baseline (W = 4) on
// x86-64, the portable path elsewhere. The AVX2, AVX-512 and NEON fills
// below are the same rule with intrinsics.
template <int W>
__attribute__((always_inline)) inline void fill_generic(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt,
                                                        int n, const pyphmm_sw_params& p, bool edge) {
    static_assert(W == 4, "bits() handles 4 lanes");
    prepare(ws, ref, m, alt, n, p, edge, 2);
    const Consts<W> c(p);
    Diagonals s(ws, m, n);
    const int32_t* refi = ws.refi.data();
    for (int d = 2; d <= m + n; ++d) {
        const int32_t* alt_d = ws.altr.data() + (n - d);  // alt[d - i - 1] == alt_d[i]
        BtBlock* out = s.blocks(d);
        for (int i = s.lo(d), hi = s.hi(d); i <= hi; i += W, ++out) {
            Masks<W> k = cells<W>(s, refi, alt_d, i, c);
            *out = {bits(k.diag), bits(k.right), bits(k.new_h), bits(k.new_v)};
        }
        s.finish(d);
    }
}

// Whether a score can fall to GATK's -1e8 floor. Every score is at least
// -(max |parameter|) * (m + n): a boundary cell costs at most |open| +
// |extend| per step and each diagonal step at most |mismatch| more. Below
// that bound the floor never binds and the fill may skip it.
bool floor_reachable(const pyphmm_sw_params& p, int m, int n) {
    int64_t worst = std::max({std::llabs(int64_t(p.match)), std::llabs(int64_t(p.mismatch)),
                              std::llabs(int64_t(p.gap_open)), std::llabs(int64_t(p.gap_extend))});
    return worst * (int64_t(m) + n + 2) >= -int64_t(kFloor);
}

#if defined(__x86_64__) || defined(__i386__)
// AVX-512: 16 lanes with intrinsics, so compares give the backtrack bits
// directly as mask registers (GCC 12 scalarises vector-extension mask logic
// at this width). Same rule as cells().
// GCC 12's own avx512fintrin.h trips -Wmaybe-uninitialized (_mm512_undefined).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define SW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), always_inline)) inline
SW_AVX512 __m512i ld16(const int32_t* p) { return _mm512_loadu_si512(p); }

template <bool kFloorCheck>
SW_AVX512 BtBlock cells16(Diagonals& s, const int32_t* refi, const int32_t* alt_d, int i, __m512i match, __m512i mis,
                          __m512i open, __m512i ext, __m512i floor) {
    const __mmask16 eq = _mm512_cmpeq_epi32_mask(ld16(refi + i - 1), ld16(alt_d + i));
    const __m512i diag = _mm512_add_epi32(ld16(s.h2 + i - 1), _mm512_mask_blend_epi32(eq, mis, match));
    const __m512i open_v = _mm512_add_epi32(ld16(s.h1 + i - 1), open);
    const __m512i ext_v = _mm512_add_epi32(ld16(s.f1 + i - 1), ext);
    const __m512i down = _mm512_max_epi32(open_v, ext_v);
    const __m512i open_h = _mm512_add_epi32(ld16(s.h1 + i), open);
    const __m512i ext_h = _mm512_add_epi32(ld16(s.e1 + i), ext);
    const __m512i right = _mm512_max_epi32(open_h, ext_h);
    const __m512i gap = _mm512_max_epi32(down, right);
    __m512i best = _mm512_max_epi32(diag, gap);
    if (kFloorCheck) best = _mm512_max_epi32(best, floor);
    _mm512_storeu_si512(s.h0 + i, best);
    _mm512_storeu_si512(s.f0 + i, down);
    _mm512_storeu_si512(s.e0 + i, right);
    BtBlock b;
    b.diag = _mm512_cmpge_epi32_mask(diag, gap);
    b.right = _mm512_cmpge_epi32_mask(right, down);
    b.new_h = _mm512_cmpgt_epi32_mask(open_h, ext_h);
    b.new_v = _mm512_cmpgt_epi32_mask(open_v, ext_v);
    return b;
}

template <bool kFloorCheck>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void fill_avx512_t(Workspace& ws, const uint8_t* ref,
                                                                                 int m, const uint8_t* alt, int n,
                                                                                 const pyphmm_sw_params& p, bool edge) {
    prepare(ws, ref, m, alt, n, p, edge, 4);
    const __m512i match = _mm512_set1_epi32(p.match), mis = _mm512_set1_epi32(p.mismatch),
                  open = _mm512_set1_epi32(p.gap_open), ext = _mm512_set1_epi32(p.gap_extend),
                  floor = _mm512_set1_epi32(kFloor);
    Diagonals s(ws, m, n);
    const int32_t* refi = ws.refi.data();
    for (int d = 2; d <= m + n; ++d) {
        const int32_t* alt_d = ws.altr.data() + (n - d);
        BtBlock* out = s.blocks(d);
        for (int i = s.lo(d), hi = s.hi(d); i <= hi; i += 16, ++out)
            *out = cells16<kFloorCheck>(s, refi, alt_d, i, match, mis, open, ext, floor);
        s.finish(d);
    }
}

void fill_avx512(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
                 bool edge) {
    if (floor_reachable(p, m, n))
        fill_avx512_t<true>(ws, ref, m, alt, n, p, edge);
    else
        fill_avx512_t<false>(ws, ref, m, alt, n, p, edge);
}

#pragma GCC diagnostic pop

// AVX2: 8 lanes with intrinsics; compare results become backtrack bits
// through movemask. AVX2 has no signed >=, so the diag and right bits are
// computed as their negations (gap > diag, down > right) and flipped.
#define SW_AVX2 __attribute__((target("avx2"), always_inline)) inline
SW_AVX2 __m256i ld8(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
SW_AVX2 void st8(int32_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
SW_AVX2 uint16_t mask8(__m256i m) { return static_cast<uint16_t>(_mm256_movemask_ps(_mm256_castsi256_ps(m))); }

template <bool kFloorCheck>
SW_AVX2 BtBlock cells8(Diagonals& s, const int32_t* refi, const int32_t* alt_d, int i, __m256i match, __m256i mis,
                       __m256i open, __m256i ext, __m256i floor) {
    const __m256i eq = _mm256_cmpeq_epi32(ld8(refi + i - 1), ld8(alt_d + i));
    const __m256i diag = _mm256_add_epi32(ld8(s.h2 + i - 1), _mm256_blendv_epi8(mis, match, eq));
    const __m256i open_v = _mm256_add_epi32(ld8(s.h1 + i - 1), open);
    const __m256i ext_v = _mm256_add_epi32(ld8(s.f1 + i - 1), ext);
    const __m256i down = _mm256_max_epi32(open_v, ext_v);
    const __m256i open_h = _mm256_add_epi32(ld8(s.h1 + i), open);
    const __m256i ext_h = _mm256_add_epi32(ld8(s.e1 + i), ext);
    const __m256i right = _mm256_max_epi32(open_h, ext_h);
    const __m256i gap = _mm256_max_epi32(down, right);
    __m256i best = _mm256_max_epi32(diag, gap);
    if (kFloorCheck) best = _mm256_max_epi32(best, floor);
    st8(s.h0 + i, best);
    st8(s.f0 + i, down);
    st8(s.e0 + i, right);
    BtBlock b;
    b.diag = mask8(_mm256_cmpgt_epi32(gap, diag)) ^ 0xFF;
    b.right = mask8(_mm256_cmpgt_epi32(down, right)) ^ 0xFF;
    b.new_h = mask8(_mm256_cmpgt_epi32(open_h, ext_h));
    b.new_v = mask8(_mm256_cmpgt_epi32(open_v, ext_v));
    return b;
}

template <bool kFloorCheck>
__attribute__((target("avx2"))) void fill_avx2_t(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n,
                                                 const pyphmm_sw_params& p, bool edge) {
    prepare(ws, ref, m, alt, n, p, edge, 3);
    const __m256i match = _mm256_set1_epi32(p.match), mis = _mm256_set1_epi32(p.mismatch),
                  open = _mm256_set1_epi32(p.gap_open), ext = _mm256_set1_epi32(p.gap_extend),
                  floor = _mm256_set1_epi32(kFloor);
    Diagonals s(ws, m, n);
    const int32_t* refi = ws.refi.data();
    for (int d = 2; d <= m + n; ++d) {
        const int32_t* alt_d = ws.altr.data() + (n - d);
        BtBlock* out = s.blocks(d);
        for (int i = s.lo(d), hi = s.hi(d); i <= hi; i += 8, ++out)
            *out = cells8<kFloorCheck>(s, refi, alt_d, i, match, mis, open, ext, floor);
        s.finish(d);
    }
}

void fill_avx2(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
               bool edge) {
    if (floor_reachable(p, m, n))
        fill_avx2_t<true>(ws, ref, m, alt, n, p, edge);
    else
        fill_avx2_t<false>(ws, ref, m, alt, n, p, edge);
}

#endif  // x86

#if defined(__aarch64__)
// NEON: 4 lanes with intrinsics. NEON has no movemask; the four compare
// masks (all ones / zero per lane) are narrowed into one byte vector, one
// bit per lane is kept, and pairwise adds sum each mask's four bits into
// one byte (see bt_bits4).
#define SW_NEON __attribute__((always_inline)) inline
SW_NEON int32x4_t ld4(const int32_t* p) { return vld1q_s32(p); }

// BtBlock {diag, right, new_h, new_v} of four 4-lane masks: bit k of each
// field is lane k.
SW_NEON BtBlock bt_bits4(uint32x4_t diag, uint32x4_t right, uint32x4_t new_h, uint32x4_t new_v) {
    const uint8x16_t lane_bits = {1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8};
    // bytes: diag lanes 0-3, right 0-3, new_h 0-3, new_v 0-3 (0xff / 0)
    const uint16x8_t dr = vuzp1q_u16(vreinterpretq_u16_u32(diag), vreinterpretq_u16_u32(right));
    const uint16x8_t hv = vuzp1q_u16(vreinterpretq_u16_u32(new_h), vreinterpretq_u16_u32(new_v));
    const uint8x16_t lanes = vandq_u8(vuzp1q_u8(vreinterpretq_u8_u16(dr), vreinterpretq_u8_u16(hv)), lane_bits);
    const uint8x8_t pairs = vget_low_u8(vpaddq_u8(lanes, lanes));  // sums of lanes 0+1, 2+3 per mask
    const uint8x8_t quads = vpadd_u8(pairs, pairs);                // per mask: its 4 bits, bytes 0-3
    BtBlock b;
    vst1_u16(reinterpret_cast<uint16_t*>(&b), vget_low_u16(vmovl_u8(quads)));
    return b;
}

template <bool kFloorCheck>
SW_NEON BtBlock cells_neon(Diagonals& s, const int32_t* refi, const int32_t* alt_d, int i, int32x4_t match,
                           int32x4_t mis, int32x4_t open, int32x4_t ext, int32x4_t floor) {
    const uint32x4_t eq = vceqq_s32(ld4(refi + i - 1), ld4(alt_d + i));
    const int32x4_t diag = vaddq_s32(ld4(s.h2 + i - 1), vbslq_s32(eq, match, mis));
    const int32x4_t open_v = vaddq_s32(ld4(s.h1 + i - 1), open);
    const int32x4_t ext_v = vaddq_s32(ld4(s.f1 + i - 1), ext);
    const int32x4_t down = vmaxq_s32(open_v, ext_v);
    const int32x4_t open_h = vaddq_s32(ld4(s.h1 + i), open);
    const int32x4_t ext_h = vaddq_s32(ld4(s.e1 + i), ext);
    const int32x4_t right = vmaxq_s32(open_h, ext_h);
    const int32x4_t gap = vmaxq_s32(down, right);
    int32x4_t best = vmaxq_s32(diag, gap);
    if (kFloorCheck) best = vmaxq_s32(best, floor);
    vst1q_s32(s.h0 + i, best);
    vst1q_s32(s.f0 + i, down);
    vst1q_s32(s.e0 + i, right);
    return bt_bits4(vcgeq_s32(diag, gap), vcgeq_s32(right, down), vcgtq_s32(open_h, ext_h), vcgtq_s32(open_v, ext_v));
}

template <bool kFloorCheck>
void fill_neon_t(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
                 bool edge) {
    prepare(ws, ref, m, alt, n, p, edge, 2);
    const int32x4_t match = vdupq_n_s32(p.match), mis = vdupq_n_s32(p.mismatch), open = vdupq_n_s32(p.gap_open),
                    ext = vdupq_n_s32(p.gap_extend), floor = vdupq_n_s32(kFloor);
    Diagonals s(ws, m, n);
    const int32_t* refi = ws.refi.data();
    for (int d = 2; d <= m + n; ++d) {
        const int32_t* alt_d = ws.altr.data() + (n - d);
        BtBlock* out = s.blocks(d);
        for (int i = s.lo(d), hi = s.hi(d); i <= hi; i += 4, ++out)
            *out = cells_neon<kFloorCheck>(s, refi, alt_d, i, match, mis, open, ext, floor);
        s.finish(d);
    }
}

void fill_neon(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
               bool edge) {
    if (floor_reachable(p, m, n))
        fill_neon_t<true>(ws, ref, m, alt, n, p, edge);
    else
        fill_neon_t<false>(ws, ref, m, alt, n, p, edge);
}
#endif  // __aarch64__

void fill_portable(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
                   bool edge) {
    fill_generic<4>(ws, ref, m, alt, n, p, edge);
}

using FillFn = void (*)(Workspace&, const uint8_t*, int, const uint8_t*, int, const pyphmm_sw_params&, bool);

// The widest fill this CPU runs, or the one PYPHMM_SW_ISA names (a testing
// aid: sse or portable, avx2, avx512 on x86-64; neon or portable on AArch64;
// a fill the CPU cannot run is refused with a note).
FillFn pick_fill() {
    struct Fill {
        const char* name;
        FillFn fn;
        bool usable;
    };
    const Fill portable{"portable", fill_portable, true};
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const Fill fills[] = {
        {"avx512", fill_avx512,
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")},
        {"avx2", fill_avx2, __builtin_cpu_supports("avx2") != 0},
        {"sse", fill_portable, true},
    };
#elif defined(__aarch64__)
    const Fill fills[] = {{"neon", fill_neon, cpu_has_neon()}};
#else
    const Fill fills[] = {portable};
#endif
    const Fill* best = &portable;
    for (const Fill& f : fills)
        if (f.usable) {
            best = &f;
            break;
        }
    const std::string forced = config::get_string(config::Knob::kSwIsa);
    const char* force = forced.c_str();
    if (!*force) return best->fn;
    if (!std::strcmp(force, portable.name)) return portable.fn;
    for (const Fill& f : fills)
        if (f.usable && !std::strcmp(force, f.name)) return f.fn;
    std::fprintf(stderr, "pyphmm: warning: PYPHMM_SW_ISA=%s is not available here; using %s\n", force, best->name);
    return best->fn;
}

}  // namespace

void fill(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
          bool edge_gaps) {
    static const FillFn chosen = pick_fill();
    chosen(ws, ref, m, alt, n, p, edge_gaps);
}

}  // namespace sw_cpu
}  // namespace pyphmm
