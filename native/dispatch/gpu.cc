// The GPU facade (see gpu.h).
#include "dispatch/gpu.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "cpu/pairhmm_cpu.h"
#include "cpu/pdhmm_cpu.h"
#include "cpu/sw_cpu.h"
#include "dispatch/devices.h"

namespace pyphmm {

namespace {

using config::Knob;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_inflight[kMaxCudaDevices];
Clock::time_point g_chosen_at;
std::atomic<bool> g_hinted{false};
std::atomic<bool> g_probed_usable{false};  // gpu_state() has run and found a usable GPU

// A ':'-separated count per fake device (PYPHMM_TEST's gpu_load: other
// processes on each; gpu_full: starts that fail for want of room).
std::vector<int> fake_counts(Knob knob, int count) {
    std::vector<int> counts(count, 0);
    const std::string spec = config::get_string(knob);
    size_t pos = 0;
    for (int d = 0; d < count && pos <= spec.size(); ++d) {
        const size_t colon = spec.find(':', pos);
        const std::string item = spec.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
        if (!item.empty()) counts[d] = std::atoi(item.c_str());
        if (colon == std::string::npos) break;
        pos = colon + 1;
    }
    return counts;
}

void hint_if_shared(const GpuState& g, int others) {
    if (g.mps || others <= 0 || config::quiet() || g_hinted.exchange(true)) return;
    std::fprintf(stderr,
                 "pyphmm: %d other process%s use%s GPU %d (%s) without MPS: the GPU runs one process's kernels at "
                 "a time; start NVIDIA MPS (`pyphmm mps start`) so they run side by side (PYPHMM_LOG=quiet hides "
                 "this line)\n",
                 others, others == 1 ? "" : "es", others == 1 ? "s" : "", g.ordinal[g.preferred], g.name);
}

// Stable names of the candidate devices (PCI bus ids, which
// CUDA_VISIBLE_DEVICES does not renumber) and the other processes on each
// (-1 unknown; under MPS the server's clients).
std::vector<std::string> device_ids(const GpuState& g) {
    std::vector<std::string> ids;
    for (int i = 0; i < g.count; ++i) {
        const char* bus = g.fake ? "" : cuda_probe().device[g.ordinal[i]].pci_bus_id;
        ids.push_back(bus[0] ? bus : (g.fake ? "fake:" : "cuda:") + std::to_string(g.ordinal[i]));
    }
    return ids;
}
std::vector<int> device_loads(const GpuState& g) {
    if (g.fake) return fake_counts(Knob::kTestGpuLoad, g.count);
    std::vector<int> others;
    for (int i = 0; i < g.count; ++i) others.push_back(cuda_other_processes(g.ordinal[i], g.mps));
    return others;
}

// The preferred device among the candidates, recorded in the host's registry.
void choose(GpuState& g, const std::vector<std::string>& ids, const std::vector<int>& others) {
    const int64_t pin = config::get(Knob::kDevice);
    int pinned = -1;
    if (pin >= 0) {
        g.pinned = true;
        for (int i = 0; i < g.count; ++i)
            if (g.ordinal[i] == pin) pinned = i;
        std::snprintf(g.choice, sizeof(g.choice), "PYPHMM_DEVICE=%lld", (long long)pin);
    } else if (g.count == 1) {
        pinned = 0;
        std::snprintf(g.choice, sizeof(g.choice), "the only usable GPU");
    } else {
        std::snprintf(g.choice, sizeof(g.choice), "least loaded of %d GPUs", g.count);
    }
    g.preferred = claim_device(ids, others, pinned);
    g.other_processes = others[g.preferred];
}

// Starts candidate i's context: PYPHMM_OK, or an error with *full when the
// device had no room for this process.
int start_candidate(const GpuState& g, int i, pyphmm_error* err, bool* full) {
    if (!g.fake) return cuda_device_init(g.ordinal[i], err, full);
    static std::atomic<int> failed[kMaxCudaDevices];
    *full = failed[i].fetch_add(1) < fake_counts(Knob::kTestGpuFull, g.count)[i];
    if (*full) return set_error(err, PYPHMM_E_UNAVAILABLE, "fake GPU %d is full (PYPHMM_TEST's gpu_full)", i);
    return PYPHMM_OK;
}

// g.name: the preferred device's.
void name_preferred(GpuState& g) {
    if (g.fake)
        std::snprintf(g.name, sizeof(g.name), "fake GPU %d (CPU stand-in)", g.preferred);
    else
        std::snprintf(g.name, sizeof(g.name), "%s", cuda_probe().device[g.ordinal[g.preferred]].name);
}

// Name and status of a started preferred device.
void describe_started(GpuState& g) {
    g.usable = true;
    g.full = false;
    name_preferred(g);
    if (g.fake) {
        std::snprintf(g.status, sizeof(g.status), "%s", g.name);
        return;
    }
    // (asked again unless a server was already running: the first client starts it)
    g.mps = g.mps || cuda_mps_active(g.mps_dir, sizeof(g.mps_dir));
    const int d = g.ordinal[g.preferred];
    const CudaDeviceInfo& info = cuda_probe().device[d];
    std::snprintf(g.status, sizeof(g.status), "CUDA device %d: %s (compute %d.%d, %d SMs, %zu MiB)", d, info.name,
                  info.major, info.minor, info.sms, static_cast<size_t>(info.memory >> 20));
}

// Why the preferred device could not serve this process although it may later.
void describe_full(GpuState& g, const pyphmm_error& err) {
    g.full = true;
    const int d = g.ordinal[g.preferred];
    name_preferred(g);
    char mps[64] = "";
    const int clients = g.fake || !g.mps ? -1 : cuda_other_processes(d, true);
    if (clients > 0) std::snprintf(mps, sizeof(mps), "; its MPS server has %d other clients", clients);
    const int64_t every = config::get(Knob::kGpuRetryMs);
    char again[48] = "";
    if (every > 0) std::snprintf(again, sizeof(again), "; trying again every %.3g s", every / 1000.0);
    std::snprintf(g.status, sizeof(g.status), "GPU %d (%.40s) has no room for this process: %.100s%s%s", d, g.name,
                  err.message, mps, again);
}

// Starts the preferred device; if it has no room for this process and the
// process is not pinned, the other devices, fewest other processes first,
// and the first that starts becomes the preferred one. False (g.status
// says why) when none starts; g.full then tells whether the preferred one
// lacked room, which may pass.
bool start_preferred(GpuState& g, const std::vector<std::string>& ids, const std::vector<int>& others) {
    pyphmm_error first;
    clear_error(&first);
    bool full = false;
    if (start_candidate(g, g.preferred, &first, &full) == PYPHMM_OK) {
        describe_started(g);
        return true;
    }
    if (!full) {
        g.full = false;
        std::snprintf(g.status, sizeof(g.status), "%s", first.message);
        return false;
    }
    std::vector<int> order;
    for (int i = 0; i < g.count && !g.pinned; ++i)
        if (i != g.preferred) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return others[a] < others[b]; });
    for (int i : order) {
        pyphmm_error err;
        clear_error(&err);
        bool other_full = false;
        if (start_candidate(g, i, &err, &other_full) != PYPHMM_OK) continue;
        const int was = g.ordinal[g.preferred];
        g.preferred = claim_device(ids, others, i);
        g.other_processes = others[g.preferred];
        const size_t n = std::strlen(g.choice);
        std::snprintf(g.choice + n, sizeof(g.choice) - n, "; GPU %d had no room", was);
        describe_started(g);
        return true;
    }
    describe_full(g, first);
    return false;
}

