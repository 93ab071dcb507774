// The Smith-Waterman entry points: pyphmm_sw_align (batches, CPU or GPU),
// pyphmm_sw_align_one (one pair on the calling thread) and the CIGAR
// compaction, after validating the batch and its output buffers so the
// kernels never see unchecked input. Every rejection names the pair.
//
// Accepted input (anything else is PYPHMM_E_INVALID):
// - num_pairs >= 0; buffers non-NULL when num_pairs > 0;
// - ref_offsets / alt_offsets: num_pairs + 1 non-negative, non-decreasing
//   entries; every ref and alt 1..PYPHMM_SW_MAX_LENGTH bytes;
// - strategies: PYPHMM_SW_SOFTCLIP, _INDEL, _LEADING_INDEL or _IGNORE;
// - params: gap_open <= 0, gap_extend <= 0 (GATK's penalties are negative),
//   and max(|match|, |mismatch|, |gap_open|, |gap_extend|) *
//   (len(ref) + len(alt) + 2) <= 2^29, which keeps every intermediate score
//   within int32 (e.g. NEW_SW_PARAMETERS' 260 allows 32,767 bp on both sides);
// - cigar_offsets: num_pairs + 1 non-decreasing entries; pair i may use
//   [cigar_offsets[i], cigar_offsets[i+1]), which must hold at least
//   2 * (len(ref) + len(alt)) + 1 bytes.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/errors.h"
#include "cpu/sw_cpu.h"
#include "dispatch/calibrate.h"
#include "dispatch/gpu.h"
#include "dispatch/policy.h"

namespace pyphmm {

namespace {

constexpr int64_t kMaxParamTimesLength = int64_t(1) << 29;

// Batches with fewer pairs than this stay on the CPU under AUTO whatever
// their cell count: one warp per pair needs many pairs.
constexpr int64_t kSwGpuMinPairs = 256;

const char* strategy_ok(int s) {
    return (s == PYPHMM_SW_SOFTCLIP || s == PYPHMM_SW_INDEL || s == PYPHMM_SW_LEADING_INDEL || s == PYPHMM_SW_IGNORE)
               ? nullptr
               : "unknown";
}

int64_t max_abs_param(const pyphmm_sw_params& p) {
    int64_t v = std::llabs(static_cast<int64_t>(p.match));
    v = std::max<int64_t>(v, std::llabs(static_cast<int64_t>(p.mismatch)));
    v = std::max<int64_t>(v, std::llabs(static_cast<int64_t>(p.gap_open)));
    v = std::max<int64_t>(v, std::llabs(static_cast<int64_t>(p.gap_extend)));
    return v;
}

int check_sw_batch(const pyphmm_sw_batch* batch, const char* cigars, const int64_t* cigar_offsets,
                   const int32_t* alignment_offsets, pyphmm_error* err) {
    if (!batch) return set_error(err, PYPHMM_E_INVALID, "batch is NULL");
    const int64_t n = batch->num_pairs;
    if (n < 0) return set_error(err, PYPHMM_E_INVALID, "negative pair count %lld", (long long)n);
    if (n == 0) return PYPHMM_OK;
    if (!batch->ref || !batch->ref_offsets || !batch->alt || !batch->alt_offsets)
        return set_error(err, PYPHMM_E_INVALID, "NULL sequence buffer");
    if (!batch->params || !batch->strategies) return set_error(err, PYPHMM_E_INVALID, "NULL params or strategies");
    if (!cigars || !cigar_offsets || !alignment_offsets) return set_error(err, PYPHMM_E_INVALID, "NULL output buffer");
    if (batch->per_pair != 0 && batch->per_pair != 1)
        return set_error(err, PYPHMM_E_INVALID, "per_pair must be 0 or 1, not %d", batch->per_pair);
    if (batch->ref_offsets[0] < 0 || batch->alt_offsets[0] < 0 || cigar_offsets[0] < 0)
        return set_error(err, PYPHMM_E_INVALID, "negative first offset");
    const int64_t settings = batch->per_pair ? n : 1;
    for (int64_t k = 0; k < settings; ++k) {
        const pyphmm_sw_params& p = batch->params[k];
        if (strategy_ok(batch->strategies[k]))
            return set_error(err, PYPHMM_E_INVALID,
                             "pair %lld: unknown overhang strategy code %d (SOFTCLIP=9, INDEL=10, "
                             "LEADING_INDEL=11, IGNORE=12)",
                             (long long)k, batch->strategies[k]);
        if (p.gap_open > 0 || p.gap_extend > 0)
            return set_error(err, PYPHMM_E_INVALID, "pair %lld: gap penalties must be <= 0 (got open %d, extend %d)",
                             (long long)k, p.gap_open, p.gap_extend);
    }
    for (int64_t i = 0; i < n; ++i) {
        const int64_t lr = batch->ref_offsets[i + 1] - batch->ref_offsets[i];
        const int64_t la = batch->alt_offsets[i + 1] - batch->alt_offsets[i];
        if (lr <= 0 || la <= 0)
            return set_error(err, PYPHMM_E_INVALID, "pair %lld: %s", (long long)i,
                             (lr == 0 || la == 0) ? (lr == 0 ? "empty ref sequence" : "empty alt sequence")
                                                  : "decreasing sequence offsets");
        if (lr > PYPHMM_SW_MAX_LENGTH || la > PYPHMM_SW_MAX_LENGTH)
            return set_error(err, PYPHMM_E_INVALID, "pair %lld: %s is %lld bp; the longest accepted is %d bp",
                             (long long)i, lr > PYPHMM_SW_MAX_LENGTH ? "ref" : "alt",
                             (long long)(lr > PYPHMM_SW_MAX_LENGTH ? lr : la), PYPHMM_SW_MAX_LENGTH);
        const pyphmm_sw_params& p = batch->params[batch->per_pair ? i : 0];
        if (max_abs_param(p) * (lr + la + 2) > kMaxParamTimesLength)
            return set_error(err, PYPHMM_E_INVALID,
                             "pair %lld: scores could overflow int32: max |parameter| (%lld) * "
                             "(len(ref) + len(alt) + 2) (%lld) exceeds 2^29",
                             (long long)i, (long long)max_abs_param(p), (long long)(lr + la + 2));
        const int64_t cap = cigar_offsets[i + 1] - cigar_offsets[i];
        if (cap < 2 * (lr + la) + 1)
            return set_error(err, PYPHMM_E_INVALID,
                             "pair %lld: CIGAR buffer holds %lld bytes, needs 2*(len(ref)+len(alt))+1 = %lld",
                             (long long)i, (long long)cap, (long long)(2 * (lr + la) + 1));
    }
    return PYPHMM_OK;
}

}  // namespace

}  // namespace pyphmm

