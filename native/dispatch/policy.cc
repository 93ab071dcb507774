// Policies every entry point shares (see policy.h).
#include "dispatch/policy.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "common/config.h"
#include "common/thread_pool.h"
#include "dispatch/gpu.h"

namespace pyphmm {

int check_options(const pyphmm_options* o, pyphmm_error* err) {
    if (!o) return PYPHMM_OK;
    if (o->backend < PYPHMM_BACKEND_AUTO || o->backend > PYPHMM_BACKEND_CUDA)
        return set_error(err, PYPHMM_E_INVALID, "unknown backend code %d", o->backend);
    if (o->backend == PYPHMM_BACKEND_CPU) return PYPHMM_OK;  // (no GPU probe for CPU calls)
    return check_device_request(o->device, err);
}

int requested_backend(const pyphmm_options* o) {
    const int asked = o ? o->backend : PYPHMM_BACKEND_AUTO;
    if (asked != PYPHMM_BACKEND_AUTO) return asked;
    switch (config::get(config::Knob::kBackend)) {
        case config::kCpu: return PYPHMM_BACKEND_CPU;
        case config::kCuda: return PYPHMM_BACKEND_CUDA;
        default: return PYPHMM_BACKEND_AUTO;
    }
}

int resolve_backend(const pyphmm_options* o, int64_t cells, int64_t min_cells, pyphmm_error* err) {
    const int asked = requested_backend(o);
    if (asked == PYPHMM_BACKEND_CPU) return PYPHMM_BACKEND_CPU;  // (before the probe: it starts the driver)
    const GpuState& gpu = gpu_state();
    if (asked == PYPHMM_BACKEND_CUDA) {
        if (!gpu.usable)
            return -set_error(err, PYPHMM_E_UNAVAILABLE, "CUDA backend requested but unavailable: %s", gpu.status);
        return PYPHMM_BACKEND_CUDA;
    }
    if (!gpu.usable) {
        // (a CPU-only build says nothing: no GPU was meant; a fake GPU stands in for a real one)
        static std::atomic<bool> said{false};
        if ((cuda_probe().compiled || gpu.fake) && !said.exchange(true))
            std::fprintf(stderr, "pyphmm: CUDA unavailable (%s), using the CPU backend\n", gpu.status);
        return PYPHMM_BACKEND_CPU;
    }
    return cells >= min_cells ? PYPHMM_BACKEND_CUDA : PYPHMM_BACKEND_CPU;
}

int default_threads(const pyphmm_options* o) { return (o && o->threads > 0) ? o->threads : available_cores(); }

bool timing_wanted(const pyphmm_options* o) {
    return (o && (o->flags & PYPHMM_FLAG_TIMING)) || config::on(config::Knob::kCudaTiming);
}

void report_gpu_failure(const char* what, const pyphmm_error& gpu_error, const char* then) {
    static std::atomic<bool> said{false};
    if (said.exchange(true)) return;
    std::fprintf(stderr,
                 "pyphmm: warning: GPU %s failed (%s); %s (later GPU failures of this process fall back the same "
                 "way without a message)\n",
                 what, gpu_error.message, then);
}

void clear_stats(pyphmm_stats* stats) {
    if (!stats) return;
    std::memset(stats, 0, sizeof(*stats));
    stats->device = -1;
}

}  // namespace pyphmm
