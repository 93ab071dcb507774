// A process-wide pool of worker threads for the CPU backends.
//
// Why not OpenMP: libgomp's pool does not survive fork() (Python's
// multiprocessing would hang), and callers here are often several host
// threads at once (GATK's --native-pair-hmm-threads). This pool lets each
// caller borrow up to `threads - 1` workers and work itself, so concurrent
// callers share the cores instead of oversubscribing them.
#pragma once
#include <cstdint>
#include <functional>

namespace pyphmm {

// Cores this process may use (sched affinity aware), at least 1.
int available_cores();

// Runs fn(i) for every i in [0, n) on up to `threads` threads (<= 0: all
// cores), the calling thread included; returns when all are done. Items are
// claimed one at a time, so uneven items balance themselves. If fn throws
// (on any thread), the items not yet begun are skipped and the first
// exception is rethrown here once every thread has left fn.
void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& fn);

}  // namespace pyphmm
