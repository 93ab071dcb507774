// The public C ABI (pyphmm.h): argument checks, backend choice, GPU->CPU
// fallback, statistics. Kernels live in native/cpu and native/cuda and never
// see unchecked input; this file owns every policy decision.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/thread_pool.h"
#include "cpu/pairhmm_cpu.h"
#include "cpu/sw_cpu.h"
#include "cuda/cuda_backend.h"
#include "dispatch.h"
#include "pyphmm.h"

#ifndef PYPHMM_VERSION
#define PYPHMM_VERSION "0.0.0"
#endif

namespace pyphmm {

namespace {

// Smith-Waterman batches with fewer pairs than this stay on the CPU under
// AUTO whatever their cell count: one block per pair needs many pairs.
constexpr int64_t kSwGpuMinPairs = 256;

}  // namespace

int64_t env_int(const char* name, int64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    if (*end != '\0' || x < 0) {
        std::fprintf(stderr, "pyphmm: warning: ignoring %s=%s (not a non-negative integer)\n", name, v);
        return fallback;
    }
    return x;
}

namespace {

// PYPHMM_BACKEND=cpu|cuda|auto, read once; anything else is reported once.
int env_backend() {
    static const int backend = [] {
        const char* v = std::getenv("PYPHMM_BACKEND");
        if (!v || !*v || !std::strcmp(v, "auto")) return PYPHMM_BACKEND_AUTO;
        if (!std::strcmp(v, "cpu")) return PYPHMM_BACKEND_CPU;
        if (!std::strcmp(v, "cuda")) return PYPHMM_BACKEND_CUDA;
        std::fprintf(stderr, "pyphmm: warning: ignoring PYPHMM_BACKEND=%s (use cpu, cuda or auto)\n", v);
        return PYPHMM_BACKEND_AUTO;
    }();
    return backend;
}

void fill_stats(pyphmm_stats* stats) {
    if (stats) std::memset(stats, 0, sizeof(*stats));
}

int check_options(const pyphmm_options* o, pyphmm_error* err) {
    if (!o) return PYPHMM_OK;
    if (o->backend < PYPHMM_BACKEND_AUTO || o->backend > PYPHMM_BACKEND_CUDA)
        return set_error(err, PYPHMM_E_INVALID, "unknown backend code %d", o->backend);
    return PYPHMM_OK;
}

int check_region(const pyphmm_region& g, int64_t k, int64_t* cells, pyphmm_error* err) {
    if (g.num_reads < 0 || g.num_haps < 0)
        return set_error(err, PYPHMM_E_INVALID, "region %lld: negative count (%d reads, %d haplotypes)",
                         (long long)k, g.num_reads, g.num_haps);
    if (g.num_reads > 0 && (!g.read_offsets || !g.read_bases || !g.read_quals || !g.read_ins ||
                            !g.read_dels || !g.read_gcp))
        return set_error(err, PYPHMM_E_INVALID, "region %lld: NULL read buffer", (long long)k);
    if (g.num_haps > 0 && (!g.hap_offsets || !g.hap_bases))
        return set_error(err, PYPHMM_E_INVALID, "region %lld: NULL haplotype buffer", (long long)k);
    int64_t read_total = 0, hap_total = 0;
    for (int32_t r = 0; r < g.num_reads; ++r) {
        int64_t len = g.read_offsets[r + 1] - g.read_offsets[r];
        if (g.read_offsets[r] < 0 || len <= 0 || len > INT32_MAX)
            return set_error(err, PYPHMM_E_INVALID, "region %lld, read %d: %s", (long long)k, r,
                             len == 0 ? "empty read" : "invalid read offsets");
        read_total += len;
    }
    for (int32_t h = 0; h < g.num_haps; ++h) {
        int64_t len = g.hap_offsets[h + 1] - g.hap_offsets[h];
        if (g.hap_offsets[h] < 0 || len <= 0 || len > INT32_MAX)
            return set_error(err, PYPHMM_E_INVALID, "region %lld, haplotype %d: %s", (long long)k, h,
                             len == 0 ? "empty haplotype" : "invalid haplotype offsets");
        hap_total += len;
    }
    *cells += read_total * hap_total;
    return PYPHMM_OK;
}

// One stderr line per process for each distinct reason CUDA is not used.
void warn_once(std::atomic<bool>& flag, const char* what) {
    if (!flag.exchange(true)) std::fprintf(stderr, "pyphmm: %s\n", what);
}

}  // namespace

int requested_backend(const pyphmm_options* o) {
    int asked = o ? o->backend : PYPHMM_BACKEND_AUTO;
    return asked == PYPHMM_BACKEND_AUTO ? env_backend() : asked;
}

int resolve_backend(const pyphmm_options* o, int64_t cells, int64_t min_cells, bool gpu_ok, pyphmm_error* err) {
    int asked = requested_backend(o);
    if (asked == PYPHMM_BACKEND_CPU) return PYPHMM_BACKEND_CPU;  // (before the probe: it starts the driver)
    const CudaProbe& cuda = cuda_probe();
    if (asked == PYPHMM_BACKEND_CUDA) {
        if (!cuda.usable)
            return -set_error(err, PYPHMM_E_UNAVAILABLE, "CUDA backend requested but unavailable: %s",
                              cuda.status);
        return PYPHMM_BACKEND_CUDA;
    }
    if (!gpu_ok) {
        static std::atomic<bool> said{false};
        if (cuda.compiled) {
            std::string line = std::string("CUDA unavailable (") + cuda.status + "), using the CPU backend";
            warn_once(said, line.c_str());
        }
        return PYPHMM_BACKEND_CPU;
    }
    return cells >= min_cells ? PYPHMM_BACKEND_CUDA : PYPHMM_BACKEND_CPU;
}

namespace {

// PYPHMM_TEST_FAKE_GPU: 0 unset, 1 a CPU stand-in for the GPU, 2 the same
// failing every second call (see dispatch.h).
int fake_gpu() {
    static const int v = [] {
        const char* e = std::getenv("PYPHMM_TEST_FAKE_GPU");
        if (!e || !*e || !std::strcmp(e, "0")) return 0;
        return std::strcmp(e, "fail") ? 1 : 2;
    }();
    return v;
}

}  // namespace

bool gpu_usable() { return fake_gpu() || cuda_probe().usable; }
bool gpu_is_fake() { return fake_gpu() != 0; }

int gpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, bool dbl, pyphmm_stats* stats,
                pyphmm_error* err) {
    if (!fake_gpu()) return cuda_pairhmm(regions, num_regions, out, dbl, stats, err);
    static std::atomic<int64_t> calls{0};
    if (fake_gpu() == 2 && calls.fetch_add(1) % 2 == 1)
        return set_error(err, PYPHMM_E_INTERNAL, "injected failure (PYPHMM_TEST_FAKE_GPU=fail)");
    int rc = cpu_pairhmm(regions, num_regions, out, 1, dbl, stats);
    if (stats) stats->backend_used = PYPHMM_BACKEND_CUDA;
    return rc;
}

