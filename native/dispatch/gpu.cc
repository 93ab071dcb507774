// The GPU facade (see gpu.h).
#include "dispatch/gpu.h"

#include <atomic>
#include <chrono>
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
#include "cpu/sw_cpu.h"
#include "dispatch/devices.h"

namespace pyphmm {

namespace {

using config::Knob;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_inflight[kMaxCudaDevices];
Clock::time_point g_chosen_at;
std::atomic<bool> g_hinted{false};

// The fake devices' "other processes": PYPHMM_TEST_GPU_LOAD=a,b,...
std::vector<int> fake_loads(int count) {
    std::vector<int> loads(count, 0);
    const std::string spec = config::get_string(Knob::kTestGpuLoad);
    size_t pos = 0;
    for (int d = 0; d < count && pos <= spec.size(); ++d) {
        const size_t comma = spec.find(',', pos);
        const std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!item.empty()) loads[d] = std::atoi(item.c_str());
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return loads;
}

void hint_if_shared(const GpuState& g, int others) {
    if (g.mps || others <= 0 || config::on(Knob::kQuiet) || g_hinted.exchange(true)) return;
    std::fprintf(stderr,
                 "pyphmm: %d other process%s use%s GPU %d (%s) without MPS: the GPU runs one process's kernels at "
                 "a time; start NVIDIA MPS (`pyphmm mps start`) so they run side by side (PYPHMM_QUIET=1 hides "
                 "this line)\n",
                 others, others == 1 ? "" : "es", others == 1 ? "s" : "", g.ordinal[g.preferred], g.name);
}

// The preferred device among the candidates (ids: stable names, others:
// NVML's other processes on each), recorded in the host's registry.
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

void probe_fake(GpuState& g, int count) {
    g.fake = true;
    g.usable = true;
    g.visible = g.count = count;
    for (int i = 0; i < count; ++i) g.ordinal[i] = i;
    const std::vector<int> loads = fake_loads(count);
    const int64_t pin = config::get(Knob::kDevice);
    if (pin >= count) {
        g.usable = false;
        std::snprintf(g.status, sizeof(g.status), "PYPHMM_DEVICE=%lld but there are %d fake GPUs", (long long)pin,
                      count);
        return;
    }
    std::vector<std::string> ids;
    for (int i = 0; i < count; ++i) ids.push_back("fake:" + std::to_string(i));
    choose(g, ids, loads);
    g.mps = cuda_mps_active(g.mps_dir, sizeof(g.mps_dir));  // (what a real device's process would see)
    std::snprintf(g.name, sizeof(g.name), "fake GPU %d (CPU stand-in)", g.preferred);
    std::snprintf(g.status, sizeof(g.status), "%s", g.name);
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
    std::vector<int> others;
    std::vector<std::string> ids;
    // Under a running MPS server NVML lists the server, not its clients, as
    // the devices' compute process: count the clients then.
    const bool mps_clients = cuda_mps_active(g.mps_dir, sizeof(g.mps_dir));
    for (int d = 0; d < p.device_count; ++d) {
        if (!p.device[d].eligible) continue;
        g.ordinal[g.count++] = d;
        others.push_back(cuda_other_processes(d, mps_clients));
        ids.push_back(p.device[d].pci_bus_id[0] ? p.device[d].pci_bus_id : "cuda:" + std::to_string(d));
    }
    choose(g, ids, others);
    const int d = g.ordinal[g.preferred];
    pyphmm_error err;
    clear_error(&err);
    if (cuda_device_init(d, &err) != PYPHMM_OK) {
        std::snprintf(g.status, sizeof(g.status), "%s", err.message);
        return;
    }
    g.usable = true;
    // (asked again unless a server was already running: the first client starts it)
    g.mps = mps_clients || cuda_mps_active(g.mps_dir, sizeof(g.mps_dir));
    const CudaDeviceInfo& info = p.device[d];
    std::snprintf(g.name, sizeof(g.name), "%s", info.name);
    std::snprintf(g.status, sizeof(g.status), "CUDA device %d: %s (compute %d.%d, %d SMs, %zu MiB)", d, info.name,
                  info.major, info.minor, info.sms, static_cast<size_t>(info.memory >> 20));
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
    set_error(err, PYPHMM_E_INTERNAL, "injected GPU failure (PYPHMM_TEST_GPU_FAILURE)");
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

const GpuState& gpu_state() {
    static const GpuState state = [] {
        GpuState g;
        const int64_t fake = config::get(Knob::kTestFakeGpu);
        if (fake > 0)
            probe_fake(g, static_cast<int>(fake));
        else
            probe_cuda(g);
        g_chosen_at = Clock::now();
        if (g.usable) hint_if_shared(g, g.other_processes);
        return g;
    }();
    return state;
}

int nap_percent(const GpuState& g) {
    constexpr int kMpsNapPercent = 60;  // the share measured with 16-32 JVMs (docs/PERFORMANCE.md)
    const int64_t set = config::get(Knob::kCudaNap);
    return set >= 0 ? static_cast<int>(set) : g.mps ? kMpsNapPercent : 0;
}

int check_device_request(int32_t device, pyphmm_error* err) {
    if (device == PYPHMM_DEVICE_AUTO) return PYPHMM_OK;
    if (device < 0) return set_error(err, PYPHMM_E_INVALID, "options.device %d is neither a device nor AUTO", device);
    const GpuState& g = gpu_state();
    for (int i = 0; i < g.count; ++i)
        if (g.ordinal[i] == device && g.usable) return PYPHMM_OK;
    return set_error(err, PYPHMM_E_INVALID, "options.device %d is not a usable GPU here (%d usable)", device,
                     g.usable ? g.count : 0);
}

namespace {

// The fake GPU: the single-threaded CPU backend.
int fake_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, const GpuCallOptions& call,
                 pyphmm_stats* stats) {
    return cpu_pairhmm(regions, num_regions, out, 1, call.double_precision, stats);
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
