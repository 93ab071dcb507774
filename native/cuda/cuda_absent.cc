// Built instead of the .cu files when nvcc is not available: the package is
// then CPU-only and says so through cuda_probe().
#include <cstdio>

#include "common/errors.h"
#include "cuda/cuda_backend.h"

namespace pyphmm {

const CudaProbe& cuda_probe() {
    static const CudaProbe probe = [] {
        CudaProbe p;
        std::snprintf(p.status, sizeof(p.status), "%s",
                      "not compiled: this build has no CUDA kernels (no nvcc, or PYPHMM_NO_CUDA=1)");
        return p;
    }();
    return probe;
}

int cuda_device_init(int, pyphmm_error* error, bool* full) {
    if (full) *full = false;
    return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", cuda_probe().status);
}

int cuda_pairhmm(int, const pyphmm_region*, int64_t, double*, const GpuCallOptions&, pyphmm_stats*,
                 pyphmm_error* error) {
    return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", cuda_probe().status);
}

int cuda_pdhmm(int, const pyphmm_pd_region*, int64_t, double*, PdGpuResults*, const GpuCallOptions&, pyphmm_stats*,
               pyphmm_error* error) {
    return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", cuda_probe().status);
}

int cuda_sw_align(int, const pyphmm_sw_batch&, char*, const int64_t*, int32_t*, pyphmm_stats*, pyphmm_error* error) {
    return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", cuda_probe().status);
}

void cuda_nvml_load() {}

int cuda_other_processes(int, bool) { return -1; }

bool cuda_mps_active(char* pipe_dir, size_t capacity) {
    if (pipe_dir && capacity) pipe_dir[0] = '\0';
    return false;
}

}  // namespace pyphmm
