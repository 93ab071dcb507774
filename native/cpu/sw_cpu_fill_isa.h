// The instruction-set instances of the difference fill, for sw_cpu_fill.cc
// only (it includes this once, after the baseline): each namespace defines
// the same `Ops` interface with one ISA's intrinsics for one lane type and
// includes the one kernel (sw_cpu_diff_kernel.h) under that ISA's target, so
// the kernel is compiled for it whatever the baseline flags. Ops:
//   T             lane type (int8_t or int16_t)
//   kShift        W = 2^kShift lanes
//   load/store    W lanes, unaligned
//   subst(a, b)   match where a == b, else mismatch
//   gt(a, b)      the lanes where a > b, as Ops::M
//   put_bits      four masks as one backtrack block of W/2 bytes in the
//                 layout kLayout (layouts in sw_cpu_fill.h)
//   shift_up(v, before)   lane k of v moved to lane k+1, lane 0 from
//                         before's last lane (v one lane later in a row of
//                         vectors whose previous vector is before)
//   shift_down(v, after)  lane k+1 of v moved to lane k, the last lane from
//                         after's lane 0
//   blend(m, a, b)        b where m, else a
//   lanes_from(x)         the mask of lanes k >= x (every lane for x <= 0)
//   first(v)              lane 0
//   Half, low, widen      optional: the operations on the low half of a
//                         vector, and the conversions (see avx512::w8)
#pragma once

