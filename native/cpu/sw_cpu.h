// CPU Smith-Waterman backend with GATK's semantics (see sw_cpu.cc).
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {

// Aligns every pair of a validated batch; same contract as pyphmm_sw_align.
int cpu_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets, int32_t* alignment_offsets,
                 int threads, pyphmm_stats* stats, pyphmm_error* error);

// Aligns one validated pair with GATK's rules; writes the NUL-terminated
// CIGAR (2 * (m + n) + 1 bytes suffice) and returns the alignment offset.
// Adds to *reused_cells the cells taken from an earlier pair of this thread
// (prefix reuse, sw_cpu_fill.h), when given.
int32_t sw_align_one(const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p, int strategy,
                     char* cigar, int64_t* reused_cells = nullptr);

// Pairs this thread aligned on one diagonal without a matrix, past GATK's
// exact-substring shortcut (sw_cpu.cc: diagonal_alignment); for the tests'
// native checks.
int64_t& diagonal_alignments();

}  // namespace pyphmm
