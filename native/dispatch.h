// Policy helpers shared by the dispatcher's entry points and the JNI layer.
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// Cell count under which AUTO keeps a call on the CPU (PYPHMM_GPU_MIN_CELLS).
int64_t gpu_min_cells();

// Backend a call with `cells` cells runs on: PYPHMM_BACKEND_CPU or _CUDA, or
// minus an error code (with err filled) when CUDA was demanded but is absent.
int resolve_backend(const pyphmm_options* options, int64_t cells, pyphmm_error* err);

// options->threads if positive, else every available core.
int default_threads(const pyphmm_options* options);

// Validates a Smith-Waterman batch and its output buffers (dispatch_sw.cc).
int check_sw_batch(const pyphmm_sw_batch* batch, const char* cigars, const int64_t* cigar_offsets,
                   const int32_t* alignment_offsets, pyphmm_error* err);

}  // namespace pyphmm
