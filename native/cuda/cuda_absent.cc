// Built instead of the .cu files when nvcc is not available: the package is
// then CPU-only and says so through cuda_probe().
#include "cuda_backend.h"

#include <cstring>

#include "../common/errors.h"

namespace pyphmm {

const CudaProbe& cuda_probe() {
    static const CudaProbe probe = [] {
        CudaProbe p;
        std::strncpy(p.status, "not compiled: this build has no CUDA kernels (no nvcc, or PYPHMM_NO_CUDA=1)",
                     sizeof(p.status) - 1);
        return p;
    }();
    return probe;
}

int cuda_pairhmm(const pyphmm_region*, int64_t, double*, bool, pyphmm_stats*, pyphmm_error* error) {
    return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", cuda_probe().status);
}

int cuda_sw_align(const pyphmm_sw_batch&, char*, const int64_t*, int32_t*, pyphmm_stats*, pyphmm_error* error) {
    return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", cuda_probe().status);
}

}  // namespace pyphmm
