// The CUDA backend's entry points as the dispatcher sees them. Implemented in
// native/cuda/*.cu when the build has nvcc, else by cuda_absent.cc.
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

struct CudaProbe {
    bool compiled = false;    // this build contains CUDA kernels
    bool usable = false;      // a driver and a device answered
    int device_count = 0;
    int device = -1;          // the ordinal that will be used
    char name[256] = {0};
    char status[256] = {0};   // human-readable reason / description
};

// Looks for a usable GPU once per process (later calls return the cached
// answer); `device` < 0 selects PYPHMM_DEVICE or 0.
const CudaProbe& cuda_probe();

// Same contract as cpu_pairhmm. Returns PYPHMM_OK or an error (device
// failure, out of device memory); the dispatcher then falls back to the CPU.
int cuda_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out,
                 bool double_precision, pyphmm_stats* stats, pyphmm_error* error);

// Smith-Waterman on the GPU (sw_cuda.cu): same contract as cpu_sw_align for a
// batch validated by check_sw_batch. Returns PYPHMM_OK or an error (device
// failure, out of device memory); the dispatcher then falls back to the CPU.
int cuda_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                  int32_t* alignment_offsets, pyphmm_stats* stats, pyphmm_error* error);

}  // namespace pyphmm
