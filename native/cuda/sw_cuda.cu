// GPU Smith-Waterman with GATK's semantics, for batches.
//
// Same rules as native/cpu/sw_cpu_fill.cc and sw_cpu.cc (see the comments there and
// docs/SMITH_WATERMAN.md); results must be identical to the CPU backend's.
//
// Stage 1 (sw_warp_fill_kernel): one warp per pair. Lane t keeps K
// consecutive alt columns in registers (H and Y of the row above, the
// column's best deletion gap: GATK's per-column state) and the ref rows
// stream through the lanes, lane t computing row s - t + 1 at step s; the
// row's best insertion gap (GATK's per-row state), H and the diagonal run
// length travel from lane to lane with __shfl_up_sync. No shared memory and
// no block barriers: a pair costs about (m + 31) steps of K cells per lane.
// Alts longer than 32 * 16 columns are swept in stripes, the boundary column
// going through a small global scratch. K is chosen per pair from len(alt)
// (choose_cols) and each K is one launch. Each cell writes a short2 into the
// backtrack matrix, laid out so that every warp store is coalesced
// (backtrack_index):
//   x = signed gap-run length (> 0 deletion of x, < 0 insertion of -x, 0 diagonal)
//   y = length of the run of consecutive diagonal moves ending at this cell.
// The scores of the last column and the last row are kept for the start.
//
// Stage 2 (sw_traceback_kernel): one thread per pair picks the start cell
// (GATK's last-column / last-row rules), follows the backtrack jumping whole
// gap runs and whole match runs, and writes the consolidated CIGAR and the
// offset. Only the CIGARs (short ones from a compact array) and offsets
// travel back to the host.
//
// Memory is planned in two levels (sw_plan.h): a chunk is consecutive pairs
// whose sequences, descriptors and results fit on the device together
// (usually the whole batch: a few KB per pair); its backtrack matrices are
// filled and traced back sub-chunk by sub-chunk within a work budget
// (kWorkBudget at most), launches queued back to back with no host work in
// between. The device buffers are kept for the next call, as the PairHMM's
// are.
//
// The exact-substring shortcut of SOFTCLIP / IGNORE is taken on the host
// before anything is sent to the GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "common/thread_pool.h"
#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "cuda/sw_cuda_kernels.cuh"
#include "cuda/sw_plan.h"

namespace pyphmm {

namespace {

using namespace sw_gpu;

// Backtrack matrices (and the other per-cell work buffers) of a sub-chunk
// take at most this much device memory, unless one pair needs more, so that
// the buffers kept between calls stay modest.
constexpr int64_t kWorkBudget = int64_t(4) << 30;
// Past this many long CIGARs in a chunk, the whole CIGAR buffer is copied
// back instead of one slot at a time.
constexpr int kLongCigarCopies = 64;

// Device buffers of one call, pooled between calls (allocating gigabytes
// each call would cost milliseconds).
struct Buffers {
    cuda::DeviceBuffer bt, edges, scratch, refs, alts, cigars, short_cigars, lens, descs, offsets;
    cudaError_t create() { return cudaSuccess; }
    size_t held() const {
        size_t s = 0;
        for (const cuda::DeviceBuffer* b :
             {&bt, &edges, &scratch, &refs, &alts, &cigars, &short_cigars, &lens, &descs, &offsets})
            s += b->cap;
        return s;
    }
    cudaError_t reserve(const BufferSizes& z) {
        PYPHMM_CUDA_TRY(bt.reserve(std::max<int64_t>(1, z.work.bt_cells) * sizeof(short2)));
        PYPHMM_CUDA_TRY(edges.reserve(z.work.edge_ints * 4));
        PYPHMM_CUDA_TRY(scratch.reserve(std::max<int64_t>(1, z.work.scratch_ints) * 4));
        PYPHMM_CUDA_TRY(refs.reserve(z.seq));
        PYPHMM_CUDA_TRY(alts.reserve(z.seq));
        PYPHMM_CUDA_TRY(cigars.reserve(z.cigar));
        PYPHMM_CUDA_TRY(short_cigars.reserve(z.pairs * kShortCigar));
        PYPHMM_CUDA_TRY(lens.reserve(z.pairs * sizeof(int32_t)));
        PYPHMM_CUDA_TRY(descs.reserve(z.pairs * sizeof(PairDesc)));
        return offsets.reserve(z.pairs * sizeof(int32_t));
    }
};

cuda::Pool<Buffers> g_buffers;

// Where a batch's results go.
struct Output {
    char* cigars;
    const int64_t* cigar_offsets;
    int32_t* offsets;
};

// Device memory for the call: a work budget (at most kWorkBudget, but room
// for the largest pair) and the rest for the chunks' fixed data.
struct Budgets {
    int64_t work = 0, fixed = 0;
};
int budgets(const Todo& todo, const Buffers& buf, Budgets* b, pyphmm_error* error) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes))
        return cuda::cuda_status(error, e, "CUDA Smith-Waterman: cudaMemGetInfo");
    int64_t budget = static_cast<int64_t>((free_bytes + buf.held()) * 0.6);
    if (const int64_t mb = config::get(config::Knob::kSwGpuBudgetMb)) budget = std::min(budget, mb << 20);
    const PairNeeds big = largest_pair(todo);
    b->work = std::max<int64_t>(std::min<int64_t>(kWorkBudget, budget / 2), big.work.bytes());
    b->fixed = budget - b->work;
    if (!todo.pairs.empty() && b->fixed < big.fixed)
        return set_error(error, PYPHMM_E_NOMEM,
                         "CUDA Smith-Waterman: a pair needs %lld bytes of device memory, %lld available",
                         (long long)(big.work.bytes() + big.fixed), (long long)budget);
    return PYPHMM_OK;
}

