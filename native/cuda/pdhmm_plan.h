// Host-side planning of a GPU PDHMM call: how a call is cut into chunks,
// the order of a chunk's pairs, and the packing of a chunk into the one
// buffer its single host-to-device copy sends. Pure host code (no CUDA):
// the kernel emulator (tests/native/pdhmm_cuda_emu.cc) runs the kernels on
// these plans.
//
// A chunk's buffer: pair descriptors (sorted by launch entry: bins from the
// longest reads down, then region piece, haplotype, read) | read rows |
// haplotype column codes. Results come back as one double per pair of the
// chunk, in the caller's order: the kernel's log10 of the pair's sum, or
// NaN where the sum is not certified (below). Pairs with an empty read or
// haplotype go to no kernel (their NaN sends them to the CPU).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/pdhmm_layout.h"
#include "pyphmm.h"

namespace pyphmm {
namespace pdk {

constexpr int64_t kPdMaxChunkPairs = int64_t(1) << 20;
constexpr int64_t kPdMaxChunkRows = int64_t(1) << 24;
constexpr int64_t kPdMaxChunkCodes = int64_t(1) << 24;
constexpr int64_t kPdMinChunkCells = int64_t(1) << 30;    // a full chunk has at least this many cells
constexpr int64_t kPdFirstChunkCells = int64_t(1) << 26;  // below this a workload is one chunk

// A piece of a region: reads [r0, r1) against all its haplotypes.
struct PdPiece {
    int64_t region;
    int32_t r0, r1;
    int64_t out_first;  // global output index of (r0, 0)
};

struct PdChunk {
    std::vector<PdPiece> pieces;
    int64_t pairs = 0;  // outputs (empty pairs included)
    int64_t rows = 0, codes = 0, out_first = 0;
};

// Cuts a call into chunks of region pieces, bounded by pairs, rows, codes
// and cells (a workload of several chunks alternates two streams, so the
// host packs one chunk while the GPU computes another). The cell bound
// starts at 1/32 of the workload (at least kPdFirstChunkCells) and doubles
// from chunk to chunk up to a sixth (at least kPdMinChunkCells). Chunks
// come one at a time, so the GPU starts on the first while the host cuts
// the rest (cutting a whole workload of a million pairs takes 0.3 ms).
// Regions without reads or haplotypes are skipped; a chunk covers regions
// in order, so chunk c holds no region before those of chunk c - 1.
class PdChunker {
  public:
    PdChunker(const pyphmm_pd_region* regions, int64_t num_regions, int64_t total_cells);
    // The next chunk into *c; false once every pair is in a chunk.
    bool next(PdChunk* c);

