// CPU PairHMM driver: which pairs run together on the kernels
// (pairhmm_cpu_kernel.cc), on which threads, and the float -> double pass.
//
// Every (read, haplotype) pair of every region is one SIMD lane. Pairs are
// sorted by (read length, haplotype length) and cut into groups of W lanes
// (W = vector bytes / sizeof(T): 16 floats on AVX-512, 8 on AVX2, 4 on NEON
// and portable; half as many doubles), so a group's lanes have nearly equal
// shapes and little padding.
//
// Precision: float first; a pair whose float sum is below 1e-28 is
// recomputed in double (INITIAL_CONSTANT 2^1020), as GKL does. Flush-to-zero
// is on while kernels run (GKL runs with FTZ too, and denormals would make
// underflowing pairs a hundred times slower).
#include "pairhmm_cpu.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "../common/tables.h"
#include "../common/thread_pool.h"
#include "cpu_arch.h"
#include "pairhmm_cpu_kernel.h"

namespace pyphmm {

namespace {

using cpu::kernel_choice;
using cpu::kMaxLanes;
using cpu::Pair;

std::vector<Pair> collect_pairs(const pyphmm_region* regions, int64_t num_regions) {
    std::vector<Pair> pairs;
    int64_t total = 0;
    for (int64_t k = 0; k < num_regions; ++k) total += static_cast<int64_t>(regions[k].num_reads) * regions[k].num_haps;
    pairs.reserve(total);
    int64_t out = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        for (int32_t r = 0; r < g.num_reads; ++r) {
            int64_t ro = g.read_offsets[r];
            int32_t m = static_cast<int32_t>(g.read_offsets[r + 1] - ro);
            for (int32_t h = 0; h < g.num_haps; ++h) {
                int64_t ho = g.hap_offsets[h];
                Pair p{g.read_bases + ro,
                       g.read_quals + ro,
                       g.read_ins + ro,
                       g.read_dels + ro,
                       g.read_gcp + ro,
                       g.hap_bases + ho,
                       m,
                       static_cast<int32_t>(g.hap_offsets[h + 1] - ho),
                       out++};
                pairs.push_back(p);
            }
        }
    }
    return pairs;
}

// How many groups of W pairs run on the lane-per-pair kernel: the first
// `groups` runs of W pairs of `order` (sorted by shape; the last group may be
// partial and padded), while the pairs after them run one by one on the
// stripe kernel. Costs are in vector steps: a group costs m_max x n_max, a
// single pair ceil(m/W) x (n+W-1) stripe steps of about 1.6 group steps each
// (its dependency chain runs through a lane shift; measured on AVX-512 and
// AVX2 with 100-150 bp reads x 300-500 bp haplotypes). The split minimises
// the estimated makespan, max(largest task, total / threads): on one thread
// that is the cheapest total (a small region's few pairs become singles
// rather than a mostly empty group); with more threads than groups (a GATK
// region on --native-pair-hmm-threads cores) trailing groups become singles
// so every thread gets work, as GKL's OpenMP loop over pairs does.
int64_t plan_groups(const std::vector<const Pair*>& order, int W, int threads) {
    const int64_t n = static_cast<int64_t>(order.size());
    std::vector<double> tail(n + 1, 0.0), tail_max(n + 1, 0.0);  // singles from i on: sum, largest
    for (int64_t i = n - 1; i >= 0; --i) {
        const Pair& p = *order[i];
        const double c = 1.6 * ((p.m + W - 1) / W) * static_cast<double>(p.n + W - 1);
        tail[i] = tail[i + 1] + c;
        tail_max[i] = std::max(tail_max[i + 1], c);
    }
    const int64_t max_groups = (n + W - 1) / W;
    double best = 1e300, kept_sum = 0, kept_max = 0;
    int64_t best_groups = 0;
    for (int64_t g = 0; g <= max_groups; ++g) {
        const int64_t rest = std::min(g * W, n);
        const double makespan = std::max({kept_max, tail_max[rest], (kept_sum + tail[rest]) / std::max(1, threads)});
        if (makespan <= best) {  // ties: more groups, fewer tasks
            best = makespan;
            best_groups = g;
        }
        if (g == max_groups) break;
        int m_max = 0, n_max = 0;
        for (int64_t i = g * W; i < std::min((g + 1) * W, n); ++i) {
            m_max = std::max(m_max, order[i]->m);
            n_max = std::max(n_max, order[i]->n);
        }
        kept_sum += static_cast<double>(m_max) * n_max;
        kept_max = std::max(kept_max, static_cast<double>(m_max) * n_max);
    }
    return best_groups;
}

// Runs the kernels over `order` in parallel and calls done(pair, raw_sum)
// for every pair, split between groups and single pairs by plan_groups.
template <typename T, typename Forward, typename ForwardOne, typename Done>
void run_groups(const std::vector<const Pair*>& order, int vector_bytes, int threads, Forward forward,
                ForwardOne forward_one, Done done) {
    const int W = vector_bytes / static_cast<int>(sizeof(T));
    const int64_t n = static_cast<int64_t>(order.size());
    const int64_t groups = plan_groups(order, W, threads);
    const int64_t first_single = std::min(groups * W, n);
    parallel_for(groups + (n - first_single), threads, [&](int64_t task) {
        FlushToZero ftz;
        if (task >= groups) {
            const Pair& p = *order[first_single + (task - groups)];
            done(p, forward_one(p));
            return;
        }
        T sums[kMaxLanes];
        int count = static_cast<int>(std::min<int64_t>(W, n - task * W));
        forward(&order[task * W], count, sums);
        for (int l = 0; l < count; ++l) done(*order[task * W + l], sums[l]);
    });
}

}  // namespace

