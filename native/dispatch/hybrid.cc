// Whole-workload PairHMM: GPU and CPU threads share one call's regions.
//
// Region indices are sorted by cell count. GPU driver threads claim batches
// from the large end and hand each to the GPU backend; CPU worker threads
// claim a few small regions at a time from the small end and compute them on
// one thread each. Both ends live in one atomic word (lo | hi), so a claim
// is one compare-and-swap and the two sides meet wherever their speeds put
// the meeting point.
//
// Why two GPU drivers by default: a GPU call spends much of its time packing
// its batch on the host (README: kernels vs whole native call), so with two
// drivers one packs while the other's batch computes.
// PYPHMM_DEV's hybrid_gpu_threads changes the count.
//
// First the call decides whether sharing can pay: at the bulk rates learned
// by earlier calls in this process (priors until then: 1 T cells/s for a
// GPU, 1 G per CPU thread), the CPU workers' share of an ideal split is
// workers x cpu / (gpu + workers x cpu). Under PYPHMM_DEV's hybrid_min_cpu_share
// percent (default 5) the whole workload goes to the GPU as one call, which
// packs in parallel and overlaps its chunks: batches and CPU workers would
// cost more than they add (on an H100 with 16 cores the share is about 1.4%,
// and sharing measured 1.4-2.2x slower than one GPU call).
//
// When sharing, a CPU worker takes its next claim only if, at the rates seen
// so far in the call (the learned or prior ones until then), it would finish
// it before GPU and CPU workers together finish everything still unclaimed
// or in flight. So the CPU never holds the last regions while the GPU idles
// (the tail is at most part of one small claim).
//
// Results go straight to each region's slice of the caller's output. If the
// GPU fails, one warning is printed and the CPU computes the failed batch
// and everything unclaimed, with every thread.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "common/thread_pool.h"
#include "cpu/pairhmm_cpu.h"
#include "dispatch/gpu.h"
#include "dispatch/hybrid.h"
#include "dispatch/policy.h"

namespace pyphmm {

namespace {

constexpr int64_t kCpuClaimCells = 2'000'000;      // ~1 ms on one core: small claims balance well
constexpr int64_t kMinGpuBatch = 32'000'000;       // below this a GPU call is mostly fixed cost
constexpr int64_t kMaxGpuBatch = 512'000'000;      // a few hundred us of kernels on an H100
constexpr int kBatchesPerDriverLeft = 4;           // batch = unclaimed / (4 x drivers): shrinks near the end
constexpr double kPriorGpuRate = 1e12;             // cells/s of a whole-workload GPU call, until measured
constexpr double kPriorCpuThreadRate = 1e9;        // cells/s of one CPU thread, until measured
constexpr int64_t kLearnMinCells = 100'000'000;    // a rate is learned from calls at least this large
constexpr int64_t kMaxRegions = int64_t(1) << 32;  // each cursor is 32 bits

using Clock = std::chrono::steady_clock;

double min_cpu_share() { return config::get(config::Knob::kHybridMinCpuShare) / 100.0; }

// Bulk rates learned from this process's whole-workload calls (0: none yet).
std::atomic<double> g_gpu_rate{0}, g_cpu_thread_rate{0};

double learned(const std::atomic<double>& r, double prior) {
    const double v = r.load(std::memory_order_relaxed);
    return v > 0 ? v : prior;
}

// Both ends of the sorted region list in one atomic word: [lo, hi) is unclaimed.
class Cursors {
  public:
    explicit Cursors(int64_t n) : word_(pack(0, static_cast<uint32_t>(n))) {}

    // pick(lo, hi) returns the new lo in (lo, hi], or lo to decline.
    template <typename Pick>
    bool take_small(Pick pick, int64_t* first, int64_t* last) {
        uint64_t w = word_.load(std::memory_order_relaxed);
        for (;;) {
            uint32_t lo = static_cast<uint32_t>(w >> 32), hi = static_cast<uint32_t>(w);
            if (lo >= hi) return false;
            uint32_t nlo = static_cast<uint32_t>(pick(lo, hi));
            if (nlo == lo) return false;
            if (word_.compare_exchange_weak(w, pack(nlo, hi), std::memory_order_acq_rel)) {
                *first = lo;
                *last = nlo;
                return true;
            }
        }
    }

