// Per-call GPU threshold: measured once per process at first use (and once
// more if the GPU was full then and has room later).
//
// The GPU pays off for a call of c cells once its fixed cost (packing, two
// copies, launches, one synchronisation) is smaller than what the CPU needs
// for c cells. Rather than trust a model of either side (small calls run the
// CPU's SIMD groups and threads partly empty, the GPU's cost is mostly
// fixed), the calibration times both backends on GATK-shaped regions of
// doubling size (151 bp reads x 2 haplotypes of 300 bp, 1 to 32 reads: 0.09
// to 2.9 M cells), with the thread count calls use by default, and takes the
// crossover between the last size the CPU wins and the first the GPU wins
// (geometric mean). If the CPU wins every size, the rates of the largest
// probe extrapolate: c* = T0 / (1/R_cpu - 1/R_gpu). A call with fewer
// threads (GATK's --native-pair-hmm-threads) scales the threshold down
// linearly. Cost: a few milliseconds, once, after a warm-up GPU call that
// the first real call would pay anyway.
//
// PDHMM calls have their own threshold, measured the same way at the first
// PDHMM call under AUTO on HaplotypeCaller-shaped PD regions (68 bp reads x
// 6 haplotypes of 136 bp, 2 to 128 reads: 0.11 to 7.1 M cells): their
// kernels differ in both backends (double precision throughout), so
// PairHMM's crossover says nothing about theirs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/config.h"
#include "common/pd_tables.h"
#include "common/thread_pool.h"
#include "cpu/pairhmm_cpu.h"
#include "cpu/pdhmm_cpu.h"
#include "dispatch/calibrate.h"
#include "dispatch/gpu.h"
#include "pyphmm.h"

namespace pyphmm {

namespace {

constexpr int64_t kDefaultGpuMinCells = 2'000'000;
constexpr int64_t kMinCalibrated = 10'000;         // below: a GPU call for a pair or two
constexpr int64_t kMaxCalibrated = 1'000'000'000;  // above: the GPU is never worth it per call

// One synthetic region with its own buffers. Reads are windows of the first
// haplotype with a few mismatches, as in real data (no float underflow, so
// the double pass does not distort the timing).
struct Probe {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, hap;
    std::vector<int64_t> read_offsets, hap_offsets;
    pyphmm_region region{};
    int64_t cells = 0, results = 0;

