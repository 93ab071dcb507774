// Portable definitions of the AVX-512 intrinsics the Smith-Waterman
// difference fill uses (native/cpu/sw_cpu_fill_isa.h), for
// tests/native/sw_avx512_check.cc: force-included (-include) before
// native/cpu/sw_cpu_fill.cc with -DPYPHMM_SW_EMULATE_AVX512, so that file's
// AVX-512 instances, unchanged, run on CPUs without AVX-512 (with AVX2: the
// 256-bit half vectors use AVX2's own intrinsics, and AVX512VL's mask
// compares defined here). Each
// definition follows Intel's description of the intrinsic, lane by lane.
// The real header comes first (its include guard then keeps the library
// file from reading it again); macros rename the intrinsics and types the
// kernel names to the definitions here.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace sw_avx512_emulation {

struct V512 {
    uint8_t b[64];
};
typedef uint32_t Mask32;
typedef uint64_t Mask64;

template <typename T>
inline T lane(const V512& v, int k) {
    T x;
    std::memcpy(&x, v.b + k * sizeof(T), sizeof(T));
    return x;
}

template <typename T>
inline void set_lane(V512& v, int k, T x) {
    std::memcpy(v.b + k * sizeof(T), &x, sizeof(T));
}

// Lane-wise f(a, b) over the 64 / sizeof(T) lanes of type T, wrapping
// arithmetic as the instructions do.
template <typename T, typename F>
inline V512 map2(const V512& a, const V512& b, F f) {
    V512 r;
    for (int k = 0; k < 64 / static_cast<int>(sizeof(T)); ++k)
        set_lane<T>(r, k, static_cast<T>(f(lane<T>(a, k), lane<T>(b, k))));
    return r;
}

template <typename T, typename F>
inline uint64_t cmp_mask(const V512& a, const V512& b, F f) {
    uint64_t m = 0;
    for (int k = 0; k < 64 / static_cast<int>(sizeof(T)); ++k)
        if (f(lane<T>(a, k), lane<T>(b, k))) m |= uint64_t(1) << k;
    return m;
}

template <typename T>
inline V512 blend(uint64_t m, const V512& a, const V512& b) {  // b where the mask bit is set
    V512 r;
    for (int k = 0; k < 64 / static_cast<int>(sizeof(T)); ++k)
        set_lane<T>(r, k, (m >> k) & 1 ? lane<T>(b, k) : lane<T>(a, k));
    return r;
}

template <typename T>
inline V512 set1(T x) {
    V512 r;
    for (int k = 0; k < 64 / static_cast<int>(sizeof(T)); ++k) set_lane<T>(r, k, x);
    return r;
}

inline V512 loadu(const void* p) {
    V512 r;
    std::memcpy(r.b, p, 64);
    return r;
}
inline void storeu(void* p, const V512& v) { std::memcpy(p, v.b, 64); }

// Concatenation b (low) : a (high) in units of 8 bytes, shifted down by imm units.
inline V512 alignr64(const V512& a, const V512& b, int imm) {
    uint8_t cat[128];
    std::memcpy(cat, b.b, 64);
    std::memcpy(cat + 64, a.b, 64);
    V512 r;
    std::memcpy(r.b, cat + 8 * (imm & 7), 64);
    return r;
}

// Per 128-bit lane: the concatenation b (low) : a (high) shifted down by imm
// bytes, zeros shifted in.
inline V512 alignr8(const V512& a, const V512& b, int imm) {
    V512 r;
    for (int l = 0; l < 4; ++l)
        for (int k = 0; k < 16; ++k) {
            const int x = k + imm;
            r.b[16 * l + k] = x < 16 ? b.b[16 * l + x] : x < 32 ? a.b[16 * l + x - 16] : 0;
        }
    return r;
}

// Lane k: lane idx[k] of the 128 lanes of a (0-63) then b (64-127).
inline V512 permute2_8(const V512& a, const V512& idx, const V512& b) {
    V512 r;
    for (int k = 0; k < 64; ++k) {
        const int j = idx.b[k] & 127;
        r.b[k] = j < 64 ? a.b[j] : b.b[j - 64];
    }
    return r;
}

#pragma GCC push_options
#pragma GCC target("avx2")
inline __m256i cast256(const V512& v) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v.b)); }
inline V512 widen256(__m256i x) {  // lanes 32-63 undefined in the instruction; zero here
    V512 r = {};
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(r.b), x);
    return r;
}

