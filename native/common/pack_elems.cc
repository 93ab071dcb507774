// See pack_elems.h. One table classifies a base byte into its plane (A=0
// C=1 G=2 T=3 N=4, anything else A); the read elements' base mask follows
// from the plane (A=1 C=2 G=4 T=8 N=15). The AVX2 path classifies 16 or 32
// bytes at a time with byte shuffles indexed by the low nibble ('A' 0x41,
// 'C' 0x43, 'G' 0x47, 'T' 0x54, 'N' 0x4E have distinct low nibbles, so a
// nibble names one candidate byte and its plane or mask). Read elements are
// built 32 at a time as four byte vectors, one per byte of the element,
// then interleaved: fewer instructions per element than widening each
// field to 32 bits, and a per-region GPU call waits for the packing.
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

// The byte that earns each low nibble its base (see the file comment).
PYPHMM_AVX2 inline __m128i base_of_nibble() {
    return _mm_setr_epi8(0, 'A', 0, 'C', 'T', 0, 0, 'G', 0, 0, 0, 0, 0, 0, 'N', 0);
}

// Planes of 16 bytes.
PYPHMM_AVX2 inline __m128i planes16(__m128i b) {
    const __m128i want = base_of_nibble();
    const __m128i plane = _mm_setr_epi8(0, 0, 0, 1, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0, 4, 0);
    const __m128i nib = _mm_and_si128(b, _mm_set1_epi8(15));
    const __m128i hit = _mm_cmpeq_epi8(b, _mm_shuffle_epi8(want, nib));
    return _mm_and_si128(_mm_shuffle_epi8(plane, nib), hit);
}

// Planes of n bytes; a haplotype's last block ends at n and may overlap the
// one before.
PYPHMM_AVX2 void base_planes_avx2(const uint8_t* src, int64_t n, uint8_t* dst) {
    if (n < 16) return pack_base_planes_scalar(src, n, dst);
    for (int64_t j = 0;; j += 16) {
        const int64_t at = j + 16 <= n ? j : n - 16;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + at), planes16(load16(src + at)));
        if (at + 16 >= n) break;
    }
}

// 32 base masks from 32 bytes: the mask of the byte's nibble where the byte
// is that nibble's base (base_of_nibble), else A's mask (1).
PYPHMM_AVX2 inline __m256i masks32(__m256i b) {
    const __m256i want = _mm256_broadcastsi128_si256(base_of_nibble());
    const __m256i mask = _mm256_broadcastsi128_si256(_mm_setr_epi8(1, 1, 1, 2, 8, 1, 1, 4, 1, 1, 1, 1, 1, 1, 15, 1));
    const __m256i nib = _mm256_and_si256(b, _mm256_set1_epi8(15));
    const __m256i hit = _mm256_cmpeq_epi8(b, _mm256_shuffle_epi8(want, nib));
    return _mm256_blendv_epi8(_mm256_set1_epi8(1), _mm256_shuffle_epi8(mask, nib), hit);
}

PYPHMM_AVX2 inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
PYPHMM_AVX2 inline __m256i bits8(__m256i x, char keep) { return _mm256_and_si256(x, _mm256_set1_epi8(keep)); }

