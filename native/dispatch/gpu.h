// The GPU as the dispatch policies see it: the CUDA backend's devices or,
// for tests on machines without one, PYPHMM_TEST=fake_gpu=N stand-ins (each
// the single-threaded CPU backend, with the same device choice and failure
// injection as real devices). Every GPU call of the library goes through
// here: device choice (devices.h), failure injection, the sharing hint.
#pragma once
#include <cstdint>

#include "cuda/cuda_backend.h"
#include "pyphmm.h"

namespace pyphmm {

struct GpuState {
    bool usable = false;
    bool full = false;  // the preferred device had no room for this process: tried again (gpu_state)
    bool fake = false;
    int count = 0;                      // devices calls may run on
    int ordinal[kMaxCudaDevices] = {};  // their CUDA ordinals
    int preferred = 0;                  // index (into ordinal) of this process's device
    bool pinned = false;                // PYPHMM_DEVICE
    char choice[128] = {0};             // how the preferred device was chosen
    int other_processes = -1;           // on the preferred device when chosen (-1: unknown)
    bool mps = false;                   // an MPS server serves this process
    char mps_dir[256] = {0};
    char name[256] = {0};    // the preferred device's name
    char status[256] = {0};  // why no GPU is usable, or the preferred device
    int visible = 0;         // devices the driver shows
};

// Probes and chooses once per process (the first call starts the driver,
// ~0.2 s); later calls return the same answer, except after a full GPU
// (GpuState::full): every PYPHMM_DEV's gpu_retry_ms one call starts it again, and
// once it starts the answer is the usable device.
const GpuState& gpu_state();
inline bool gpu_usable() { return gpu_state().usable; }
inline bool gpu_is_fake() { return gpu_state().fake; }
// Whether this process has probed its GPUs (gpu_state() has answered), and
// found one usable; probes nothing.
bool gpu_in_use();

// The percent of a small call's expected wait that its thread sleeps
// before it watches the results (PYPHMM_CUDA_NAP). Unset: napping in a
// process that MPS serves, where GATK runs as many processes as cores and
// a spinning waiter takes a core that another process's work needs
// (docs/PERFORMANCE.md); spinning otherwise, as it answers a lone caller
// soonest.
int nap_percent(const GpuState& g);

// Checks a call's options.device (PYPHMM_DEVICE_AUTO or an ordinal).
int check_device_request(int32_t device, pyphmm_error* error);

// A PairHMM call on the GPU: options.device, else the process's least busy
// device. stats->device names the device that ran it.
int gpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, int32_t device,
                const GpuCallOptions& call, pyphmm_stats* stats, pyphmm_error* error);

// A PDHMM call on the GPU (fake GPUs: the CPU backend on one thread).
// *results_checked: every result is known to be at most 0; else the
// dispatcher checks them (and reports the first that is not). call.check_pd
// checks the regions' bytes as the call goes (see cuda_pdhmm).
int gpu_pdhmm(const pyphmm_pd_region* regions, int64_t num_regions, double* out, int32_t device,
              const GpuCallOptions& call, pyphmm_stats* stats, bool* results_checked, pyphmm_error* error);

int gpu_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets, int32_t* alignment_offsets,
                 int32_t device, pyphmm_stats* stats, pyphmm_error* error);

}  // namespace pyphmm