void probe_fake(GpuState& g, int count) {
    g.fake = true;
    g.visible = g.count = count;
    for (int i = 0; i < count; ++i) g.ordinal[i] = i;
    const int64_t pin = config::get(Knob::kDevice);
    if (pin >= count) {
        std::snprintf(g.status, sizeof(g.status), "PYPHMM_DEVICE=%lld but there are %d fake GPUs", (long long)pin,
                      count);
        return;
    }
    const std::vector<std::string> ids = device_ids(g);
    const std::vector<int> loads = device_loads(g);
    choose(g, ids, loads);
    g.mps = cuda_mps_active(g.mps_dir, sizeof(g.mps_dir));  // (what a real device's process would see)
    start_preferred(g, ids, loads);
}

// The driver's device list, with NVML loading on another thread meanwhile
// (it is needed next, to count each device's processes).
const CudaProbe& probe_with_nvml() {
    std::thread nvml;
    try {
        nvml = std::thread(cuda_nvml_load);
    } catch (const std::system_error&) {  // no thread: NVML loads when first asked
    }
    const CudaProbe& p = cuda_probe();
    if (nvml.joinable()) nvml.join();
    return p;
}

void probe_cuda(GpuState& g) {
    const CudaProbe& p = probe_with_nvml();
    g.visible = p.device_count;
    if (p.eligible_count == 0) {
        std::snprintf(g.status, sizeof(g.status), "%s", p.status);
        return;
    }
    const int64_t pin = config::get(Knob::kDevice);
    if (pin >= p.device_count || (pin >= 0 && !p.device[pin].eligible)) {
        std::snprintf(g.status, sizeof(g.status), "PYPHMM_DEVICE=%lld but this machine has %d CUDA device(s)%s",
                      (long long)pin, p.device_count, pin < p.device_count ? " and that one is not eligible" : "");
        return;
    }
    for (int d = 0; d < p.device_count; ++d)
        if (p.device[d].eligible) g.ordinal[g.count++] = d;
    // Under a running MPS server NVML lists the server, not its clients, as
    // the devices' compute process: count the clients then.
    g.mps = cuda_mps_active(g.mps_dir, sizeof(g.mps_dir));
    const std::vector<std::string> ids = device_ids(g);
    const std::vector<int> others = device_loads(g);
    choose(g, ids, others);
    start_preferred(g, ids, others);
}

