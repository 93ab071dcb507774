// The floor under one small GPU call: what a per-region PairHMM call pays
// before any of its own work. Times, per iteration, the host-to-device copy
// of a per-region input (48 KiB from pinned memory), the launch of a kernel
// of a typical region's grid (60 blocks x 128 threads) that reads it, and the
// host spinning until the kernel's flag lands in mapped memory (as pyphmm
// waited for a completion notice before it watched result slots). Three
// variants: copy + launch; launch alone (input already on the device);
// launch alone reading the input from mapped host memory (no copy). Prints
// median and p99 of the round trip and the median time the enqueue calls
// took.
//
// With a thread count (argument 1), that many host threads do the same at
// once, each with its own stream and buffers, as GATK's threads do through
// pyphmm: the aggregate calls per second say how far the driver's enqueue
// work scales across the threads of one process.
//
//   nvcc -O2 -arch=sm_90 scripts/cuda_round_trip.cu -o /tmp/cuda_round_trip && /tmp/cuda_round_trip [THREADS]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

#define CHECK(call)                                                          \
    do {                                                                     \
        const cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                             \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

// Each block reads one word of the input; block 0 publishes the serial.
__global__ void touch(const int* in, volatile int* flag, int serial) {
    __shared__ int word;
    if (threadIdx.x == 0) word = in[blockIdx.x * 128];
    __syncthreads();
    __threadfence_system();
    if (blockIdx.x == 0 && threadIdx.x == 0) flag[0] = serial + word;  // the input is zeros
}

using Clock = std::chrono::steady_clock;

double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count() * 1e6; }

// One caller's stream, buffers and completion flag.
struct Caller {
    char *host = nullptr, *dev = nullptr;
    int *flag = nullptr, *dflag = nullptr, *mapped_in = nullptr;
    cudaStream_t s = nullptr;
    int serial = 0;
    std::vector<double> trip, enqueue;

    explicit Caller(size_t bytes) {
        CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), bytes, cudaHostAllocMapped));
        CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flag), 64, cudaHostAllocMapped));
        CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0));
        CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_in), host, 0));
        CHECK(cudaMalloc(&dev, bytes));
        std::memset(host, 0, bytes);
        CHECK(cudaMemset(dev, 0, bytes));
        flag[0] = 0;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }

    void run(int mode, int calls, size_t bytes) {
        trip.clear();
        enqueue.clear();
        for (int i = 0; i < calls; ++i) {
            ++serial;
            const Clock::time_point a = Clock::now();
            if (mode == 0) CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
            touch<<<60, 128, 0, s>>>(mode == 2 ? mapped_in : reinterpret_cast<const int*>(dev), dflag, serial);
            CHECK(cudaGetLastError());
            const Clock::time_point b = Clock::now();
            while (reinterpret_cast<volatile int*>(flag)[0] != serial) {}
            trip.push_back(us(a, Clock::now()));
            enqueue.push_back(us(a, b));
        }
        CHECK(cudaStreamSynchronize(s));
    }
};

}  // namespace

int main(int argc, char** argv) {
    constexpr size_t kBytes = 48 << 10;
    constexpr int kCalls = 3000;
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
    CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
    std::vector<Caller> callers;
    callers.reserve(threads);
    for (int t = 0; t < threads; ++t) callers.emplace_back(kBytes);
    const char* names[] = {"copy 48 KiB + launch", "launch alone (input on the device)",
                           "launch alone (input in mapped host memory)"};
    for (int mode = 0; mode < 3; ++mode) {
        const Clock::time_point start = Clock::now();
        std::vector<std::thread> pool;
        for (Caller& c : callers) pool.emplace_back([&c, mode] { c.run(mode, kCalls, kBytes); });
        for (std::thread& t : pool) t.join();
        const double seconds = us(start, Clock::now()) * 1e-6;
        std::vector<double> trip, enqueue;
        for (const Caller& c : callers) {
            trip.insert(trip.end(), c.trip.begin(), c.trip.end());
            enqueue.insert(enqueue.end(), c.enqueue.begin(), c.enqueue.end());
        }
        std::sort(trip.begin(), trip.end());
        std::sort(enqueue.begin(), enqueue.end());
        const size_t n = trip.size();
        std::printf("%s, %d thread%s: round trip median %.1f us, p99 %.1f us; enqueue median %.1f us; %.0f calls/s\n",
                    names[mode], threads, threads == 1 ? "" : "s", trip[n / 2], trip[n * 99 / 100], enqueue[n / 2],
                    n / seconds);
    }
    return 0;
}