    // pick(lo, hi) returns the new hi in [lo, hi).
    template <typename Pick>
    bool take_large(Pick pick, int64_t* first, int64_t* last) {
        uint64_t w = word_.load(std::memory_order_relaxed);
        for (;;) {
            uint32_t lo = static_cast<uint32_t>(w >> 32), hi = static_cast<uint32_t>(w);
            if (lo >= hi) return false;
            uint32_t nhi = static_cast<uint32_t>(pick(lo, hi));
            if (word_.compare_exchange_weak(w, pack(lo, nhi), std::memory_order_acq_rel)) {
                *first = nhi;
                *last = hi;
                return true;
            }
        }
    }

  private:
    static uint64_t pack(uint32_t lo, uint32_t hi) { return (uint64_t(lo) << 32) | hi; }
    std::atomic<uint64_t> word_;
};

struct Hybrid {
    const pyphmm_region* regions;
    double* out;
    bool dbl;
    int32_t device;       // the call's options.device
    GpuCallOptions call;  // the GPU calls' precision
    int threads;          // for the CPU recompute after a GPU failure
    int gpu_threads;
    int cpu_workers;
    std::vector<int64_t> order;      // region indices by ascending cells
    std::vector<int64_t> prefix;     // prefix[i] = cells of order[0, i)
    std::vector<int64_t> out_first;  // output offset of region k
    Cursors cursors;
    Clock::time_point start = Clock::now();
    double prior_gpu_rate, prior_cpu_rate;
    double cpu_share = 0;  // predicted share of the CPU workers
    std::atomic<bool> gpu_failed{false};
    std::atomic<int64_t> gpu_inflight{0}, gpu_cells{0}, gpu_regions{0};
    std::atomic<int64_t> cpu_cells{0}, cpu_regions{0}, cpu_busy_ns{0}, double_pairs{0};

    Hybrid(const pyphmm_region* r, int64_t n, const int64_t* cells, double* o)
        : regions(r), out(o), order(n), prefix(n + 1, 0), out_first(n + 1, 0), cursors(n) {
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(), [cells](int64_t a, int64_t b) { return cells[a] < cells[b]; });
        for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cells[order[i]];
        for (int64_t k = 0; k < n; ++k)
            out_first[k + 1] = out_first[k] + static_cast<int64_t>(r[k].num_reads) * r[k].num_haps;
    }

    int64_t cells_of(int64_t first, int64_t last) const { return prefix[last] - prefix[first]; }

    // GPU cells/s so far in this call (every driver together), else the prior.
    double gpu_rate() const {
        int64_t done = gpu_cells.load(std::memory_order_relaxed);
        double s = std::chrono::duration<double>(Clock::now() - start).count();
        return done > 0 && s > 0 ? done / s : prior_gpu_rate;
    }

