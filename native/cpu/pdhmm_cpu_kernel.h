// The CPU PDHMM kernels as the driver (pdhmm_cpu.cc) sees them: one pair's
// view of the caller's buffers, GKL's serial algorithm as the scalar
// reference (pdhmm_cpu_scalar.cc), and the lane-per-pair kernels of the
// instruction set chosen for this CPU (pdhmm_cpu_kernel.cc), whose every
// lane equals the reference bit for bit.
#pragma once
#include <cstdint>

namespace pyphmm {
namespace cpu {

// One read x PD haplotype pair, pointing into the caller's packed buffers.
// Inputs are validated (gap qualities <= 127, base qualities <= 254, read
// bases at SNP positions that GKL accepts) before a kernel sees them.
struct PdPair {
    const uint8_t* read;  // bases; quals, ins, dels, gcp at the same offset
    const uint8_t* quals;
    const uint8_t* ins;
    const uint8_t* dels;
    const uint8_t* gcp;
    const uint8_t* hap;
    const uint8_t* pd;  // one PD byte per haplotype base
    int32_t m;          // read length (0 allowed: the sum is 0)
    int32_t n;          // haplotype length (0 allowed: the sum is 0)
    int64_t out;        // index into the caller's output array
};

// GKL's serial PDHMM for one pair: the sum over the last row of M + X,
// scaled by 2^1020 (the result is log10(sum) - log10(2^1020)).
double pd_sum_scalar(const PdPair& p);
// The same in the GPU kernel's operation order (fused multiply-adds): the
// kernel's sums bit for bit (the tests' reference for the kernel; how far
// from pd_sum_scalar's: cuda/pdhmm_plan.h).
double pd_sum_gpu_order(const PdPair& p);

// Lanes of the widest kernel (AVX-512 doubles).
constexpr int kPdMaxLanes = 8;

// Sums of `count` <= lanes pairs, one pair per SIMD lane.
typedef void (*PdForward)(const PdPair* const*, int, double*);

struct PdKernelChoice {
    const char* name;
    int lanes;  // 1 for the scalar reference
    PdForward forward;
};

// The best kernel this CPU runs, or the one PYPHMM_DEV's cpu_kernel names
// (avx512, avx2, neon, portable, or scalar for the reference; one the CPU
// cannot run is refused with a note on stderr).
const PdKernelChoice& pd_kernel_choice();

}  // namespace cpu
}  // namespace pyphmm
