// CPU PDHMM backend (see pdhmm_cpu.cc for how pairs are grouped).
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// Computes every pair of every region into out (the ABI's layout), or
// returns PYPHMM_E_INTERNAL naming the first pair whose log10 likelihood is
// above 0 or NaN (GKL's failure status, a RuntimeException in Java; no
// valid input is known to reach it). Input must already be validated by
// the dispatcher.
int cpu_pdhmm(const pyphmm_pd_region* regions, int64_t num_regions, double* out, int threads, pyphmm_stats* stats,
              pyphmm_error* error);

// The PDHMM kernel this process runs ("avx2", "scalar", ...).
const char* cpu_pdhmm_kernel_name();

}  // namespace pyphmm
