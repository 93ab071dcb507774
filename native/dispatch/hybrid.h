// Whole-workload PairHMM calls shared by GPU driver threads and CPU workers
// (hybrid.cc says how and when it pays).
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// Whether a PairHMM call with these options and regions shares GPU and CPU.
bool hybrid_wanted(const pyphmm_options* options, int64_t num_regions);

// Threads that drive the GPU in that mode (PYPHMM_DEV's hybrid_gpu_threads).
int hybrid_gpu_threads();

// Computes a validated call in that mode; region_cells[k] is region k's cell
// count. Never fails on valid input: a GPU failure moves the rest to the CPU.
int hybrid_pairhmm(const pyphmm_region* regions, int64_t num_regions, const int64_t* region_cells, double* out,
                   const pyphmm_options* options, pyphmm_stats* stats);

}  // namespace pyphmm
