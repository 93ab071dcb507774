// What every entry point of the C ABI shares: option checks, the backend a
// call runs on, the thread count, the GPU->CPU fallback, and the guard that
// keeps C++ exceptions from crossing the ABI.
#pragma once
#include <cstdint>
#include <exception>
#include <new>

#include "common/config.h"
#include "common/errors.h"
#include "pyphmm.h"

namespace pyphmm {

// Rejects unknown backend codes and impossible device requests.
int check_options(const pyphmm_options* options, pyphmm_error* error);

// The backend a call asks for once PYPHMM_BACKEND has overridden AUTO.
int requested_backend(const pyphmm_options* options);

// Backend a call with `cells` cells runs on: PYPHMM_BACKEND_CPU or _CUDA, or
// minus an error code (with error filled) when CUDA was demanded but is
// absent. Under AUTO: CUDA when a GPU is usable and cells >= min_cells.
int resolve_backend(const pyphmm_options* options, int64_t cells, int64_t min_cells, pyphmm_error* error);

// options->threads if positive, else every available core.
int default_threads(const pyphmm_options* options);

// The call's device request (PYPHMM_DEVICE_AUTO without options).
inline int32_t requested_device(const pyphmm_options* o) { return o ? o->device : PYPHMM_DEVICE_AUTO; }

// Whether the call wants the stats' GPU timing.
bool timing_wanted(const pyphmm_options* options);

// Says on stderr that the GPU failed, why, and what happens instead (`then`):
// the first time in the process; later failures only set stats->fell_back.
void report_gpu_failure(const char* what, const pyphmm_error& gpu_error, const char* then);

// Runs the GPU path; if it fails, reports it and recomputes the call on the
// CPU: a GPU problem must never lose a GATK run. Input the GPU path refuses
// (PYPHMM_E_INVALID: PDHMM checks its regions' bytes as its chunks go) is
// the call's error, which the CPU would report too.
template <typename Gpu, typename Cpu>
int gpu_else_cpu(const char* what, pyphmm_stats* stats, pyphmm_error* error, Gpu gpu, Cpu cpu) {
    pyphmm_error gpu_error;
    clear_error(&gpu_error);
    const int gpu_rc = gpu(&gpu_error);
    if (gpu_rc == PYPHMM_OK) return PYPHMM_OK;
    if (gpu_rc == PYPHMM_E_INVALID) {
        if (error) *error = gpu_error;
        return gpu_rc;
    }
    report_gpu_failure(what, gpu_error, "computing this call on the CPU");
    const int rc = cpu();
    if (stats) {
        stats->fell_back = 1;
        stats->device = -1;
    }
    return rc;
}

// Entry-point body wrapper: a call runs only while every setting in the
// environment parses, and no C++ exception crosses the C ABI.
template <typename Body>
int guarded(pyphmm_error* error, Body body) {
    try {
        if (const int rc = config::check(error)) return rc;
        return body();
    } catch (const std::bad_alloc&) {
        return set_error(error, PYPHMM_E_NOMEM, "out of host memory");
    } catch (const std::exception& e) {
        return set_error(error, PYPHMM_E_INTERNAL, "internal error: %s", e.what());
    } catch (...) {
        return set_error(error, PYPHMM_E_INTERNAL, "internal error");
    }
}

// Zeroes the stats (device -1: none yet).
void clear_stats(pyphmm_stats* stats);

}  // namespace pyphmm
