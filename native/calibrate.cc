// Per-call GPU threshold: measured once per process at first use.
//
// Model. A call of c cells costs
//     on the CPU:  t_cpu(c) = c / R_cpu(threads)
//     on the GPU:  t_gpu(c) = T0 + c / R_gpu
// where T0 is the fixed cost of one GPU call (packing, two copies, launches,
// one synchronisation) and R_gpu the GPU's rate beyond it. The GPU pays off
// from the crossover
//     c* = T0 / (1 / R_cpu - 1 / R_gpu)          (infinite if R_gpu <= R_cpu)
// clamped to [kMinCalibrated, kMaxCalibrated]. R_cpu is measured with every
// available core and assumed linear in the thread count, so a call that
// asks for fewer threads (GATK's --native-pair-hmm-threads) crosses over
// earlier.
//
// Measurement (a few milliseconds): a warm-up GPU call (it also grows the
// GPU memory pools and loads the kernels, which the first real call would
// pay anyway), then the best of three calls of a tiny region (T0) and of two
// calls of a probe region (R_gpu = extra cells / extra time), and the best of
// two CPU runs of the same probe after a warm-up (which starts the worker
// threads). The probe (32 reads of 151 bp x 4 haplotypes of 300 bp, 5.8 M
// cells) is the size of the regions the threshold decides about, so both
// rates include what small calls really cost: partly filled SIMD groups,
// threads that find no work, per-call overheads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/pairhmm_cpu.h"
#include "dispatch.h"

namespace pyphmm {

namespace {

constexpr int64_t kDefaultGpuMinCells = 2'000'000;
constexpr int64_t kMinCalibrated = 100'000;          // below: GPU calls for regions of a few pairs
constexpr int64_t kMaxCalibrated = 1'000'000'000;    // above: the GPU is never worth it per call

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
        for (int h = 0; h < haps * hap_len; ++h) hap.push_back(kAcgt[next() & 3]);
        for (int h = 1; h < haps; ++h) hap[h * hap_len + h * 7 % hap_len] = kAcgt[next() & 3];  // variants
        for (int r = 0; r < reads; ++r) {
            int start = static_cast<int>(next() % (hap_len - read_len + 1));
            for (int i = 0; i < read_len; ++i)
                bases.push_back(next() % 100 == 0 ? kAcgt[next() & 3] : hap[start + i]);
        }
        quals.assign(bases.size(), 30);
        ins.assign(bases.size(), 45);
        dels.assign(bases.size(), 45);
        gcp.assign(bases.size(), 10);
        for (int r = 0; r <= reads; ++r) read_offsets.push_back(int64_t(r) * read_len);
        for (int h = 0; h <= haps; ++h) hap_offsets.push_back(int64_t(h) * hap_len);
        region = pyphmm_region{reads, haps, bases.data(), quals.data(), ins.data(), dels.data(), gcp.data(),
                               read_offsets.data(), hap.data(), hap_offsets.data()};
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

int64_t crossover(const Calibration& c, int threads) {
    double r_cpu = c.cpu_rate * std::max(1, threads) / c.cpu_threads;
    double denom = 1.0 / r_cpu - 1.0 / c.gpu_rate;
    if (denom <= 0) return kMaxCalibrated;
    double cells = c.gpu_call_s / denom;
    return static_cast<int64_t>(std::min<double>(kMaxCalibrated, std::max<double>(kMinCalibrated, cells)));
}

Calibration measure() {
    Calibration c;
    c.cpu_threads = available_cores();
    if (!gpu_usable()) return c;
    const Probe tiny(1, 1, 20, 40), probe(32, 4, 151, 300);
    std::vector<double> out(probe.results);
    pyphmm_error err;
    err.message[0] = '\0';
    auto gpu = [&](const Probe& p) {
        return gpu_pairhmm(&p.region, 1, out.data(), false, nullptr, &err) == PYPHMM_OK;
    };
    auto cpu = [&](const Probe& p) {
        return cpu_pairhmm(&p.region, 1, out.data(), c.cpu_threads, false, nullptr) == PYPHMM_OK;
    };
    double t_tiny = -1, t_probe = -1, t_cpu = -1;
    if (gpu(probe) && gpu(tiny)) {  // warm-up
        t_tiny = best_of(3, [&] { return gpu(tiny); });
        t_probe = best_of(2, [&] { return gpu(probe); });
    }
    if (t_tiny < 0 || t_probe < 0) {
        std::fprintf(stderr, "pyphmm: warning: GPU calibration failed (%s); default threshold %lld cells\n",
                     err.message, (long long)kDefaultGpuMinCells);
        return c;
    }
    cpu(probe);  // warm-up
    t_cpu = best_of(2, [&] { return cpu(probe); });
    c.gpu_call_s = t_tiny;
    // Timer noise can make the probe look no slower than the tiny call;
    // 1 us of extra time then bounds the rate.
    c.gpu_rate = static_cast<double>(probe.cells - tiny.cells) / std::max(t_probe - t_tiny, 1e-6);
    c.cpu_rate = static_cast<double>(probe.cells) / std::max(t_cpu, 1e-9);
    c.min_cells = crossover(c, c.cpu_threads);
    c.ran = true;
    if (debug_dispatch())
        std::fprintf(stderr,
                     "pyphmm: calibration: GPU call %.1f us + %.1f GCUPS, CPU %.2f GCUPS on %d threads "
                     "-> threshold %lld cells\n",
                     c.gpu_call_s * 1e6, c.gpu_rate / 1e9, c.cpu_rate / 1e9, c.cpu_threads,
                     (long long)c.min_cells);
    return c;
}

int64_t env_threshold() {
    static const int64_t v = env_int("PYPHMM_GPU_MIN_CELLS", -1);
    return v;
}

}  // namespace

const Calibration& calibration() {
    static std::once_flag once;
    static Calibration c;
    std::call_once(once, [] { c = measure(); });
    return c;
}

int64_t fixed_gpu_min_cells() {
    return env_threshold() >= 0 ? env_threshold() : kDefaultGpuMinCells;
}

int64_t gpu_min_cells(int threads, int* source) {
    int src = PYPHMM_THRESHOLD_DEFAULT;
    int64_t v = kDefaultGpuMinCells;
    if (env_threshold() >= 0) {
        src = PYPHMM_THRESHOLD_ENV;
        v = env_threshold();
    } else if (gpu_usable() && calibration().ran) {
        src = PYPHMM_THRESHOLD_CALIBRATED;
        v = crossover(calibration(), threads);
    }
    if (source) *source = src;
    return v;
}

}  // namespace pyphmm