// Elements j..j+31, built as their four bytes (each field's bits are masked
// before a 16-bit shift, so no bit crosses into the neighbouring byte) and
// interleaved; ORs the transition bytes' differences from the first
// element's into *diff.
PYPHMM_AVX2 inline void elems32(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                                const uint8_t* gcp, int64_t j, const __m256i (&first)[3], __m256i* diff,
                                uint32_t* dst) {
    const __m256i q = load32(quals + j), i = load32(ins + j), d = load32(dels + j), c = load32(gcp + j);
    *diff = _mm256_or_si256(
        *diff, _mm256_or_si256(_mm256_xor_si256(i, first[0]),
                               _mm256_or_si256(_mm256_xor_si256(d, first[1]), _mm256_xor_si256(c, first[2]))));
    // bits 0-3 mask, 4-10 quality, 11-17 insertion, 18-24 deletion, 25-31 gap continuation
    const __m256i b0 = _mm256_or_si256(masks32(load32(bases + j)), _mm256_slli_epi16(bits8(q, 0x0f), 4));
    const __m256i b1 = _mm256_or_si256(_mm256_srli_epi16(bits8(q, 0x70), 4), _mm256_slli_epi16(bits8(i, 0x1f), 3));
    const __m256i b2 = _mm256_or_si256(_mm256_srli_epi16(bits8(i, 0x60), 5), _mm256_slli_epi16(bits8(d, 0x3f), 2));
    const __m256i b3 = _mm256_or_si256(_mm256_srli_epi16(bits8(d, 0x40), 6), _mm256_slli_epi16(bits8(c, 0x7f), 1));
    // The unpacks work within 128-bit lanes: e0 holds elements 0-3 and
    // 16-19, e1 4-7 and 20-23, e2 8-11 and 24-27, e3 12-15 and 28-31.
    const __m256i lo01 = _mm256_unpacklo_epi8(b0, b1), hi01 = _mm256_unpackhi_epi8(b0, b1);
    const __m256i lo23 = _mm256_unpacklo_epi8(b2, b3), hi23 = _mm256_unpackhi_epi8(b2, b3);
    const __m256i e0 = _mm256_unpacklo_epi16(lo01, lo23), e1 = _mm256_unpackhi_epi16(lo01, lo23);
    const __m256i e2 = _mm256_unpacklo_epi16(hi01, hi23), e3 = _mm256_unpackhi_epi16(hi01, hi23);
    __m256i* out = reinterpret_cast<__m256i*>(dst + j);
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(e0, e1, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(e2, e3, 0x20));
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(e0, e1, 0x31));
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(e2, e3, 0x31));
}

// Reads shorter than one block take the scalar loop; a longer read's last
// block ends at m and may overlap the one before (it rewrites equal values).
PYPHMM_AVX2 bool read_elems_avx2(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                                 const uint8_t* gcp, int64_t m, uint32_t* dst) {
    if (m < 32) return pack_read_elems_scalar(bases, quals, ins, dels, gcp, m, dst);
    const __m256i first[3] = {_mm256_set1_epi8(static_cast<char>(ins[0])), _mm256_set1_epi8(static_cast<char>(dels[0])),
                              _mm256_set1_epi8(static_cast<char>(gcp[0]))};
    __m256i diff = _mm256_setzero_si256();
    for (int64_t j = 0;; j += 32) {
        const int64_t at = j + 32 <= m ? j : m - 32;
        elems32(bases, quals, ins, dels, gcp, at, first, &diff, dst);
        if (at + 32 >= m) break;
    }
    return _mm256_testz_si256(diff, _mm256_set1_epi8(127)) != 0;
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

bool pack_read_elems_scalar(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                            const uint8_t* gcp, int64_t m, uint32_t* dst) {
    unsigned diff = 0;
    for (int64_t j = 0; j < m; ++j) {
        dst[j] = elem(bases[j], quals[j], ins[j], dels[j], gcp[j]);
        diff |= (ins[j] ^ ins[0]) | (dels[j] ^ dels[0]) | (gcp[j] ^ gcp[0]);
    }
    return (diff & 127u) == 0;
}

void pack_base_planes(const uint8_t* src, int64_t n, uint8_t* dst) {
#if PYPHMM_PACK_AVX2
    if (use_avx2()) return base_planes_avx2(src, n, dst);
#endif
    pack_base_planes_scalar(src, n, dst);
}

bool pack_read_elems(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                     const uint8_t* gcp, int64_t m, uint32_t* dst) {
#if PYPHMM_PACK_AVX2
    if (use_avx2()) return read_elems_avx2(bases, quals, ins, dels, gcp, m, dst);
#endif
    return pack_read_elems_scalar(bases, quals, ins, dels, gcp, m, dst);
}

}  // namespace pyphmm
