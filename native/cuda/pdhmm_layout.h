// What the GPU PDHMM's host planning (pdhmm_plan.h) and its kernels
// (pdhmm_kernels.cuh) agree on: the pair descriptor, the packed read row,
// the haplotype column code that carries a PD byte's meaning for the
// kernels, the per-cell match test and the bins of read lengths. Plain C++
// for the host compiler (and the kernel emulator), host-and-device
// functions under nvcc.
#pragma once
#include <climits>
#include <cstdint>

#ifdef __CUDACC__
#define PYPHMM_PD_HD __host__ __device__
#else
#define PYPHMM_PD_HD
#endif

namespace pyphmm {
namespace pdk {

// Threads per block of the PDHMM kernel.
constexpr int kPdBlock = 128;

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

// ---- haplotype column codes ---------------------------------------------------
// A column's code (one uint32 per haplotype base, computed once per
// haplotype by pd_column_codes):
//   bits 0-7   the haplotype byte y
//   bit 8      y == 'N' (every read base matches)
//   bits 9-12  at a SNP position, its A, C, G, T bits (else 0)
//   bit 13     kDelEnd: the PD byte has DEL_END
//   bit 15     kCap for rows >= 2 (below)
//   bit 17     kCap for row 1 (row 1 starts in the normal state; later
//              rows start in the state the previous row ended in, GKL's
//              serial code: see pd_column_codes)
//   bit 31     set in every column (a read 'N' matches every column)
// A read row's code (pd_read_code): its byte, bit 8, the A/C/G/T bit of a
// base in either case at bits 9-12, and bit 31 for 'N'. A cell matches when
// the bytes are equal or the codes share a bit of kMatchBits.
constexpr uint32_t kHapN = 1u << 8;
constexpr int kSnpShift = 9;
constexpr uint32_t kDelEnd = 1u << 13;
constexpr uint32_t kCap = 1u << 15;
constexpr int kRow1Shift = 2;  // row 1's kCap sits this many bits above the others'
constexpr uint32_t kAnyColumn = 1u << 31;
constexpr uint32_t kMatchBits = kAnyColumn | kHapN | (0xFu << kSnpShift);
// A column where a row captures its branch values, in either row class.
constexpr uint32_t kCapBoth = kCap | (kCap << kRow1Shift);

// The deletion state that applies to a column (GKL's NORMAL, INSIDE_DEL,
// AFTER_DEL) and the one that applies to the next column after a column
// with PD byte pd: DEL_END wins over DEL_START.
enum PdState : int { kNormal = 0, kInsideDel = 1, kAfterDel = 2 };
constexpr uint8_t kPdBitSnp = 1, kPdBitDelStart = 2, kPdBitDelEnd = 4;
PYPHMM_PD_HD inline int pd_next_state(int s, uint8_t pd) {
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
inline void pd_column_codes(const uint8_t* hap, const uint8_t* pd, int n, uint32_t* out) {
    int end = kNormal;  // the state row 1 ends in = every later row's start
    for (int j = 0; j < n; ++j) end = pd_next_state(end, pd[j]);
    int s1 = kNormal, s2 = end;
    for (int j = 0; j < n; ++j) {
        const uint8_t y = hap[j], p = pd[j];
        uint32_t c = y | kAnyColumn;
        if (y == 'N') c |= kHapN;
        if (p & kPdBitSnp) c |= uint32_t((p >> 3) & 0xF) << kSnpShift;
        if (p & kPdBitDelEnd) c |= kDelEnd;
        const int n1 = pd_next_state(s1, p), n2 = pd_next_state(s2, p);
        const bool de = (p & kPdBitDelEnd) != 0;
        if (s2 != kInsideDel && (n2 == kInsideDel || de)) c |= kCap;
        if (s1 != kInsideDel && (n1 == kInsideDel || de)) c |= kCap << kRow1Shift;
        out[j] = c;
        s1 = n1;
        s2 = n2;
    }
}

// A read byte's code.
PYPHMM_PD_HD inline uint32_t pd_read_code(uint32_t x) {
    const uint32_t up = (x >= 'a' && x <= 'z') ? x - 32u : x;
    const int b = up == 'A' ? 0 : up == 'C' ? 1 : up == 'G' ? 2 : up == 'T' ? 3 : -1;
    uint32_t r = x | kHapN;
    if (b >= 0) r |= 1u << (kSnpShift + b);
    if (x == 'N') r |= kAnyColumn;
    return r;
}

// GKL's match rule: equal bytes, 'N' on either side, or a read base among
// a SNP position's bases.
PYPHMM_PD_HD inline bool pd_matches(uint32_t column, uint32_t read) {
    return ((column ^ read) & 0xFFu) == 0u || (column & read & kMatchBits) != 0u;
}

// Column codes a haplotype of n bases takes in a chunk: padded with zeros
// (no flags) to whole 4-code words plus two words, which lane 0 reads ahead.
PYPHMM_PD_HD inline int64_t pd_code_stride(int64_t n) { return (n + 3) / 4 * 4 + 8; }

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
