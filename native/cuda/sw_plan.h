// Host-side planning of a GPU Smith-Waterman batch: GATK's exact-substring
// shortcut, how pairs are grouped into chunks (whose sequences, descriptors
// and results sit on the device together) and sub-chunks (whose backtrack
// matrices fit the work budget), and the descriptors the kernels read. Pure
// host code (no CUDA): the kernel emulator (tests/native/sw_cuda_emu.cc)
// runs the kernels on exactly these plans.
#pragma once
#include <cstdint>
#include <vector>

#include "cuda/sw_layout.h"
#include "pyphmm.h"

namespace pyphmm {
namespace sw_gpu {

// GATK's shortcut for SOFTCLIP and IGNORE: when alt occurs in ref, the
// alignment is len(alt) M at the LAST occurrence. Writes it and returns
// true, else false (the pair goes to the GPU).
bool exact_match(const uint8_t* ref, int m, const uint8_t* alt, int n, char* cigar, int32_t* offset);

// Takes the shortcut for every pair of a batch that allows it (writing
// those results), in parallel; returns the other pairs' indices.
std::vector<int64_t> take_exact_matches(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                                        int32_t* offsets);

// Device memory a pair needs for the whole chunk (descriptor, CIGAR slots,
// results; its sequences are counted as the chunk's byte ranges) ...
int64_t pair_fixed_bytes(int m, int n);

// ... and only while its sub-chunk runs (backtrack, last row/column, stripe
// boundary columns).
struct Work {
    int64_t bt_cells = 0, edge_ints = 0, scratch_ints = 0;
    int64_t bytes() const { return bt_cells * 4 + (edge_ints + scratch_ints) * 4; }  // (a short2 is 4 bytes)
    Work& operator+=(const Work& o) {
        bt_cells += o.bt_cells;
        edge_ints += o.edge_ints;
        scratch_ints += o.scratch_ints;
        return *this;
    }
    void grow_to(const Work& o);
};
Work pair_work(int m, int n, int P, int K);

// The pairs of one batch that go to the GPU, with their K (columns per lane).
struct Todo {
    const pyphmm_sw_batch* batch;
    std::vector<int64_t> pairs;  // batch indices, in batch order
    std::vector<int8_t> cols;    // K of each batch index (0 for pairs not in `pairs`)
    int lanes = kWarp;
    int m(int64_t i) const { return static_cast<int>(batch->ref_offsets[i + 1] - batch->ref_offsets[i]); }
    int n(int64_t i) const { return static_cast<int>(batch->alt_offsets[i + 1] - batch->alt_offsets[i]); }
    // Sequence bytes of batch pairs first..last (inclusive).
    int64_t seq_bytes(int64_t first, int64_t last) const {
        return batch->ref_offsets[last + 1] - batch->ref_offsets[first] + batch->alt_offsets[last + 1] -
               batch->alt_offsets[first];
    }
};
// Todo for the given batch indices (sets their K from choose_cols).
Todo make_todo(const pyphmm_sw_batch& batch, std::vector<int64_t> pairs, int lanes);

// Consecutive todo pairs [begin, end): their pairs ordered by K (one fill
// launch per K), cut into sub-chunks sub_begin[s] .. sub_begin[s+1].
struct Chunk {
    size_t begin = 0, end = 0;
    std::vector<int64_t> order;
    std::vector<int> sub_begin;
};

// The largest pair's needs, to size the budgets.
struct PairNeeds {
    Work work;
    int64_t fixed = 0;
};
PairNeeds largest_pair(const Todo& todo);

// Chunks within fixed_budget bytes of chunk data (at least one pair each)
// and sub-chunks within work_budget bytes of work buffers.
std::vector<Chunk> plan_chunks(const Todo& todo, int64_t fixed_budget, int64_t work_budget);

// Device buffers for the largest chunk and sub-chunk.
struct BufferSizes {
    Work work;
    int64_t pairs = 0, seq = 0, cigar = 0;
};
BufferSizes buffer_sizes(const Todo& todo, const std::vector<Chunk>& chunks);

// A chunk's descriptors (order of c.order; sequence offsets relative to the
// chunk's first pair, work offsets restarting in every sub-chunk); returns
// the chunk's CIGAR bytes.
int64_t describe_chunk(const Todo& todo, const Chunk& c, std::vector<PairDesc>* descs);

}  // namespace sw_gpu
}  // namespace pyphmm
