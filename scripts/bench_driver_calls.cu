// What a per-region GPU call's driver calls cost when T threads of one
// process make them, without pyphmm: a synthetic stand-in for the library's
// call (docs/PERFORMANCE.md uses it to tell the driver's share of a call
// under many threads from the library's).
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/bench_driver_calls.cu -o /tmp/bench_driver_calls
//   /tmp/bench_driver_calls THREADS KERNEL_US [--iters N] [--no-copy] [--yield] [--blocks B] [--smem BYTES]
//       [--param-bytes 4096|16384|32000] [--graph]
//
// Each thread has its own stream, a pinned mapped input of 46 KB (a typical
// GATK region packed) and a device buffer; per iteration it enqueues the
// host-to-device copy (unless --no-copy), launches B blocks of 128 threads
// (default 60, a typical region's latency launch) that spin for KERNEL_US
// and whose last block writes a serial to mapped host memory, then spins
// (--yield: yields) until it sees the serial, as pyphmm's completion notice
// did before pyphmm watched result slots. --param-bytes sends the input as
// the kernel's parameters instead of a copy (each block reads its share of
// them). --graph makes the copy and the launch one CUDA graph per thread,
// built once and launched per call (the serial then travels in the copied
// input). Prints calls per second over all threads (after a common start)
// and the median time in the copy call, the launch call and the wait.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define SPIN_PAUSE() _mm_pause()  // as the library's spinning waits
#else
#define SPIN_PAUSE() std::this_thread::yield()
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kInputBytes = 46 << 10;

#define CHECK_CUDA(expr)                                                                    \
    do {                                                                                    \
        const cudaError_t e_ = (expr);                                                      \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s: %s (%s)\n", #expr, cudaGetErrorString(e_), __FILE__); \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

// Spins until `cycles` have passed since t0, then the launch's last block
// writes the serial to mapped host memory.
__device__ void spin_and_notify(long long t0, long long cycles, int acc, volatile int* host_flag, int serial,
                                int* blocks_done) {
    while (clock64() - t0 < cycles) acc += 1;
    if (acc == -1) host_flag[2] = acc;  // (keeps the loop)
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(blocks_done, 1) == static_cast<int>(gridDim.x) - 1) {
        *blocks_done = 0;
        __threadfence_system();
        host_flag[0] = serial;
    }
}

__global__ void busy_kernel(const int* in, volatile int* host_flag, int serial, long long cycles, int* blocks_done) {
    const long long t0 = clock64();
    spin_and_notify(t0, cycles, in[threadIdx.x], host_flag, serial, blocks_done);
}

// The kernel of --graph: the graph's nodes never change, so the serial
// arrives as the input's first word.
__global__ void graph_kernel(const int* in, volatile int* host_flag, long long cycles, int* blocks_done) {
    const long long t0 = clock64();
    spin_and_notify(t0, cycles, in[threadIdx.x + 1], host_flag, in[0], blocks_done);
}

// The input as kernel parameters (at most 32,764 bytes since CUDA 12.1).
template <int N>
struct Params {
    int w[N / 4];
};

template <int N>
__global__ void param_kernel(const __grid_constant__ Params<N> p, volatile int* host_flag, int serial, long long cycles,
                             int* blocks_done) {
    const long long t0 = clock64();
    constexpr int kWords = N / 4;
    const int share = (kWords + gridDim.x - 1) / gridDim.x;
    int acc = 0;
    for (int i = blockIdx.x * share + threadIdx.x; i < min(kWords, (blockIdx.x + 1) * share); i += blockDim.x)
        acc += p.w[i];
    spin_and_notify(t0, cycles, acc, host_flag, serial, blocks_done);
}

template <int N>
void launch_params(const char* h, int blocks, cudaStream_t s, int* dflag, int serial, long long cycles,
                   int* blocks_done) {
    Params<N> p;
    std::memcpy(p.w, h, sizeof(p.w));
    param_kernel<N><<<blocks, 128, 0, s>>>(p, dflag, serial, cycles, blocks_done);
}

double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count() * 1e6; }

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Options {
    int threads = 1, iters = 2000, blocks = 60, smem = 0, param_bytes = 0;
    double kernel_us = 30;
    bool copy = true, yield = false, graph = false;
};

struct Medians {
    double copy = 0, launch = 0, wait = 0, call = 0;
};

// --graph: this thread's copy + launch as one instantiated graph.
cudaGraphExec_t make_graph(const Options& o, char* d, const char* h, int* dflag, long long cycles, int* blocks_done) {
    cudaGraph_t g;
    cudaGraphNode_t copy, kernel;
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copy, g, nullptr, 0, d, h, kInputBytes, cudaMemcpyHostToDevice));
    const int* in = reinterpret_cast<const int*>(d);
    void* args[] = {&in, &dflag, &cycles, &blocks_done};
    cudaKernelNodeParams kp{};
    kp.func = reinterpret_cast<void*>(graph_kernel);
    kp.gridDim = dim3(o.blocks);
    kp.blockDim = dim3(128);
    kp.kernelParams = args;
    CHECK_CUDA(cudaGraphAddKernelNode(&kernel, g, &copy, 1, &kp));
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    return exec;
}