// Another look for a shared GPU, once, a little after start-up (the 64th
// GPU call or the first after half a second): processes started together
// do not see each other at the probe.
// Once done, a call pays one relaxed load (no write to a line that every
// calling thread shares).
void recheck_sharing(const GpuState& g) {
    static std::atomic<bool> done{false};
    if (done.load(std::memory_order_relaxed) || g.fake || g.mps || g_hinted.load(std::memory_order_relaxed)) return;
    static std::atomic<int64_t> calls{0};
    if (calls.fetch_add(1, std::memory_order_relaxed) < 64 &&
        Clock::now() - g_chosen_at < std::chrono::milliseconds(500))
        return;
    if (done.exchange(true)) return;
    hint_if_shared(g, cuda_other_processes(g.ordinal[g.preferred]));
}

// Injected failures (tests): every call, or every second one.
bool inject_failure(pyphmm_error* err) {
    const int64_t mode = config::get(Knob::kTestGpuFailure);
    static std::atomic<int64_t> calls{0};
    if (mode == config::kNever) return false;
    if (mode == config::kAlternate && calls.fetch_add(1) % 2 == 0) return false;
    set_error(err, PYPHMM_E_INTERNAL, "injected GPU failure (PYPHMM_TEST's gpu_failure)");
    return true;
}

// The device index for a call, counted in flight until the Lease ends.
class Lease {
  public:
    explicit Lease(int32_t request) {
        const GpuState& g = gpu_state();
        index_ = g.preferred;
        if (request >= 0) {
            for (int i = 0; i < g.count; ++i)
                if (g.ordinal[i] == request) index_ = i;
        } else if (!g.pinned && g.count > 1) {
            index_ = least_busy(g_inflight, g.count, g.preferred);
            // Another GPU only if it starts (once; a full one is asked again
            // at most every 100 ms): else the call stays on the process's own.
            if (index_ != g.preferred && !g.fake && cuda_device_init(g.ordinal[index_], nullptr) != PYPHMM_OK)
                index_ = g.preferred;
        }
        g_inflight[index_].fetch_add(1, std::memory_order_relaxed);
        ordinal_ = g.ordinal[index_];
    }
    ~Lease() { g_inflight[index_].fetch_sub(1, std::memory_order_relaxed); }
    int ordinal() const { return ordinal_; }