bool debug_dispatch() {
    static const bool v = env_int("PYPHMM_DEBUG_DISPATCH", 0) != 0;
    return v;
}

int default_threads(const pyphmm_options* o) {
    return (o && o->threads > 0) ? o->threads : available_cores();
}

}  // namespace pyphmm

using namespace pyphmm;

namespace {

// Runs the GPU path; if it fails, says so on stderr and recomputes the call
// on the CPU (a GPU problem must never lose a GATK run).
template <typename Gpu, typename Cpu>
int gpu_else_cpu(const char* what, pyphmm_stats* stats, Gpu gpu, Cpu cpu) {
    pyphmm_error gpu_error;
    clear_error(&gpu_error);
    if (gpu(&gpu_error) == PYPHMM_OK) return PYPHMM_OK;
    std::fprintf(stderr, "pyphmm: warning: GPU %s failed (%s); computing this call on the CPU\n", what,
                 gpu_error.message);
    int rc = cpu();
    if (stats) stats->fell_back = 1;
    return rc;
}

// Entry-point body wrapper: no C++ exception crosses the C ABI.
template <typename Body>
int guarded(pyphmm_error* error, Body body) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return set_error(error, PYPHMM_E_NOMEM, "out of host memory");
    } catch (const std::exception& e) {
        return set_error(error, PYPHMM_E_INTERNAL, "internal error: %s", e.what());
    } catch (...) {
        return set_error(error, PYPHMM_E_INTERNAL, "internal error");
    }
}

}  // namespace

