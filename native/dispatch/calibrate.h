// The per-call GPU thresholds of PairHMM and PDHMM calls under AUTO,
// measured once per process at each kernel's first use (calibrate.cc says
// how).
#pragma once
#include <cstdint>

namespace pyphmm {

// The micro-benchmark's results.
struct Calibration {
    bool ran = false;       // a usable GPU answered every timed call
    bool gpu_seen = false;  // a GPU was usable when it was measured
    double gpu_call_s = 0;  // fixed cost of one GPU call
    double gpu_rate = 0;    // GPU cells/s beyond that cost
    double cpu_rate = 0;    // CPU cells/s at cpu_threads threads
    int cpu_threads = 1;
    int64_t min_cells = 0;  // crossover at cpu_threads (clamped)
};
const Calibration& calibration();

// Cell count under which AUTO keeps a PairHMM call with `threads` CPU
// threads on the CPU: PYPHMM_GPU_MIN_CELLS, else the calibrated crossover,
// else the fixed default. `source` (may be NULL) gets PYPHMM_THRESHOLD_*.
int64_t gpu_min_cells(int threads, int* source);

// The same for PDHMM calls: calibrated on its own kernels at the first
// PDHMM call under AUTO (HaplotypeCaller-shaped PD regions: 68 bp reads x
// 6 haplotypes of 136 bp, 2 to 128 reads).
const Calibration& pd_calibration();
int64_t pd_gpu_min_cells(int threads, int* source);

// The fixed default (also Smith-Waterman's threshold: the calibration
// measures PairHMM, not SW), or PYPHMM_GPU_MIN_CELLS.
int64_t fixed_gpu_min_cells();

}  // namespace pyphmm
