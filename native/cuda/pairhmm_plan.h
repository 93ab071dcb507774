// Host-side planning of a GPU PairHMM call: which kernel pass and bin each
// pair goes to, the launch constants of the call's common quality triple,
// how a call is cut into chunks, and the packing of a chunk into the one
// buffer its single host-to-device copy sends. Pure host code (no CUDA), so
// tests build it with the host compiler (tests/native/pairhmm_plan_check.cc).
//
// A chunk's buffer: header (16 bytes: the double pass's counter) | pair
// descriptors sorted by (pass, bin) | packed read elements | haplotype base
// planes. On the device the underflow list follows it; results come back
// as header (16 bytes: the double-pass count) | results by output index.
#pragma once
#include <cstdint>
#include <vector>

#include "cuda/pairhmm_layout.h"
#include "pyphmm.h"

namespace pyphmm {
namespace cudak {

// ---- the call's constant triple -----------------------------------------
// Chosen once per call (all chunks alike): the triple of the call's first
// read if that read is uniform, else GATK's defaults (45, 45, 10). `on` is
// false where X' could overflow float (see GapConsts) and for the double and
// exact modes, which have no kConst kernels.
struct GapChoice {
    bool on = false;
    int ins = 0, del = 0, gcp = 0;
    GapConsts c{};
    bool matches(const pyphmm_region& g, int64_t ro) const {
        return on && (g.read_ins[ro] & 127) == ins && (g.read_dels[ro] & 127) == del && (g.read_gcp[ro] & 127) == gcp;
    }
};

// The constants of a triple, from the float tables (and the same float
// operations) the kernels' per-row path uses; off when the triple is out of
// the kConst kernels' range.
GapChoice make_gap_choice(int ins, int del, int gcp);
GapChoice choose_gaps(const pyphmm_region* regions, int64_t num_regions);

// Whether every row of a read has the same insertion, deletion and gap
// continuation quality.
bool uniform_transitions(const pyphmm_region& g, int64_t read_offset, int m);

// The pass and bin of a read of m rows.
struct BinRef {
    Pass pass;
    int bin;
};
BinRef bin_of(int m, bool dbl, bool uniform, bool constant);

// ---- chunks ---------------------------------------------------------------
constexpr int64_t kMaxChunkPairs = 1 << 20;
constexpr int64_t kMaxChunkReadElems = int64_t(1) << 27;
constexpr int64_t kMaxChunkHapBytes = int64_t(1) << 28;
constexpr int64_t kMinChunkCells = int64_t(1) << 30;  // below this a workload is one chunk

// A piece of a region: reads [r0, r1) against all its haplotypes.
struct Piece {
    int64_t region;
    int32_t r0, r1;
    int64_t out_first;  // global output index of (r0, 0)
};

struct Chunk {
    std::vector<Piece> pieces;
    int64_t pairs = 0, read_elems = 0, hap_bytes = 0, out_first = 0;
};

// Cuts a call into chunks of region pieces, bounded by pairs, bytes and
// cells (a workload of several chunks alternates two streams, so the host
// packs one chunk while the GPU computes another).
std::vector<Chunk> plan_chunks(const pyphmm_region* regions, int64_t num_regions, int64_t total_cells);

inline int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
inline int64_t hap_stride(int64_t n) { return round_up(n, 4) + kHapPad; }

// Byte offsets of a chunk's buffers.
struct Layout {
    size_t desc_off, read_off, hap_off;
    size_t in_bytes;  // what the host sends
    size_t list_off;  // device: the underflow list after the input
    size_t dev_in_bytes;
    size_t out_bytes;  // what comes back
};
Layout layout_of(const Chunk& c);
constexpr size_t kHeaderBytes = 16;

// What packing found out about a chunk.
struct Packed {
    BinRanges bins;
    int max_hap_len = 1;
    int64_t const_pairs = 0;  // pairs in the kConst pass
};

// Fills buf (layout_of(c).in_bytes bytes) with the chunk. `uniform` lets
// reads with one quality triple use the kUniform/kConst passes (fast float
// calls only). `merge_uniform` (small chunks, whose launches cost more than
// their kernels gain): if the chunk has kRow pairs, its kUniform reads join
// them, one launch fewer with the same results (the kRow kernels compute
// each row's transitions from the same triple, in the same bin).
// Parallel over pieces for whole workloads.
Packed pack_chunk(const pyphmm_region* regions, const Chunk& c, const Layout& L, bool dbl, bool uniform,
                  bool merge_uniform, const GapChoice& gaps, char* buf);

}  // namespace cudak
}  // namespace pyphmm