template <int K>
void launch_fill(const PairDesc* descs, int count, const uint8_t* refs, const uint8_t* alts, short2* bt, int32_t* edges,
                 int32_t* scratch) {
    const int64_t threads = int64_t(count) * kWarp;
    const int blocks = static_cast<int>((threads + kFillThreads - 1) / kFillThreads);
    sw_warp_fill_kernel<kWarp, K><<<blocks, kFillThreads>>>(descs, count, refs, alts, bt, edges, scratch);
}

// One fill launch per K, then the traceback, for each sub-chunk.
cudaError_t launch_chunk(const Chunk& c, const std::vector<PairDesc>& descs, Buffers& buf) {
    const PairDesc* dd = buf.descs.as<PairDesc>();
    for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
        const int sb = c.sub_begin[s], se = c.sub_begin[s + 1];
        for (int g = sb; g < se;) {
            int e = g;
            while (e < se && descs[e].cols == descs[g].cols) ++e;
            with_cols(descs[g].cols, [&](auto kc) {
                launch_fill<decltype(kc)::value>(dd + g, e - g, buf.refs.as<uint8_t>(), buf.alts.as<uint8_t>(),
                                                 buf.bt.as<short2>(), buf.edges.as<int32_t>(),
                                                 buf.scratch.as<int32_t>());
            });
            PYPHMM_CUDA_TRY(cudaGetLastError());
            g = e;
        }
        sw_traceback_kernel<<<(se - sb + kTraceThreads - 1) / kTraceThreads, kTraceThreads>>>(
            dd + sb, se - sb, buf.bt.as<short2>(), buf.edges.as<int32_t>(), buf.cigars.as<char>(),
            buf.short_cigars.as<char>() + int64_t(sb) * kShortCigar, buf.lens.as<int32_t>() + sb,
            buf.offsets.as<int32_t>() + sb);
        PYPHMM_CUDA_TRY(cudaGetLastError());
    }
    return cudaSuccess;
}

// Host staging of a chunk's results (kept across chunks).
struct Staging {
    std::vector<PairDesc> descs;
    std::vector<char> short_cigars, long_cigars;
    std::vector<int32_t> offsets, lens;
};

