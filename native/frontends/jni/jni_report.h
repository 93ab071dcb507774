// What the JNI layer tells a GATK user on stderr (GATK's log): one line when
// a binding initialises (which pyphmm, which backend, GPU, CPU kernel,
// dispatch threshold) and one summary when GATK calls done()/close() (calls,
// pairs, cells, seconds inside pyphmm, GPU/CPU share, double recomputes, GPU
// fallbacks). Both the shim jar and GKL's own classes (library directory)
// reach them through GKL's natives. PYPHMM_LOG=quiet silences both.
//
// Everything here goes through the public ABI (pyphmm.h): the banner from
// pyphmm_get_info_for, the summary from the pyphmm_stats each call returns.
#pragma once
#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {
namespace jni {

// True under PYPHMM_LOG=quiet.
bool quiet();

// Prints the PairHMM line for a caller using `threads` CPU threads, once per
// process (GATK initialises a binding per engine; the first says it all).
void announce_pairhmm(int threads, bool double_precision);

// Prints the Smith-Waterman line, once per process.
void announce_sw();

// Adds one finished PairHMM call (its stats, the nanoseconds it spent inside
// pyphmm_pairhmm) to the process-wide totals. Lock-free: any thread.
// all_double: the call computed every pair in double (none was "redone").
void count_pairhmm(const pyphmm_stats& stats, int64_t nanoseconds, bool all_double);

// Adds one Smith-Waterman alignment of `cells` cells.
void count_sw(int64_t cells, int64_t nanoseconds);

// The summary lines: the process's totals so far (GATK calls done() once per
// engine; under Spark every task's engine prints the executor's running
// totals). Nothing is printed before the first call.
void print_pairhmm_summary();
void print_sw_summary();

}  // namespace jni
}  // namespace pyphmm
