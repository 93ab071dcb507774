// CPU PDHMM driver: which pairs share a kernel call, on which threads.
//
// Every (read, haplotype) pair is one SIMD lane. Pairs are ordered by
// haplotype, then read length, and cut into groups of W lanes (8 on
// AVX-512, 4 on AVX2, 2 on NEON and portable): lanes of a group then share
// their PD columns (so the deletion-span columns that need the general
// path are the same few in every lane) and have nearly equal read lengths
// (little padding). The groups are spread over the threads.
//
// Denormals are kept while kernels run (GKL's PDHMM does not flush them),
// whatever the caller's mode.
#include "pdhmm_cpu.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "common/pd_tables.h"
#include "common/thread_pool.h"
#include "cpu_arch.h"
#include "pdhmm_cpu_kernel.h"

namespace pyphmm {

namespace {

using cpu::PdPair;

std::vector<PdPair> collect_pairs(const pyphmm_pd_region* regions, int64_t num_regions) {
    std::vector<PdPair> pairs;
    int64_t total = 0;
    for (int64_t k = 0; k < num_regions; ++k) total += static_cast<int64_t>(regions[k].num_reads) * regions[k].num_haps;
    pairs.reserve(total);
    int64_t out = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_pd_region& g = regions[k];
        for (int32_t r = 0; r < g.num_reads; ++r) {
            const int64_t ro = g.read_offsets[r];
            const int32_t m = static_cast<int32_t>(g.read_offsets[r + 1] - ro);
            for (int32_t h = 0; h < g.num_haps; ++h) {
                const int64_t ho = g.hap_offsets[h];
                pairs.push_back(PdPair{g.read_bases + ro, g.read_quals + ro, g.read_ins + ro, g.read_dels + ro,
                                       g.read_gcp + ro, g.hap_bases + ho, g.hap_pd + ho, m,
                                       static_cast<int32_t>(g.hap_offsets[h + 1] - ho), out++});
            }
        }
    }
    return pairs;
}

// Region, read and haplotype of output index `out`.
void locate(const pyphmm_pd_region* regions, int64_t out, int64_t* k, int64_t* r, int64_t* h) {
    for (*k = 0;; ++*k) {
        const int64_t count = static_cast<int64_t>(regions[*k].num_reads) * regions[*k].num_haps;
        if (out < count) break;
        out -= count;
    }
    *r = out / regions[*k].num_haps;
    *h = out % regions[*k].num_haps;
}

}  // namespace

const char* cpu_pdhmm_kernel_name() { return cpu::pd_kernel_choice().name; }

int cpu_pdhmm(const pyphmm_pd_region* regions, int64_t num_regions, double* out, int threads, pyphmm_stats* stats,
              pyphmm_error* error) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<PdPair> pairs = collect_pairs(regions, num_regions);
    std::vector<const PdPair*> order(pairs.size());
    int64_t cells = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
        order[i] = &pairs[i];
        cells += static_cast<int64_t>(pairs[i].m) * pairs[i].n;
    }
    // Waking a pool thread costs microseconds: give each at least ~1 ms of
    // work, so a small region (GATK's per-call case) does not pay for idle cores.
    constexpr int64_t kCellsPerThread = 256 * 1024;
    threads = static_cast<int>(std::max<int64_t>(
        1, std::min<int64_t>(threads > 0 ? threads : available_cores(), cells / kCellsPerThread + 1)));
    std::stable_sort(order.begin(), order.end(), [](const PdPair* a, const PdPair* b) {
        if (a->hap != b->hap) return a->hap < b->hap;
        return a->m < b->m;
    });

    const cpu::PdKernelChoice& kernel = cpu::pd_kernel_choice();
    const int W = kernel.lanes;
    const int64_t n = static_cast<int64_t>(order.size());
    const double log10_ic = pd_tables().log10_initial_condition;
    parallel_for((n + W - 1) / W, threads, [&](int64_t group) {
        KeepDenormals denormals;
        double sums[cpu::kPdMaxLanes];
        const int count = static_cast<int>(std::min<int64_t>(W, n - group * W));
        kernel.forward(&order[group * W], count, sums);
        for (int l = 0; l < count; ++l) out[order[group * W + l]->out] = std::log10(sums[l]) - log10_ic;
    });

    if (stats) {
        stats->pairs = n;
        stats->cells = cells;
        stats->backend_used = PYPHMM_BACKEND_CPU;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    // GKL's check of every result: a log10 probability is <= 0 (and -inf is one).
    for (int64_t i = 0; i < n; ++i) {
        if (out[i] <= 0.0) continue;
        int64_t k, r, h;
        locate(regions, i, &k, &r, &h);
        return set_error(error, PYPHMM_E_INTERNAL,
                         "region %lld, read %lld, haplotype %lld: log10 likelihood %g is not a probability (GKL "
                         "reports this as a failure)",
                         (long long)k, (long long)r, (long long)h, out[i]);
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