// AVX512VL's 256-bit mask compares and blend, on AVX2 vectors.
template <typename F>
inline uint32_t cmp_mask256(__m256i a, __m256i b, F f) {
    int8_t x[32], y[32];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), b);
    uint32_t m = 0;
    for (int k = 0; k < 32; ++k)
        if (f(x[k], y[k])) m |= uint32_t(1) << k;
    return m;
}
inline __m256i blend256(uint32_t m, __m256i a, __m256i b) {  // b where the mask bit is set
    int8_t x[32], y[32];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), b);
    for (int k = 0; k < 32; ++k)
        if ((m >> k) & 1) x[k] = y[k];
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
}

#pragma GCC pop_options

inline __m128i cast128(const V512& v) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(v.b)); }

inline int8_t add8(int8_t a, int8_t b) {
    return static_cast<int8_t>(static_cast<uint8_t>(a) + static_cast<uint8_t>(b));
}
inline int16_t add16(int16_t a, int16_t b) {
    return static_cast<int16_t>(static_cast<uint16_t>(a) + static_cast<uint16_t>(b));
}
inline int8_t sub8(int8_t a, int8_t b) {
    return static_cast<int8_t>(static_cast<uint8_t>(a) - static_cast<uint8_t>(b));
}
inline int16_t sub16(int16_t a, int16_t b) {
    return static_cast<int16_t>(static_cast<uint16_t>(a) - static_cast<uint16_t>(b));
}

}  // namespace sw_avx512_emulation

namespace swe = sw_avx512_emulation;

#define __m512i                      swe::V512
#define __mmask32                    swe::Mask32
#define __mmask64                    swe::Mask64
#define _mm512_loadu_si512(p)        swe::loadu(p)
#define _mm512_storeu_si512(p, v)    swe::storeu(p, v)
#define _mm512_set1_epi8(x)          swe::set1<int8_t>(x)
#define _mm512_set1_epi16(x)         swe::set1<int16_t>(x)
#define _mm512_add_epi8(a, b)        swe::map2<int8_t>(a, b, swe::add8)
#define _mm512_add_epi16(a, b)       swe::map2<int16_t>(a, b, swe::add16)
#define _mm512_sub_epi8(a, b)        swe::map2<int8_t>(a, b, swe::sub8)
#define _mm512_sub_epi16(a, b)       swe::map2<int16_t>(a, b, swe::sub16)
#define _mm512_max_epi8(a, b)        swe::map2<int8_t>(a, b, [](int8_t x, int8_t y) { return x > y ? x : y; })
#define _mm512_max_epi16(a, b)       swe::map2<int16_t>(a, b, [](int16_t x, int16_t y) { return x > y ? x : y; })
#define _mm512_cmpeq_epi8_mask(a, b) swe::cmp_mask<int8_t>(a, b, [](int8_t x, int8_t y) { return x == y; })
#define _mm512_cmpeq_epi16_mask(a, b) \
    static_cast<swe::Mask32>(swe::cmp_mask<int16_t>(a, b, [](int16_t x, int16_t y) { return x == y; }))
#define _mm512_cmpgt_epi8_mask(a, b) swe::cmp_mask<int8_t>(a, b, [](int8_t x, int8_t y) { return x > y; })
#define _mm512_cmpgt_epi16_mask(a, b) \
    static_cast<swe::Mask32>(swe::cmp_mask<int16_t>(a, b, [](int16_t x, int16_t y) { return x > y; }))
#define _mm512_mask_blend_epi8(m, a, b)     swe::blend<int8_t>(m, a, b)
#define _mm512_mask_blend_epi16(m, a, b)    swe::blend<int16_t>(m, a, b)
// dst[31:0] = b[31:0], dst[63:32] = a[31:0]
#define _mm512_kunpackd(a, b)               ((static_cast<swe::Mask64>(a) << 32) | (static_cast<swe::Mask64>(b) & 0xffffffffu))
#define _store_mask64(p, m)                 (*(p) = (m))
#define _mm512_alignr_epi64(a, b, imm)      swe::alignr64(a, b, imm)
#define _mm512_alignr_epi8(a, b, imm)       swe::alignr8(a, b, imm)
#define _mm512_castsi512_si128(v)           swe::cast128(v)
#define _mm512_permutex2var_epi8(a, idx, b) swe::permute2_8(a, idx, b)
#define _mm512_castsi512_si256(v)           swe::cast256(v)
#define _mm512_castsi256_si512(x)           swe::widen256(x)
#define _mm256_cmpeq_epi8_mask(a, b)        swe::cmp_mask256(a, b, [](int8_t x, int8_t y) { return x == y; })
#define _mm256_cmpgt_epi8_mask(a, b)        swe::cmp_mask256(a, b, [](int8_t x, int8_t y) { return x > y; })
#define _mm256_mask_blend_epi8(m, a, b)     swe::blend256(m, a, b)