  private:
    int index_, ordinal_;
};

}  // namespace

namespace {

// The state after a later start changed it (try_again); null until then.
std::atomic<const GpuState*> g_retried{nullptr};

// A process whose GPU was full computes on the CPU; every
// PYPHMM_DEV's gpu_retry_ms one call (whichever comes first once due) starts the
// devices again, and once one starts, later calls go to it.
const GpuState& try_again(const GpuState& cur) {
    const int64_t every = config::get(Knob::kGpuRetryMs);
    if (every <= 0) return cur;
    static std::atomic<int64_t> tries{0};
    const int64_t due =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - g_chosen_at).count() / every;
    int64_t done = tries.load(std::memory_order_relaxed);
    if (due <= done || !tries.compare_exchange_strong(done, due)) return cur;
    GpuState g = cur;
    if (!start_preferred(g, device_ids(g), device_loads(g)) && g.full) return cur;
    // Published for the process; never freed, as callers keep references.
    const GpuState* fresh = new GpuState(g);
    g_retried.store(fresh, std::memory_order_release);
    if (fresh->usable) g_probed_usable.store(true, std::memory_order_release);
    if (fresh->usable && !config::quiet())
        std::fprintf(stderr, "pyphmm: GPU %d (%s) has room now; this process computes on it from here on\n",
                     fresh->ordinal[fresh->preferred], fresh->name);
    return *fresh;
}

}  // namespace

const GpuState& gpu_state() {
    static const GpuState probed = [] {
        GpuState g;
        const int64_t fake = config::get(Knob::kTestFakeGpu);
        if (fake > 0)
            probe_fake(g, static_cast<int>(fake));
        else
            probe_cuda(g);
        g_chosen_at = Clock::now();
        if (g.usable) hint_if_shared(g, g.other_processes);
        g_probed_usable.store(g.usable, std::memory_order_release);
        return g;
    }();
    const GpuState* retried = g_retried.load(std::memory_order_acquire);
    const GpuState& s = retried ? *retried : probed;
    return s.full ? try_again(s) : s;
}

bool gpu_in_use() { return g_probed_usable.load(std::memory_order_acquire); }

int nap_percent(const GpuState& g) {
    constexpr int kMpsNapPercent = 60;  // the share measured with 16-32 JVMs (docs/PERFORMANCE.md)
    const int64_t set = config::get(Knob::kCudaNap);
    return set >= 0 ? static_cast<int>(set) : g.mps ? kMpsNapPercent : 0;
}

int check_device_request(int32_t device, pyphmm_error* err) {
    if (device == PYPHMM_DEVICE_AUTO) return PYPHMM_OK;
    if (device < 0) return set_error(err, PYPHMM_E_INVALID, "options.device %d is neither a device nor AUTO", device);
    const GpuState& g = gpu_state();
    for (int i = 0; i < g.count; ++i) {
        if (g.ordinal[i] != device) continue;
        if (g.usable) return PYPHMM_OK;
        if (g.full) return set_error(err, PYPHMM_E_UNAVAILABLE, "options.device %d: %s", device, g.status);
    }
    return set_error(err, PYPHMM_E_INVALID, "options.device %d is not a usable GPU here (%d usable)", device,
                     g.usable ? g.count : 0);
}

namespace {

// The fake GPU: the single-threaded CPU backend.
int fake_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, const GpuCallOptions& call,
                 pyphmm_stats* stats) {
    return cpu_pairhmm(regions, num_regions, out, 1, call.double_precision, stats);
}