  private:
    const pyphmm_pd_region* regions_;
    int64_t num_regions_;
    int64_t full_target_, cell_target_;
    int64_t region_ = 0, out_ = 0;  // where the next chunk starts: region, read, output
    int32_t read_ = 0;
    int64_t sized_ = -1, codes_ = 0, hap_bases_ = 0;  // region sized_'s codes and haplotype bases
};

// Every chunk of a call (at least one, empty if the call has no pairs).
std::vector<PdChunk> pd_plan_chunks(const pyphmm_pd_region* regions, int64_t num_regions, int64_t total_cells);

// Byte offsets of a chunk's buffer (16-byte aligned parts).
struct PdLayout {
    size_t desc_off, row_off, code_off;
    size_t in_bytes;   // what the host sends
    size_t out_bytes;  // what comes back: one double per pair
};
PdLayout pd_layout_of(const PdChunk& c);

// What packing found: the pairs of each bin (descriptors [first, first +
// count)), in the order of the launch entries.
struct PdPacked {
    int entries = 0;
    int bin[kPdNumBins] = {};
    int first[kPdNumBins] = {};
    int count[kPdNumBins] = {};
    int64_t descs = 0;           // pairs sent to the kernels
    int max_hap_len = 1;         // the longest haplotype among them
    int64_t kernel_cells = 0;    // their cells
    int max_del_ends = 0;        // the most DEL_END columns of a haplotype (pd_certify)
    int64_t max_pair_cells = 0;  // at least the cells of the largest pair
    // A packed read byte may be one GKL refuses (a base other than A, C, G,
    // T in either case or N, a base quality above kPdMaxQual, a gap quality
    // above kPdMaxGapQual): the caller's full check of the chunk's regions
    // must pass before a kernel sees the chunk. False: none is.
    bool suspect = false;
};

// Fills buf (pd_layout_of(c).in_bytes bytes) with the chunk. slots (may be
// null): the chunk's result slots, which get `pending` (as bits) for each
// pair the kernels compute and kPdUncertifiedBits for an empty pair. Parallel over pieces
// for whole workloads.
PdPacked pd_pack_chunk(const pyphmm_pd_region* regions, const PdChunk& c, const PdLayout& L, char* buf, uint64_t* slots,
                       uint64_t pending);

// The launch plan of a packed chunk: blocks per entry (a bin's pairs,
// 32 / P of them a warp; the striped bin at most `max_striped_warps`
// warps, which share its pairs). Returns the total block count.
int pd_launch_plan(const PdPacked& p, int max_striped_warps, PdLaunchPlan* plan);

// Warps of the striped entry of a plan (0 if none): each needs a scratch
// of 2 * pd_scratch_stride doubles.
int pd_striped_warps(const PdLaunchPlan& plan);
// (Columns 0 .. n, and the stage reads up to 44 columns further: the
// warp's last block, 2 blocks ahead.)
inline int pd_scratch_stride(int max_hap_len) { return (max_hap_len + 48 + 31) / 32 * 32; }

// ---- the kernel's tables ------------------------------------------------
// What a lane's prologue looks up (built once on the host, copied to each
// device): GKL's error probabilities and their thirds (divided on the
// host, as the CPU backend divides), the match-to-match entries of gap
// qualities up to 127 (pd_m2m_index), the match sum's ratio of each gap
// continuation and match-to-match entry (pd_ratio_index, pd_gap_ratio) and
// each read byte's code (pd_read_code).
struct PdKernelTables {
    std::vector<double> err, third, m2m, ratio;
    std::vector<uint32_t> read_code;
};
const PdKernelTables& pd_kernel_tables();

// ---- the kernel's rounding ----------------------------------------------
// The kernel rounds in its own order (fused multiply-adds: fewer
// double-precision instructions a cell), so its sums differ from GKL's
// serial ones in the last bits. Every quantity is a sum of products of
// non-negative factors (a maximum picks one of two such values), so where
// nothing is subnormal a rounding perturbs a value by a relative 2^-53 at
// most, and either order's sum lies within a relative D 2^-53 of the
// exact one, D the roundings along the longest chain of operations (at
// most 5 a cell along a path of m + n cells, counting those of the row's
// factors prior * mm and gm / mm, then n for the final sum: D <= 6 (m + n)
// + 2). The two results are thus within 1e-10 of each other
// in log10 for m + n up to 200,000. A subnormal rounding errs by an
// absolute 2^-1075, at most 8 m n of them, each reaching the sum with a
// weight of at most 2^E (E: DEL_END columns of the haplotype, where a
// value may go on by two routes): above a floor of 2^(E - 1000) m n they
// are below a relative 2^-70. A sum under the floor (log10 likelihoods
// below about -600, and -inf) or within 2^-30 of 2^1020 (where GKL's check
// of a positive result could go either way) gets the result NaN: the
// dispatcher recomputes those pairs on the CPU (dispatch/gpu.cc). The
// kernel applies the bounds (pd_checked_result, pdhmm_layout.h).
PdCertify pd_certify(const PdPacked& p);

// A chunk's results (the kernel's, one per pair in the caller's order)
// into the caller's output (parallel for large chunks). Returns how many
// are NaN (uncertified or empty pairs); adds to *above_zero those above 0
// (none where the kernel keeps its bounds: GKL's check of the results
// fails on them).
int64_t pd_copy_results(const PdChunk& c, const double* results, double* out, int64_t* above_zero);

}  // namespace pdk
}  // namespace pyphmm