    // Cells/s of one CPU worker so far, else the prior.
    double cpu_thread_rate() const {
        int64_t done = cpu_cells.load(std::memory_order_relaxed);
        int64_t ns = cpu_busy_ns.load(std::memory_order_relaxed);
        return done > 0 && ns > 0 ? done / (ns * 1e-9) : prior_cpu_rate;
    }
};

// Computes regions order[first, last) with compute(regions, n, out), writing
// each region's results to its slice of h.out.
template <typename Compute>
int run_range(const Hybrid& h, int64_t first, int64_t last, Compute compute) {
    if (last - first == 1) {  // one region: its slice is contiguous already
        int64_t k = h.order[first];
        return compute(&h.regions[k], 1, h.out + h.out_first[k]);
    }
    std::vector<pyphmm_region> sub;
    std::vector<int64_t> offset(1, 0);
    for (int64_t i = first; i < last; ++i) {
        int64_t k = h.order[i];
        sub.push_back(h.regions[k]);
        offset.push_back(offset.back() + h.out_first[k + 1] - h.out_first[k]);
    }
    std::vector<double> tmp(offset.back());
    int rc = compute(sub.data(), static_cast<int64_t>(sub.size()), tmp.data());
    if (rc != PYPHMM_OK) return rc;
    for (int64_t i = first; i < last; ++i) {
        int64_t k = h.order[i], j = i - first;
        std::memcpy(h.out + h.out_first[k], tmp.data() + offset[j], (offset[j + 1] - offset[j]) * sizeof(double));
    }
    return PYPHMM_OK;
}

void run_on_cpu(Hybrid& h, int64_t first, int64_t last, int threads) {
    if (first >= last) return;
    auto t0 = Clock::now();
    pyphmm_stats st;
    std::memset(&st, 0, sizeof(st));
    run_range(h, first, last,
              [&](const pyphmm_region* r, int64_t n, double* o) { return cpu_pairhmm(r, n, o, threads, h.dbl, &st); });
    h.cpu_busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count() / threads;
    h.cpu_cells += h.cells_of(first, last);
    h.cpu_regions += last - first;
    h.double_pairs += st.double_pairs;
}

// Next claim from the small end: regions up to kCpuClaimCells (at least one),
// if one thread finishes them before everyone together finishes the rest.
int64_t pick_small(const Hybrid& h, int64_t lo, int64_t hi) {
    const int64_t* p = h.prefix.data();
    int64_t nlo = std::upper_bound(p + lo + 1, p + hi + 1, p[lo] + kCpuClaimCells) - p - 1;
    nlo = std::max(nlo, lo + 1);
    if (h.gpu_failed.load(std::memory_order_relaxed)) return nlo;
    const double cpu_rate = h.cpu_thread_rate();
    double claim_s = h.cells_of(lo, nlo) / cpu_rate;
    double rest_s = (h.cells_of(nlo, hi) + h.gpu_inflight.load(std::memory_order_relaxed)) /
                    (h.gpu_rate() + h.cpu_workers * cpu_rate);
    return claim_s <= rest_s ? nlo : lo;
}

// Next GPU batch from the large end: about unclaimed / (4 x drivers) cells,
// within [kMinGpuBatch, kMaxGpuBatch], at least one region.
int64_t pick_large(const Hybrid& h, int64_t lo, int64_t hi) {
    const int64_t* p = h.prefix.data();
    int64_t target = h.cells_of(lo, hi) / (kBatchesPerDriverLeft * h.gpu_threads);
    target = std::min(kMaxGpuBatch, std::max(kMinGpuBatch, target));
    int64_t nhi = std::upper_bound(p + lo, p + hi + 1, p[hi] - target) - p - 1;
    return std::min(std::max(nhi, lo), hi - 1);
}

void cpu_worker(Hybrid& h) {
    int64_t first, last;
    while (h.cursors.take_small([&](int64_t lo, int64_t hi) { return pick_small(h, lo, hi); }, &first, &last))
        run_on_cpu(h, first, last, 1);
}

// After a GPU failure: one warning per call, then the failed batch and all
// that is unclaimed go to the CPU with every thread.
void gpu_failed(Hybrid& h, int64_t first, int64_t last, const pyphmm_error& err) {
    if (!h.gpu_failed.exchange(true)) report_gpu_failure("PairHMM", err, "the CPU computes the remaining regions");
    run_on_cpu(h, first, last, h.threads);
    int64_t a, b;
    if (h.cursors.take_small([](int64_t, int64_t hi) { return hi; }, &a, &b)) run_on_cpu(h, a, b, h.threads);
}

void gpu_driver(Hybrid& h) {
    int64_t first, last;
    while (!h.gpu_failed.load() &&
           h.cursors.take_large([&](int64_t lo, int64_t hi) { return pick_large(h, lo, hi); }, &first, &last)) {
        int64_t cells = h.cells_of(first, last);
        h.gpu_inflight += cells;
        pyphmm_stats st;
        std::memset(&st, 0, sizeof(st));
        pyphmm_error err;
        clear_error(&err);
        int rc = run_range(h, first, last, [&](const pyphmm_region* r, int64_t n, double* o) {
            return gpu_pairhmm(r, n, o, h.device, h.call, &st, &err);
        });
        h.gpu_inflight -= cells;
        if (rc != PYPHMM_OK) {
            gpu_failed(h, first, last, err);
            return;
        }
        h.gpu_cells += cells;
        h.gpu_regions += last - first;
        h.double_pairs += st.double_pairs;
    }
    cpu_worker(h);  // the GPU has nothing left to claim: help at the small end if that still pays
}

// Sharing cannot pay: every region in one GPU call (the caller's order, so
// results land in place), all on the CPU if the GPU fails.
void gpu_alone(Hybrid& h) {
    const int64_t n = static_cast<int64_t>(h.order.size());
    pyphmm_stats st;
    std::memset(&st, 0, sizeof(st));
    pyphmm_error err;
    clear_error(&err);
    if (gpu_pairhmm(h.regions, n, h.out, h.device, h.call, &st, &err) != PYPHMM_OK) {
        gpu_failed(h, 0, 0, err);  // (takes every region: none is claimed)
        return;
    }
    h.gpu_cells += h.prefix[n];
    h.gpu_regions += n;
    h.double_pairs += st.double_pairs;
}

}  // namespace