namespace {

// Records on which side a call that did not share its regions ran.
void count_sides(pyphmm_stats* st, int64_t regions, int64_t cells) {
    bool gpu = st->backend_used == PYPHMM_BACKEND_CUDA;
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
    // Only AUTO with a GPU needs the threshold (the first such call calibrates it).
    // A CPU call never probes the GPU (starting the CUDA driver takes ~0.2 s).
    const int asked = requested_backend(options);
    const bool gpu_ok = asked != PYPHMM_BACKEND_CPU && gpu_usable();
    const int64_t min_cells = asked == PYPHMM_BACKEND_AUTO && gpu_ok ? gpu_min_cells(threads, nullptr) : 0;
    int backend = resolve_backend(options, cells, min_cells, gpu_ok, error);
    if (backend < 0) return -backend;
    int rc;
    if (backend == PYPHMM_BACKEND_CUDA && hybrid_wanted(options, n)) {
        rc = hybrid_pairhmm(regions, n, region_cells.data(), out, options, st);
    } else {
        auto cpu = [&] { return cpu_pairhmm(regions, n, out, threads, dbl, st); };
        rc = backend != PYPHMM_BACKEND_CUDA
                 ? cpu()
                 : gpu_else_cpu("PairHMM", st,
                                [&](pyphmm_error* e) { return gpu_pairhmm(regions, n, out, dbl, st, e); }, cpu);
        count_sides(st, n, cells);
    }
    if (debug_dispatch()) print_dispatch(*st, n, cells, min_cells);
    return rc;
}

}  // namespace

extern "C" int pyphmm_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out,
                              const pyphmm_options* options, pyphmm_stats* stats,
                              pyphmm_error* error) {
    clear_error(error);
    fill_stats(stats);
    return guarded(error, [&]() -> int {
        if (int rc = check_options(options, error)) return rc;
        if (num_regions < 0)
            return set_error(error, PYPHMM_E_INVALID, "negative region count %lld", (long long)num_regions);
        if (num_regions > 0 && !regions)
            return set_error(error, PYPHMM_E_INVALID, "regions is NULL");
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
        fill_stats(st);
        int rc = pairhmm_call(regions, num_regions, region_cells, cells, out, options, st, error);
        st->pairs = results;
        st->cells = cells;
        return rc;
    });
}

extern "C" int pyphmm_sw_align(const pyphmm_sw_batch* batch, char* cigars, const int64_t* cigar_offsets,
                               int32_t* alignment_offsets, const pyphmm_options* options,
                               pyphmm_stats* stats, pyphmm_error* error) {
    clear_error(error);
    fill_stats(stats);
    return guarded(error, [&]() -> int {
        if (int rc = check_options(options, error)) return rc;
        if (int rc = check_sw_batch(batch, cigars, cigar_offsets, alignment_offsets, error)) return rc;
        if (batch->num_pairs == 0) return PYPHMM_OK;
        int64_t cells = 0;
        for (int64_t i = 0; i < batch->num_pairs; ++i)
            cells += (batch->ref_offsets[i + 1] - batch->ref_offsets[i]) *
                     (batch->alt_offsets[i + 1] - batch->alt_offsets[i]);
        // A single pair never goes to the GPU under AUTO (HaplotypeCaller's
        // one-pair calls are latency-bound); large batches do.
        int backend = (batch->num_pairs < kSwGpuMinPairs && (!options || options->backend == PYPHMM_BACKEND_AUTO))
                          ? PYPHMM_BACKEND_CPU
                          : resolve_backend(options, cells, fixed_gpu_min_cells(), cuda_probe().usable, error);
        if (backend < 0) return -backend;
        auto cpu = [&] {
            return cpu_sw_align(*batch, cigars, cigar_offsets, alignment_offsets, default_threads(options),
                                stats, error);
        };
        if (backend != PYPHMM_BACKEND_CUDA) return cpu();
        return gpu_else_cpu("Smith-Waterman", stats, [&](pyphmm_error* e) {
            return cuda_sw_align(*batch, cigars, cigar_offsets, alignment_offsets, stats, e);
        }, cpu);
    });
}

