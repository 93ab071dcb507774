// What the GPU PairHMM's host planning and its kernels agree on: the pair
// descriptor, the packed read element, the launch constants of a quality
// triple, and the one table of read-length bins from which the host sorts
// pairs and the launches are generated. Plain C++: the host compiler builds
// the planning code (and its tests) from this header without CUDA.
#pragma once
#include <climits>
#include <cstdint>
#include <initializer_list>

// constexpr functions that the kernels call at compile time.
#ifdef __CUDACC__
#define PYPHMM_CONSTEXPR_HD __host__ __device__
#else
#define PYPHMM_CONSTEXPR_HD
#endif

namespace pyphmm {
namespace cudak {

// One pair, in the order the kernels process them (sorted by pass and bin).
struct PairDesc {
    uint32_t roff;  // first element of the read in the packed read array
    uint32_t hoff;  // first byte of the haplotype in the packed hap array (4-aligned)
    int32_t m;      // read length
    int32_t n;      // haplotype length
    int32_t out;    // index of the result in this chunk's output
};

// Packed read element (built on the host by pack_read_elems): bits 0-3 base
// mask (A=1 C=2 G=4 T=8 N=15), then four 7-bit fields: base quality << 4,
// insertion << 11, deletion << 18, gap continuation << 25.
// Haplotypes are packed as base planes (A=0 C=1 G=2 T=3 N=4), each padded
// with kPadPlane to a multiple of 4 bytes plus kHapPad (the kernels read
// whole words and prefetch ahead). kPadPlane names no base: the kernels with
// emission tables emit 0 there (see pairhmm_recurrence.cuh), the others never
// use a column past the haplotype's end.
constexpr int kHapPad = 48;
constexpr uint8_t kPadPlane = 5;

// Transition constants of a launch whose reads all carry one insertion,
// deletion and gap-continuation quality (the Tr::kConst kernels; the host
// picks the triple, see pairhmm_plan.h). Kernel parameters live in the
// constant bank, which FFMA/FMUL read as an operand: none costs a register.
// These kernels keep X (insertion) scaled within blocks of kConstBlock rows
// of a lane: X' = X * cc^-r at block row r, which turns X's recurrence,
// X_k = mx*M_{k-1} + cc*X_{k-1}, into X'_k = xs[r]*M_{k-1} + X'_{k-1}: one
// FFMA per cell instead of FMUL + FFMA (a block's first row keeps the
// two). M reads X back through pw[r] folded into an FFMA it already had.
// cc is small (0.1 at GATK's gap-continuation quality 10), so X' grows by
// up to cc^-(B-1) in blocks of B rows; the host takes a triple only while
// mx * cc^-(kMaxConstBlock-1) / gm <= kMaxConstGrowth, which keeps X' below
// 2^126 (every value of the matrices is at most INITIAL_CONSTANT = 2^120,
// and X <= mx/gm * max M). Blocks are kConstBlock rows, except in the bins
// of const_block (below), which are at most kMaxConstBlock.
constexpr int kConstBlock = 4;
constexpr int kMaxConstBlock = 5;
constexpr double kMaxConstGrowth = 64.0;
struct GapConsts {
    float mx, my, cc, gm;
    float mm;                       // match-to-match
    float mmg;                      // mm / gm (factored arithmetic)
    float pw[kMaxConstBlock + 1];   // cc^i
    float gpw[kMaxConstBlock + 1];  // gm * cc^i (GKL-order arithmetic)
    float xs[kMaxConstBlock];       // mx * cc^-i
};

// Result slots that the host watches (a small chunk whose results go
// straight to mapped host memory): the host fills them with kPendingMark
// before the launch, and the float kernels write every pair's slot exactly
// once, with its result or, for a pair left to the double pass,
// kRedoMark. Both are NaNs, which no result is; each slot is one aligned
// 8-byte store, which reaches host memory whole, so the host knows the
// chunk is done when no slot is pending, with no fence or counter on the
// device.
constexpr uint64_t kPendingMark = 0x7ff8000000000001ull;
constexpr uint64_t kRedoMark = 0x7ff8000000000002ull;

// How a kernel gets a pair's transition constants.
enum class Tr : int {
    kRow = 0,      // per read row, from the tables
    kUniform = 1,  // once per pair (the read has one quality triple)
    kConst = 2,    // once per launch (GapConsts), X kept scaled
};

// Float arithmetic of a kernel (pairhmm_recurrence.cuh says what each does).
enum class Arith : int {
    kExact = 0,     // GKL's operation order, no contraction (also every double kernel)
    kFma = 1,       // GKL's order with fused multiply-adds
    kFactored = 2,  // fused multiply-adds, gm factored out of M's sum
};

// ---- the bin table ------------------------------------------------------
// A bin maps reads of up to max_rows rows to one kernel instantiation: P
// lanes per pair, K rows per lane. Non-striped bins hold exactly P * K rows;
// the last bin of each table sweeps longer reads in stripes of P * K rows.
struct BinSpec {
    int max_rows;
    int P, K;
    bool striped;
};
constexpr int kUnbounded = INT_MAX;

// clang-format off
constexpr BinSpec kFloatBins[] = {
    // max_rows, lanes per pair, rows per lane, striped
    {16, 4, 4, false},   {32, 4, 8, false},    {64, 8, 8, false},   {96, 16, 6, false},
    {128, 16, 8, false}, {160, 16, 10, false}, {256, 32, 8, false}, {512, 32, 16, false},
    {kUnbounded, 32, 8, true},
};
constexpr BinSpec kDoubleBins[] = {{16, 4, 4, false}, {32, 8, 4, false}, {64, 16, 4, false},
                                   {kUnbounded, 32, 4, true}};
// clang-format on
constexpr int kNumFloatBins = sizeof(kFloatBins) / sizeof(kFloatBins[0]);
constexpr int kNumDoubleBins = sizeof(kDoubleBins) / sizeof(kDoubleBins[0]);
constexpr int kMaxBins = kNumFloatBins;

// Float bins [0, kNumFusedBins) run in one fused launch per pass (their
// K <= kMaxFusedK, which sizes the fused kernel's shared memory). Bins
// [0, kNumLatencyBins) also have a latency variant: one whole warp per pair
// (P = 32, K = latency_k), for calls too small to fill the GPU.
constexpr int kNumFusedBins = 7;
constexpr int kMaxFusedK = 10;
constexpr int kNumLatencyBins = 6;
// Fast arithmetic factors gm out only up to this many rows: the factored
// constants are rounded once per row, an error that grows with read length.
constexpr int kFactoredMaxRows = 160;

constexpr int latency_k(int bin) { return (kFloatBins[bin].max_rows + 31) / 32; }
// The longest read a latency variant takes: its lane 0 must hold padding
// rows only (see forward_pair, pairhmm_kernels.cuh), so a bin with a
// longer read runs its throughput variant.
constexpr int latency_max_rows(int bin) { return 31 * latency_k(bin); }

// Rows of a block in bin `bin`'s Tr::kConst kernels (see GapConsts; a
// block's first row costs an instruction more). A bin whose latency variant
// has at least kConstBlock rows a lane, a number that divides the rows a
// lane of its throughput variant, takes blocks of that many rows: each
// latency lane is one block (GATK's 150 bp reads: 5 rows a lane, one block
// start a step instead of two; the throughput kernel's 10 rows two instead
// of three). Both variants pad the read alike, so they then start blocks on
// the same rows and compute every cell with the same operations: a region's
// results do not depend on which variant its call runs (the other passes'
// cells never depend on the rows a lane).
PYPHMM_CONSTEXPR_HD constexpr int const_block(int bin) {
    const int k = (kFloatBins[bin].max_rows + 31) / 32;  // latency_k (host only), here in device code
    return bin < kNumLatencyBins && k >= kConstBlock && kFloatBins[bin].K % k == 0 ? k : kConstBlock;
}
constexpr bool const_blocks_fit() {
    int most = kConstBlock;
    for (int b = 0; b < kNumLatencyBins; ++b) {
        if (const_block(b) != latency_k(b)) continue;                              // (its variants round differently)
        if (kFloatBins[b].P * kFloatBins[b].K != 32 * latency_k(b)) return false;  // padded alike
        most = const_block(b) > most ? const_block(b) : most;
    }
    return most == kMaxConstBlock;  // (the host's growth check assumes the largest block)
}
static_assert(const_blocks_fit(), "const_block: variants padded alike, kMaxConstBlock the largest block");

constexpr bool bins_consistent(const BinSpec* b, int n) {
    for (int i = 0; i < n; ++i) {
        if (32 % b[i].P != 0 || (i > 0 && b[i].max_rows <= b[i - 1].max_rows)) return false;
        if (b[i].striped != (i == n - 1)) return false;
        if (!b[i].striped && b[i].P * b[i].K != b[i].max_rows) return false;
    }
    return true;
}
static_assert(bins_consistent(kFloatBins, kNumFloatBins), "float bins: rows == P*K, ascending, striped last");
static_assert(bins_consistent(kDoubleBins, kNumDoubleBins), "double bins: rows == P*K, ascending, striped last");

constexpr bool fused_bins_fit() {
    for (int b = 0; b < kNumFusedBins; ++b)
        if (kFloatBins[b].striped || kFloatBins[b].K > kMaxFusedK) return false;
    for (int b = 0; b < kNumLatencyBins; ++b)
        if (latency_k(b) * 32 < kFloatBins[b].max_rows || latency_k(b) > kMaxFusedK) return false;
    return kNumLatencyBins <= kNumFusedBins && kNumFusedBins < kNumFloatBins;
}
static_assert(fused_bins_fit(), "fused and latency bins: not striped, K within the fused kernel's tables");

// The float arithmetic of a bin of reads up to max_rows long: exact when not
// fast; factored up to kFactoredMaxRows rows; fused multiply-adds in GKL's
// order beyond.
PYPHMM_CONSTEXPR_HD constexpr Arith float_arith(bool fast, int max_rows) {
    return !fast ? Arith::kExact : max_rows <= kFactoredMaxRows ? Arith::kFactored : Arith::kFma;
}

// A chunk's pairs are sorted by pass, then bin. Float calls have three
// passes (by how transitions reach the kernel); double calls one.
enum class Pass : int { kFloatRow = 0, kFloatUniform = 1, kFloatConst = 2, kDouble = 3 };
constexpr int kNumPasses = 4;

// Bins a pass uses: kRow every float bin, kUniform the non-striped ones
// (uniform reads longer than those run per row), kConst the fused ones.
constexpr int pass_bins(Pass p) {
    return p == Pass::kDouble         ? kNumDoubleBins
           : p == Pass::kFloatRow     ? kNumFloatBins
           : p == Pass::kFloatUniform ? kNumFloatBins - 1
                                      : kNumFusedBins;
}
// The float pass of the kernels with transitions of kind tr.
constexpr Pass float_pass(Tr tr) {
    return tr == Tr::kUniform ? Pass::kFloatUniform : tr == Tr::kConst ? Pass::kFloatConst : Pass::kFloatRow;
}

// Where a (pass, bin) lives in flat per-chunk arrays.
constexpr int slot_of(Pass p, int bin) { return static_cast<int>(p) * kMaxBins + bin; }
constexpr int kNumSlots = kNumPasses * kMaxBins;

// Pairs per pass and bin of one chunk: descriptors [start, start + count),
// and the longest read among them.
struct BinRanges {
    int64_t start[kNumSlots];
    int64_t count[kNumSlots];
    int32_t rows[kNumSlots];
    int64_t count_of(Pass p, int bin) const { return count[slot_of(p, bin)]; }
    int64_t start_of(Pass p, int bin) const { return start[slot_of(p, bin)]; }
    int32_t rows_of(Pass p, int bin) const { return rows[slot_of(p, bin)]; }
};

// Rows of the bin of the longest read in the float passes (0 if none).
inline int longest_float_rows(const BinRanges& r) {
    int rows = 0;
    for (Pass p : {Pass::kFloatRow, Pass::kFloatUniform, Pass::kFloatConst})
        for (int b = 0; b < pass_bins(p); ++b)
            if (r.count_of(p, b) && kFloatBins[b].max_rows > rows) rows = kFloatBins[b].max_rows;
    return rows;
}

}  // namespace cudak
}  // namespace pyphmm
