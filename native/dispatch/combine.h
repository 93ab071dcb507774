// Concurrent small GPU PairHMM calls of one process, combined into shared
// GPU calls.
//
// GATK-shaped callers (Spark executor threads, several engine threads) make
// one synchronous call per active region from many threads at once. Issued
// separately, their calls queue on the driver (every copy and launch of a
// context is serialised) and each runs a kernel too small to fill the GPU.
// Combined, a batch of regions costs one set of copies and launches and
// runs in the kernels sized for throughput.
//
// Protocol: a caller queues its request. Whoever finds no batch being
// launched and fewer than PYPHMM_GPU_COMBINE (default 2) combined GPU calls
// in flight takes every queued request of its kind (cuda_pairhmm_batch_key:
// precision and the call's launch-constant triple, so that a region's pairs
// take the same kernels, and give the same bits, as in a call of its own)
// and launches them
// as one GPU call; as soon as that call's kernels are enqueued, the next
// launcher may form the next batch (so the host packs batch k+1 while the
// GPU computes batch k). The launcher then waits for its batch, hands each
// caller its results, its pairs redone in double and any error, and wakes
// them. While the calls in flight are at the bound, arrivals queue, so
// batches grow with the load. A caller alone is its own batch: no waiting,
// no copies.
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// Whether a GPU call of these regions and options may be combined with
// others (PYPHMM_GPU_COMBINE, automatic device, no timing, not too large).
bool combining_applies(const pyphmm_options* options, int64_t cells);

// gpu_pairhmm for one caller, possibly inside a combined GPU call. Fills
// the caller's stats (backend, device, pairs redone in double, seconds).
int combined_gpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, bool double_precision,
                         pyphmm_stats* stats, pyphmm_error* error);

}  // namespace pyphmm
