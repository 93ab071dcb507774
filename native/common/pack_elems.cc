// See pack_elems.h. The AVX2 path maps 16 bases at a time with two byte
// shuffles (the mask and the one byte that earns it, both indexed by the low
// nibble) and builds eight 32-bit elements per step from zero-extended bytes;
// the scalar loop costs ~1.5 ns per element, mostly the table load and the
// five narrow loads, which made packing ~13 us of a ~56 us GPU call.
#include "common/pack_elems.h"

#include <immintrin.h>

#include <cstdlib>
#include <cstring>

namespace pyphmm {

namespace {

struct MaskTable {
    uint8_t v[256];
    constexpr MaskTable() : v() {
        for (int i = 0; i < 256; ++i) v[i] = 1;
        v['A'] = 1;
        v['C'] = 2;
        v['G'] = 4;
        v['T'] = 8;
        v['N'] = 15;
    }
};
constexpr MaskTable kTable;

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
    return kTable.v[b] | uint32_t(q & 127) << 4 | uint32_t(i & 127) << 11 | uint32_t(d & 127) << 18 |
           uint32_t(c & 127) << 25;
}

#define PYPHMM_AVX2 __attribute__((target("avx2")))

// Masks of 16 bytes: the low nibble picks the candidate mask and the byte it
// belongs to ('A' 0x41, 'C' 0x43, 'G' 0x47, 'T' 0x54, 'N' 0x4E have distinct
// low nibbles); a byte that is not exactly that one gets 1 (A).
PYPHMM_AVX2 inline __m128i masks16(__m128i b) {
    const __m128i want = _mm_setr_epi8(0, 'A', 0, 'C', 'T', 0, 0, 'G', 0, 0, 0, 0, 0, 0, 'N', 0);
    const __m128i mask = _mm_setr_epi8(1, 1, 1, 2, 8, 1, 1, 4, 1, 1, 1, 1, 1, 1, 15, 1);
    const __m128i nib = _mm_and_si128(b, _mm_set1_epi8(15));
    const __m128i hit = _mm_cmpeq_epi8(b, _mm_shuffle_epi8(want, nib));
    return _mm_blendv_epi8(_mm_set1_epi8(1), _mm_shuffle_epi8(mask, nib), hit);
}

// Planes of 16 bytes, by the same low-nibble shuffle as masks16.
PYPHMM_AVX2 inline __m128i planes16(__m128i b) {
    const __m128i want = _mm_setr_epi8(0, 'A', 0, 'C', 'T', 0, 0, 'G', 0, 0, 0, 0, 0, 0, 'N', 0);
    const __m128i plane = _mm_setr_epi8(0, 0, 0, 1, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0, 4, 0);
    const __m128i nib = _mm_and_si128(b, _mm_set1_epi8(15));
    const __m128i hit = _mm_cmpeq_epi8(b, _mm_shuffle_epi8(want, nib));
    return _mm_and_si128(_mm_shuffle_epi8(plane, nib), hit);
}

PYPHMM_AVX2 void base_planes_avx2(const uint8_t* src, int64_t n, uint8_t* dst) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                         planes16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))));
    for (; j < n; ++j) dst[j] = kPlanes.v[src[j]];
}

PYPHMM_AVX2 void base_masks_avx2(const uint8_t* src, int64_t n, uint8_t* dst) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                         masks16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))));
    for (; j < n; ++j) dst[j] = kTable.v[src[j]];
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

PYPHMM_AVX2 void read_elems_avx2(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins,
                                 const uint8_t* dels, const uint8_t* gcp, int64_t m, uint32_t* dst) {
    auto load = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
    int64_t j = 0;
    for (; j + 16 <= m; j += 16) {
        const __m128i b = masks16(load(bases + j)), q = load(quals + j), i = load(ins + j), d = load(dels + j),
                      c = load(gcp + j);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), elems8(b, q, i, d, c));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j + 8),
                            elems8(_mm_srli_si128(b, 8), _mm_srli_si128(q, 8), _mm_srli_si128(i, 8),
                                   _mm_srli_si128(d, 8), _mm_srli_si128(c, 8)));
    }
    for (; j < m; ++j) dst[j] = elem(bases[j], quals[j], ins[j], dels[j], gcp[j]);
}

bool use_avx2() {
    static const bool v = [] {
        const char* e = std::getenv("PYPHMM_PACK_SCALAR");
        return !(e && *e && std::strcmp(e, "0") != 0) && __builtin_cpu_supports("avx2");
    }();
    return v;
}

}  // namespace

void pack_base_masks_scalar(const uint8_t* src, int64_t n, uint8_t* dst) {
    for (int64_t j = 0; j < n; ++j) dst[j] = kTable.v[src[j]];
}

void pack_base_planes_scalar(const uint8_t* src, int64_t n, uint8_t* dst) {
    for (int64_t j = 0; j < n; ++j) dst[j] = kPlanes.v[src[j]];
}

void pack_base_planes(const uint8_t* src, int64_t n, uint8_t* dst) {
    if (use_avx2())
        base_planes_avx2(src, n, dst);
    else
        pack_base_planes_scalar(src, n, dst);
}

void pack_read_elems_scalar(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                            const uint8_t* gcp, int64_t m, uint32_t* dst) {
    for (int64_t j = 0; j < m; ++j) dst[j] = elem(bases[j], quals[j], ins[j], dels[j], gcp[j]);
}

void pack_base_masks(const uint8_t* src, int64_t n, uint8_t* dst) {
    if (use_avx2())
        base_masks_avx2(src, n, dst);
    else
        pack_base_masks_scalar(src, n, dst);
}

void pack_read_elems(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                     const uint8_t* gcp, int64_t m, uint32_t* dst) {
    if (use_avx2())
        read_elems_avx2(bases, quals, ins, dels, gcp, m, dst);
    else
        pack_read_elems_scalar(bases, quals, ins, dels, gcp, m, dst);
}

}  // namespace pyphmm