int hybrid_gpu_threads() { return static_cast<int>(config::get(config::Knob::kHybridGpuThreads)); }

bool hybrid_wanted(const pyphmm_options* o, int64_t num_regions) {
    if (num_regions < 2 || num_regions >= kMaxRegions) return false;
    if (requested_backend(o) != PYPHMM_BACKEND_AUTO || !gpu_usable()) return false;
    int mode = o ? o->hybrid : PYPHMM_HYBRID_DEFAULT;
    if (mode == PYPHMM_HYBRID_ON) return true;
    if (mode == PYPHMM_HYBRID_OFF) return false;
    return config::on(config::Knob::kHybrid);
}

int hybrid_pairhmm(const pyphmm_region* regions, int64_t num_regions, const int64_t* region_cells, double* out,
                   const pyphmm_options* options, pyphmm_stats* stats) {
    Hybrid h(regions, num_regions, region_cells, out);
    h.dbl = options && options->double_precision;
    h.device = requested_device(options);
    h.call.double_precision = h.dbl;
    h.threads = default_threads(options);
    h.gpu_threads = std::min(hybrid_gpu_threads(), h.threads);
    // (the fake GPU of the tests is one CPU thread)
    h.prior_gpu_rate = learned(g_gpu_rate, gpu_is_fake() ? kPriorCpuThreadRate : kPriorGpuRate);
    h.prior_cpu_rate = learned(g_cpu_thread_rate, kPriorCpuThreadRate);
    h.cpu_workers = h.threads - h.gpu_threads;
    const double cpu_all = h.cpu_workers * h.prior_cpu_rate;
    h.cpu_share = cpu_all / (h.prior_gpu_rate + cpu_all);
    if (h.cpu_workers > 0 && h.cpu_share < min_cpu_share()) h.cpu_workers = 0;
    if (h.cpu_workers == 0) {
        gpu_alone(h);
    } else {
        parallel_for(h.threads, h.threads, [&](int64_t i) {
            if (i < h.gpu_threads)
                gpu_driver(h);
            else
                cpu_worker(h);
        });
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - h.start).count();
    if (!h.gpu_failed && h.gpu_cells >= kLearnMinCells && h.cpu_cells == 0 && seconds > 0)
        g_gpu_rate.store(h.gpu_cells / seconds, std::memory_order_relaxed);
    if (h.cpu_cells >= kLearnMinCells / 10) g_cpu_thread_rate.store(h.cpu_thread_rate(), std::memory_order_relaxed);
    if (config::debug())
        std::fprintf(stderr,
                     "pyphmm: hybrid: GPU %.3g cells/s, CPU %.3g cells/s x %d workers: CPU share %.1f%% -> %s\n",
                     h.prior_gpu_rate, h.prior_cpu_rate, h.threads - h.gpu_threads, 100.0 * h.cpu_share,
                     h.cpu_workers ? "shared" : "GPU alone");
    if (stats) {
        stats->double_pairs = h.double_pairs;
        stats->backend_used = h.gpu_cells > 0 ? PYPHMM_BACKEND_CUDA : PYPHMM_BACKEND_CPU;
        stats->fell_back = h.gpu_failed ? 1 : 0;
        stats->gpu_regions = h.gpu_regions;
        stats->gpu_cells = h.gpu_cells;
        stats->cpu_regions = h.cpu_regions;
        stats->cpu_cells = h.cpu_cells;
        stats->hybrid = 1;
        stats->hybrid_gpu_threads = h.gpu_threads;
        stats->hybrid_cpu_threads = h.cpu_workers;
        stats->seconds = seconds;
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