using namespace pyphmm;

extern "C" int pyphmm_sw_align(const pyphmm_sw_batch* batch, char* cigars, const int64_t* cigar_offsets,
                               int32_t* alignment_offsets, const pyphmm_options* options, pyphmm_stats* stats,
                               pyphmm_error* error) {
    clear_error(error);
    clear_stats(stats);
    return guarded(error, [&]() -> int {
        if (int rc = check_options(options, error)) return rc;
        if (int rc = check_sw_batch(batch, cigars, cigar_offsets, alignment_offsets, error)) return rc;
        if (batch->num_pairs == 0) return PYPHMM_OK;
        int64_t cells = 0;
        for (int64_t i = 0; i < batch->num_pairs; ++i)
            cells += (batch->ref_offsets[i + 1] - batch->ref_offsets[i]) *
                     (batch->alt_offsets[i + 1] - batch->alt_offsets[i]);
        // Small batches never go to the GPU under AUTO (HaplotypeCaller's
        // one-pair calls are latency-bound); large ones do.
        const int backend = batch->num_pairs < kSwGpuMinPairs && requested_backend(options) == PYPHMM_BACKEND_AUTO
                                ? PYPHMM_BACKEND_CPU
                                : resolve_backend(options, cells, fixed_gpu_min_cells(), error);
        if (backend < 0) return -backend;
        auto cpu = [&] {
            return cpu_sw_align(*batch, cigars, cigar_offsets, alignment_offsets, default_threads(options), stats,
                                error);
        };
        if (backend != PYPHMM_BACKEND_CUDA) return cpu();
        return gpu_else_cpu(
            "Smith-Waterman", stats, error,
            [&](pyphmm_error* e) {
                return gpu_sw_align(*batch, cigars, cigar_offsets, alignment_offsets, requested_device(options), stats,
                                    e);
            },
            cpu);
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
        *alignment_offset =
            sw_align_one(ref, static_cast<int>(ref_len), alt, static_cast<int>(alt_len), *params, strategy, cigar);
        return PYPHMM_OK;
    });
}

extern "C" int64_t pyphmm_sw_compact_cigars(char* cigars, const int64_t* cigar_offsets, int64_t num_pairs) {
    // Slot i starts at or after byte `used`, so each move goes left (or
    // nowhere) and never overwrites a CIGAR not yet moved.
    int64_t used = 0;
    for (int64_t i = 0; i < num_pairs; ++i) {
        const char* src = cigars + cigar_offsets[i];
        const size_t len = strnlen(src, static_cast<size_t>(cigar_offsets[i + 1] - cigar_offsets[i]));
        std::memmove(cigars + used, src, len);
        used += static_cast<int64_t>(len);
        cigars[used++] = '\0';
    }
    return used;
}