// The pairs the CUDA PDHMM left NaN (sums it could not certify close to
// GKL's serial ones: far under the subnormal range's edge, or at 1):
// each on the CPU backend, in GKL's order, through a view of one read and
// one haplotype of its region. Its result stands whatever the CPU's check
// says of it; returns how many of them are above 0 (the dispatcher reports
// the first of those).
int64_t recompute_marked_pd(const pyphmm_pd_region* regions, int64_t num_regions, double* out, int64_t marked) {
    int64_t above_zero = 0;
    for (int64_t k = 0; k < num_regions && marked > 0; ++k) {
        const pyphmm_pd_region& g = regions[k];
        for (int32_t r = 0; r < g.num_reads; ++r)
            for (int32_t h = 0; h < g.num_haps; ++h, ++out) {
                if (!std::isnan(*out)) continue;
                pyphmm_pd_region one = g;
                one.num_reads = one.num_haps = 1;
                one.read_offsets = g.read_offsets + r;
                one.hap_offsets = g.hap_offsets + h;
                cpu_pdhmm(&one, 1, out, 1, nullptr, nullptr);
                above_zero += !(*out <= 0.0);
                --marked;
            }
    }
    return above_zero;
}

}  // namespace

int gpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, int32_t device,
                const GpuCallOptions& call, pyphmm_stats* stats, pyphmm_error* err) {
    const GpuState& g = gpu_state();
    if (!g.usable) return set_error(err, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", g.status);
    recheck_sharing(g);
    if (inject_failure(err)) return err ? err->code : PYPHMM_E_INTERNAL;
    Lease lease(device);
    GpuCallOptions napping = call;
    napping.nap_percent = nap_percent(g);
    const int rc = g.fake ? fake_pairhmm(regions, num_regions, out, call, stats)
                          : cuda_pairhmm(lease.ordinal(), regions, num_regions, out, napping, stats, err);
    if (stats && rc == PYPHMM_OK) {
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = lease.ordinal();
    }
    return rc;
}

int gpu_pdhmm(const pyphmm_pd_region* regions, int64_t num_regions, double* out, int32_t device,
              const GpuCallOptions& call, pyphmm_stats* stats, bool* results_checked, pyphmm_error* err) {
    *results_checked = false;
    const GpuState& g = gpu_state();
    if (!g.usable) return set_error(err, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", g.status);
    recheck_sharing(g);
    if (inject_failure(err)) return err ? err->code : PYPHMM_E_INTERNAL;
    Lease lease(device);
    GpuCallOptions napping = call;
    napping.nap_percent = nap_percent(g);
    int rc;
    if (g.fake) {
        rc = call.check_pd ? call.check_pd(0, num_regions, err) : PYPHMM_OK;
        if (rc != PYPHMM_OK) return rc;
        // (the CPU backend checks its results; here the dispatcher does, as for a real GPU)
        rc = cpu_pdhmm(regions, num_regions, out, 1, stats, err);
        if (rc == PYPHMM_E_INTERNAL) {
            clear_error(err);
            rc = PYPHMM_OK;
        }
    } else {
        PdGpuResults res;
        rc = cuda_pdhmm(lease.ordinal(), regions, num_regions, out, &res, napping, stats, err);
        if (rc == PYPHMM_OK) {
            int64_t above_zero = res.above_zero;
            if (res.marked > 0) above_zero += recompute_marked_pd(regions, num_regions, out, res.marked);
            *results_checked = above_zero == 0;
        }
    }
    if (stats && rc == PYPHMM_OK) {
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = lease.ordinal();
    }
    return rc;
}

int gpu_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets, int32_t* offsets,
                 int32_t device, pyphmm_stats* stats, pyphmm_error* err) {
    const GpuState& g = gpu_state();
    if (!g.usable) return set_error(err, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", g.status);
    if (inject_failure(err)) return err ? err->code : PYPHMM_E_INTERNAL;
    Lease lease(device);
    if (!g.fake) return cuda_sw_align(lease.ordinal(), batch, cigars, cigar_offsets, offsets, stats, err);
    const int rc = cpu_sw_align(batch, cigars, cigar_offsets, offsets, 1, stats, err);
    if (stats) {
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = lease.ordinal();
    }
    return rc;
}

}  // namespace pyphmm
