// What the library says about itself: pyphmm_get_info, the thresholds, the
// configuration knobs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/config.h"
#include "common/thread_pool.h"
#include "cpu/pairhmm_cpu.h"
#include "dispatch/calibrate.h"
#include "dispatch/gpu.h"
#include "dispatch/hybrid.h"
#include "dispatch/policy.h"
#include "pyphmm.h"

#ifndef PYPHMM_VERSION
#define PYPHMM_VERSION "0.0.0"
#endif

using namespace pyphmm;

namespace {

void fill_gpu(pyphmm_info* info) {
    const CudaProbe& cuda = cuda_probe();
    const GpuState& gpu = gpu_state();
    info->cuda_compiled = cuda.compiled;
    info->cuda_usable = gpu.usable;
    info->device_count = gpu.visible;
    info->device = gpu.usable ? gpu.ordinal[gpu.preferred] : -1;
    info->usable_devices = gpu.usable ? gpu.count : 0;
    info->device_pinned = gpu.pinned;
    std::snprintf(info->device_choice, sizeof(info->device_choice), "%s", gpu.usable ? gpu.choice : "");
    std::snprintf(info->device_name, sizeof(info->device_name), "%s", gpu.name);
    std::snprintf(info->cuda_status, sizeof(info->cuda_status), "%s", gpu.status);
    info->mps = gpu.mps;
    info->gpu_other_processes = gpu.other_processes;
    std::snprintf(info->mps_pipe_dir, sizeof(info->mps_pipe_dir), "%s", gpu.mps_dir);
    info->cuda_nap_percent = gpu.usable ? nap_percent(gpu) : 0;
}

}  // namespace

extern "C" void pyphmm_get_info(pyphmm_info* info) { pyphmm_get_info_for(nullptr, info); }

extern "C" void pyphmm_get_info_for(const pyphmm_options* options, pyphmm_info* info) {
    if (!info) return;
    std::memset(info, 0, sizeof(*info));
    std::snprintf(info->version, sizeof(info->version), "%s", PYPHMM_VERSION);
    info->abi_version = PYPHMM_ABI_VERSION;
    fill_gpu(info);
    if (options && options->device >= 0 && info->cuda_usable) info->device = options->device;
    info->cpu_threads = default_threads(options);
#ifdef PYPHMM_WITH_JNI
    info->jni_compiled = 1;
#endif
    std::snprintf(info->cpu_kernel, sizeof(info->cpu_kernel), "%s", cpu_pairhmm_kernel_name());
    int source = PYPHMM_THRESHOLD_DEFAULT;
    info->gpu_min_cells = gpu_min_cells(info->cpu_threads, &source);
    info->gpu_min_cells_source = source;
    if (source == PYPHMM_THRESHOLD_CALIBRATED) {
        const Calibration& c = calibration();
        info->calib_gpu_call_us = c.gpu_call_s * 1e6;
        info->calib_gpu_gcups = c.gpu_rate / 1e9;
        info->calib_cpu_gcups = c.cpu_rate / 1e9;
    }
    info->hybrid = hybrid_wanted(options, 2);
    info->hybrid_gpu_threads = hybrid_gpu_threads();
    info->backend = requested_backend(options);
}

extern "C" int64_t pyphmm_config_describe(char* buf, int64_t capacity) {
    const std::string text = config::describe();
    if (buf && capacity > 0) {
        const size_t n = std::min<size_t>(text.size(), static_cast<size_t>(capacity - 1));
        std::memcpy(buf, text.data(), n);
        buf[n] = '\0';
    }
    return static_cast<int64_t>(text.size());
}

extern "C" void pyphmm_config_reload(void) { config::reload(); }

extern "C" int pyphmm_config_check(pyphmm_error* error) {
    clear_error(error);
    return config::check(error);
}
