// GPU Smith-Waterman with GATK's semantics, for batches.
//
// Same rules as native/cpu/sw_cpu.cc (see the comment there and
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
// Memory is planned in two levels: a chunk is consecutive pairs whose
// sequences, descriptors and results fit on the device together (usually the
// whole batch: a few KB per pair); its backtrack matrices are filled and
// traced back sub-chunk by sub-chunk within a work budget (kChunkBudget at
// most), launches queued back to back with no host work in between. The
// device buffers are kept for the next call, as the PairHMM's are.
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
#include <mutex>
#include <vector>

#include "../common/errors.h"
#include "../common/thread_pool.h"
#include "cuda_backend.h"
#include "sw_cuda_kernels.cuh"

namespace pyphmm {

namespace {

using namespace sw_gpu;

// Backtrack matrices (and the other per-cell work buffers) of a sub-chunk
// take at most this much device memory, unless one pair needs more, so that
// the buffers kept between calls stay modest.
constexpr int64_t kChunkBudget = int64_t(4) << 30;
constexpr size_t kMaxChunkPairs = 1 << 20;
// Past this many long CIGARs in a chunk, the whole CIGAR buffer is copied
// back instead of one slot at a time.
constexpr int kLongCigarCopies = 64;

// ---- host side -----------------------------------------------------------------

struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
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

// Device buffers of one call, pooled between calls (allocating gigabytes
// each call would cost milliseconds).
struct Buffers {
    DeviceBuffer bt, edges, scratch, refs, alts, cigars, short_cigars, lens, descs, offsets;
    size_t held() const {
        size_t s = 0;
        for (const DeviceBuffer* b : {&bt, &edges, &scratch, &refs, &alts, &cigars, &short_cigars, &lens, &descs,
                                      &offsets})
            s += b->bytes;
        return s;
    }
};

std::mutex g_buffers_mutex;
std::vector<Buffers*> g_buffers;

Buffers* acquire_buffers() {
    std::lock_guard<std::mutex> lock(g_buffers_mutex);
    if (g_buffers.empty()) return new Buffers();
    Buffers* b = g_buffers.back();
    g_buffers.pop_back();
    return b;
}

void release_buffers(Buffers* b) {
    std::lock_guard<std::mutex> lock(g_buffers_mutex);
    g_buffers.push_back(b);
}

struct BuffersLease {
    Buffers* b = acquire_buffers();
    ~BuffersLease() { release_buffers(b); }
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

// Last occurrence of alt in ref, or -1 (GATK's Utils.lastIndexOf). Most
// pairs have none, so every position is tried: 8 bytes at a time when alt
// has that many.
int last_index_of(const uint8_t* ref, int m, const uint8_t* alt, int n) {
    if (n >= 8) {
        uint64_t head;
        std::memcpy(&head, alt, 8);
        for (int pos = m - n; pos >= 0; --pos) {
            uint64_t w;
            std::memcpy(&w, ref + pos, 8);
            if (w == head && std::memcmp(ref + pos + 8, alt + 8, n - 8) == 0) return pos;
        }
        return -1;
    }
    for (int pos = m - n; pos >= 0; --pos)
        if (ref[pos] == alt[0] && std::memcmp(ref + pos, alt, n) == 0) return pos;
    return -1;
}

int write_exact(const uint8_t* ref, int m, const uint8_t* alt, int n, char* cigar, int32_t* offset) {
    const int pos = last_index_of(ref, m, alt, n);
    if (pos < 0) return 0;
    *offset = pos;
    std::snprintf(cigar, 16, "%dM", n);
    return 1;
}

// Device memory a pair needs for the whole call (its descriptor, CIGAR
// slots, results; its sequences are counted as the chunk's byte ranges) ...
int64_t pair_fixed_bytes(int m, int n) {
    return sizeof(PairDesc) + 2 * (int64_t(m) + n) + 1 + kShortCigar + 2 * sizeof(int32_t);
}

// ... and only while its sub-chunk runs (backtrack, last row/column, stripe
// boundary columns).
struct Work {
    int64_t bt_cells = 0, edge_ints = 0, scratch_ints = 0;
    int64_t bytes() const { return bt_cells * int64_t(sizeof(short2)) + (edge_ints + scratch_ints) * 4; }
    Work& operator+=(const Work& o) {
        bt_cells += o.bt_cells;
        edge_ints += o.edge_ints;
        scratch_ints += o.scratch_ints;
        return *this;
    }
    void grow_to(const Work& o) {
        bt_cells = std::max(bt_cells, o.bt_cells);
        edge_ints = std::max(edge_ints, o.edge_ints);
        scratch_ints = std::max(scratch_ints, o.scratch_ints);
    }
};

Work pair_work(int m, int n, int K) {
    Work w;
    w.bt_cells = backtrack_cells(m, n, kWarp, K);
    w.edge_ints = m + n + 2;
    w.scratch_ints = n > kWarp * K ? 6 * int64_t(m) : 0;
    return w;
}

// A chunk: consecutive pairs of the batch whose sequences, descriptors and
// results are on the device together. Its pairs are ordered by K (one fill
// launch per K) and cut into sub-chunks whose work buffers fit; sub-chunks
// run one after another on the stream with no host work in between.
struct Chunk {
    size_t begin = 0, end = 0;         // range in todo
    std::vector<int64_t> order;        // batch indices, by K
    std::vector<int> sub_begin;        // sub-chunk starts in order, then order.size()
};

template <int K>
void launch_fill(const PairDesc* descs, int count, const uint8_t* refs, const uint8_t* alts, short2* bt,
                 int32_t* edges, int32_t* scratch) {
    const int64_t threads = int64_t(count) * kWarp;
    const int blocks = static_cast<int>((threads + kFillThreads - 1) / kFillThreads);
    sw_warp_fill_kernel<kWarp, K><<<blocks, kFillThreads>>>(descs, count, refs, alts, bt, edges, scratch);
}

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