#if defined(__x86_64__) || defined(__i386__)
// GCC 12's own avx512fintrin.h trips -Wmaybe-uninitialized (_mm512_undefined).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
// PYPHMM_SW_EMULATE_AVX512: a test build (tests/native/sw_avx512_check.cc)
// compiles this instance against portable definitions of the AVX-512
// intrinsics it uses, to run it where no AVX-512 is; with AVX2 only as the
// target, since the compiler would otherwise emit AVX-512 code for the
// emulation too.
#if !defined(PYPHMM_SW_EMULATE_AVX512)
#pragma GCC target("avx512f,avx512bw,avx512vl")
#else
#pragma GCC target("avx2")
#endif
namespace pyphmm {
namespace sw_cpu {
namespace {
namespace avx512 {
// Compares give the planes directly as mask registers, stored planar.
#define SW_AVX512_COMMON(bits, lanes_shift, lanes)                                                                     \
    static constexpr int kShift = lanes_shift;                                                                         \
    static constexpr BtLayout kLayout = kPlanar;                                                                       \
    typedef __m512i V;                                                                                                 \
    typedef __mmask##lanes M;                                                                                          \
    SW_OP V load(const T* p) { return _mm512_loadu_si512(p); }                                                         \
    SW_OP void store(T* p, V v) { _mm512_storeu_si512(p, v); }                                                         \
    SW_OP V set1(int x) { return _mm512_set1_epi##bits(static_cast<T>(x)); }                                           \
    SW_OP V add(V a, V b) { return _mm512_add_epi##bits(a, b); }                                                       \
    SW_OP V sub(V a, V b) { return _mm512_sub_epi##bits(a, b); }                                                       \
    SW_OP V max(V a, V b) { return _mm512_max_epi##bits(a, b); }                                                       \
    SW_OP V subst(V a, V b, V match, V mis) {                                                                          \
        return _mm512_mask_blend_epi##bits(_mm512_cmpeq_epi##bits##_mask(a, b), mis, match);                           \
    }                                                                                                                  \
    SW_OP M gt(V a, V b) { return _mm512_cmpgt_epi##bits##_mask(a, b); }                                               \
    SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) { put_planes(out, gap, down, new_h, new_v); }   \
    /* valignq brings the neighbouring 128-bit lane, vpalignr the lane's bytes. */                                     \
    SW_OP V shift_up(V v, V before) {                                                                                  \
        return _mm512_alignr_epi8(v, _mm512_alignr_epi64(v, before, 6), 16 - sizeof(T));                               \
    }                                                                                                                  \
    SW_OP V shift_down(V v, V after) { return _mm512_alignr_epi8(_mm512_alignr_epi64(after, v, 2), v, sizeof(T)); }    \
    SW_OP V blend(M m, V a, V b) { return _mm512_mask_blend_epi##bits(m, a, b); }                                      \
    SW_OP M lanes_from(int x) { return x <= 0 ? static_cast<M>(~0ull) : x >= lanes ? 0 : static_cast<M>(~0ull << x); } \
    SW_OP T first(V v) { return static_cast<T>(_mm_cvtsi128_si32(_mm512_castsi512_si128(v))); }
namespace w8 {
struct Ops {
    typedef int8_t T;
    SW_AVX512_COMMON(8, 6, 64)
    SW_OP void put_planes(uint8_t* out, M gap, M down, M new_h, M new_v) {
        _store_mask64(reinterpret_cast<__mmask64*>(out), gap);
        _store_mask64(reinterpret_cast<__mmask64*>(out + 8), down);
        _store_mask64(reinterpret_cast<__mmask64*>(out + 16), new_h);
        _store_mask64(reinterpret_cast<__mmask64*>(out + 24), new_v);
    }
    // A diagonal's last vector holding at most 32 cells is computed as its
    // low 32 lanes at 256 bits (AVX512VL compares): half the work where the
    // core splits 512-bit operations in two. Its block keeps the 64-lane
    // layout; the bits of lanes 32-63 are left as they were (no cells).
    struct Half {
        typedef int8_t T;
        typedef __m256i V;
        typedef __mmask32 M;
        SW_OP V load(const T* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
        SW_OP V add(V a, V b) { return _mm256_add_epi8(a, b); }
        SW_OP V sub(V a, V b) { return _mm256_sub_epi8(a, b); }
        SW_OP V max(V a, V b) { return _mm256_max_epi8(a, b); }
        SW_OP V subst(V a, V b, V match, V mis) {
            return _mm256_mask_blend_epi8(_mm256_cmpeq_epi8_mask(a, b), mis, match);
        }
        SW_OP M gt(V a, V b) { return _mm256_cmpgt_epi8_mask(a, b); }
        SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) {
            const M planes[4] = {gap, down, new_h, new_v};
            for (int q = 0; q < 4; ++q) std::memcpy(out + 8 * q, &planes[q], sizeof(M));
        }
    };
    SW_OP Half::V low(V v) { return _mm512_castsi512_si256(v); }
    SW_OP V widen(Half::V v) { return _mm512_castsi256_si512(v); }  // lanes 32-63 undefined
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w8
namespace w16 {
struct Ops {
    typedef int16_t T;
    SW_AVX512_COMMON(16, 5, 32)
    // One kmov store per plane. The stores are volatile so that GCC's SLP
    // vectoriser does not merge the four into one vector store built lane
    // by lane (or, with kunpck, spend two uops of port 5, which the
    // compares already load).
    SW_OP void put_planes(uint8_t* out, M gap, M down, M new_h, M new_v) {
        volatile M* planes = reinterpret_cast<volatile M*>(out);
        planes[0] = gap;
        planes[1] = down;
        planes[2] = new_h;
        planes[3] = new_v;
    }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w16
#undef SW_AVX512_COMMON
}  // namespace avx512
}  // namespace
}  // namespace sw_cpu
}  // namespace pyphmm
#pragma GCC pop_options

// The int8 instance with AVX512_VBMI: a lane shift across 64 byte lanes is
// one two-source byte permute (vpermt2b) instead of valignq + vpalignr.
#pragma GCC push_options
#if !defined(PYPHMM_SW_EMULATE_AVX512)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vbmi")
#else
#pragma GCC target("avx2")
#endif
namespace pyphmm {
namespace sw_cpu {
namespace {
namespace avx512vbmi {
namespace w8 {
struct Ops : avx512::w8::Ops {
    // Permute indices k + base: lanes 0-63 of the first source, 64-127 of the second.
    SW_OP V index(int base) {
        static const int8_t seq[128] = {0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,
                                        16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,
                                        32,  33,  34,  35,  36,  37,  38,  39,  40,  41,  42,  43,  44,  45,  46,  47,
                                        48,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  62,  63,
                                        64,  65,  66,  67,  68,  69,  70,  71,  72,  73,  74,  75,  76,  77,  78,  79,
                                        80,  81,  82,  83,  84,  85,  86,  87,  88,  89,  90,  91,  92,  93,  94,  95,
                                        96,  97,  98,  99,  100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
                                        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127};
        return load(seq + base);
    }
    SW_OP V shift_up(V v, V before) { return _mm512_permutex2var_epi8(before, index(63), v); }
    SW_OP V shift_down(V v, V after) { return _mm512_permutex2var_epi8(v, index(1), after); }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w8
}  // namespace avx512vbmi
}  // namespace
}  // namespace sw_cpu
}  // namespace pyphmm
#pragma GCC pop_options
#pragma GCC diagnostic pop

#pragma GCC push_options
#pragma GCC target("avx2")
namespace pyphmm {
namespace sw_cpu {
namespace {
namespace avx2 {
#define SW_AVX2_COMMON(bits)                                                                                         \
    typedef __m256i V;                                                                                               \
    typedef __m256i M;                                                                                               \
    SW_OP V load(const T* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }                     \
    SW_OP void store(T* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }                           \
    SW_OP V set1(int x) { return _mm256_set1_epi##bits(static_cast<T>(x)); }                                         \
    SW_OP V add(V a, V b) { return _mm256_add_epi##bits(a, b); }                                                     \
    SW_OP V sub(V a, V b) { return _mm256_sub_epi##bits(a, b); }                                                     \
    SW_OP V max(V a, V b) { return _mm256_max_epi##bits(a, b); }                                                     \
    SW_OP V subst(V a, V b, V match, V mis) { return _mm256_blendv_epi8(mis, match, _mm256_cmpeq_epi##bits(a, b)); } \
    SW_OP M gt(V a, V b) { return _mm256_cmpgt_epi##bits(a, b); }                                                    \
    SW_OP V shift_up(V v, V before) {                                                                                \
        return _mm256_alignr_epi8(v, _mm256_permute2x128_si256(before, v, 0x21), 16 - sizeof(T));                    \
    }                                                                                                                \
    SW_OP V shift_down(V v, V after) {                                                                               \
        return _mm256_alignr_epi8(_mm256_permute2x128_si256(v, after, 0x21), v, sizeof(T));                          \
    }                                                                                                                \
    SW_OP V blend(M m, V a, V b) { return _mm256_blendv_epi8(a, b, m); }                                             \
    SW_OP M lanes_from(int x) {                                                                                      \
        constexpr int w = 32 / sizeof(T);                                                                            \
        return _mm256_cmpgt_epi##bits(iota(), set1(std::min(std::max(x, 0), w) - 1));                                \
    }                                                                                                                \
    SW_OP T first(V v) { return static_cast<T>(_mm_cvtsi128_si32(_mm256_castsi256_si128(v))); }
// 32 lanes; one byte movemask and one 32-bit store per plane, planar (the
// stores volatile: merged into 64-bit words they cost a shift and an or
// each). Diagonals of up to five vectors (reads of up to 159 bases) in
// registers: their 20 vectors of state exceed the 16 registers, but the
// compiler's spills cost less than the slot arrays' loop
// (docs/SMITH_WATERMAN.md).
namespace w8 {
struct Ops {
    typedef int8_t T;
    static constexpr int kShift = 5;
    static constexpr int kRegVectors = 5;
    static constexpr BtLayout kLayout = kPlanar;
    SW_AVX2_COMMON(8)
    SW_OP V iota() {
        return _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                24, 25, 26, 27, 28, 29, 30, 31);
    }
    SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) {
        const uint32_t planes[4] = {
            static_cast<uint32_t>(_mm256_movemask_epi8(gap)), static_cast<uint32_t>(_mm256_movemask_epi8(down)),
            static_cast<uint32_t>(_mm256_movemask_epi8(new_h)), static_cast<uint32_t>(_mm256_movemask_epi8(new_v))};
        for (int q = 0; q < 4; ++q) {
            volatile uint32_t* dst = reinterpret_cast<volatile uint32_t*>(out + 4 * q);
            *dst = planes[q];
        }
    }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w8
// 16 lanes; the paired layout: a byte blend takes the low byte of each lane
// from one mask and the high byte from another, so one movemask reads two
// planes interleaved.
namespace w16 {
struct Ops {
    typedef int16_t T;
    static constexpr int kShift = 4;
    static constexpr BtLayout kLayout = kPaired;
    SW_AVX2_COMMON(16)
    SW_OP V iota() { return _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
    SW_OP uint32_t two_planes(M x, M y) {
        return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_blendv_epi8(x, y, _mm256_set1_epi16(-256))));
    }
    SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) {
        const uint32_t planes[2] = {two_planes(gap, down), two_planes(new_h, new_v)};
        std::memcpy(out, planes, sizeof planes);
    }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w16
#undef SW_AVX2_COMMON
}  // namespace avx2
}  // namespace
}  // namespace sw_cpu
}  // namespace pyphmm
#pragma GCC pop_options
#endif  // x86

#if defined(__aarch64__)
// Advanced SIMD is in the AArch64 baseline: no target pragma. NEON has no
// movemask; the nibble layout suits it: bit selects put a cell's four masks
// into one byte lane (bits 0-3), and one shift-insert packs two lanes per
// byte.
namespace pyphmm {
namespace sw_cpu {
namespace {
namespace neon {
// The four masks of 16 byte lanes as a cell's four bits per lane.
SW_OP uint8x16_t cell_nibbles(uint8x16_t gap, uint8x16_t down, uint8x16_t new_h, uint8x16_t new_v) {
    uint8x16_t x = vandq_u8(gap, vdupq_n_u8(kGap));
    x = vbslq_u8(vdupq_n_u8(kDown), down, x);
    x = vbslq_u8(vdupq_n_u8(kNewH), new_h, x);
    return vbslq_u8(vdupq_n_u8(kNewV), new_v, x);
}
namespace w8 {
// 16 lanes: byte k holds lanes k and k + 8.
struct Ops {
    typedef int8_t T;
    static constexpr int kShift = 4;
    static constexpr BtLayout kLayout = kNibble;
    typedef int8x16_t V;
    typedef uint8x16_t M;
    SW_OP V load(const T* p) { return vld1q_s8(p); }
    SW_OP void store(T* p, V v) { vst1q_s8(p, v); }
    SW_OP V set1(int x) { return vdupq_n_s8(static_cast<T>(x)); }
    SW_OP V add(V a, V b) { return vaddq_s8(a, b); }
    SW_OP V sub(V a, V b) { return vsubq_s8(a, b); }
    SW_OP V max(V a, V b) { return vmaxq_s8(a, b); }
    SW_OP V subst(V a, V b, V match, V mis) { return vbslq_s8(vceqq_s8(a, b), match, mis); }
    SW_OP M gt(V a, V b) { return vcgtq_s8(a, b); }
    SW_OP V shift_up(V v, V before) { return vextq_s8(before, v, 15); }
    SW_OP V shift_down(V v, V after) { return vextq_s8(v, after, 1); }
    SW_OP V blend(M m, V a, V b) { return vbslq_s8(m, b, a); }
    SW_OP M lanes_from(int x) {
        static const int8_t iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        return vcgtq_s8(vld1q_s8(iota), vdupq_n_s8(static_cast<T>(std::min(std::max(x, 0), 16) - 1)));
    }
    SW_OP T first(V v) { return vgetq_lane_s8(v, 0); }
    SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) {
        const uint8x16_t x = cell_nibbles(gap, down, new_h, new_v);
        vst1_u8(out, vsli_n_u8(vget_low_u8(x), vget_high_u8(x), 4));
    }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w8
namespace w16 {
// 8 lanes, narrowed to bytes: byte k holds lanes k and k + 4.
struct Ops {
    typedef int16_t T;
    static constexpr int kShift = 3;
    static constexpr BtLayout kLayout = kNibble;
    typedef int16x8_t V;
    typedef uint16x8_t M;
    SW_OP V load(const T* p) { return vld1q_s16(p); }
    SW_OP void store(T* p, V v) { vst1q_s16(p, v); }
    SW_OP V set1(int x) { return vdupq_n_s16(static_cast<T>(x)); }
    SW_OP V add(V a, V b) { return vaddq_s16(a, b); }
    SW_OP V sub(V a, V b) { return vsubq_s16(a, b); }
    SW_OP V max(V a, V b) { return vmaxq_s16(a, b); }
    SW_OP V subst(V a, V b, V match, V mis) { return vbslq_s16(vceqq_s16(a, b), match, mis); }
    SW_OP M gt(V a, V b) { return vcgtq_s16(a, b); }
    SW_OP V shift_up(V v, V before) { return vextq_s16(before, v, 7); }
    SW_OP V shift_down(V v, V after) { return vextq_s16(v, after, 1); }
    SW_OP V blend(M m, V a, V b) { return vbslq_s16(m, b, a); }
    SW_OP M lanes_from(int x) {
        static const int16_t iota[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        return vcgtq_s16(vld1q_s16(iota), vdupq_n_s16(static_cast<T>(std::min(std::max(x, 0), 8) - 1)));
    }
    SW_OP T first(V v) { return vgetq_lane_s16(v, 0); }
    SW_OP void put_bits(uint8_t* out, M gap, M down, M new_h, M new_v) {
        // Narrowed pairs of masks, one per 8-byte half: [gap | down], [new_h | new_v].
        const uint8x16_t gd = vcombine_u8(vmovn_u16(gap), vmovn_u16(down));
        const uint8x16_t hv = vcombine_u8(vmovn_u16(new_h), vmovn_u16(new_v));
        const uint8x8_t x = vget_low_u8(cell_nibbles(gd, vextq_u8(gd, gd, 8), hv, vextq_u8(hv, hv, 8)));
        const uint8x8_t packed = vsli_n_u8(x, vext_u8(x, x, 4), 4);  // bytes 0-3: lanes k | k+4
        vst1_lane_u32(reinterpret_cast<uint32_t*>(out), vreinterpret_u32_u8(packed), 0);
    }
};
#include "sw_cpu_diff_kernel.h"
}  // namespace w16
}  // namespace neon
}  // namespace
}  // namespace sw_cpu
}  // namespace pyphmm
#endif  // __aarch64__
