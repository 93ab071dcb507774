// Kernel launches of the GPU PairHMM, generated from the bin table
// (pairhmm_layout.h): what a chunk's pairs, sorted by pass and bin, need.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/pairhmm_layout.h"

namespace pyphmm {
namespace cudak {

// A chunk's buffers on the device.
struct ChunkBuffers {
    const PairDesc* pairs;
    const uint32_t* reads;
    const uint8_t* haps;
    double* results;     // by PairDesc::out
    int* header;         // results' header: the double pass writes its count here
    int* counter;        // the input's header: the float pass counts underflows here
    int* list;           // the underflowed pairs
    void* scratch;       // striped kernels: pairhmm_scratch_bytes
    int scratch_stride;  // pairhmm_scratch_stride
    int64_t num_pairs;
    int longest_rows = kUnbounded;  // longest_float_rows of the chunk: picks the double pass's kernel
    // The host watches the results (mapped host memory, see kPendingMark)
    // and launches the double pass itself, only when a pair needs it.
    bool watched = false;
};

// Uploads the PairHMM tables to the current device (device d), once.
cudaError_t pairhmm_setup_device(int d);

// Scratch of the striped kernels for haplotypes of up to max_hap_len bases.
int pairhmm_scratch_stride(int max_hap_len);
size_t pairhmm_scratch_bytes(int d, int stride, bool fast);

// Enqueues one chunk's kernels on stream s of device d: the float passes
// (fast or exact arithmetic) then, unless c.watched, the double pass over
// the pairs whose float sum underflowed; or every bin in double.
cudaError_t launch_pairhmm_chunk(int d, const ChunkBuffers& c, const BinRanges& bins, bool dbl, bool fast,
                                 const GapConsts& gaps, cudaStream_t s);

// The double pass over `count` underflowed pairs of a watched chunk.
cudaError_t launch_pairhmm_underflow(int d, const ChunkBuffers& c, int count, cudaStream_t s);

}  // namespace cudak
}  // namespace pyphmm