    BuffersLease lease;
    Buffers& buf = *lease.b;
    std::vector<int8_t> cols(n_pairs, 0);
    Work biggest_pair;
    int64_t biggest_fixed = 0;
    for (int64_t i : todo) {
        cols[i] = static_cast<int8_t>(choose_cols(n_of(i), kWarp));
        biggest_pair.grow_to(pair_work(m_of(i), n_of(i), cols[i]));
        biggest_fixed = std::max(biggest_fixed, pair_fixed_bytes(m_of(i), n_of(i)) + m_of(i) + n_of(i));
    }

    // Memory: a work budget (at most kChunkBudget, but room for the largest
    // pair) and the rest of the free memory for the chunks' fixed data.
    size_t free_bytes = 0, total_bytes = 0;
    SW_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    int64_t budget = static_cast<int64_t>((free_bytes + buf.held()) * 0.6);
    // PYPHMM_SW_GPU_BUDGET_MB caps the device memory of a call (tests use it
    // to force many chunks).
    if (const char* cap = std::getenv("PYPHMM_SW_GPU_BUDGET_MB")) {
        const long long mb = std::atoll(cap);
        if (mb > 0) budget = std::min<int64_t>(budget, static_cast<int64_t>(mb) << 20);
    }
    const int64_t work_budget =
        std::max<int64_t>(std::min<int64_t>(kChunkBudget, budget / 2), biggest_pair.bytes());
    const int64_t fixed_budget = budget - work_budget;
    if (!todo.empty() && fixed_budget < biggest_fixed)
        return set_error(error, PYPHMM_E_NOMEM, "CUDA Smith-Waterman: a pair needs %lld bytes of device memory, "
                         "%lld available", (long long)(biggest_pair.bytes() + biggest_fixed), (long long)budget);

    auto seq_range = [&](int64_t first, int64_t last) {   // bytes of pairs first..last (inclusive)
        return batch.ref_offsets[last + 1] - batch.ref_offsets[first] + batch.alt_offsets[last + 1] -
               batch.alt_offsets[first];
    };
    std::vector<Chunk> chunks;
    for (size_t k = 0; k < todo.size();) {
        Chunk c;
        c.begin = k;
        int64_t fixed = 0;
        for (; k < todo.size() && k - c.begin < kMaxChunkPairs; ++k) {
            const int64_t i = todo[k];
            const int64_t f = fixed + pair_fixed_bytes(m_of(i), n_of(i));
            if (k > c.begin && f + seq_range(todo[c.begin], i) > fixed_budget) break;
            fixed = f;
        }
        c.end = k;
        // By K: a counting sort keeps batch order within each K.
        int64_t per_k[kMaxColsPerLane + 2] = {0};
        for (size_t t = c.begin; t < c.end; ++t) ++per_k[cols[todo[t]] + 1];
        for (int K = 1; K <= kMaxColsPerLane + 1; ++K) per_k[K] += per_k[K - 1];
        c.order.resize(c.end - c.begin);
        for (size_t t = c.begin; t < c.end; ++t) c.order[per_k[cols[todo[t]]]++] = todo[t];
        Work w;
        for (size_t t = 0; t < c.order.size(); ++t) {
            const int64_t i = c.order[t];
            const Work add = pair_work(m_of(i), n_of(i), cols[i]);
            Work next = w;
            next += add;
            if (t == 0 || next.bytes() > work_budget) {
                c.sub_begin.push_back(static_cast<int>(t));
                next = add;
            }
            w = next;
        }
        c.sub_begin.push_back(static_cast<int>(c.order.size()));
        chunks.push_back(std::move(c));
    }