const char* cpu_pairhmm_kernel_name() { return kernel_choice().name; }

int cpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, int threads, bool double_precision,
                pyphmm_stats* stats) {
    auto start = std::chrono::steady_clock::now();
    std::vector<Pair> pairs = collect_pairs(regions, num_regions);
    std::vector<const Pair*> order(pairs.size());
    int64_t cells = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
        order[i] = &pairs[i];
        cells += static_cast<int64_t>(pairs[i].m) * pairs[i].n;
    }
    // Waking a pool thread costs microseconds: give each at least ~100 us of
    // work, so small regions (GATK's per-call case) do not pay for idle cores.
    constexpr int64_t kCellsPerThread = 256 * 1024;
    threads = static_cast<int>(std::max<int64_t>(
        1, std::min<int64_t>(threads > 0 ? threads : available_cores(), cells / kCellsPerThread + 1)));
    // Equal shapes side by side: lanes of a group then do equal work.
    std::sort(order.begin(), order.end(),
              [](const Pair* a, const Pair* b) { return a->m != b->m ? a->m < b->m : a->n < b->n; });

    std::vector<const Pair*> redo;  // pairs for the double pass
    if (double_precision) {
        redo = order;
    } else {
        const float log10_ic = tables_float().log10_initial_constant;
        std::vector<char> underflow(pairs.size(), 0);
        run_groups<float>(order, kernel_choice().vector_bytes, threads, kernel_choice().f, kernel_choice().one_f,
                          [&](const Pair& p, float sum) {
                              if (sum < kMinAcceptedFloat) {
                                  underflow[&p - pairs.data()] = 1;
                              } else {
                                  // GKL subtracts in float, then widens: keep that rounding.
                                  out[p.out] = static_cast<double>(log10f(sum) - log10_ic);
                              }
                          });
        for (size_t i = 0; i < pairs.size(); ++i)
            if (underflow[i]) redo.push_back(&pairs[i]);
    }
    const double log10_icd = tables_double().log10_initial_constant;
    run_groups<double>(redo, kernel_choice().vector_bytes, threads, kernel_choice().d, kernel_choice().one_d,
                       [&](const Pair& p, double sum) { out[p.out] = std::log10(sum) - log10_icd; });

    if (stats) {
        stats->pairs = static_cast<int64_t>(pairs.size());
        stats->cells = cells;
        stats->double_pairs = static_cast<int64_t>(redo.size());
        stats->backend_used = PYPHMM_BACKEND_CPU;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
