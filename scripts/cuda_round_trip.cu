// The floor under one small GPU call: what a per-region PairHMM call pays
// before any of its own work. Times, per iteration, the host-to-device copy
// of a per-region input (48 KiB from pinned memory), the launch of a kernel
// of a typical region's grid (60 blocks x 128 threads) that reads it, and the
// host spinning until the kernel's flag lands in mapped memory (pyphmm's
// completion notice). Three variants: copy + launch; launch alone (input
// already on the device); launch alone reading the input from mapped host
// memory (no copy). Prints median and p99 of the round trip and the median
// time the enqueue calls took.
//
//   nvcc -O2 -arch=sm_90 scripts/cuda_round_trip.cu -o /tmp/cuda_round_trip && /tmp/cuda_round_trip
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

}  // namespace

int main() {
    constexpr size_t kBytes = 48 << 10;
    constexpr int kCalls = 3000;
    CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
    char *host = nullptr, *dev = nullptr;
    int *flag = nullptr, *dflag = nullptr, *mapped_in = nullptr;
    CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), kBytes, cudaHostAllocMapped));
    CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flag), 64, cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0));
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_in), host, 0));
    CHECK(cudaMalloc(&dev, kBytes));
    std::memset(host, 0, kBytes);
    CHECK(cudaMemset(dev, 0, kBytes));
    flag[0] = 0;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const char* names[] = {"copy 48 KiB + launch", "launch alone (input on the device)",
                           "launch alone (input in mapped host memory)"};
    int serial = 0;
    for (int mode = 0; mode < 3; ++mode) {
        std::vector<double> trip, enqueue;
        for (int i = 0; i < kCalls; ++i) {
            ++serial;
            const Clock::time_point a = Clock::now();
            if (mode == 0) CHECK(cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, s));
            touch<<<60, 128, 0, s>>>(mode == 2 ? mapped_in : reinterpret_cast<const int*>(dev), dflag, serial);
            CHECK(cudaGetLastError());
            const Clock::time_point b = Clock::now();
            while (reinterpret_cast<volatile int*>(flag)[0] != serial) {}
            trip.push_back(us(a, Clock::now()));
            enqueue.push_back(us(a, b));
        }
        CHECK(cudaStreamSynchronize(s));
        std::sort(trip.begin(), trip.end());
        std::sort(enqueue.begin(), enqueue.end());
        std::printf("%s: round trip median %.1f us, p99 %.1f us; enqueue median %.1f us\n", names[mode],
                    trip[kCalls / 2], trip[kCalls * 99 / 100], enqueue[kCalls / 2]);
    }
    return 0;
}