    Probe(int reads, int haps, int read_len, int hap_len) {
        static const uint8_t kAcgt[4] = {'A', 'C', 'G', 'T'};
        uint32_t x = 12345;
        auto next = [&x] { return (x = x * 1664525u + 1013904223u) >> 16; };
        for (int j = 0; j < hap_len; ++j) hap.push_back(kAcgt[next() & 3]);
        const std::vector<uint8_t> first = hap;
        for (int h = 1; h < haps; ++h) {  // the others: copies of the first with one variant each
            hap.insert(hap.end(), first.begin(), first.end());
            hap[h * hap_len + h * 7 % hap_len] = kAcgt[(next() & 3)];
        }
        for (int r = 0; r < reads; ++r) {
            int start = static_cast<int>(next() % (hap_len - read_len + 1));
            for (int i = 0; i < read_len; ++i) bases.push_back(next() % 100 == 0 ? kAcgt[next() & 3] : hap[start + i]);
        }
        quals.assign(bases.size(), 30);
        ins.assign(bases.size(), 45);
        dels.assign(bases.size(), 45);
        gcp.assign(bases.size(), 10);
        for (int r = 0; r <= reads; ++r) read_offsets.push_back(int64_t(r) * read_len);
        for (int h = 0; h <= haps; ++h) hap_offsets.push_back(int64_t(h) * hap_len);
        region = pyphmm_region{reads,       haps,       bases.data(),        quals.data(), ins.data(),
                               dels.data(), gcp.data(), read_offsets.data(), hap.data(),   hap_offsets.data()};
        cells = int64_t(reads) * read_len * int64_t(haps) * hap_len;
        results = int64_t(reads) * haps;
    }
};

// Best wall time of n runs of f, or -1 if a run fails.
template <typename F>
double best_of(int n, F f) {
    double best = 1e30;
    for (int i = 0; i < n; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        if (!f()) return -1;
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

int64_t clamp_cells(double cells) {
    return static_cast<int64_t>(std::min<double>(kMaxCalibrated, std::max<double>(kMinCalibrated, cells)));
}

int64_t crossover(const Calibration& c, int threads) {
    return clamp_cells(static_cast<double>(c.min_cells) * std::max(1, threads) / c.cpu_threads);
}

Calibration no_gpu() {
    Calibration c;
    c.cpu_threads = available_cores();
    return c;
}

// The crossover of one kernel from timed calls: `tiny` (the fixed cost of a
// GPU call) and probes of doubling size, each run by gpu(p) and cpu(p)
// (false: the call failed). `what` names the calibration in messages.
template <typename ProbeT, typename Gpu, typename Cpu>
Calibration measure_kernel(const char* what, const ProbeT& tiny, const std::vector<ProbeT>& probes, Gpu gpu, Cpu cpu,
                           const pyphmm_error& err) {
    Calibration c;
    c.cpu_threads = available_cores();
    c.gpu_seen = true;
    const double t_tiny = gpu(probes.back()) && gpu(tiny) ? best_of(3, [&] { return gpu(tiny); }) : -1;
    cpu(probes.back());  // warm-up: starts the worker threads
    int first_gpu_win = -1;
    double t_gpu = -1, t_cpu = -1;
    for (size_t i = 0; i < probes.size() && t_tiny >= 0; ++i) {
        t_gpu = best_of(2, [&] { return gpu(probes[i]); });
        t_cpu = best_of(2, [&] { return cpu(probes[i]); });
        if (t_gpu < 0) break;
        if (t_gpu < t_cpu) {
            first_gpu_win = static_cast<int>(i);
            break;
        }
    }
    if (t_tiny < 0 || t_gpu < 0) {
        std::fprintf(stderr, "pyphmm: warning: GPU %s failed (%s); default threshold %lld cells\n", what, err.message,
                     (long long)kDefaultGpuMinCells);
        return c;
    }
    const ProbeT& last = probes[first_gpu_win < 0 ? probes.size() - 1 : first_gpu_win];
    c.gpu_call_s = t_tiny;
    // (timer noise can make a probe look no slower than the tiny call)
    c.gpu_rate = static_cast<double>(last.cells - tiny.cells) / std::max(t_gpu - t_tiny, 1e-6);
    c.cpu_rate = static_cast<double>(last.cells) / std::max(t_cpu, 1e-9);
    if (first_gpu_win == 0) {
        c.min_cells = clamp_cells(static_cast<double>(probes[0].cells) / 2);
    } else if (first_gpu_win > 0) {
        c.min_cells = clamp_cells(std::sqrt(static_cast<double>(probes[first_gpu_win - 1].cells) * last.cells));
    } else {
        const double denom = 1.0 / c.cpu_rate - 1.0 / c.gpu_rate;
        c.min_cells = denom <= 0 ? kMaxCalibrated : clamp_cells(std::max(c.gpu_call_s / denom, 2.0 * last.cells));
    }
    c.ran = true;
    if (config::debug())
        std::fprintf(stderr,
                     "pyphmm: %s: GPU call %.1f us + %.1f GCUPS, CPU %.2f GCUPS on %d threads at %lld "
                     "cells -> threshold %lld cells\n",
                     what, c.gpu_call_s * 1e6, c.gpu_rate / 1e9, c.cpu_rate / 1e9, c.cpu_threads, (long long)last.cells,
                     (long long)c.min_cells);
    return c;
}

Calibration measure() {
    if (!gpu_usable()) return no_gpu();
    const Probe tiny(1, 1, 20, 40);
    std::vector<Probe> probes;
    for (int reads = 1; reads <= 32; reads *= 2) probes.emplace_back(reads, 2, 151, 300);
    std::vector<double> out(probes.back().results);
    pyphmm_error err;
    err.message[0] = '\0';
    const int threads = available_cores();
    auto gpu = [&](const Probe& p) {
        return gpu_pairhmm(&p.region, 1, out.data(), PYPHMM_DEVICE_AUTO, GpuCallOptions{}, nullptr, &err) == PYPHMM_OK;
    };
    auto cpu = [&](const Probe& p) {
        return cpu_pairhmm(&p.region, 1, out.data(), threads, false, nullptr) == PYPHMM_OK;
    };
    return measure_kernel("calibration", tiny, probes, gpu, cpu, err);
}

// A synthetic PD region in HaplotypeCaller's shape (68 bp reads, haplotypes
// of 136 bp with one undetermined SNP and one undetermined deletion span).
struct PdProbe {
    Probe base;
    std::vector<uint8_t> pd;
    pyphmm_pd_region region{};
    int64_t cells = 0, results = 0;

    PdProbe(int reads, int haps, int read_len, int hap_len)
        : base(reads, haps, read_len, hap_len), pd(base.hap.size(), 0) {
        for (int h = 0; h < haps; ++h) {
            uint8_t* p = pd.data() + int64_t(h) * hap_len;
            p[hap_len / 3] = kPdSnp | kPdA | kPdT;
            p[hap_len / 2] |= kPdDelStart;
            p[hap_len / 2 + 3] |= kPdDelEnd;
        }
        const pyphmm_region& g = base.region;
        region = pyphmm_pd_region{g.num_reads, g.num_haps,     g.read_bases, g.read_quals, g.read_ins,   g.read_dels,
                                  g.read_gcp,  g.read_offsets, g.hap_bases,  pd.data(),    g.hap_offsets};
        cells = base.cells;
        results = base.results;
    }
};

Calibration measure_pd() {
    if (!gpu_usable()) return no_gpu();
    const PdProbe tiny(1, 1, 20, 40);
    std::vector<PdProbe> probes;
    for (int reads = 2; reads <= 128; reads *= 2) probes.emplace_back(reads, 6, 68, 136);
    std::vector<double> out(probes.back().results);
    pyphmm_error err;
    err.message[0] = '\0';
    const int threads = available_cores();
    auto gpu = [&](const PdProbe& p) {
        bool checked = false;  // (the probes' own regions: valid by construction)
        return gpu_pdhmm(&p.region, 1, out.data(), PYPHMM_DEVICE_AUTO, GpuCallOptions{}, nullptr, &checked, &err) ==
               PYPHMM_OK;
    };
    auto cpu = [&](const PdProbe& p) {
        return cpu_pdhmm(&p.region, 1, out.data(), threads, nullptr, nullptr) == PYPHMM_OK;
    };
    return measure_kernel("PDHMM calibration", tiny, probes, gpu, cpu, err);
}

// PYPHMM_GPU_MIN_CELLS, or -1 when unset.
int64_t env_threshold() { return config::get(config::Knob::kGpuMinCells); }

// A calibration measured once; again once if the first measurement found
// no usable GPU and one is usable now (a full GPU that had room later,
// gpu.h).
class Measured {
  public:
    explicit Measured(Calibration (*measure)()) : measure_(measure) {}
    const Calibration& get() {
        const Calibration* c = current_.load(std::memory_order_acquire);
        if (c && (c->gpu_seen || !gpu_usable())) return *c;
        std::lock_guard<std::mutex> lock(mutex_);
        c = current_.load(std::memory_order_relaxed);
        if (c && (c->gpu_seen || !gpu_usable())) return *c;
        c = new Calibration(measure_());  // (at most two, kept: callers hold references)
        current_.store(c, std::memory_order_release);
        return *c;
    }

  private:
    Calibration (*measure_)();
    std::mutex mutex_;
    std::atomic<const Calibration*> current_{nullptr};
};

// The threshold at `threads` from calibration c (see gpu_min_cells).
int64_t threshold(const Calibration& c, int threads, int* source) {
    int src = PYPHMM_THRESHOLD_DEFAULT;
    int64_t v = kDefaultGpuMinCells;
    if (env_threshold() >= 0) {
        src = PYPHMM_THRESHOLD_ENV;
        v = env_threshold();
    } else if (gpu_usable() && c.ran) {
        src = PYPHMM_THRESHOLD_CALIBRATED;
        v = crossover(c, threads);
    }
    if (source) *source = src;
    return v;
}

}  // namespace

const Calibration& calibration() {
    static Measured m(measure);
    return m.get();
}

const Calibration& pd_calibration() {
    static Measured m(measure_pd);
    return m.get();
}

int64_t fixed_gpu_min_cells() { return env_threshold() >= 0 ? env_threshold() : kDefaultGpuMinCells; }

int64_t gpu_min_cells(int threads, int* source) {
    // (the calibration runs only where the environment sets no threshold)
    return threshold(env_threshold() < 0 && gpu_usable() ? calibration() : Calibration{}, threads, source);
}

int64_t pd_gpu_min_cells(int threads, int* source) {
    return threshold(env_threshold() < 0 && gpu_usable() ? pd_calibration() : Calibration{}, threads, source);
}

}  // namespace pyphmm
