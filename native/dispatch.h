// Policy helpers shared by the dispatcher's entry points (dispatch.cc,
// dispatch_sw.cc, calibrate.cc, hybrid.cc) and the JNI layer.
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// ---- the GPU as PairHMM's policies see it (dispatch.cc)
// PYPHMM_TEST_FAKE_GPU=1 (tests only) stands the single-threaded CPU backend
// in for the GPU, so the threshold calibration and the hybrid scheduler run
// on machines without one; =fail makes every second call fail (the 2nd,
// 4th, ...: the calibration fails, and a whole-workload call's GPU side
// fails after its first batch). Unset, these are the CUDA backend.
bool gpu_usable();
bool gpu_is_fake();  // the CPU stand-in above (whose speed is one CPU thread's)
int gpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, bool double_precision,
                pyphmm_stats* stats, pyphmm_error* error);

// ---- per-call threshold (calibrate.cc)
// The micro-benchmark's results, measured once per process at first use.
struct Calibration {
    bool ran = false;          // a usable GPU answered every timed call
    double gpu_call_s = 0;     // fixed cost of one GPU call
    double gpu_rate = 0;       // GPU cells/s beyond that cost
    double cpu_rate = 0;       // CPU cells/s at cpu_threads threads
    int cpu_threads = 1;
    int64_t min_cells = 0;     // crossover at cpu_threads (clamped)
};
const Calibration& calibration();

// Cell count under which AUTO keeps a PairHMM call with `threads` CPU
// threads on the CPU: PYPHMM_GPU_MIN_CELLS, else the calibrated crossover,
// else the fixed default. `source` (may be NULL) gets PYPHMM_THRESHOLD_*.
int64_t gpu_min_cells(int threads, int* source);

// The fixed default (also Smith-Waterman's threshold: the calibration
// measures PairHMM, not SW), or PYPHMM_GPU_MIN_CELLS.
int64_t fixed_gpu_min_cells();

// ---- whole-workload mode (hybrid.cc)
// Whether a PairHMM call with these options and regions shares GPU and CPU.
bool hybrid_wanted(const pyphmm_options* options, int64_t num_regions);
// Threads that drive the GPU in that mode (PYPHMM_HYBRID_GPU_THREADS, default 2).
int hybrid_gpu_threads();
// Computes a validated call in that mode; region_cells[k] is region k's cell
// count. Never fails on valid input: a GPU failure moves the rest to the CPU.
int hybrid_pairhmm(const pyphmm_region* regions, int64_t num_regions, const int64_t* region_cells,
                   double* out, const pyphmm_options* options, pyphmm_stats* stats);

// ---- shared
// PYPHMM_DEBUG_DISPATCH=1: one stderr line per PairHMM call saying where its
// regions ran (and one for the calibration).
bool debug_dispatch();

// The backend a call asks for once PYPHMM_BACKEND has overridden AUTO.
int requested_backend(const pyphmm_options* options);

// Backend a call with `cells` cells runs on: PYPHMM_BACKEND_CPU or _CUDA, or
// minus an error code (with err filled) when CUDA was demanded but is absent.
// Under AUTO, CUDA when `gpu_ok` and cells >= min_cells.
int resolve_backend(const pyphmm_options* options, int64_t cells, int64_t min_cells, bool gpu_ok,
                    pyphmm_error* err);

// options->threads if positive, else every available core.
int default_threads(const pyphmm_options* options);

// Reads a non-negative integer from the environment (fallback when unset or
// malformed, with one warning).
int64_t env_int(const char* name, int64_t fallback);

// Validates a Smith-Waterman batch and its output buffers (dispatch_sw.cc).
int check_sw_batch(const pyphmm_sw_batch* batch, const char* cigars, const int64_t* cigar_offsets,
                   const int32_t* alignment_offsets, pyphmm_error* err);

}  // namespace pyphmm
