// CPU PairHMM backend (see pairhmm_cpu.cc for the algorithm and layout).
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// Computes every pair of every region into out (the ABI's layout). Input
// must already be validated by the dispatcher. Never fails on valid input.
int cpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, int threads, bool double_precision,
                pyphmm_stats* stats);

// Which ISA clone the loader picked, for pyphmm info.
const char* cpu_pairhmm_kernel_name();

}  // namespace pyphmm
