// The score fill of the CPU Smith-Waterman (sw_cpu_fill.cc) and the
// workspace it leaves for the traceback (sw_cpu.cc): per-thread buffers,
// the backtrack bits of every cell, the last row and column.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "pyphmm.h"

namespace pyphmm {
namespace sw_cpu {

// An allocator whose resize() leaves new bytes uninitialised: the fill
// writes every backtrack block it later reads, and the bits buffers pass
// between calls and bases (swapped), so a zero fill of their new tail would
// be paid on most calls.
template <typename T>
struct UninitAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = UninitAllocator<U>;
    };
    UninitAllocator() = default;
    template <typename U>
    UninitAllocator(const UninitAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... A>
    void construct(U* p, A&&... a) {
        ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
};
using Bits = std::vector<uint8_t, UninitAllocator<uint8_t>>;

// Bytes between the difference fill's slot arrays (four per diagonal, two
// diagonals): room for the longest sequence plus vector padding, and not a
// multiple of 4 KiB, so the eight arrays fall into different cache sets.
constexpr int kStateStride = 2 * (PYPHMM_SW_MAX_LENGTH + 1 + 128) + 512;
static_assert(kStateStride % 64 == 0, "slot arrays of 64-byte vectors stay aligned");

// Buffers above this many bytes are released after the call instead of being
// kept for the next call of the same thread.
constexpr size_t kKeepBytes = size_t(64) << 20;

// One CIGAR element; the traceback collects them last to first.
struct Op {
    char op;
    int32_t len;
};

// Backtrack planes of cell (i, j). Ties in GATK's rule prefer diagonal, then
// insertion, then deletion, so a plane holds the strict comparisons the fill
// computes anyway. Whether a gap is opened or extended is computed, and
// stored, by the cell it would be opened from: kNewH of (i, j) belongs to
// cell (i, j+1), kNewV to cell (i+1, j) (cells of row and column 1 always
// open theirs, from the edge, and the traceback never asks).
enum BtPlane : unsigned {
    kGap = 1,   // a gap beats the diagonal step (not diagonal)
    kDown = 2,  // deletion beats insertion (meaningful where kGap)
    kNewH = 4,  // cell (i, j+1)'s horizontal gap opens here (its gap_size_h = 1)
    kNewV = 8,  // cell (i+1, j)'s vertical gap opens here (its gap_size_v = 1)
};

enum BtLayout { kPlanar, kPaired, kNibble };

// The last column's bottom-most maximum and the last row's maximum, kept
// by the fill as it writes them (rows, then columns, in increasing order),
// so that the traceback's start needs no pass over them.
struct ColRowMax {
    int32_t col_max = INT32_MIN, row_max = INT32_MIN;
    int col_at = 0;  // the largest i with H[i][n] == col_max
    void col(int32_t* last_col, int i, int32_t h) {
        last_col[i] = h;
        // Selects, not a branch: along the last column a new maximum comes
        // at no predictable step.
        const bool ge = h >= col_max;
        col_max = ge ? h : col_max;
        col_at = ge ? i : col_at;
    }
    void row(int32_t* last_row, int j, int32_t h) {
        last_row[j] = h;
        row_max = std::max(row_max, h);
    }
};

// Prefix reuse. HaplotypeCaller aligns every haplotype of a region, one
// call each, against the same padded reference window, and haplotypes share
// their bases up to their first differing event. Cells of columns j < L
// depend only on ref, alt[0..L), the parameters and the edge rule, so a call
// whose alt shares its first L bases with an earlier call's (same ref,
// parameters, edge rule and kernel) computes only columns L..n: the sweep
// starts at column L from the state of column L-1 that the earlier fill
// kept, and the traceback reads the earlier fill's bits for columns < L.
// Every fill of a pair of this shape keeps that state at every
// kResumeStep-th column it computes (checkpoints) and becomes a base, a
// resumed one too, in place of the oldest of the thread's kBases; a call
// resumes from the base its alt shares the longest prefix with (the
// haplotypes of a region differ from one another at different events). A
// resumed fill's columns below L are its base's, so a base's bits are a list
// of segments, each a range of columns in the store of the fill that
// computed them. Keeping checkpoints costs a fill about 8% more
// instructions, so a thread whose last kUnusedLimit bases were replaced
// unused keeps none until a pair repeats its predecessor's ref (pairs that
// are not a region's haplotypes pay nothing). Results are bit for bit those
// of a full fill.
constexpr int kResumeShift = 6;
constexpr int kResumeStep = 1 << kResumeShift;  // columns between checkpoints
constexpr int kResumeMinLength = 192;           // shorter sequences are not worth the checkpoints
constexpr int kResumeMaxLength = 2048;          // bounds what a base keeps (2 MB of bits at 2048 x 2048)
constexpr int kMaxSegments = 8;                 // a base of this many takes no more (bounds the stores)
constexpr int kBases = 8;                       // earlier fills a call may resume from
constexpr int kUnusedLimit = 4;                 // bases replaced unused before checkpoints stop

// The backtrack bits of one fill that a base reads: the blocks of the cells
// it computed, by diagonal, laid out for its alt length n.
struct BtStore {
    Bits bt;
    std::vector<int64_t> blk_start;
    int n = 0;
};
// Columns [from, to) of the base's matrix: their bits are in stores[store].
struct BtSegment {
    int from, to, store;
};

struct FillBase {
    bool valid = false;
    bool used = false;             // a call resumed from it
    uint64_t stamp = 0;            // when it became a base
    const void* kernel = nullptr;  // the fill that wrote it: same lane type and layout
    pyphmm_sw_params params{};
    bool edge_gaps = false;
    int m = 0, n = 0;
    std::vector<uint8_t> ref, alt;
    std::vector<int32_t> last_row;
    // Checkpoint t (column c = (t + 1) * kResumeStep - 1): cells i = 0..m,
    // two lanes each (the dv and rt the kernel leaves for cell (i, c + 1)),
    // in the kernel's lane type.
    std::vector<int16_t> ck;
    std::vector<BtSegment> segments;  // ascending, covering columns 0..n; stores in Workspace::stores
};

// Per-thread scratch, grown on demand and reused across calls.
//
// Backtrack layout: diagonal d (= i + j) holds its cells i = lo(d)..hi(d) in
// blocks of W = 2^lane_shift cells (W >= 8, the fill's vector width); a
// block is W/2 bytes, 4W bits, for the cells lo(d) + (block index) * W + k,
// k < W. Bit of plane q (BtPlane order 0..3) for lane k, little-endian:
// - kPlanar: q * W + k (the planes one after the other);
// - kPaired: (q / 2) * 2W + 2k + q % 2 (kGap with kDown, then kNewH with
//   kNewV, interleaved lane by lane: what AVX2's byte movemask gives);
// - kNibble: 8 (k % (W/2)) + 4 (k / (W/2)) + q (a cell's four bits side by
//   side, lanes k and k + W/2 sharing a byte: what NEON's shift-insert
//   gives).
// blk_start[d] is the byte offset of diagonal d's first block. Bits instead of GATK's gap lengths keep the fill
// free of gap-length state and the matrix at 4 bits per cell; traceback
// recovers a gap's length by walking back to the cell where it was opened.
struct Workspace {
    std::vector<int16_t> ref16, alt16;      // bases, alt reversed, padded
    std::vector<int16_t> diag;              // difference fill: diagonals d-1, d
    std::vector<int32_t> h[3], e[2], f[2];  // absolute fill: diagonals d-2..d
    Bits bt;
    std::vector<int64_t> blk_start;
    int lane_shift = 3;
    BtLayout layout = kPlanar;
    std::vector<int32_t> last_col, last_row;  // H[i][n], H[m][j]
    ColRowMax best;                           // of last_col and last_row
    std::vector<int32_t> row0, col0;          // edge scores of the absolute fill
    std::vector<Op> ops;
    // This call: resume_from > 0 resumes at that column from bases[from_base]
    // (columns below it are that base's); capture: the fill writes
    // bases[to_base].ck and becomes that base after its traceback (keep_base).
    int resume_from = 0, from_base = 0, to_base = 0;
    bool capture = false;
    FillBase bases[kBases];
    std::vector<BtStore> stores;     // the bases' segments' stores, and spare ones
    std::vector<BtSegment> scratch;  // keep_base's next list
    uint64_t stamp = 0;
    int unused = 0;                 // bases replaced in a row without a call resuming from them
    std::vector<uint8_t> last_ref;  // the previous pair of the shape's ref, with its parameters below
    pyphmm_sw_params last_params{};
    bool last_edge = false;

    void trim() {
        if (bt.capacity() > kKeepBytes) Bits().swap(bt);
    }
};

// GATK's score recurrence over the m x n matrix of ref x alt, with gap
// penalties on the edges (edge_gaps: the INDEL and LEADING_INDEL overhang
// strategies) or free edges. Fills ws.bt, ws.last_col, ws.last_row and ws.best with
// the widest vector code this CPU runs (or PYPHMM_DEV's sw_isa).
void fill(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
          bool edge_gaps);

// After the traceback of a capturing fill: it becomes ws.bases[to_base], its bits a
// store of their own (buffers swapped, not copied) and its last row and
// sequences the base's.
void keep_base(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
               bool edge_gaps);

}  // namespace sw_cpu
}  // namespace pyphmm
