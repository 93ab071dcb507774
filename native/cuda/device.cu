// CUDA infrastructure shared by both GPU kernels (see device.h), the probe,
// and what the host knows about other GPU users (NVML, MPS).
#include "cuda/device.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "common/config.h"
#include "common/errors.h"

namespace pyphmm {

namespace {

// A kernel that exists only so cudaFuncGetAttributes can tell whether this
// build carries an image (SASS or PTX) for a device.
__global__ void image_probe_kernel() {}

// Whether the NVIDIA driver's library can be loaded. The CUDA runtime
// reports a machine without any driver as "CUDA driver version is
// insufficient for CUDA runtime version", the words it uses for a driver that
// is too old; this tells the two apart.
bool driver_library_loads() {
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return false;
    dlclose(lib);
    return true;
}

void probe_devices(CudaProbe& p) {
    p.compiled = true;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        if (!driver_library_loads())
            std::snprintf(p.status, sizeof(p.status), "no NVIDIA driver found: libcuda.so.1 cannot be loaded");
        else
            std::snprintf(p.status, sizeof(p.status), "no usable CUDA driver or device: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    p.driver = true;
    p.device_count = std::min(count, kMaxCudaDevices);
    if (count <= 0) {
        std::snprintf(p.status, sizeof(p.status), "no CUDA device");
        return;
    }
    const char* why = nullptr;
    char reason[200] = {0};
    for (int d = 0; d < p.device_count; ++d) {
        CudaDeviceInfo& info = p.device[d];
        cudaDeviceProp prop;
        e = cudaGetDeviceProperties(&prop, d);
        if (e != cudaSuccess) {
            std::snprintf(reason, sizeof(reason), "cannot query CUDA device %d: %s", d, cudaGetErrorString(e));
            why = reason;
            cudaGetLastError();
            continue;
        }
        std::snprintf(info.name, sizeof(info.name), "%s", prop.name);
        info.major = prop.major;
        info.minor = prop.minor;
        info.sms = std::max(1, prop.multiProcessorCount);
        info.memory = prop.totalGlobalMem;
        if (cudaDeviceGetPCIBusId(info.pci_bus_id, sizeof(info.pci_bus_id), d) != cudaSuccess) {
            info.pci_bus_id[0] = '\0';
            cudaGetLastError();
        }
        info.eligible = prop.major >= 8;
        if (!info.eligible) {
            std::snprintf(reason, sizeof(reason), "%s has compute capability %d.%d; pyphmm's kernels need 8.0 or newer",
                          prop.name, prop.major, prop.minor);
            why = reason;
        }
        p.eligible_count += info.eligible;
    }
    if (p.eligible_count == 0)
        std::snprintf(p.status, sizeof(p.status), "%s", why ? why : "no eligible CUDA device");
    else
        std::snprintf(p.status, sizeof(p.status), "%d CUDA device(s), %d eligible", p.device_count, p.eligible_count);
}

// Whether an MPS control daemon listens in the pipe directory the CUDA
// driver will use (CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps);
// pipe_dir receives that directory.
bool mps_control_present(char* pipe_dir, size_t capacity) {
    const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");  // the CUDA driver's own variable
    if (!dir || !*dir) dir = "/tmp/nvidia-mps";
    if (pipe_dir && capacity) std::snprintf(pipe_dir, capacity, "%s", dir);
    struct stat st;
    const std::string control = std::string(dir) + "/control";
    return stat(control.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// A device's context: made once; a start that failed because the device was
// full (device_full) is tried again by a use_device at least
// kFullRetryGap later (calls that a multi-GPU process sends to a full
// device fail fast in between).
struct DeviceInit {
    std::mutex mutex;
    std::atomic<bool> settled{false};  // result is final
    cudaError_t result = cudaErrorNotReady;
    bool tried = false;                          // (under mutex)
    std::chrono::steady_clock::time_point last;  // the last start
};
constexpr std::chrono::milliseconds kFullRetryGap{100};

// Host threads spin while they wait on a device: spinning answers fastest,
// and it stays fastest with as many processes as cores under MPS, where
// threads that yield or sleep wake late (docs/PERFORMANCE.md).
constexpr unsigned kSyncFlags = cudaDeviceScheduleSpin;
DeviceInit g_init[kMaxCudaDevices];

}  // namespace

const CudaProbe& cuda_probe() {
    static const CudaProbe probe = [] {
        CudaProbe p;
        probe_devices(p);
        return p;
    }();
    return probe;
}

namespace cuda {

int cuda_status(pyphmm_error* err, cudaError_t e, const char* what) {
    cudaGetLastError();
    return set_error(err, e == cudaErrorMemoryAllocation ? PYPHMM_E_NOMEM : PYPHMM_E_INTERNAL, "%s: %s (%s)", what,
                     cudaGetErrorString(e), cudaGetErrorName(e));
}

// Whether a device's start failed because it had no room for this process
// (an MPS server at its client limit, an exclusive-process GPU in use, its
// memory taken): worth trying again later, unlike a missing kernel image.
bool device_full(cudaError_t e) {
    return e == cudaErrorDevicesUnavailable || e == cudaErrorMpsMaxClientsReached ||
           e == cudaErrorMpsMaxConnectionsReached || e == cudaErrorMpsServerNotReady || e == cudaErrorMemoryAllocation;
}

namespace {

// Device d's context with this process's flags, and a kernel image for it.
cudaError_t start_device(int d) {
    cudaFuncAttributes attr;
    cudaError_t e = cudaSetDevice(d);
    if (e == cudaSuccess) e = cudaSetDeviceFlags(kSyncFlags | cudaDeviceMapHost);
    if (e == cudaErrorSetOnActiveProcess) {  // another library made the context first: keep its flags
        cudaGetLastError();
        e = cudaSuccess;
    }
    if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the context
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, image_probe_kernel);
    if (e != cudaSuccess) cudaGetLastError();
    return e;
}

}  // namespace

cudaError_t use_device(int d) {
    if (d < 0 || d >= cuda_probe().device_count || !cuda_probe().device[d].eligible) return cudaErrorInvalidDevice;
    DeviceInit& init = g_init[d];
    cudaError_t e;
    if (init.settled.load(std::memory_order_acquire)) {
        e = init.result;
    } else {
        std::lock_guard<std::mutex> lock(init.mutex);
        const auto now = std::chrono::steady_clock::now();
        if (!init.settled.load(std::memory_order_relaxed) && (!init.tried || now - init.last >= kFullRetryGap)) {
            init.tried = true;
            init.last = now;
            init.result = start_device(d);
            init.settled.store(!device_full(init.result), std::memory_order_release);
        }
        e = init.result;
    }
    return e != cudaSuccess ? e : cudaSetDevice(d);
}

int sm_count(int d) { return cuda_probe().device[d].sms; }

cudaError_t DeviceBuffer::reserve(size_t bytes) {
    if (bytes <= cap) return cudaSuccess;
    size_t want = std::max(bytes, cap + cap / 2);
    if (p) cudaFree(p);
    p = nullptr;
    cap = 0;
    cudaError_t e = cudaMalloc(&p, want);
    if (e != cudaSuccess) {  // retry without the headroom
        cudaGetLastError();
        p = nullptr;
        want = bytes;
        e = cudaMalloc(&p, want);
    }
    if (e != cudaSuccess) {
        p = nullptr;
        return e;
    }
    cap = want;
    return cudaSuccess;
}

DeviceBuffer::~DeviceBuffer() {
    if (p) cudaFree(p);
}

cudaError_t PinnedBuffer::reserve(size_t bytes) {
    if (bytes <= cap) return cudaSuccess;
    const size_t want = std::max(bytes, cap + cap / 2);
    if (p) cudaFreeHost(p);
    p = dev = nullptr;
    cap = 0;
    PYPHMM_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&p), want, cudaHostAllocMapped));
    cap = want;
    return cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), p, 0);
}

