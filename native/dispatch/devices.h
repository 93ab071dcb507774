// Which GPU a process and its calls use when several are visible.
//
// A process picks its preferred GPU once: PYPHMM_DEVICE if set, else the
// GPU with the fewest other processes on it (claim_device), so processes
// started together spread evenly over equally loaded GPUs. Each call then
// runs on the process's GPU with the fewest of the process's own calls in
// flight, the preferred one first: one thread stays on one GPU, many
// threads spread over all of them.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pyphmm {

// The preferred GPU: index into `loads` (processes per device, -1 unknown,
// counted as 0) among the least loaded, the ticket-th of the ties.
int choose_preferred(const std::vector<int>& loads, uint64_t ticket);

// This process's GPU among the candidates `ids` (stable names: PCI bus ids,
// which CUDA_VISIBLE_DEVICES does not renumber), given the other processes
// NVML lists on each (`others`, -1 unknown), or the pinned index if
// pinned >= 0; records the choice in this user's host-wide registry of
// pyphmm processes and their GPUs (a file in a directory private to the
// user, rewritten under an exclusive lock). A GPU's load is the larger of
// its NVML count and its registered live processes: NVML lists a process
// only once its CUDA context exists, so processes started together would
// each find every GPU idle. Ties go by a ticket that every choosing process
// draws from the same file, so equally loaded GPUs alternate. Without a
// usable private directory: NVML counts alone, ties by process id.
int claim_device(const std::vector<std::string>& ids, const std::vector<int>& others, int pinned);

// Index of the device with the fewest calls in flight, scanning from
// `preferred` so that it wins ties.
int least_busy(const std::atomic<int>* inflight, int count, int preferred);

}  // namespace pyphmm
