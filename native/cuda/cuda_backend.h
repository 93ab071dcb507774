// The CUDA backend as the dispatcher's GPU facade (dispatch/gpu.cc) sees
// it. Implemented in native/cuda/ when the build has nvcc, else by
// cuda_absent.cc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "pyphmm.h"

namespace pyphmm {

constexpr int kMaxCudaDevices = 64;

struct CudaDeviceInfo {
    char name[256] = {0};
    int major = 0, minor = 0;
    int sms = 0;
    size_t memory = 0;
    char pci_bus_id[32] = {0};  // for NVML
    bool eligible = false;      // compute capability 8.0 or newer
};

// What the driver says about the visible devices (CUDA_VISIBLE_DEVICES
// applies), without creating a context.
struct CudaProbe {
    bool compiled = false;  // this build contains CUDA kernels
    bool driver = false;    // a driver answered
    int device_count = 0;
    int eligible_count = 0;
    CudaDeviceInfo device[kMaxCudaDevices];
    char status[256] = {0};  // why no device is eligible, or a summary
};
const CudaProbe& cuda_probe();

// Creates device d's context and checks that this build has a kernel image
// for it, once per process: later calls return the first answer, unless the
// device had no room for this process (*full, when full is given: an MPS
// server at its client limit, an exclusive-process GPU in use, its memory
// taken). Then a call 100 ms or more later tries again.
int cuda_device_init(int device, pyphmm_error* error, bool* full = nullptr);

// How a GPU PairHMM or PDHMM call runs.
struct GpuCallOptions {
    bool double_precision = false;
    bool timing = false;  // fill the stats' kernel and host-phase times
    int nap_percent = 0;  // share of a small call's expected wait its thread sleeps (dispatch/gpu.h)
    // PDHMM: the input checks that read every byte, for regions [first,
    // end) (PYPHMM_OK, or an error with the first failing region's message).
    // The backend runs them on each chunk's regions before packing it, so
    // the GPU works on the first chunks while the host checks the rest;
    // empty: the regions were checked before the call.
    std::function<int(int64_t first, int64_t end, pyphmm_error* error)> check_pd;
};

// What the dispatcher has to do after a GPU PDHMM call: results left NaN
// (recompute them on the CPU) and results above 0 (GKL's check fails them:
// find and report the first).
struct PdGpuResults {
    int64_t marked = 0;
    int64_t above_zero = 0;
};

// Same contract as cpu_pairhmm, on device `device` (initialised). Returns
// PYPHMM_OK or an error (device failure, out of device memory); the
// dispatcher then falls back to the CPU.
int cuda_pairhmm(int device, const pyphmm_region* regions, int64_t num_regions, double* out, const GpuCallOptions& call,
                 pyphmm_stats* stats, pyphmm_error* error);

// PDHMM on device `device` (initialised): same contract as cpu_pdhmm for
// regions whose layout is checked (and whose bytes call.check_pd checks, or
// were checked), except two things the dispatcher does, told by *results:
// the pairs whose result is NaN (the kernel's sum was not certified within
// 1e-10 of GKL's serial one, pdhmm_plan.h), which it recomputes on the
// CPU, and the report of a result above 0. Returns PYPHMM_OK, check_pd's
// error (PYPHMM_E_INVALID: nothing to fall back to), or a device error
// (device failure, out of device memory; the dispatcher then falls back to
// the CPU). call: timing, nap_percent and check_pd (double_precision is
// moot: PDHMM is double).
int cuda_pdhmm(int device, const pyphmm_pd_region* regions, int64_t num_regions, double* out, PdGpuResults* results,
               const GpuCallOptions& call, pyphmm_stats* stats, pyphmm_error* error);

// Smith-Waterman on device `device`: same contract as cpu_sw_align for a
// batch validated by check_sw_batch.
int cuda_sw_align(int device, const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                  int32_t* alignment_offsets, pyphmm_stats* stats, pyphmm_error* error);

// Loads and initialises NVML (once; later calls return at once). The
// device probe runs it while the CUDA driver starts, which takes longer
// (docs/PERFORMANCE.md).
void cuda_nvml_load();

// Compute processes other than this one that use device d, from NVML
// (-1 when NVML is unavailable or does not know). mps_clients: count the
// MPS server's clients instead (under MPS, NVML lists the server as the
// device's one compute process, whatever its clients).
int cuda_other_processes(int device, bool mps_clients = false);

// Whether this process's GPU work goes through an MPS server; pipe_dir
// receives the MPS pipe directory in use (or the one that would be).
bool cuda_mps_active(char* pipe_dir, size_t capacity);

}  // namespace pyphmm
