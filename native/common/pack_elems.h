// Host-side packing of read and haplotype bytes into the CUDA kernels' input
// format, vectorised: a per-region GPU call waits for it.
#pragma once
#include <cstdint>

namespace pyphmm {

// Haplotype bytes as planes: A=0 C=1 G=2 T=3 N=4, any other byte 0 (A, as
// GKL); the CUDA kernels index their emission tables with them.
void pack_base_planes(const uint8_t* src, int64_t n, uint8_t* dst);

// One 32-bit element per read position: bits 0-3 base mask (A=1 C=2 G=4
// T=8 N=15, any other byte A, as GKL), then four 7-bit fields (each value
// & 127): base quality << 4, insertion << 11, deletion << 18, gap
// continuation << 25 (the layout the CUDA kernels unpack). Returns whether
// every position has the first one's insertion, deletion and gap
// continuation values (& 127): the read's transitions are uniform.
bool pack_read_elems(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                     const uint8_t* gcp, int64_t m, uint32_t* dst);

// The plain loops (reference for tests; PYPHMM_DEV's pack_scalar=1 selects them).
void pack_base_planes_scalar(const uint8_t* src, int64_t n, uint8_t* dst);
bool pack_read_elems_scalar(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                            const uint8_t* gcp, int64_t m, uint32_t* dst);

}  // namespace pyphmm
