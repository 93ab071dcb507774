// See pack_elems.h. One table classifies a base byte into its plane (A=0
// C=1 G=2 T=3 N=4, anything else A); the read elements' base mask is derived
// from the plane (A=1 C=2 G=4 T=8 N=15). The AVX2 path classifies 16 bytes
// at a time with two byte shuffles indexed by the low nibble (the plane and
// the one byte that earns it: 'A' 0x41, 'C' 0x43, 'G' 0x47, 'T' 0x54,
// 'N' 0x4E have distinct low nibbles) and builds eight 32-bit elements per
// step from zero-extended bytes; the scalar loop costs ~1.5 ns per element,
// mostly the table load and the five narrow loads, which made packing
// ~13 us of a ~56 us GPU call.
#include "common/pack_elems.h"

#include "common/config.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PYPHMM_PACK_AVX2 1
#endif

#include <cstdlib>
#include <cstring>

namespace pyphmm {

namespace {

constexpr uint8_t kMaskOfPlane[5] = {1, 2, 4, 8, 15};

struct PlaneTable {
    uint8_t v[256];
    constexpr PlaneTable() : v() {
        for (int i = 0; i < 256; ++i) v[i] = 0;
        v['C'] = 1;
        v['G'] = 2;
        v['T'] = 3;
        v['N'] = 4;
    }
};
constexpr PlaneTable kPlanes;

inline uint32_t elem(uint8_t b, uint8_t q, uint8_t i, uint8_t d, uint8_t c) {
    return kMaskOfPlane[kPlanes.v[b]] | uint32_t(q & 127) << 4 | uint32_t(i & 127) << 11 | uint32_t(d & 127) << 18 |
           uint32_t(c & 127) << 25;
}

#if PYPHMM_PACK_AVX2
#define PYPHMM_AVX2 __attribute__((target("avx2")))

PYPHMM_AVX2 inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Planes of 16 bytes (see the file comment).
PYPHMM_AVX2 inline __m128i planes16(__m128i b) {
    const __m128i want = _mm_setr_epi8(0, 'A', 0, 'C', 'T', 0, 0, 'G', 0, 0, 0, 0, 0, 0, 'N', 0);
    const __m128i plane = _mm_setr_epi8(0, 0, 0, 1, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0, 4, 0);
    const __m128i nib = _mm_and_si128(b, _mm_set1_epi8(15));
    const __m128i hit = _mm_cmpeq_epi8(b, _mm_shuffle_epi8(want, nib));
    return _mm_and_si128(_mm_shuffle_epi8(plane, nib), hit);
}

// Base masks of 16 bytes, from their planes.
PYPHMM_AVX2 inline __m128i masks16(__m128i b) {
    const __m128i mask = _mm_setr_epi8(1, 2, 4, 8, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm_shuffle_epi8(mask, planes16(b));
}

PYPHMM_AVX2 void base_planes_avx2(const uint8_t* src, int64_t n, uint8_t* dst) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), planes16(load16(src + j)));
    for (; j < n; ++j) dst[j] = kPlanes.v[src[j]];
}

// Eight elements from the 8 bytes at each stream's position (zero-extended).
PYPHMM_AVX2 inline __m256i elems8(__m128i b, __m128i q, __m128i i, __m128i d, __m128i c) {
    const __m256i m7 = _mm256_set1_epi32(127);
    __m256i e = _mm256_cvtepu8_epi32(b);
    e = _mm256_or_si256(e, _mm256_slli_epi32(_mm256_and_si256(_mm256_cvtepu8_epi32(q), m7), 4));
    e = _mm256_or_si256(e, _mm256_slli_epi32(_mm256_and_si256(_mm256_cvtepu8_epi32(i), m7), 11));
    e = _mm256_or_si256(e, _mm256_slli_epi32(_mm256_and_si256(_mm256_cvtepu8_epi32(d), m7), 18));
    return _mm256_or_si256(e, _mm256_slli_epi32(_mm256_and_si256(_mm256_cvtepu8_epi32(c), m7), 25));
}

PYPHMM_AVX2 void read_elems_avx2(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                                 const uint8_t* gcp, int64_t m, uint32_t* dst) {
    int64_t j = 0;
    for (; j + 16 <= m; j += 16) {
        const __m128i b = masks16(load16(bases + j)), q = load16(quals + j), i = load16(ins + j), d = load16(dels + j),
                      c = load16(gcp + j);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), elems8(b, q, i, d, c));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j + 8),
                            elems8(_mm_srli_si128(b, 8), _mm_srli_si128(q, 8), _mm_srli_si128(i, 8),
                                   _mm_srli_si128(d, 8), _mm_srli_si128(c, 8)));
    }
    for (; j < m; ++j) dst[j] = elem(bases[j], quals[j], ins[j], dels[j], gcp[j]);
}

bool use_avx2() {
    static const bool v = [] { return !config::on(config::Knob::kPackScalar) && __builtin_cpu_supports("avx2"); }();
    return v;
}
#endif  // PYPHMM_PACK_AVX2 (other architectures pack with the scalar loops)

}  // namespace

void pack_base_planes_scalar(const uint8_t* src, int64_t n, uint8_t* dst) {
    for (int64_t j = 0; j < n; ++j) dst[j] = kPlanes.v[src[j]];
}

void pack_read_elems_scalar(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                            const uint8_t* gcp, int64_t m, uint32_t* dst) {
    for (int64_t j = 0; j < m; ++j) dst[j] = elem(bases[j], quals[j], ins[j], dels[j], gcp[j]);
}

void pack_base_planes(const uint8_t* src, int64_t n, uint8_t* dst) {
#if PYPHMM_PACK_AVX2
    if (use_avx2()) return base_planes_avx2(src, n, dst);
#endif
    pack_base_planes_scalar(src, n, dst);
}

void pack_read_elems(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                     const uint8_t* gcp, int64_t m, uint32_t* dst) {
#if PYPHMM_PACK_AVX2
    if (use_avx2()) return read_elems_avx2(bases, quals, ins, dels, gcp, m, dst);
#endif
    pack_read_elems_scalar(bases, quals, ins, dels, gcp, m, dst);
}

}  // namespace pyphmm