// A chunk: sequences and descriptors in, kernels, CIGARs and offsets out.
cudaError_t run_chunk(const Todo& todo, const Chunk& c, Buffers& buf, Staging& h, const Output& out) {
    const pyphmm_sw_batch& batch = *todo.batch;
    const int64_t first = todo.pairs[c.begin], last = todo.pairs[c.end - 1];
    const int64_t ref0 = batch.ref_offsets[first], alt0 = batch.alt_offsets[first];
    const int count = static_cast<int>(c.order.size());
    const int64_t cig = describe_chunk(todo, c, &h.descs);
    PYPHMM_CUDA_TRY(
        cudaMemcpy(buf.refs.p, batch.ref + ref0, batch.ref_offsets[last + 1] - ref0, cudaMemcpyHostToDevice));
    PYPHMM_CUDA_TRY(
        cudaMemcpy(buf.alts.p, batch.alt + alt0, batch.alt_offsets[last + 1] - alt0, cudaMemcpyHostToDevice));
    PYPHMM_CUDA_TRY(cudaMemcpy(buf.descs.p, h.descs.data(), count * sizeof(PairDesc), cudaMemcpyHostToDevice));
    PYPHMM_CUDA_TRY(launch_chunk(c, h.descs, buf));
    h.short_cigars.resize(static_cast<size_t>(count) * kShortCigar);
    h.offsets.resize(count);
    h.lens.resize(count);
    PYPHMM_CUDA_TRY(
        cudaMemcpy(h.short_cigars.data(), buf.short_cigars.p, h.short_cigars.size(), cudaMemcpyDeviceToHost));
    PYPHMM_CUDA_TRY(cudaMemcpy(h.lens.data(), buf.lens.p, count * sizeof(int32_t), cudaMemcpyDeviceToHost));
    PYPHMM_CUDA_TRY(cudaMemcpy(h.offsets.data(), buf.offsets.p, count * sizeof(int32_t), cudaMemcpyDeviceToHost));
    // Long CIGARs: slot by slot when few, else the whole buffer.
    int n_long = 0;
    for (int k = 0; k < count; ++k) n_long += h.lens[k] >= kShortCigar;
    const bool whole = n_long > kLongCigarCopies;
    if (whole) {
        h.long_cigars.resize(cig);
        PYPHMM_CUDA_TRY(cudaMemcpy(h.long_cigars.data(), buf.cigars.p, cig, cudaMemcpyDeviceToHost));
    }
    for (int k = 0; k < count && n_long > 0; ++k) {
        if (h.lens[k] < kShortCigar) continue;
        const PairDesc& d = h.descs[k];
        char* dst = out.cigars + out.cigar_offsets[d.index];
        if (whole)
            std::memcpy(dst, h.long_cigars.data() + d.cigar, h.lens[k] + 1);
        else
            PYPHMM_CUDA_TRY(cudaMemcpy(dst, buf.cigars.as<char>() + d.cigar, h.lens[k] + 1, cudaMemcpyDeviceToHost));
    }
    parallel_for(count, 0, [&](int64_t k) {
        const PairDesc& d = h.descs[k];
        if (h.lens[k] < kShortCigar)
            std::memcpy(out.cigars + out.cigar_offsets[d.index], h.short_cigars.data() + k * kShortCigar,
                        h.lens[k] + 1);
        out.offsets[d.index] = h.offsets[k];
    });
    return cudaSuccess;
}

}  // namespace

int cuda_sw_align(int device, const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                  int32_t* alignment_offsets, pyphmm_stats* stats, pyphmm_error* error) {
    const auto start = std::chrono::steady_clock::now();
    if (cudaError_t e = cuda::use_device(device)) return cuda::cuda_status(error, e, "CUDA Smith-Waterman: device");
    const Output out{cigars, cigar_offsets, alignment_offsets};
    const Todo todo = make_todo(batch, take_exact_matches(batch, cigars, cigar_offsets, alignment_offsets), kWarp);
    cuda::Pool<Buffers>::Lease lease(g_buffers, device);
    if (cudaError_t e = lease.acquire()) return cuda::cuda_status(error, e, "CUDA Smith-Waterman: buffers");
    Buffers& buf = lease.item();
    Budgets b;
    if (int rc = budgets(todo, buf, &b, error)) return rc;
    const std::vector<Chunk> chunks = plan_chunks(todo, b.fixed, b.work);
    if (!chunks.empty())
        if (cudaError_t e = buf.reserve(buffer_sizes(todo, chunks)))
            return cuda::cuda_status(error, e, "CUDA Smith-Waterman: cudaMalloc");
    Staging staging;
    for (const Chunk& c : chunks)
        if (cudaError_t e = run_chunk(todo, c, buf, staging, out))
            return cuda::cuda_status(error, e, "CUDA Smith-Waterman");
    if (stats) {
        int64_t cells = 0;
        for (int64_t i = 0; i < batch.num_pairs; ++i)
            cells +=
                (batch.ref_offsets[i + 1] - batch.ref_offsets[i]) * (batch.alt_offsets[i + 1] - batch.alt_offsets[i]);
        stats->pairs = batch.num_pairs;
        stats->cells = cells;
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = device;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