    // Buffers for the largest chunk and sub-chunk.
    Work work;
    int64_t max_pairs = 0, max_seq = 0, max_cigar = 0;
    for (const Chunk& c : chunks) {
        max_pairs = std::max<int64_t>(max_pairs, c.order.size());
        max_seq = std::max(max_seq, seq_range(todo[c.begin], todo[c.end - 1]));
        int64_t cig = 0;
        for (int64_t i : c.order) cig += 2 * (int64_t(m_of(i)) + n_of(i)) + 1;
        max_cigar = std::max(max_cigar, cig);
        for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
            Work w;
            for (int t = c.sub_begin[s]; t < c.sub_begin[s + 1]; ++t) {
                const int64_t i = c.order[t];
                w += pair_work(m_of(i), n_of(i), cols[i]);
            }
            work.grow_to(w);
        }
    }
    if (!chunks.empty()) {
        SW_CUDA_TRY(buf.bt.reserve(std::max<int64_t>(1, work.bt_cells) * sizeof(short2)), "cudaMalloc backtrack");
        SW_CUDA_TRY(buf.edges.reserve(work.edge_ints * 4), "cudaMalloc edges");
        SW_CUDA_TRY(buf.scratch.reserve(std::max<int64_t>(1, work.scratch_ints) * 4), "cudaMalloc scratch");
        SW_CUDA_TRY(buf.refs.reserve(max_seq), "cudaMalloc sequences");
        SW_CUDA_TRY(buf.alts.reserve(max_seq), "cudaMalloc sequences");
        SW_CUDA_TRY(buf.cigars.reserve(max_cigar), "cudaMalloc cigars");
        SW_CUDA_TRY(buf.short_cigars.reserve(max_pairs * kShortCigar), "cudaMalloc cigars");
        SW_CUDA_TRY(buf.lens.reserve(max_pairs * sizeof(int32_t)), "cudaMalloc cigar lengths");
        SW_CUDA_TRY(buf.descs.reserve(max_pairs * sizeof(PairDesc)), "cudaMalloc descriptors");
        SW_CUDA_TRY(buf.offsets.reserve(max_pairs * sizeof(int32_t)), "cudaMalloc offsets");
    }

