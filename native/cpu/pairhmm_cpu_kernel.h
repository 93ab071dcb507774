// The CPU PairHMM kernels (pairhmm_cpu_kernel.cc) as the driver
// (pairhmm_cpu.cc) sees them: one pair's view of the caller's buffers, and
// the forward functions of the instruction set chosen for this CPU.
#pragma once
#include <cstdint>

namespace pyphmm {
namespace cpu {

// One read x haplotype pair, pointing into the caller's packed buffers.
struct Pair {
    const uint8_t* read;  // bases; quals, ins, dels, gcp at the same offset
    const uint8_t* quals;
    const uint8_t* ins;
    const uint8_t* dels;
    const uint8_t* gcp;
    const uint8_t* hap;
    int32_t m;    // read length
    int32_t n;    // haplotype length
    int64_t out;  // index into the caller's output array
};

// Lanes of the widest kernel (AVX-512 floats).
constexpr int kMaxLanes = 16;

// A group of `count` <= lanes pairs, sums of the last row out (raw, before
// log10); or one pair on its own (the stripe kernel).
typedef void (*ForwardFloat)(const Pair* const*, int, float*);
typedef void (*ForwardDouble)(const Pair* const*, int, double*);
typedef float (*ForwardOneFloat)(const Pair&);
typedef double (*ForwardOneDouble)(const Pair&);

struct KernelChoice {
    const char* name;
    int vector_bytes;  // lanes per group: vector_bytes / sizeof(T)
    ForwardFloat f;
    ForwardDouble d;
    ForwardOneFloat one_f;
    ForwardOneDouble one_d;
};

// The best kernel this CPU runs, or the one PYPHMM_DEV's cpu_kernel names (for
// tests and comparisons; a kernel the CPU cannot run is refused with a note).
const KernelChoice& kernel_choice();

}  // namespace cpu
}  // namespace pyphmm
