// The score fill of the CPU Smith-Waterman (sw_cpu_fill.cc) and the
// workspace it leaves for the traceback (sw_cpu.cc): per-thread buffers,
// the backtrack bits of every cell, the last row and column.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pyphmm.h"

namespace pyphmm {
namespace sw_cpu {

// Buffers above this many bytes are released after the call instead of being
// kept for the next call of the same thread.
constexpr size_t kKeepBytes = size_t(64) << 20;

// One CIGAR element; the traceback collects them last to first.
struct Op {
    char op;
    int32_t len;
};

// Backtrack of one block of W consecutive cells of an anti-diagonal (W = the
// fill's vector width): bit k of each plane is the cell of lane k. Bits
// instead of GATK's gap lengths keep the fill free of gap-length state and
// the matrix at 4 bits per cell; traceback recovers a gap's length by walking
// back to the cell where that gap was opened (backtrack_value in sw_cpu.cc).
struct BtBlock {
    uint16_t diag;   // diagonal step chosen (ties prefer it)
    uint16_t right;  // otherwise: insertion chosen over deletion
    uint16_t new_h;  // horizontal gap opened here (GATK's gap_size_h = 1)
    uint16_t new_v;  // vertical gap opened here (gap_size_v = 1)
};

// Per-thread scratch, grown on demand and reused across calls.
struct Workspace {
    std::vector<int32_t> refi, altr;          // bases widened to int32, alt reversed
    std::vector<int32_t> h[3], e[2], f[2];    // scores and best gaps of diagonals d-2..d
    std::vector<BtBlock> bt;                  // diagonal-major backtrack
    std::vector<int64_t> blk_start;           // first block of diagonal d in bt
    int lane_shift = 0;                       // log2(W) of the fill that wrote bt
    std::vector<int32_t> last_col, last_row;  // H[i][n], H[m][j]
    std::vector<int32_t> row0, col0;          // edge initialisation
    std::vector<Op> ops;

    void trim() {
        if (bt.capacity() * sizeof(BtBlock) > kKeepBytes) std::vector<BtBlock>().swap(bt);
    }
};

// GATK's score recurrence over the m x n matrix of ref x alt, with gap
// penalties on the edges (edge_gaps: the INDEL and LEADING_INDEL overhang
// strategies) or free edges. Fills ws.bt, ws.last_col and ws.last_row with
// the widest vector code this CPU runs (or PYPHMM_SW_ISA's).
void fill(Workspace& ws, const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
          bool edge_gaps);

}  // namespace sw_cpu
}  // namespace pyphmm