PinnedBuffer::~PinnedBuffer() {
    if (p) cudaFreeHost(p);
}

}  // namespace cuda

int cuda_device_init(int device, pyphmm_error* err, bool* full) {
    const cudaError_t e = cuda::use_device(device);
    if (full) *full = cuda::device_full(e);
    if (e == cudaSuccess) return PYPHMM_OK;
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
        return set_error(err, PYPHMM_E_UNAVAILABLE, "no kernel image in this build for CUDA device %d (%s)", device,
                         cuda_probe().device[device].name);
    return set_error(err, PYPHMM_E_UNAVAILABLE, "cannot initialise CUDA device %d: %s", device, cudaGetErrorString(e));
}

// ---------------------------------------------------------------- NVML
// Loaded at run time (it ships with the driver, not the toolkit), with the
// few declarations needed here.
namespace {

typedef void* NvmlDevice;
struct NvmlProcessInfo {  // nvmlProcessInfo_t of the _v3 queries
    unsigned int pid;
    unsigned long long used_memory;
    unsigned int gpu_instance;
    unsigned int compute_instance;
};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;

struct Nvml {
    bool ok = false;
    int (*by_bus_id)(const char*, NvmlDevice*) = nullptr;
    int (*compute_procs)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
    int (*mps_procs)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
};

const Nvml& nvml() {
    static const Nvml n = [] {
        Nvml v;
        void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return v;
        auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
        v.by_bus_id = reinterpret_cast<decltype(v.by_bus_id)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
        v.compute_procs =
            reinterpret_cast<decltype(v.compute_procs)>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
        v.mps_procs = reinterpret_cast<decltype(v.mps_procs)>(dlsym(lib, "nvmlDeviceGetMPSComputeRunningProcesses_v3"));
        v.ok = init && v.by_bus_id && v.compute_procs && init() == kNvmlSuccess;
        return v;
    }();
    return n;
}

// The processes NVML lists for device d (compute or MPS clients); false if unknown.
bool nvml_processes(int d, bool mps, std::vector<NvmlProcessInfo>* out) {
    const Nvml& n = nvml();
    const CudaProbe& probe = cuda_probe();
    auto query = mps ? n.mps_procs : n.compute_procs;
    if (!n.ok || !query || d < 0 || d >= probe.device_count || !probe.device[d].pci_bus_id[0]) return false;
    NvmlDevice dev = nullptr;
    if (n.by_bus_id(probe.device[d].pci_bus_id, &dev) != kNvmlSuccess) return false;
    for (unsigned int cap = 64; cap <= 65536; cap *= 4) {
        out->assign(cap, NvmlProcessInfo{});
        unsigned int count = cap;
        const int rc = query(dev, &count, out->data());
        if (rc == kNvmlSuccess) {
            out->resize(count);
            return true;
        }
        if (rc != kNvmlInsufficientSize) return false;
    }
    return false;
}

}  // namespace

