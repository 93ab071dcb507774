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

// The 32-bit element of one position (the layout above).
uint32_t read_elem(uint8_t base, uint8_t qual, uint8_t ins, uint8_t del, uint8_t gcp);

// Whether every position has the first one's insertion, deletion and gap
// continuation values (& 127), as pack_read_elems returns, without packing.
bool same_transitions(const uint8_t* ins, const uint8_t* dels, const uint8_t* gcp, int64_t m);

// One 16-bit element per position: the low 11 bits of the 32-bit element
// (base mask, base quality << 4). A read whose transitions are uniform
// needs no more per position (its triple is stored once; see
// cuda/pairhmm_layout.h), and a per-region call sends half the bytes.
void pack_read_elems16(const uint8_t* bases, const uint8_t* quals, int64_t m, uint16_t* dst);

// The plain loops (reference for tests; PYPHMM_PACK_SCALAR=1 selects them).
void pack_base_planes_scalar(const uint8_t* src, int64_t n, uint8_t* dst);
bool pack_read_elems_scalar(const uint8_t* bases, const uint8_t* quals, const uint8_t* ins, const uint8_t* dels,
                            const uint8_t* gcp, int64_t m, uint32_t* dst);
bool same_transitions_scalar(const uint8_t* ins, const uint8_t* dels, const uint8_t* gcp, int64_t m);
void pack_read_elems16_scalar(const uint8_t* bases, const uint8_t* quals, int64_t m, uint16_t* dst);

}  // namespace pyphmm
