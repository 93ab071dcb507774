// What the GPU PDHMM's host planning (pdhmm_plan.h) and its kernels
// (pdhmm_kernels.cuh) agree on: the pair descriptor, the packed read row,
// the haplotype column code that carries a PD byte's meaning for the
// kernels, the per-cell match test and the bins of read lengths. Plain C++
// for the host compiler (and the kernel emulator), host-and-device
// functions under nvcc.
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/pd_tables.h"

#ifdef __CUDACC__
#define PYPHMM_PD_HD __host__ __device__
#else
#define PYPHMM_PD_HD
#endif

namespace pyphmm {
namespace pdk {

// Threads per block of the PDHMM kernel: one warp (a small call spreads
// over the SMs), and its registers' bound: ptxas fits the kernel into 168
// registers a thread, so an SM holds 12 warps (3 in each quarter of its
// register file) instead of 8.
constexpr int kPdBlock = 32;
constexpr int kPdMinBlocksPerSm = 12;

// One read x haplotype pair, in the order the kernels take them (sorted by
// bin, then by haplotype length).
struct PdPairDesc {
    uint32_t roff;  // first row of the read in the chunk's read rows
    uint32_t hoff;  // first column code of the haplotype in the chunk's codes (a multiple of 4)
    int32_t m;      // read length, >= 1
    int32_t n;      // haplotype length, >= 1
    int32_t out;    // index of the pair's sum in the chunk's results
};

// ---- read rows -------------------------------------------------------------
// A read row: x = base | quality << 8 | insertion << 16 | deletion << 24,
// y = gap continuation (raw phred values; validation keeps base qualities
// <= 254 and the gap qualities <= 127).
struct PdRowElem {
    uint32_t x, y;
};
inline PdRowElem pd_row_elem(uint8_t base, uint8_t qual, uint8_t ins, uint8_t del, uint8_t gcp) {
    return {uint32_t(base) | uint32_t(qual) << 8 | uint32_t(ins) << 16 | uint32_t(del) << 24, gcp};
}

// ---- a row's gap terms ---------------------------------------------------------
// GKL's match-to-match entries of gap qualities up to kPdMaxGapQual, at
// pd_m2m_index(ins, del).
constexpr int kPdM2mEntries = (kPdMaxGapQual + 1) * (kPdMaxGapQual + 2) / 2;
PYPHMM_PD_HD inline uint32_t pd_m2m_index(uint32_t ins, uint32_t del) {
    const uint32_t lo = ins < del ? ins : del, hi = ins < del ? del : ins;
    return hi * (hi + 1) / 2 + lo;
}

// The ratio of a row's match sum (PdGaps, pdhmm_kernels.cuh: gm = 1 - cont
// against mm, the smaller over the larger, 0 when both are 0) is a table
// entry for each (continuation, match-to-match entry): pd_kernel_tables
// divides on the host, pd_ratio_index finds it, so a lane's prologue loads
// its rows' ratios instead of dividing. (IEEE division is correctly rounded
// on host and device alike: the bits are the kernel's own division's.)
PYPHMM_PD_HD inline bool pd_form_b(double gm, double mm) { return gm > mm; }
inline double pd_gap_ratio(double gm, double mm) {
    const bool formb = pd_form_b(gm, mm);
    const double mult = formb ? gm : mm;
    return mult > 0.0 ? (formb ? mm : gm) / mult : 0.0;
}
PYPHMM_PD_HD inline uint32_t pd_ratio_index(uint32_t gcp, uint32_t m2m_index) {
    return gcp * kPdM2mEntries + m2m_index;
}

// ---- haplotype column codes ---------------------------------------------------
// A column's code (one uint32 per haplotype base, computed once per
// haplotype by pd_column_codes):
//   bits 0-7   the haplotype byte y
//   bits 8-15  kClassBits: one bit per read base class A, C, G, T, a, c, g,
//              t, set where a read base of the class matches the column
//   bit 16     kDelEnd: the PD byte has DEL_END
//   bit 17     kCap for rows >= 2 (below)
//   bit 18     kCap for row 1 (row 1 starts in the normal state; later
//              rows start in the state the previous row ended in, GKL's
//              serial code: see pd_column_codes)
//   bit 24     y == 'N' (every read base matches)
//   bits 25-28 at a SNP position, its A, C, G, T bits (else 0)
//   bit 31     set in every column (a read 'N' matches every column)
// A read row's code (pd_read_code): its byte, its class bit (if any), bit
// 24, the A/C/G/T bit of a base in either case at bits 25-28, and bit 31
// for 'N'. GKL's match rule (equal bytes, 'N' on either side, or a read
// base among a SNP position's bases) is pd_matches: equal bytes, or a
// shared bit of kMatchBits. For a read byte that is A, C, G, T in either
// case or N it is also pd_matches_fast, one bit test (the plain steps'):
// a shared bit of kFastBits.
constexpr int kClassShift = 8;
constexpr uint32_t kClassBits = 0xFFu << kClassShift;
constexpr uint32_t kDelEnd = 1u << 16;
constexpr uint32_t kCap = 1u << 17;
constexpr int kRow1Shift = 1;  // row 1's kCap sits this many bits above the others'
constexpr uint32_t kHapN = 1u << 24;
constexpr int kSnpShift = 25;
constexpr uint32_t kAnyColumn = 1u << 31;
constexpr uint32_t kMatchBits = kAnyColumn | kHapN | (0xFu << kSnpShift);
constexpr uint32_t kFastBits = kAnyColumn | kClassBits;
// A column where a row captures its branch values, in either row class.
constexpr uint32_t kCapBoth = kCap | (kCap << kRow1Shift);

// A base's class (A, C, G, T: 0-3; a, c, g, t: 4-7), -1 for other bytes.
PYPHMM_PD_HD constexpr int pd_base_class(uint32_t x) {
    switch (x) {
        case 'A': return 0;
        case 'C': return 1;
        case 'G': return 2;
        case 'T': return 3;
        case 'a': return 4;
        case 'c': return 5;
        case 'g': return 6;
        case 't': return 7;
        default: return -1;
    }
}

// The deletion state that applies to a column (GKL's NORMAL, INSIDE_DEL,
// AFTER_DEL) and the one that applies to the next column after a column
// with PD byte pd: DEL_END wins over DEL_START.
enum PdState : int { kNormal = 0, kInsideDel = 1, kAfterDel = 2 };
constexpr uint8_t kPdBitSnp = 1, kPdBitDelStart = 2, kPdBitDelEnd = 4;
PYPHMM_PD_HD constexpr int pd_next_state(int s, uint8_t pd) {
    if (pd & kPdBitDelEnd) return kAfterDel;
    if (pd & kPdBitDelStart) return kInsideDel;
    return s == kAfterDel ? kNormal : s;
}

// The recurrence reformulated for the kernels (pdhmm_kernels.cuh derives
// it from GKL's): a cell (i, j) keeps L = its M, X, Y merged for the next
// column (max with the branch values B(i, j) where column j has DEL_END,
// i.e. the next column is AFTER_DEL), and B(i, j) = L(i, j - 1) unless
// column j is INSIDE_DEL, where B(i, j) = B(i, j - 1). Only DEL_END
// columns read B. A row keeps one B, captured (kCap) before the step of a
// column j that is not INSIDE_DEL where B(i, j) = L(i, j - 1) will be
// read: where column j + 1 starts a span (B(i, j + 1) = B(i, j)), or
// where column j has DEL_END itself. Inside a span the captured value
// stays; past a DEL_END column it is not read before the next capture.
//
// The state at column 1 of row 1 is NORMAL; every later row starts in the
// state the row before ended in (GKL's serial code carries it). Where the
// PD bytes have a DEL_START or DEL_END, the state after the last column
// does not depend on the state before the first, so every row from 2 on
// starts in the same state: the one row 1 ends in. Hence two row classes.
//
// pd_column_codes (pdhmm_plan.cc) runs on tables (a code is a haplotype
// byte's bits, a PD byte's bits and the two capture flags; the states step
// by the PD byte's DEL_START and DEL_END bits): no branch per column.
struct PdCodeTables {
    uint32_t hap[256];   // a haplotype byte's bits
    uint32_t pd[256];    // a PD byte's SNP bits and kDelEnd
    uint8_t next[3][4];  // pd_next_state by the PD byte's (DEL_END, DEL_START) bits
    uint32_t cap[3][4];  // kCap where a row in that state at such a column captures
    constexpr PdCodeTables() : hap(), pd(), next(), cap() {
        for (int v = 0; v < 256; ++v) {
            uint32_t c = uint32_t(v) | kAnyColumn;
            if (v == 'N') c |= kHapN | kClassBits;
            const int cv = pd_base_class(uint32_t(v));
            if (cv >= 0) c |= 1u << (kClassShift + cv);
            hap[v] = c;
            // a SNP position matches both cases of its bases
            const uint32_t snp = v & kPdBitSnp ? (uint32_t(v) >> 3) & 0xFu : 0u;
            pd[v] =
                snp << kSnpShift | snp << kClassShift | snp << (kClassShift + 4) | (v & kPdBitDelEnd ? kDelEnd : 0u);
        }
        for (int st = 0; st < 3; ++st)
            for (int b = 0; b < 4; ++b) {
                const uint8_t p = static_cast<uint8_t>(b << 1);
                const int n = pd_next_state(st, p);
                next[st][b] = static_cast<uint8_t>(n);
                cap[st][b] = st != kInsideDel && (n == kInsideDel || (p & kPdBitDelEnd)) ? kCap : 0u;
            }
    }
};
inline constexpr PdCodeTables kPdCodeTables{};

// A read byte's code.
PYPHMM_PD_HD inline uint32_t pd_read_code(uint32_t x) {
    const int c = pd_base_class(x);
    uint32_t r = x | kHapN;
    if (c >= 0) r |= 1u << (kClassShift + c) | 1u << (kSnpShift + (c & 3));
    if (x == 'N') r |= kAnyColumn;
    return r;
}

// Whether pd_matches_fast is not GKL's rule for a read byte, from its code:
// no class bit and not 'N'.
PYPHMM_PD_HD inline bool pd_code_exotic(uint32_t code) { return (code & kClassBits) == 0u && (code & 0xFFu) != 'N'; }

// GKL's match rule: equal bytes, 'N' on either side, or a read base among
// a SNP position's bases.
PYPHMM_PD_HD inline bool pd_matches(uint32_t column, uint32_t read) {
    return ((column ^ read) & 0xFFu) == 0u || (column & read & kMatchBits) != 0u;
}
// The same for a read byte that is not exotic.
PYPHMM_PD_HD inline bool pd_matches_fast(uint32_t column, uint32_t read) { return (column & read & kFastBits) != 0u; }

// A chunk's column codes: kPdCodeGap zeros, then each haplotype's n codes
// padded with zeros (no flags) to a multiple of 4 plus kPdCodeGap: a lane
// reads the codes of its block's columns, up to 31 before column 1 (the
// zeros before) and, clamped, up to 3 after column n.
constexpr int kPdCodeGap = 32;
PYPHMM_PD_HD inline int64_t pd_code_stride(int64_t n) { return (n + 3) / 4 * 4 + kPdCodeGap; }

// ---- results -----------------------------------------------------------------
// The kernel finishes each pair: its result is log10(sum) - log10(2^1020)
// (the CPU backend's expression, CUDA's log10) where the sum is certified
// close to GKL's (pd_certify, pdhmm_plan.h: in [floor, ceiling)), else the
// NaN kPdUncertifiedBits, which the dispatcher recomputes on the CPU. An
// empty pair (no kernel computes it) gets that NaN from the host, so GKL's
// answer for it comes from the CPU too.
struct PdCertify {
    double floor, ceiling;  // a sum in [floor, ceiling) is the kernel's to keep
};
constexpr uint64_t kPdUncertifiedBits = 0x7ff8000000000000ull;

PYPHMM_PD_HD inline double pd_uncertified() {
#ifdef __CUDA_ARCH__
    return __longlong_as_double(static_cast<long long>(kPdUncertifiedBits));
#else
    double v;
    std::memcpy(&v, &kPdUncertifiedBits, sizeof(v));
    return v;
#endif
}
PYPHMM_PD_HD inline double pd_result(double sum, double log10_ic) { return log10(sum) - log10_ic; }
PYPHMM_PD_HD inline double pd_checked_result(const PdCertify& cert, double sum, double log10_ic) {
    return sum >= cert.floor && sum < cert.ceiling ? pd_result(sum, log10_ic) : pd_uncertified();
}

// ---- bins ------------------------------------------------------------------
// A bin maps reads of up to max_rows rows to one kernel instantiation: P
// lanes per pair (32 / P pairs a warp), K rows per lane. The last bin sweeps
// longer reads in stripes of P * K rows (one pair a warp).
struct PdBin {
    int max_rows;
    int P, K;
    bool striped;
};
// clang-format off
constexpr PdBin kPdBins[] = {
    // max_rows, lanes per pair, rows per lane, striped
    {16, 8, 2, false},  {32, 8, 4, false},   {48, 16, 3, false},  {64, 16, 4, false},
    {80, 16, 5, false}, {96, 32, 3, false},  {128, 32, 4, false}, {160, 32, 5, false},
    {INT_MAX, 32, 4, true},
};
// clang-format on
constexpr int kPdNumBins = sizeof(kPdBins) / sizeof(kPdBins[0]);

constexpr int pd_max_rows_per_lane() {
    int k = 1;
    for (const PdBin& b : kPdBins) k = b.K > k ? b.K : k;
    return k;
}
// Shared memory of a block: the captured branch values (M, X, Y) of each
// of its threads' rows.
constexpr int kPdBranchDoubles = 3 * pd_max_rows_per_lane() * kPdBlock;

constexpr bool pd_bins_consistent() {
    for (int i = 0; i < kPdNumBins; ++i) {
        const PdBin& b = kPdBins[i];
        if (32 % b.P != 0 || (i > 0 && b.max_rows <= kPdBins[i - 1].max_rows)) return false;
        if (b.striped != (i == kPdNumBins - 1) || (b.striped && b.P != 32)) return false;
        if (!b.striped && b.P * b.K != b.max_rows) return false;
    }
    return true;
}
static_assert(pd_bins_consistent(), "PD bins: rows == P*K, ascending, the last striped with 32 lanes");

inline int pd_bin_of(int m) {
    for (int b = 0; b < kPdNumBins - 1; ++b)
        if (m <= kPdBins[b].max_rows) return b;
    return kPdNumBins - 1;
}

// One launch runs every bin of a chunk: block ranges map to bins.
struct PdLaunchPlan {
    int nb;                           // bins with pairs
    int block_start[kPdNumBins + 1];  // blocks of entry i: [block_start[i], block_start[i + 1])
    int bin[kPdNumBins];              // the bin of entry i
    int first[kPdNumBins];            // its first descriptor
    int count[kPdNumBins];            // its pairs
};

}  // namespace pdk
}  // namespace pyphmm
