// pyphmm_pairhmm: argument checks, the backend of each call (per-call
// threshold, whole-workload sharing, or one backend with the GPU->CPU
// fallback), statistics. Kernels never see unchecked input.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "cpu/pairhmm_cpu.h"
#include "dispatch/calibrate.h"
#include "dispatch/gpu.h"
#include "dispatch/hybrid.h"
#include "dispatch/policy.h"
#include "pyphmm.h"

namespace pyphmm {

namespace {

// The sequences of region k delimited by offsets[0..count]: each starts at
// or after 0 and holds 1..INT32_MAX bases; *total receives their sum.
int check_lengths(const int64_t* offsets, int32_t count, const char* what, int64_t k, int64_t* total,
                  pyphmm_error* err) {
    for (int32_t i = 0; i < count; ++i) {
        const int64_t len = offsets[i + 1] - offsets[i];
        if (offsets[i] < 0 || len <= 0 || len > INT32_MAX)
            return set_error(err, PYPHMM_E_INVALID, "region %lld, %s %d: %s %s%s", (long long)k, what, i,
                             len == 0 ? "empty" : "invalid", what, len == 0 ? "" : " offsets");
        *total += len;
    }
    return PYPHMM_OK;
}

int check_region(const pyphmm_region& g, int64_t k, int64_t* cells, pyphmm_error* err) {
    if (g.num_reads < 0 || g.num_haps < 0)
        return set_error(err, PYPHMM_E_INVALID, "region %lld: negative count (%d reads, %d haplotypes)", (long long)k,
                         g.num_reads, g.num_haps);
    if (g.num_reads > 0 &&
        (!g.read_offsets || !g.read_bases || !g.read_quals || !g.read_ins || !g.read_dels || !g.read_gcp))
        return set_error(err, PYPHMM_E_INVALID, "region %lld: NULL read buffer", (long long)k);
    if (g.num_haps > 0 && (!g.hap_offsets || !g.hap_bases))
        return set_error(err, PYPHMM_E_INVALID, "region %lld: NULL haplotype buffer", (long long)k);
    int64_t read_total = 0, hap_total = 0;
    if (int rc = check_lengths(g.read_offsets, g.num_reads, "read", k, &read_total, err)) return rc;
    if (int rc = check_lengths(g.hap_offsets, g.num_haps, "haplotype", k, &hap_total, err)) return rc;
    *cells += read_total * hap_total;
    return PYPHMM_OK;
}

// Records on which side a call that did not share its regions ran.
void count_sides(pyphmm_stats* st, int64_t regions, int64_t cells) {
    const bool gpu = st->backend_used == PYPHMM_BACKEND_CUDA;
    (gpu ? st->gpu_regions : st->cpu_regions) = regions;
    (gpu ? st->gpu_cells : st->cpu_cells) = cells;
}

void print_dispatch(const pyphmm_stats& st, int64_t regions, int64_t cells, int64_t min_cells) {
    std::fprintf(stderr,
                 "pyphmm: dispatch: %lld regions, %lld cells (threshold %lld): GPU %lld regions / %lld cells, "
                 "CPU %lld regions / %lld cells%s%s; %.3f ms\n",
                 (long long)regions, (long long)cells, (long long)min_cells, (long long)st.gpu_regions,
                 (long long)st.gpu_cells, (long long)st.cpu_regions, (long long)st.cpu_cells,
                 st.hybrid ? "; hybrid" : "", st.fell_back ? "; GPU failed" : "", st.seconds * 1e3);
}

// A validated PairHMM call: per-call threshold, whole-workload sharing, or
// one backend with the GPU->CPU fallback.
int pairhmm_call(const pyphmm_region* regions, int64_t n, const std::vector<int64_t>& region_cells, int64_t cells,
                 double* out, const pyphmm_options* options, pyphmm_stats* st, pyphmm_error* error) {
    const bool dbl = options && options->double_precision;
    const int threads = default_threads(options);
    // Only AUTO with a GPU needs the threshold (the first such call
    // calibrates it); a CPU call never probes the GPU.
    const int asked = requested_backend(options);
    const int64_t min_cells = asked == PYPHMM_BACKEND_AUTO && gpu_usable() ? gpu_min_cells(threads, nullptr) : 0;
    const int backend = resolve_backend(options, cells, min_cells, error);
    if (backend < 0) return -backend;
    int rc;
    if (backend == PYPHMM_BACKEND_CUDA && hybrid_wanted(options, n)) {
        rc = hybrid_pairhmm(regions, n, region_cells.data(), out, options, st);
    } else {
        auto cpu = [&] { return cpu_pairhmm(regions, n, out, threads, dbl, st); };
        auto gpu = [&](pyphmm_error* e) {
            GpuCallOptions call;
            call.double_precision = dbl;
            call.timing = timing_wanted(options);
            return gpu_pairhmm(regions, n, out, requested_device(options), call, st, e);
        };
        rc = backend != PYPHMM_BACKEND_CUDA ? cpu() : gpu_else_cpu("PairHMM", st, error, gpu, cpu);
        count_sides(st, n, cells);
    }
    if (config::debug()) print_dispatch(*st, n, cells, min_cells);
    return rc;
}

}  // namespace

}  // namespace pyphmm

using namespace pyphmm;

extern "C" int pyphmm_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out,
                              const pyphmm_options* options, pyphmm_stats* stats, pyphmm_error* error) {
    clear_error(error);
    clear_stats(stats);
    return guarded(error, [&]() -> int {
        if (int rc = check_options(options, error)) return rc;
        if (num_regions < 0)
            return set_error(error, PYPHMM_E_INVALID, "negative region count %lld", (long long)num_regions);
        if (num_regions > 0 && !regions) return set_error(error, PYPHMM_E_INVALID, "regions is NULL");
        int64_t cells = 0, results = 0;
        std::vector<int64_t> region_cells(num_regions, 0);
        for (int64_t k = 0; k < num_regions; ++k) {
            if (int rc = check_region(regions[k], k, &region_cells[k], error)) return rc;
            cells += region_cells[k];
            results += static_cast<int64_t>(regions[k].num_reads) * regions[k].num_haps;
        }
        if (results > 0 && !out) return set_error(error, PYPHMM_E_INVALID, "output buffer is NULL");
        if (results == 0) return PYPHMM_OK;

        pyphmm_stats local;
        pyphmm_stats* st = stats ? stats : &local;
        clear_stats(st);
        const int rc = pairhmm_call(regions, num_regions, region_cells, cells, out, options, st, error);
        st->pairs = results;
        st->cells = cells;
        return rc;
    });
}