extern "C" int pyphmm_sw_align_one(const uint8_t* ref, int64_t ref_len, const uint8_t* alt, int64_t alt_len,
                                   const pyphmm_sw_params* params, int32_t strategy, char* cigar,
                                   int64_t cigar_capacity, int32_t* alignment_offset, pyphmm_error* error) {
    clear_error(error);
    return guarded(error, [&]() -> int {
        // Range-check before narrowing to the batch's int8 code.
        if (strategy < PYPHMM_SW_SOFTCLIP || strategy > PYPHMM_SW_IGNORE)
            return set_error(error, PYPHMM_E_INVALID,
                             "unknown overhang strategy code %d (SOFTCLIP=9, INDEL=10, LEADING_INDEL=11, IGNORE=12)",
                             strategy);
        if (!params) return set_error(error, PYPHMM_E_INVALID, "NULL params");
        const int64_t ref_off[2] = {0, ref_len}, alt_off[2] = {0, alt_len}, cigar_off[2] = {0, cigar_capacity};
        const int8_t strat = static_cast<int8_t>(strategy);
        const pyphmm_sw_batch batch = {1, ref, ref_off, alt, alt_off, params, &strat, 0};
        if (int rc = check_sw_batch(&batch, cigar, cigar_off, alignment_offset, error)) return rc;
        *alignment_offset = sw_align_one(ref, static_cast<int>(ref_len), alt, static_cast<int>(alt_len), *params,
                                         strategy, cigar);
        return PYPHMM_OK;
    });
}

extern "C" void pyphmm_get_info(pyphmm_info* info) { pyphmm_get_info_for(nullptr, info); }

extern "C" void pyphmm_get_info_for(const pyphmm_options* options, pyphmm_info* info) {
    if (!info) return;
    std::memset(info, 0, sizeof(*info));
    std::snprintf(info->version, sizeof(info->version), "%s", PYPHMM_VERSION);
    info->abi_version = PYPHMM_ABI_VERSION;
    const CudaProbe& cuda = cuda_probe();
    info->cuda_compiled = cuda.compiled;
    info->cuda_usable = cuda.usable;
    info->device_count = cuda.device_count;
    info->device = cuda.usable ? cuda.device : -1;
    std::snprintf(info->device_name, sizeof(info->device_name), "%s", cuda.name);
    std::snprintf(info->cuda_status, sizeof(info->cuda_status), "%s", cuda.status);
    info->cpu_threads = default_threads(options);
#ifdef PYPHMM_WITH_JNI
    info->jni_compiled = 1;
#endif
    std::snprintf(info->cpu_kernel, sizeof(info->cpu_kernel), "%s", cpu_pairhmm_kernel_name());
    int source = PYPHMM_THRESHOLD_DEFAULT;
    info->gpu_min_cells = gpu_min_cells(info->cpu_threads, &source);
    info->gpu_min_cells_source = source;
    if (source == PYPHMM_THRESHOLD_CALIBRATED) {
        const Calibration& c = calibration();
        info->calib_gpu_call_us = c.gpu_call_s * 1e6;
        info->calib_gpu_gcups = c.gpu_rate / 1e9;
        info->calib_cpu_gcups = c.cpu_rate / 1e9;
    }
    info->hybrid = hybrid_wanted(nullptr, 2);
    info->hybrid_gpu_threads = hybrid_gpu_threads();
    info->backend = requested_backend(options);
}
