// Which GPU a process and its calls use when several are visible.
//
// A process picks its preferred GPU once: PYPHMM_DEVICE if set, else the
// GPU with the fewest other processes on it (NVML), ties broken by a
// per-user host-wide ticket that every new process draws, so processes
// started together alternate between equally loaded GPUs. Each call then
// runs on the process's GPU with the fewest of the process's own calls in
// flight, the preferred one first: one thread stays on one GPU, many
// threads spread over all of them.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

namespace pyphmm {

// The preferred GPU: index into `others` (other processes per device, -1
// unknown, counted as 0) among the least loaded, the ticket-th of the ties.
int choose_preferred(const std::vector<int>& others, uint64_t ticket);

// A number that grows by one for each process of this user on this host
// that asks (a counter file in a directory private to the user); the
// process id where no such directory can be used.
uint64_t host_ticket();

// Index of the device with the fewest calls in flight, scanning from
// `preferred` so that it wins ties.
int least_busy(const std::atomic<int>* inflight, int count, int preferred);

}  // namespace pyphmm