// One caller thread: its own stream and buffers, then `iters` calls.
void caller(const Options& o, long long cycles, std::atomic<int>& ready, std::atomic<bool>& go, Medians& out) {
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    char *h = nullptr, *d = nullptr;
    int *flag = nullptr, *dflag = nullptr, *blocks_done = nullptr;
    CHECK_CUDA(cudaHostAlloc(&h, kInputBytes, cudaHostAllocMapped));
    std::memset(h, 0, kInputBytes);
    CHECK_CUDA(cudaHostAlloc(&flag, 64, cudaHostAllocMapped));
    CHECK_CUDA(cudaHostGetDevicePointer(&dflag, flag, 0));
    CHECK_CUDA(cudaMalloc(&d, kInputBytes));
    CHECK_CUDA(cudaMalloc(&blocks_done, sizeof(int)));
    CHECK_CUDA(cudaMemset(blocks_done, 0, sizeof(int)));
    cudaGraphExec_t graph = o.graph ? make_graph(o, d, h, dflag, cycles, blocks_done) : nullptr;
    if (graph) CHECK_CUDA(cudaGraphUpload(graph, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::vector<double> copy, launch, wait, call;
    volatile int* notice = flag;
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    for (int i = 1; i <= o.iters; ++i) {
        notice[0] = 0;
        const Clock::time_point t0 = Clock::now();
        if (graph) std::memcpy(h, &i, sizeof(i));  // (the previous call's copy has run)
        if (o.copy && !o.param_bytes && !graph)
            CHECK_CUDA(cudaMemcpyAsync(d, h, kInputBytes, cudaMemcpyHostToDevice, s));
        const Clock::time_point t1 = Clock::now();
        if (graph)
            CHECK_CUDA(cudaGraphLaunch(graph, s));
        else if (o.param_bytes == 4096)
            launch_params<4096>(h, o.blocks, s, dflag, i, cycles, blocks_done);
        else if (o.param_bytes == 16384)
            launch_params<16384>(h, o.blocks, s, dflag, i, cycles, blocks_done);
        else if (o.param_bytes == 32000)
            launch_params<32000>(h, o.blocks, s, dflag, i, cycles, blocks_done);
        else
            busy_kernel<<<o.blocks, 128, o.smem, s>>>(reinterpret_cast<const int*>(d), dflag, i, cycles, blocks_done);
        CHECK_CUDA(cudaGetLastError());
        const Clock::time_point t2 = Clock::now();
        while (notice[0] != i) {
            if (o.yield)
                std::this_thread::yield();
            else
                SPIN_PAUSE();
        }
        const Clock::time_point t3 = Clock::now();
        copy.push_back(us(t0, t1));
        launch.push_back(us(t1, t2));
        wait.push_back(us(t2, t3));
        call.push_back(us(t0, t3));
    }
    out = {median(copy), median(launch), median(wait), median(call)};
}

bool parse(int argc, char** argv, Options& o) {
    if (argc < 3) return false;
    o.threads = std::atoi(argv[1]);
    o.kernel_us = std::atof(argv[2]);
    for (int i = 3; i < argc; ++i) {
        const char* a = argv[i];
        const bool has_value = i + 1 < argc;
        if (!std::strcmp(a, "--iters") && has_value)
            o.iters = std::atoi(argv[++i]);
        else if (!std::strcmp(a, "--blocks") && has_value)
            o.blocks = std::atoi(argv[++i]);
        else if (!std::strcmp(a, "--smem") && has_value)
            o.smem = std::atoi(argv[++i]);
        else if (!std::strcmp(a, "--param-bytes") && has_value)
            o.param_bytes = std::atoi(argv[++i]);
        else if (!std::strcmp(a, "--no-copy"))
            o.copy = false;
        else if (!std::strcmp(a, "--graph"))
            o.graph = true;
        else if (!std::strcmp(a, "--yield"))
            o.yield = true;
        else
            return false;
    }
    const bool params_ok =
        o.param_bytes == 0 || o.param_bytes == 4096 || o.param_bytes == 16384 || o.param_bytes == 32000;
    return o.threads > 0 && o.iters > 0 && o.blocks > 0 && o.smem >= 0 && o.kernel_us >= 0 && params_ok &&
           !(o.graph && (o.param_bytes || !o.copy || o.smem));
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: %s THREADS KERNEL_US [--iters N] [--no-copy] [--yield] [--blocks B] [--smem BYTES] "
                     "[--param-bytes 4096|16384|32000] [--graph]\n",
                     argv[0]);
        return 2;
    }
    CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceMapHost));
    CHECK_CUDA(cudaFree(nullptr));
    CHECK_CUDA(cudaFuncSetAttribute(busy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, o.smem));
    int khz = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    const long long cycles = static_cast<long long>(o.kernel_us * khz / 1000.0);
    std::vector<Medians> med(o.threads);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < o.threads; ++t) pool.emplace_back([&, t] { caller(o, cycles, ready, go, med[t]); });
    while (ready.load() < o.threads) std::this_thread::yield();
    const Clock::time_point start = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& th : pool) th.join();
    const double span = us(start, Clock::now());
    auto mid = [&](double Medians::*f) {
        std::vector<double> v;
        for (const Medians& m : med) v.push_back(m.*f);
        return median(v);
    };
    std::printf(
        "threads %2d, kernel %.0f us, %d blocks, smem %d, params %d%s%s%s: %.0f calls/s | median copy %.1f launch %.1f "
        "wait %.1f call %.1f us\n",
        o.threads, o.kernel_us, o.blocks, o.smem, o.param_bytes, o.copy && !o.param_bytes ? "" : ", no copy",
        o.yield ? ", yield" : "", o.graph ? ", graph" : "", o.threads * o.iters / (span * 1e-6), mid(&Medians::copy),
        mid(&Medians::launch), mid(&Medians::wait), mid(&Medians::call));
    return 0;
}
