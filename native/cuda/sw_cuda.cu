// GPU Smith-Waterman with GATK's semantics, for batches.
//
// Same rules as native/cpu/sw_cpu.cc (see the comment there and SPEC.md
// section 4); results must be identical to the CPU backend's.
//
// Stage 1 (sw_fill_kernel): one block per pair walks the anti-diagonals
// d = i + j; the threads of the block share the cells of a diagonal. GATK's
// per-row / per-column best-gap state is carried from diagonal d-1 to d, so
// the scores equal those of GATK's row-major loop. Each cell writes a short2
// into a diagonal-major backtrack matrix:
//   x = signed gap-run length (> 0 deletion of x, < 0 insertion of -x, 0 diagonal)
//   y = length of the run of consecutive diagonal moves ending at this cell.
// The scores of the last column and the last row are kept for the start.
// The per-diagonal state lives in shared memory for refs up to kSmallRef bp,
// else in a global scratch slice.
//
// Stage 2 (sw_traceback_kernel): one thread per pair picks the start cell
// (GATK's last-column / last-row rules), follows the backtrack jumping whole
// gap runs and whole match runs, and writes the consolidated CIGAR and the
// offset. Only the CIGARs and offsets travel back to the host.
//
// Memory is planned per chunk: pairs are taken in order while their
// backtrack matrices and buffers fit in a budget of the free device memory,
// so batches larger than the GPU run chunk after chunk.
//
// The exact-substring shortcut of SOFTCLIP / IGNORE is taken on the host
// before anything is sent to the GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../common/errors.h"
#include "../common/thread_pool.h"
#include "cuda_backend.h"
#include "sw_cuda_kernels.cuh"

namespace pyphmm {

namespace {

using namespace sw_gpu;

// ---- host side -----------------------------------------------------------------

struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    ~DeviceBuffer() {
        if (ptr) cudaFree(ptr);
    }
    cudaError_t reserve(size_t want) {
        if (want <= bytes) return cudaSuccess;
        if (ptr) cudaFree(ptr);
        ptr = nullptr;
        bytes = 0;
        cudaError_t e = cudaMalloc(&ptr, want);
        if (e == cudaSuccess) bytes = want;
        return e;
    }
    template <typename T>
    T* as() const {
        return static_cast<T*>(ptr);
    }
};

int cuda_fail(pyphmm_error* err, cudaError_t e, const char* what) {
    cudaGetLastError();  // clear a sticky non-fatal error so later calls start clean
    return set_error(err, e == cudaErrorMemoryAllocation ? PYPHMM_E_NOMEM : PYPHMM_E_INTERNAL,
                     "CUDA Smith-Waterman: %s: %s", what, cudaGetErrorString(e));
}

#define SW_CUDA_TRY(call, what)                            \
    do {                                                   \
        cudaError_t e_ = (call);                           \
        if (e_ != cudaSuccess) return cuda_fail(error, e_, what); \
    } while (0)

int write_exact(const uint8_t* ref, int m, const uint8_t* alt, int n, char* cigar, int32_t* offset) {
    for (int pos = m - n; pos >= 0; --pos) {
        if (ref[pos] == alt[0] && std::memcmp(ref + pos, alt, n) == 0) {
            *offset = pos;
            std::snprintf(cigar, 16, "%dM", n);
            return 1;
        }
    }
    return 0;
}

struct Plan {
    int64_t bt_cells = 0, edge_ints = 0, scratch_ints = 0, seq_bytes = 0, cigar_bytes = 0;
    size_t device_bytes() const {
        return bt_cells * sizeof(short2) + edge_ints * 4 + scratch_ints * 4 + seq_bytes + cigar_bytes;
    }
};

}  // namespace

