// Combining concurrent GPU PairHMM calls (see combine.h).
#include "dispatch/combine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "cuda/cuda_backend.h"
#include "dispatch/gpu.h"
#include "dispatch/policy.h"

namespace pyphmm {

namespace {

// Larger calls gain nothing from company and would delay it.
constexpr int64_t kMaxCombinedCallCells = int64_t(1) << 28;
// A batch stops growing here (bounds the latency one launcher adds).
constexpr int64_t kMaxBatchCells = int64_t(1) << 31;

struct Request {
    const pyphmm_region* regions;
    int64_t num_regions;
    double* out;
    int64_t cells;
    // filled by the batch's launcher
    int rc = PYPHMM_OK;
    pyphmm_error error{};
    int64_t double_pairs = 0;
    int64_t const_pairs = 0;
    int32_t device = -1;
    int32_t batch_calls = 0;
    bool done = false;
};

class Combiner {
  public:
    int run(Request& me, uint64_t key, bool dbl, int max_in_flight) {
        std::unique_lock<std::mutex> lock(mutex_);
        std::deque<Request*>& queue = queues_[key];
        queue.push_back(&me);
        while (!me.done) {
            if (!launching_ && in_flight_ < max_in_flight &&
                std::find(queue.begin(), queue.end(), &me) != queue.end()) {
                launching_ = true;
                ++in_flight_;
                std::vector<Request*> batch = take(queue);
                lock.unlock();
                launch(batch, dbl);
                lock.lock();
                --in_flight_;
                for (Request* r : batch) r->done = true;
                done_.notify_all();
            } else {
                done_.wait(lock);
            }
        }
        return me.rc;
    }

  private:
    // The queue's front requests up to the batch's cell budget (at least one).
    static std::vector<Request*> take(std::deque<Request*>& queue) {
        std::vector<Request*> batch;
        int64_t cells = 0;
        while (!queue.empty() && (batch.empty() || cells + queue.front()->cells <= kMaxBatchCells)) {
            cells += queue.front()->cells;
            batch.push_back(queue.front());
            queue.pop_front();
        }
        return batch;
    }

    // Ends this thread's turn as launcher (once per batch).
    void release() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            launching_ = false;
        }
        done_.notify_all();
    }

    // One GPU call for every region of the batch, each region's results
    // written straight to its caller's output.
    void launch(const std::vector<Request*>& batch, bool dbl) {
        std::vector<pyphmm_region> regions;
        std::vector<double*> outs;
        std::vector<size_t> first(batch.size());
        for (size_t i = 0; i < batch.size(); ++i) {
            first[i] = regions.size();
            double* out = batch[i]->out;
            for (int64_t k = 0; k < batch[i]->num_regions; ++k) {
                const pyphmm_region& g = batch[i]->regions[k];
                regions.push_back(g);
                outs.push_back(out);
                out += static_cast<int64_t>(g.num_reads) * g.num_haps;
            }
        }
        std::vector<int64_t> doubles(regions.size(), 0), consts(regions.size(), 0);
        bool released = false;
        GpuCallOptions call;
        call.double_precision = dbl;
        call.submitted = [&] {
            released = true;
            release();
        };
        call.region_out = outs.data();
        call.region_double_pairs = doubles.data();
        call.region_const_pairs = consts.data();
        pyphmm_stats st;
        pyphmm_error err;
        clear_error(&err);
        const int rc =
            gpu_pairhmm(regions.data(), static_cast<int64_t>(regions.size()), nullptr, PYPHMM_DEVICE_AUTO, call, &st, &err);
        if (!released) release();  // (the call failed before its kernels were enqueued)
        for (size_t i = 0; i < batch.size(); ++i) {
            Request& r = *batch[i];
            r.rc = rc;
            r.error = err;
            r.device = st.device;
            r.batch_calls = static_cast<int32_t>(batch.size());
            for (int64_t k = 0; k < r.num_regions; ++k) {
                r.double_pairs += doubles[first[i] + k];
                r.const_pairs += consts[first[i] + k];
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable done_;
    std::map<uint64_t, std::deque<Request*>> queues_;  // by cuda_pairhmm_batch_key
    bool launching_ = false;         // a launcher is forming or enqueueing a batch
    int in_flight_ = 0;              // batches launched and not yet handed back
};

Combiner& combiner() {
    static Combiner c;
    return c;
}

}  // namespace

bool combining_applies(const pyphmm_options* options, int64_t cells) {
    return config::get(config::Knob::kGpuCombine) > 0 && requested_device(options) == PYPHMM_DEVICE_AUTO &&
           !timing_wanted(options) && cells <= kMaxCombinedCallCells;
}

int combined_gpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, bool dbl,
                         pyphmm_stats* stats, pyphmm_error* error) {
    const auto start = std::chrono::steady_clock::now();
    Request me{regions, num_regions, out, 0};
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        if (g.num_reads && g.num_haps)
            me.cells += (g.read_offsets[g.num_reads] - g.read_offsets[0]) * (g.hap_offsets[g.num_haps] - g.hap_offsets[0]);
    }
    const uint64_t key = cuda_pairhmm_batch_key(regions, num_regions, dbl);
    const int rc = combiner().run(me, key, dbl, static_cast<int>(config::get(config::Knob::kGpuCombine)));
    if (rc != PYPHMM_OK) {
        if (error) *error = me.error;
        return rc;
    }
    if (stats) {
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = me.device;
        stats->double_pairs = me.double_pairs;
        stats->const_pairs = me.const_pairs;
        stats->batch_calls = me.batch_calls;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