    std::vector<PairDesc> descs;
    std::vector<char> short_host, long_host;
    std::vector<int32_t> off_host, len_host;
    for (const Chunk& c : chunks) {
        const int64_t first = todo[c.begin], last = todo[c.end - 1];
        const int64_t ref0 = batch.ref_offsets[first], alt0 = batch.alt_offsets[first];
        const int count = static_cast<int>(c.order.size());
        descs.resize(count);
        int64_t cig = 0;
        for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
            Work w;   // work offsets restart in every sub-chunk
            for (int t = c.sub_begin[s]; t < c.sub_begin[s + 1]; ++t) {
                const int64_t i = c.order[t];
                PairDesc& d = descs[t];
                d.m = m_of(i);
                d.n = n_of(i);
                d.lanes = kWarp;
                d.cols = cols[i];
                d.ref = batch.ref_offsets[i] - ref0;
                d.alt = batch.alt_offsets[i] - alt0;
                d.bt = w.bt_cells;
                d.edge = w.edge_ints;
                d.scratch = w.scratch_ints;
                w += pair_work(d.m, d.n, d.cols);
                d.cigar = cig;
                cig += 2 * (static_cast<int64_t>(d.m) + d.n) + 1;
                const pyphmm_sw_params& prm = batch.params[batch.per_pair ? i : 0];
                d.match = prm.match;
                d.mismatch = prm.mismatch;
                d.open = prm.gap_open;
                d.extend = prm.gap_extend;
                d.strategy = strategy_of(i);
                d.index = static_cast<int32_t>(i);
            }
        }
        SW_CUDA_TRY(cudaMemcpy(buf.refs.ptr, batch.ref + ref0, batch.ref_offsets[last + 1] - ref0,
                               cudaMemcpyHostToDevice), "copy refs");
        SW_CUDA_TRY(cudaMemcpy(buf.alts.ptr, batch.alt + alt0, batch.alt_offsets[last + 1] - alt0,
                               cudaMemcpyHostToDevice), "copy alts");
        SW_CUDA_TRY(cudaMemcpy(buf.descs.ptr, descs.data(), count * sizeof(PairDesc), cudaMemcpyHostToDevice),
                    "copy descriptors");
        const PairDesc* dd = buf.descs.as<PairDesc>();
        for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
            const int sb = c.sub_begin[s], se = c.sub_begin[s + 1];
            for (int g = sb; g < se;) {   // one fill launch per K
                int e = g;
                while (e < se && descs[e].cols == descs[g].cols) ++e;
                with_cols(descs[g].cols, [&](auto kc) {
                    launch_fill<decltype(kc)::value>(dd + g, e - g, buf.refs.as<uint8_t>(), buf.alts.as<uint8_t>(),
                                                     buf.bt.as<short2>(), buf.edges.as<int32_t>(),
                                                     buf.scratch.as<int32_t>());
                });
                SW_CUDA_TRY(cudaGetLastError(), "launch fill");
                g = e;
            }
            sw_traceback_kernel<<<(se - sb + kTraceThreads - 1) / kTraceThreads, kTraceThreads>>>(
                dd + sb, se - sb, buf.bt.as<short2>(), buf.edges.as<int32_t>(), buf.cigars.as<char>(),
                buf.short_cigars.as<char>() + int64_t(sb) * kShortCigar, buf.lens.as<int32_t>() + sb,
                buf.offsets.as<int32_t>() + sb);
            SW_CUDA_TRY(cudaGetLastError(), "launch traceback");
        }
        short_host.resize(static_cast<size_t>(count) * kShortCigar);
        off_host.resize(count);
        len_host.resize(count);
        SW_CUDA_TRY(cudaMemcpy(short_host.data(), buf.short_cigars.ptr, short_host.size(), cudaMemcpyDeviceToHost),
                    "copy CIGARs");
        SW_CUDA_TRY(cudaMemcpy(len_host.data(), buf.lens.ptr, count * sizeof(int32_t), cudaMemcpyDeviceToHost),
                    "copy CIGAR lengths");
        SW_CUDA_TRY(cudaMemcpy(off_host.data(), buf.offsets.ptr, count * sizeof(int32_t), cudaMemcpyDeviceToHost),
                    "copy offsets");
        // Long CIGARs: slot by slot when few, else the whole buffer.
        int n_long = 0;
        for (int k = 0; k < count; ++k) n_long += len_host[k] >= kShortCigar;
        const bool whole = n_long > kLongCigarCopies;
        if (whole) {
            long_host.resize(cig);
            SW_CUDA_TRY(cudaMemcpy(long_host.data(), buf.cigars.ptr, cig, cudaMemcpyDeviceToHost), "copy CIGARs");
        }
        for (int k = 0; k < count && n_long > 0; ++k) {
            if (len_host[k] < kShortCigar) continue;
            const PairDesc& d = descs[k];
            char* dst = cigars + cigar_offsets[d.index];
            if (whole)
                std::memcpy(dst, long_host.data() + d.cigar, len_host[k] + 1);
            else
                SW_CUDA_TRY(cudaMemcpy(dst, buf.cigars.as<char>() + d.cigar, len_host[k] + 1, cudaMemcpyDeviceToHost),
                            "copy CIGAR");
        }
        parallel_for(count, 0, [&](int64_t k) {
            const PairDesc& d = descs[k];
            if (len_host[k] < kShortCigar)
                std::memcpy(cigars + cigar_offsets[d.index], short_host.data() + k * kShortCigar, len_host[k] + 1);
            alignment_offsets[d.index] = off_host[k];
        });
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