int cuda_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                  int32_t* alignment_offsets, pyphmm_stats* stats, pyphmm_error* error) {
    auto start = std::chrono::steady_clock::now();
    const CudaProbe& probe = cuda_probe();
    if (!probe.usable) return set_error(error, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", probe.status);
    SW_CUDA_TRY(cudaSetDevice(probe.device), "cudaSetDevice");

    const int64_t n_pairs = batch.num_pairs;
    auto ref_of = [&](int64_t i) { return batch.ref + batch.ref_offsets[i]; };
    auto alt_of = [&](int64_t i) { return batch.alt + batch.alt_offsets[i]; };
    auto m_of = [&](int64_t i) { return static_cast<int>(batch.ref_offsets[i + 1] - batch.ref_offsets[i]); };
    auto n_of = [&](int64_t i) { return static_cast<int>(batch.alt_offsets[i + 1] - batch.alt_offsets[i]); };
    auto strategy_of = [&](int64_t i) { return static_cast<int>(batch.strategies[batch.per_pair ? i : 0]); };

    // Exact-substring shortcut on the host; the rest goes to the GPU.
    std::vector<uint8_t> done(n_pairs, 0);
    parallel_for(n_pairs, 0, [&](int64_t i) {
        const int s = strategy_of(i);
        if ((s == PYPHMM_SW_SOFTCLIP || s == PYPHMM_SW_IGNORE) && n_of(i) <= m_of(i))
            done[i] = write_exact(ref_of(i), m_of(i), alt_of(i), n_of(i), cigars + cigar_offsets[i],
                                  &alignment_offsets[i]);
    });
    std::vector<int64_t> todo;
    for (int64_t i = 0; i < n_pairs; ++i)
        if (!done[i]) todo.push_back(i);

    // Memory plan: chunks of consecutive pairs within a budget of free memory.
    size_t free_bytes = 0, total_bytes = 0;
    SW_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    size_t budget = static_cast<size_t>(free_bytes * 0.6);
    // PYPHMM_SW_GPU_BUDGET_MB caps the per-chunk device memory (tests use it
    // to force many chunks).
    if (const char* cap = std::getenv("PYPHMM_SW_GPU_BUDGET_MB")) {
        const long long mb = std::atoll(cap);
        if (mb > 0) budget = std::min(budget, static_cast<size_t>(mb) << 20);
    }
    std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end) in todo
    Plan biggest, cur;
    size_t chunk_begin = 0;
    constexpr size_t kMaxChunkPairs = 1 << 20;
    for (size_t k = 0; k < todo.size(); ++k) {
        const int64_t i = todo[k];
        const int64_t m = m_of(i), n = n_of(i);
        Plan add;
        add.bt_cells = m * n;
        add.edge_ints = m + n + 2;
        add.scratch_ints = m > kSmallRef ? kStateArrays * (m + 1) : 0;
        add.seq_bytes = m + n;
        add.cigar_bytes = 2 * (m + n) + 1;
        const size_t per_pair_desc = sizeof(PairDesc) + sizeof(int32_t);
        if (add.device_bytes() + per_pair_desc > budget)
            return set_error(error, PYPHMM_E_NOMEM, "CUDA Smith-Waterman: pair %lld needs %zu bytes of device "
                             "memory, %zu available", (long long)i, add.device_bytes(), budget);
        Plan next = cur;
        next.bt_cells += add.bt_cells;
        next.edge_ints += add.edge_ints;
        next.scratch_ints += add.scratch_ints;
        next.seq_bytes += add.seq_bytes;
        next.cigar_bytes += add.cigar_bytes;
        if (k > chunk_begin && (next.device_bytes() + (k - chunk_begin + 1) * per_pair_desc > budget ||
                                k - chunk_begin >= kMaxChunkPairs)) {
            chunks.emplace_back(chunk_begin, k);
            chunk_begin = k;
            next = add;
        }
        cur = next;
        biggest.bt_cells = std::max(biggest.bt_cells, cur.bt_cells);
        biggest.edge_ints = std::max(biggest.edge_ints, cur.edge_ints);
        biggest.scratch_ints = std::max(biggest.scratch_ints, cur.scratch_ints);
        biggest.seq_bytes = std::max(biggest.seq_bytes, cur.seq_bytes);
        biggest.cigar_bytes = std::max(biggest.cigar_bytes, cur.cigar_bytes);
    }
    if (chunk_begin < todo.size()) chunks.emplace_back(chunk_begin, todo.size());

    size_t max_chunk_pairs = 0;
    for (auto& c : chunks) max_chunk_pairs = std::max(max_chunk_pairs, c.second - c.first);
    DeviceBuffer d_bt, d_edges, d_scratch, d_seqs, d_cigars, d_descs, d_offsets;
    if (!chunks.empty()) {
        SW_CUDA_TRY(d_bt.reserve(std::max<int64_t>(1, biggest.bt_cells) * sizeof(short2)), "cudaMalloc backtrack");
        SW_CUDA_TRY(d_edges.reserve(biggest.edge_ints * 4), "cudaMalloc edges");
        SW_CUDA_TRY(d_scratch.reserve(std::max<int64_t>(1, biggest.scratch_ints) * 4), "cudaMalloc scratch");
        SW_CUDA_TRY(d_seqs.reserve(biggest.seq_bytes), "cudaMalloc sequences");
        SW_CUDA_TRY(d_cigars.reserve(biggest.cigar_bytes), "cudaMalloc cigars");
        SW_CUDA_TRY(d_descs.reserve(max_chunk_pairs * sizeof(PairDesc)), "cudaMalloc descriptors");
        SW_CUDA_TRY(d_offsets.reserve(max_chunk_pairs * sizeof(int32_t)), "cudaMalloc offsets");
    }

    std::vector<PairDesc> descs;
    std::vector<uint8_t> seqs;
    std::vector<char> cig_host;
    std::vector<int32_t> off_host;
    for (auto& c : chunks) {
        // Small refs first (shared-memory kernel), then large ones.
        std::vector<int64_t> order(todo.begin() + c.first, todo.begin() + c.second);
        std::stable_partition(order.begin(), order.end(), [&](int64_t i) { return m_of(i) <= kSmallRef; });
        descs.clear();
        seqs.clear();
        int64_t bt = 0, edge = 0, scratch = 0, cig = 0;
        int small = 0, small_max_m = 0;
        for (int64_t i : order) {
            PairDesc d;
            d.m = m_of(i);
            d.n = n_of(i);
            d.ref = static_cast<int64_t>(seqs.size());
            seqs.insert(seqs.end(), ref_of(i), ref_of(i) + d.m);
            d.alt = static_cast<int64_t>(seqs.size());
            seqs.insert(seqs.end(), alt_of(i), alt_of(i) + d.n);
            d.bt = bt;
            bt += static_cast<int64_t>(d.m) * d.n;
            d.edge = edge;
            edge += d.m + d.n + 2;
            d.scratch = scratch;
            if (d.m > kSmallRef) scratch += kStateArrays * (d.m + 1);
            d.cigar = cig;
            cig += 2 * (static_cast<int64_t>(d.m) + d.n) + 1;
            const pyphmm_sw_params& prm = batch.params[batch.per_pair ? i : 0];
            d.match = prm.match;
            d.mismatch = prm.mismatch;
            d.open = prm.gap_open;
            d.extend = prm.gap_extend;
            d.strategy = strategy_of(i);
            d.index = static_cast<int32_t>(i);
            if (d.m <= kSmallRef) {
                ++small;
                small_max_m = std::max(small_max_m, d.m);
            }
            descs.push_back(d);
        }
        const int count = static_cast<int>(descs.size());
        SW_CUDA_TRY(cudaMemcpy(d_seqs.ptr, seqs.data(), seqs.size(), cudaMemcpyHostToDevice), "copy sequences");
        SW_CUDA_TRY(cudaMemcpy(d_descs.ptr, descs.data(), count * sizeof(PairDesc), cudaMemcpyHostToDevice),
                    "copy descriptors");
        const PairDesc* dd = d_descs.as<PairDesc>();
        if (small > 0) {
            const size_t smem = static_cast<size_t>(kStateArrays) * (small_max_m + 1) * sizeof(int32_t);
            sw_fill_kernel<true><<<small, kFillThreads, smem>>>(dd, d_seqs.as<uint8_t>(), d_bt.as<short2>(),
                                                                d_edges.as<int32_t>(), d_scratch.as<int32_t>());
            SW_CUDA_TRY(cudaGetLastError(), "launch fill (shared)");
        }
        if (count > small) {
            sw_fill_kernel<false><<<count - small, kFillThreads>>>(dd + small, d_seqs.as<uint8_t>(),
                                                                   d_bt.as<short2>(), d_edges.as<int32_t>(),
                                                                   d_scratch.as<int32_t>());
            SW_CUDA_TRY(cudaGetLastError(), "launch fill (global)");
        }
        sw_traceback_kernel<<<(count + kTraceThreads - 1) / kTraceThreads, kTraceThreads>>>(
            dd, count, d_bt.as<short2>(), d_edges.as<int32_t>(), d_cigars.as<char>(), d_offsets.as<int32_t>());
        SW_CUDA_TRY(cudaGetLastError(), "launch traceback");
        cig_host.resize(cig);
        off_host.resize(count);
        SW_CUDA_TRY(cudaMemcpy(cig_host.data(), d_cigars.ptr, cig, cudaMemcpyDeviceToHost), "copy CIGARs");
        SW_CUDA_TRY(cudaMemcpy(off_host.data(), d_offsets.ptr, count * sizeof(int32_t), cudaMemcpyDeviceToHost),
                    "copy offsets");
        for (int k = 0; k < count; ++k) {
            const PairDesc& d = descs[k];
            const char* s = cig_host.data() + d.cigar;
            std::memcpy(cigars + cigar_offsets[d.index], s, std::strlen(s) + 1);
            alignment_offsets[d.index] = off_host[k];
        }
    }
    if (stats) {
        int64_t cells = 0;
        for (int64_t i = 0; i < n_pairs; ++i) cells += static_cast<int64_t>(m_of(i)) * n_of(i);
        stats->pairs = n_pairs;
        stats->cells = cells;
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
