// pyphmm_pdhmm: argument checks with GKL's rules (what GKL refuses is
// PYPHMM_E_INVALID here, naming region, read and position), the backend of
// the call (per-call threshold, GPU->CPU fallback), GKL's check of the
// results, statistics. Kernels never see unchecked input: every layout is
// checked first, the bytes before the CPU backend starts, and on the GPU
// path chunk by chunk before each chunk is launched (packing screens the
// bytes; a chunk with a byte GKL may refuse gets the full checks). An
// error names the first region with a bad layout, else the first with
// refused bytes.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "common/pd_tables.h"
#include "common/thread_pool.h"
#include "cpu/pdhmm_cpu.h"
#include "dispatch/calibrate.h"
#include "dispatch/gpu.h"
#include "dispatch/policy.h"
#include "pyphmm.h"

namespace pyphmm {

namespace {

// Sequences delimited by offsets[0..count]: each starts at or after 0 and
// holds 0..INT32_MAX bytes (empty ones are allowed: GKL gives -inf).
int check_offsets(const int64_t* offsets, int32_t count, const char* what, int64_t k, pyphmm_error* err) {
    for (int32_t i = 0; i < count; ++i) {
        const int64_t len = offsets[i + 1] - offsets[i];
        if (offsets[i] < 0 || len < 0 || len > INT32_MAX)
            return set_error(err, PYPHMM_E_INVALID, "region %lld, %s %d: invalid offsets (%lld to %lld)", (long long)k,
                             what, i, (long long)offsets[i], (long long)offsets[i + 1]);
    }
    return PYPHMM_OK;
}

// The largest byte of bytes [a, b) (a loop the compiler vectorizes).
uint8_t max_byte(const uint8_t* p, int64_t a, int64_t b) {
    uint8_t m = 0;
    for (int64_t i = a; i < b; ++i) m = p[i] > m ? p[i] : m;
    return m;
}

// GKL refuses gap qualities that are negative as Java bytes (> 127 here),
// and has no table entry for a base quality of 255 (Java byte -1). The
// region's reads are one range of the read arrays (offsets only grow): a
// maximum per array, and the position only where one is too large.
int check_quals(const pyphmm_pd_region& g, int64_t k, pyphmm_error* err) {
    const int64_t lo = g.read_offsets[0], hi = g.read_offsets[g.num_reads];
    if (max_byte(g.read_quals, lo, hi) <= kPdMaxQual && max_byte(g.read_ins, lo, hi) <= kPdMaxGapQual &&
        max_byte(g.read_dels, lo, hi) <= kPdMaxGapQual && max_byte(g.read_gcp, lo, hi) <= kPdMaxGapQual)
        return PYPHMM_OK;
    for (int32_t r = 0; r < g.num_reads; ++r) {
        const int64_t a = g.read_offsets[r], b = g.read_offsets[r + 1];
        for (int64_t i = a; i < b; ++i) {
            const struct {
                const char* name;
                int value, max;
            } fields[] = {{"base quality", g.read_quals[i], kPdMaxQual},
                          {"insertion quality", g.read_ins[i], kPdMaxGapQual},
                          {"deletion quality", g.read_dels[i], kPdMaxGapQual},
                          {"gap continuation penalty", g.read_gcp[i], kPdMaxGapQual}};
            for (const auto& f : fields)
                if (f.value > f.max)
                    return set_error(err, PYPHMM_E_INVALID,
                                     "region %lld, read %d, position %lld: %s %d is above %d (GKL refuses it)",
                                     (long long)k, r, (long long)(i - a), f.name, f.value, f.max);
        }
    }
    return PYPHMM_OK;
}

inline bool snp_base(uint8_t b) {
    switch (b) {
        case 'A':
        case 'C':
        case 'G':
        case 'T':
        case 'a':
        case 'c':
        case 'g':
        case 't':
        case 'N': return true;
        default: return false;
    }
}

// The bytes at a haplotype's SNP positions other than N: a read byte x
// that is not A, C, G, T (either case) or N meets one of them unless every
// one equals x (equal bytes match before the SNP test).
struct SnpBytes {
    int distinct = 0;  // 0, 1 or 2 (two or more)
    uint8_t only = 0;
    bool conflicts(uint8_t x) const { return distinct > 1 || (distinct == 1 && only != x); }
};

SnpBytes snp_bytes(const pyphmm_pd_region& g, int32_t h) {
    SnpBytes s;
    for (int64_t j = g.hap_offsets[h]; j < g.hap_offsets[h + 1]; ++j) {
        const uint8_t y = g.hap_bases[j];
        if (!(g.hap_pd[j] & kPdSnp) || y == 'N' || (s.distinct == 1 && y == s.only)) continue;
        if (s.distinct++ == 0) s.only = y;
        if (s.distinct > 1) break;
    }
    return s;
}

// Whether bytes [a, b) are all A, C, G, T (either case) or N. A loop the
// compiler vectorizes: x | 0x20 folds the case of a letter only, and each
// test is a byte mask (written as tests of one byte each, GCC turns the
// set into a bit test, which it does not vectorize).
bool all_snp_bases(const uint8_t* p, int64_t a, int64_t b) {
    auto mask = [](bool c) { return static_cast<uint8_t>(-static_cast<uint8_t>(c)); };
    uint8_t bad = 0;
    for (int64_t i = a; i < b; ++i) {
        const uint8_t x = p[i], l = x | 0x20;
        bad |=
            static_cast<uint8_t>(~(mask(l == 'a') | mask(l == 'c') | mask(l == 'g') | mask(l == 't') | mask(x == 'N')));
    }
    return bad == 0;
}

// GKL (and GATK's "Found unexpected base in alt alleles") refuse a read
// base other than A, C, G, T or N at a SNP position it does not equal.
int check_snp_bases(const pyphmm_pd_region& g, int64_t k, pyphmm_error* err) {
    if (all_snp_bases(g.read_bases, g.read_offsets[0], g.read_offsets[g.num_reads])) return PYPHMM_OK;
    std::vector<SnpBytes> haps(g.num_haps);
    for (int32_t h = 0; h < g.num_haps; ++h) haps[h] = snp_bytes(g, h);
    for (int32_t r = 0; r < g.num_reads; ++r) {
        const int64_t a = g.read_offsets[r], b = g.read_offsets[r + 1];
        for (int64_t i = a; i < b; ++i) {
            const uint8_t x = g.read_bases[i];
            if (snp_base(x)) continue;
            for (int32_t h = 0; h < g.num_haps; ++h) {
                if (!haps[h].conflicts(x)) continue;
                int64_t j = g.hap_offsets[h];
                while (!(g.hap_pd[j] & kPdSnp) || g.hap_bases[j] == 'N' || g.hap_bases[j] == x) ++j;
                return set_error(err, PYPHMM_E_INVALID,
                                 "region %lld, read %d, position %lld: base 0x%02x is not A, C, G, T or N but meets "
                                 "the SNP position %lld of haplotype %d (GKL refuses it)",
                                 (long long)k, r, (long long)(i - a), x, (long long)(j - g.hap_offsets[h]), h);
            }
        }
    }
    return PYPHMM_OK;
}

// What a region's shape must be: reads and haplotypes, buffers, offsets.
// Adds its cells.
int check_layout(const pyphmm_pd_region& g, int64_t k, int64_t* cells, pyphmm_error* err) {
    if (g.num_reads <= 0 || g.num_haps <= 0)
        return set_error(err, PYPHMM_E_INVALID, "region %lld: %d reads and %d haplotypes (GKL needs at least one each)",
                         (long long)k, g.num_reads, g.num_haps);
    if (!g.read_offsets || !g.read_bases || !g.read_quals || !g.read_ins || !g.read_dels || !g.read_gcp)
        return set_error(err, PYPHMM_E_INVALID, "region %lld: NULL read buffer", (long long)k);
    if (!g.hap_offsets || !g.hap_bases || !g.hap_pd)
        return set_error(err, PYPHMM_E_INVALID, "region %lld: NULL haplotype buffer", (long long)k);
    if (int rc = check_offsets(g.read_offsets, g.num_reads, "read", k, err)) return rc;
    if (int rc = check_offsets(g.hap_offsets, g.num_haps, "haplotype", k, err)) return rc;
    int64_t read_total = 0, hap_total = 0;
    for (int32_t r = 0; r < g.num_reads; ++r) read_total += g.read_offsets[r + 1] - g.read_offsets[r];
    for (int32_t h = 0; h < g.num_haps; ++h) hap_total += g.hap_offsets[h + 1] - g.hap_offsets[h];
    *cells += read_total * hap_total;
    return PYPHMM_OK;
}

// What GKL refuses in a region's bytes (every read byte is read).
int check_bytes(const pyphmm_pd_region& g, int64_t k, pyphmm_error* err) {
    if (int rc = check_quals(g, k, err)) return rc;
    return check_snp_bases(g, k, err);
}

// Every region's layout, with the call's cells and results: offsets only,
// a loop over reads and haplotypes.
int check_layouts(const pyphmm_pd_region* regions, int64_t n, int64_t* cells, int64_t* results, pyphmm_error* err) {
    *cells = *results = 0;
    for (int64_t k = 0; k < n; ++k) {
        if (int rc = check_layout(regions[k], k, cells, err)) return rc;
        *results += static_cast<int64_t>(regions[k].num_reads) * regions[k].num_haps;
    }
    return PYPHMM_OK;
}

// The bytes of regions [first, end) (layouts checked). Many regions are
// checked in parallel; the error is the first failing region's, as the
// serial check reports it.
int check_regions_bytes(const pyphmm_pd_region* regions, int64_t first, int64_t end, int threads, pyphmm_error* err) {
    constexpr int64_t kParallelRegions = 16;
    if (end - first < kParallelRegions || threads == 1) {
        for (int64_t k = first; k < end; ++k)
            if (int rc = check_bytes(regions[k], k, err)) return rc;
        return PYPHMM_OK;
    }
    std::vector<char> bad(end - first, 0);
    parallel_for(end - first, threads,
                 [&](int64_t i) { bad[i] = check_bytes(regions[first + i], first + i, nullptr) != PYPHMM_OK; });
    for (int64_t i = 0; i < end - first; ++i)
        if (bad[i]) return check_bytes(regions[first + i], first + i, err);
    return PYPHMM_OK;
}

// GKL's check of every result (the CPU backend makes it itself): a log10
// probability is <= 0, -inf included; anything else (NaN, > 0) is GKL's
// failure status. One pass over all results first (in parallel for many),
// the position only on a failure.
int check_results(const pyphmm_pd_region* regions, int64_t num_regions, const double* out, int64_t results, int threads,
                  pyphmm_error* err) {
    constexpr int64_t kBlock = int64_t(1) << 15;
    const int64_t blocks = (results + kBlock - 1) / kBlock;
    std::atomic<bool> bad{false};
    auto block = [&](int64_t b) {
        bool any = false;
        for (int64_t j = b * kBlock, e = std::min(results, j + kBlock); j < e; ++j) any |= !(out[j] <= 0.0);
        if (any) bad = true;
    };
    if (blocks > 1 && threads != 1)
        parallel_for(blocks, threads, block);
    else
        for (int64_t b = 0; b < blocks; ++b) block(b);
    if (!bad) return PYPHMM_OK;
    int64_t i = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_pd_region& g = regions[k];
        for (int32_t r = 0; r < g.num_reads; ++r)
            for (int32_t h = 0; h < g.num_haps; ++h, ++i)
                if (!(out[i] <= 0.0))
                    return set_error(err, PYPHMM_E_INTERNAL,
                                     "region %lld, read %d, haplotype %d: log10 likelihood %g is not a probability "
                                     "(GKL reports this as a failure)",
                                     (long long)k, r, h, out[i]);
    }
    return PYPHMM_OK;
}

void print_dispatch(const pyphmm_stats& st, int64_t regions, int64_t cells, int64_t min_cells) {
    std::fprintf(stderr, "pyphmm: PDHMM dispatch: %lld regions, %lld cells (threshold %lld): %s%s; %.3f ms\n",
                 (long long)regions, (long long)cells, (long long)min_cells,
                 st.backend_used == PYPHMM_BACKEND_CUDA ? "GPU" : "CPU", st.fell_back ? " (GPU failed)" : "",
                 st.seconds * 1e3);
}

// A PDHMM call whose layouts are checked: under AUTO the GPU when one is
// usable and the call has at least the calibrated threshold's cells (at
// the call's thread count), else the CPU; a GPU failure recomputes the
// call on the CPU. The bytes are checked first, before the GPU is probed
// (refused input never starts a driver or waits for a GPU), except for a
// call that may go to a GPU this process already uses: the GPU path checks
// them chunk by chunk (the GPU starts on the first chunk while the host
// checks the rest), the CPU path before it starts.
int pdhmm_call(const pyphmm_pd_region* regions, int64_t n, int64_t cells, int64_t results, double* out,
               const pyphmm_options* options, pyphmm_stats* st, pyphmm_error* error) {
    const int threads = default_threads(options);
    const bool defer = requested_backend(options) != PYPHMM_BACKEND_CPU && gpu_in_use();
    if (!defer)
        if (int rc = check_regions_bytes(regions, 0, n, threads, error)) return rc;
    // Only AUTO with a GPU needs the threshold (the first such call
    // calibrates it); a CPU call never probes the GPU.
    const int asked = requested_backend(options);
    const int64_t min_cells = asked == PYPHMM_BACKEND_AUTO && gpu_usable() ? pd_gpu_min_cells(threads, nullptr) : 0;
    const int backend = resolve_backend(options, cells, min_cells, error);
    if (backend < 0) return -backend;
    auto check_bytes = [&](int64_t first, int64_t end, pyphmm_error* e) {
        return check_regions_bytes(regions, first, end, threads, e);
    };
    auto cpu = [&] {
        if (defer)
            if (int rc = check_bytes(0, n, error)) return rc;
        return cpu_pdhmm(regions, n, out, threads, st, error);
    };
    bool checked = false;
    auto gpu = [&](pyphmm_error* e) {
        GpuCallOptions call;
        call.timing = timing_wanted(options);
        if (defer) call.check_pd = check_bytes;
        return gpu_pdhmm(regions, n, out, requested_device(options), call, st, &checked, e);
    };
    int rc = backend != PYPHMM_BACKEND_CUDA ? cpu() : gpu_else_cpu("PDHMM", st, error, gpu, cpu);
    const bool on_gpu = st->backend_used == PYPHMM_BACKEND_CUDA;
    if (rc == PYPHMM_OK && on_gpu && !checked) rc = check_results(regions, n, out, results, threads, error);
    (on_gpu ? st->gpu_regions : st->cpu_regions) = n;
    (on_gpu ? st->gpu_cells : st->cpu_cells) = cells;
    if (config::debug()) print_dispatch(*st, n, cells, min_cells);
    return rc;
}

}  // namespace

}  // namespace pyphmm

using namespace pyphmm;

extern "C" int pyphmm_pdhmm(const pyphmm_pd_region* regions, int64_t num_regions, double* out,
                            const pyphmm_options* options, pyphmm_stats* stats, pyphmm_error* error) {
    clear_error(error);
    clear_stats(stats);
    return guarded(error, [&]() -> int {
        if (int rc = check_options(options, error)) return rc;
        if (num_regions < 0)
            return set_error(error, PYPHMM_E_INVALID, "negative region count %lld", (long long)num_regions);
        if (num_regions > 0 && !regions) return set_error(error, PYPHMM_E_INVALID, "regions is NULL");
        int64_t cells = 0, results = 0;
        if (int rc = check_layouts(regions, num_regions, &cells, &results, error)) return rc;
        if (results > 0 && !out) return set_error(error, PYPHMM_E_INVALID, "output buffer is NULL");
        if (results == 0) return PYPHMM_OK;
        pyphmm_stats local;
        pyphmm_stats* st = stats ? stats : &local;
        clear_stats(st);
        const int rc = pdhmm_call(regions, num_regions, cells, results, out, options, st, error);
        st->pairs = results;
        st->cells = cells;
        return rc;
    });
}
