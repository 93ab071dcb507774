// CUDA infrastructure shared by the GPU PairHMM and Smith-Waterman: the
// device registry (probe, per-device initialisation), one error-propagation
// macro, device and pinned buffers that only grow, and a pool that lends
// per-thread state (streams, buffers) to concurrent calls.
//
// Host CUDA code throws nothing: every function that can fail returns its
// cudaError_t (PYPHMM_CUDA_TRY passes one up), and the entry points turn it
// into a pyphmm status with cuda_status().
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <vector>

#include "cuda/cuda_backend.h"
#include "pyphmm.h"

// Evaluates a cudaError_t expression and returns it from the enclosing
// function (which returns cudaError_t) unless it is cudaSuccess.
#define PYPHMM_CUDA_TRY(expr)                           \
    do {                                                \
        const cudaError_t pyphmm_e_ = (expr);           \
        if (pyphmm_e_ != cudaSuccess) return pyphmm_e_; \
    } while (0)

namespace pyphmm {
namespace cuda {

// PYPHMM_E_NOMEM for allocation failures, else PYPHMM_E_INTERNAL, with
// "<what>: <CUDA message> (<name>)"; clears CUDA's last error so later calls
// start clean.
int cuda_status(pyphmm_error* err, cudaError_t e, const char* what);

// Makes device d current and initialises it once (context, a kernel image
// for its architecture). The first attempt's result is final, unless the
// device was full (device_full): a call 100 ms or more later tries again.
cudaError_t use_device(int d);
bool device_full(cudaError_t e);

// Streaming multiprocessors of device d (after use_device).
int sm_count(int d);

// Device memory that only grows (with 50% headroom, retried without).
struct DeviceBuffer {
    void* p = nullptr;
    size_t cap = 0;
    cudaError_t reserve(size_t bytes);
    template <typename T>
    T* as() const {
        return static_cast<T*>(p);
    }
    ~DeviceBuffer();
};

// Pinned host memory mapped into the device's address space (`dev`).
struct PinnedBuffer {
    char* p = nullptr;
    char* dev = nullptr;
    size_t cap = 0;
    cudaError_t reserve(size_t bytes);
    ~PinnedBuffer();
};

// Per-device pools of T (T() must be cheap; T::create() sets up its CUDA
// objects on the current device and returns an error). A call borrows one
// with a Lease, so concurrent callers never share streams or buffers; the
// objects live until the process ends.
template <typename T>
class Pool {
  public:
    class Lease {
      public:
        Lease(Pool& pool, int device) : pool_(pool), device_(device) {}
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        ~Lease() {
            if (item_) pool_.give_back(device_, item_);
        }
        // Takes one from the pool, or creates one; item() is valid after success.
        cudaError_t acquire() {
            item_ = pool_.take(device_);
            if (item_) return cudaSuccess;
            T* fresh = new T();
            const cudaError_t e = fresh->create();
            if (e != cudaSuccess) {
                delete fresh;
                return e;
            }
            item_ = fresh;
            return cudaSuccess;
        }
        T& item() { return *item_; }

      private:
        Pool& pool_;
        int device_;
        T* item_ = nullptr;
    };

  private:
    T* take(int d) {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<T*>& free = free_[d];
        if (free.empty()) return nullptr;
        T* t = free.back();
        free.pop_back();
        return t;
    }
    void give_back(int d, T* t) {
        std::lock_guard<std::mutex> lock(mutex_);
        free_[d].push_back(t);
    }
    std::mutex mutex_;
    std::vector<T*> free_[kMaxCudaDevices];
};

}  // namespace cuda
}  // namespace pyphmm