void cuda_nvml_load() { nvml(); }

int cuda_other_processes(int device, bool mps_clients) {
    std::vector<NvmlProcessInfo> procs;
    if (!nvml_processes(device, mps_clients, &procs)) return -1;
    // Inside a container NVML may report host process ids, so this process
    // may appear under another id: count it out once it has a context.
    const unsigned int self = static_cast<unsigned int>(getpid());
    int others = 0;
    bool self_seen = false;
    for (const NvmlProcessInfo& p : procs) {
        if (p.pid == self)
            self_seen = true;
        else
            ++others;
    }
    const bool have_context = device >= 0 && device < kMaxCudaDevices &&
                              g_init[device].settled.load(std::memory_order_acquire) &&
                              g_init[device].result == cudaSuccess;
    if (!self_seen && have_context && others > 0) --others;
    return others;
}

// ---------------------------------------------------------------- MPS
namespace {

bool mps_server_running() {
    DIR* proc = opendir("/proc");
    if (!proc) return false;
    bool found = false;
    while (struct dirent* e = readdir(proc)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[64], cmd[256] = {0};
        std::snprintf(path, sizeof(path), "/proc/%.20s/cmdline", e->d_name);
        FILE* f = std::fopen(path, "rb");
        if (!f) continue;
        const size_t n = std::fread(cmd, 1, sizeof(cmd) - 1, f);
        std::fclose(f);
        cmd[n] = '\0';
        if (std::strstr(cmd, "nvidia-cuda-mps-server")) {
            found = true;
            break;
        }
    }
    closedir(proc);
    return found;
}

}  // namespace

bool cuda_mps_active(char* pipe_dir, size_t capacity) {
    if (!mps_control_present(pipe_dir, capacity)) return false;
    if (mps_server_running()) return true;
    // (a server outside this process's view, e.g. the host of a container)
    std::vector<NvmlProcessInfo> clients;
    for (int d = 0; d < cuda_probe().device_count; ++d)
        if (nvml_processes(d, true, &clients) && !clients.empty()) return true;
    return false;
}

}  // namespace pyphmm
