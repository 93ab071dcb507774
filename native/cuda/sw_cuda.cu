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
#include <cstring>
#include <vector>

#include "../common/errors.h"
#include "../common/thread_pool.h"
#include "cuda_backend.h"

namespace pyphmm {

namespace {

constexpr int32_t kFloor = -100000000;     // GATK's MATRIX_MIN_CUTOFF
constexpr int32_t kLowInit = INT32_MIN / 2;  // GATK's initial best gap
constexpr int kStateArrays = 14;           // per slot: 3 H, 3 Y, 2 E, 2 KH, 2 F, 2 KV
constexpr int kSmallRef = 850;             // refs up to this keep their state in 48 KB of shared memory
constexpr int kFillThreads = 128;
constexpr int kTraceThreads = 128;

struct PairDesc {
    int64_t ref;        // offset of ref in the chunk's sequence buffer
    int64_t alt;        // offset of alt
    int64_t bt;         // first short2 of this pair's backtrack matrix
    int64_t edge;       // last column (m + 1 ints) then last row (n + 1 ints)
    int64_t scratch;    // global state slice (large refs only), in ints
    int64_t cigar;      // first byte of this pair's CIGAR slot in the chunk buffer
    int32_t m, n;       // len(ref), len(alt)
    int32_t match, mismatch, open, extend;
    int32_t strategy;
    int32_t index;      // pair index in the caller's batch
};

// Cells (i, j), 1 <= i <= m, 1 <= j <= n, with i + j <= s.
__device__ __forceinline__ int64_t cells_upto(int64_t s, int64_t m, int64_t n) {
    auto tri = [](int64_t x) -> int64_t { return x >= 1 ? x * (x - 1) / 2 : 0; };
    return tri(s) - tri(s - m) - tri(s - n) + tri(s - m - n);
}

// Index of cell (i, j) in the diagonal-major matrix.
__device__ __forceinline__ int64_t cell_index(int i, int j, int m, int n) {
    const int d = i + j;
    const int lo = max(1, d - n);
    return cells_upto(d - 1, m, n) + (i - lo);
}

template <bool kShared>
__global__ void __launch_bounds__(kFillThreads)
sw_fill_kernel(const PairDesc* __restrict__ pairs, const uint8_t* __restrict__ seqs, short2* __restrict__ bt,
               int32_t* __restrict__ edges, int32_t* __restrict__ scratch) {
    extern __shared__ int32_t smem[];
    const PairDesc p = pairs[blockIdx.x];
    const int m = p.m, n = p.n;
    const int S = m + 1;
    int32_t* base = kShared ? smem : scratch + p.scratch;
    // Slot arrays, each S ints: H (3 diagonals), Y (3), E, KH, F, KV (2 each).
    int32_t* const H = base;
    int32_t* const Y = base + 3 * S;
    int32_t* const E = base + 6 * S;
    int32_t* const KH = base + 8 * S;
    int32_t* const F = base + 10 * S;
    int32_t* const KV = base + 12 * S;
    const uint8_t* ref = seqs + p.ref;
    const uint8_t* alt = seqs + p.alt;
    const bool edge_gaps = p.strategy == PYPHMM_SW_INDEL || p.strategy == PYPHMM_SW_LEADING_INDEL;
    int32_t* last_col = edges + p.edge;
    int32_t* last_row = last_col + m + 1;
    short2* btp = bt + p.bt;

    if (threadIdx.x == 0) {
        H[0] = 0;                            // diagonal 0: the corner
        Y[0] = 0;
        H[S + 0] = edge_gaps ? p.open : 0;   // diagonal 1: (0, 1) and (1, 0)
        H[S + 1] = edge_gaps ? p.open : 0;
        Y[S + 0] = Y[S + 1] = 0;
        E[S + 1] = kLowInit;
        KH[S + 1] = 0;
        F[S + 0] = kLowInit;
        KV[S + 0] = 0;
    }
    __syncthreads();

    int64_t diag_base = 0;
    for (int d = 2; d <= m + n; ++d) {
        const int lo = max(1, d - n), hi = min(m, d - 1);
        const int r0 = (d % 3) * S, r1 = ((d + 2) % 3) * S, r2 = ((d + 1) % 3) * S;  // d, d-1, d-2
        const int q0 = (d & 1) * S, q1 = ((d + 1) & 1) * S;                            // d, d-1
        int32_t *h0 = H + r0, *h1 = H + r1, *h2 = H + r2;
        int32_t *y0 = Y + r0, *y2 = Y + r2;
        int32_t *e0 = E + q0, *e1 = E + q1;
        int32_t *kh0 = KH + q0, *kh1 = KH + q1;
        int32_t *f0 = F + q0, *f1 = F + q1;
        int32_t *kv0 = KV + q0, *kv1 = KV + q1;
        // Boundary slots of this diagonal (no cell of it writes them).
        if (threadIdx.x == 0) {
            if (d <= n) {
                h0[0] = edge_gaps ? p.open + (d - 1) * p.extend : 0;
                y0[0] = 0;
                f0[0] = kLowInit;
                kv0[0] = 0;
            }
            if (d <= m) {
                h0[d] = edge_gaps ? p.open + (d - 1) * p.extend : 0;
                y0[d] = 0;
                e0[d] = kLowInit;
                kh0[d] = 0;
            }
        }
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            const int j = d - i;
            const int32_t diag = h2[i - 1] + (ref[i - 1] == alt[j - 1] ? p.match : p.mismatch);
            // deletion: column j's best gap, from (i-1, j)
            const int32_t open_v = h1[i - 1] + p.open;
            const int32_t ext_v = f1[i - 1] + p.extend;
            const bool new_v = open_v > ext_v;
            const int32_t down = new_v ? open_v : ext_v;
            const int32_t kd = new_v ? 1 : kv1[i - 1] + 1;
            // insertion: row i's best gap, from (i, j-1)
            const int32_t open_h = h1[i] + p.open;
            const int32_t ext_h = e1[i] + p.extend;
            const bool new_h = open_h > ext_h;
            const int32_t right = new_h ? open_h : ext_h;
            const int32_t ki = new_h ? 1 : kh1[i] + 1;

            int32_t best, back, run;
            if (diag >= down && diag >= right) {
                best = diag;
                back = 0;
                run = y2[i - 1] + 1;
            } else if (right >= down) {
                best = right;
                back = -ki;
                run = 0;
            } else {
                best = down;
                back = kd;
                run = 0;
            }
            best = max(best, kFloor);
            h0[i] = best;
            y0[i] = run;
            f0[i] = down;
            kv0[i] = kd;
            e0[i] = right;
            kh0[i] = ki;
            btp[diag_base + (i - lo)] = make_short2(static_cast<short>(back), static_cast<short>(run));
            if (j == n) last_col[i] = best;
            if (i == m) last_row[j] = best;
        }
        diag_base += hi - lo + 1;
        __syncthreads();
    }
}

// Consolidating CIGAR writer that receives elements last-to-first and writes
// characters backwards from the end of the pair's slot.
struct RevCigar {
    char* slot;
    int64_t pos;     // next free character, counting down
    char op = 0;
    int64_t len = 0;

    __device__ void flush() {
        if (!op || len == 0) return;
        slot[--pos] = op;
        int64_t v = len;
        do {
            slot[--pos] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v);
        op = 0;
        len = 0;
    }
    __device__ void add(char o, int64_t l) {
        if (l == 0) return;
        if (o != op) flush();
        op = o;
        len += l;
    }
};

__global__ void sw_traceback_kernel(const PairDesc* __restrict__ pairs, int count, const short2* __restrict__ bt,
                                    const int32_t* __restrict__ edges, char* __restrict__ cigars,
                                    int32_t* __restrict__ offsets) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    const PairDesc p = pairs[k];
    const int m = p.m, n = p.n;
    const int32_t* last_col = edges + p.edge;
    const int32_t* last_row = last_col + m + 1;
    const short2* btp = bt + p.bt;
    const int strategy = p.strategy;

    int p1, p2;
    int64_t segment = 0;
    if (strategy == PYPHMM_SW_INDEL) {
        p1 = m;
        p2 = n;
    } else {
        int32_t best = INT32_MIN;
        p1 = 0;
        p2 = n;
        for (int i = 1; i <= m; ++i)
            if (last_col[i] >= best) {
                p1 = i;
                best = last_col[i];
            }
        if (strategy != PYPHMM_SW_LEADING_INDEL) {
            for (int j = 1; j <= n; ++j) {
                const int32_t s = last_row[j];
                if (s > best || (s == best && abs(m - j) < abs(p1 - p2))) {
                    p1 = m;
                    p2 = j;
                    best = s;
                    segment = n - j;
                }
            }
        }
    }
    const int64_t cap = 2 * (static_cast<int64_t>(m) + n) + 1;
    char* slot = cigars + p.cigar;
    RevCigar w{slot, cap};
    if (segment > 0 && strategy == PYPHMM_SW_SOFTCLIP) {
        w.add('S', segment);
        segment = 0;
    }
    char state = 'M';
    do {
        const short2 c = btp[cell_index(p1, p2, m, n)];
        char next;
        int step;
        if (c.x > 0) {
            next = 'D';
            step = c.x;
            p1 -= step;
        } else if (c.x < 0) {
            next = 'I';
            step = -c.x;
            p2 -= step;
        } else {
            next = 'M';
            step = c.y;   // the whole run of diagonal moves ending here
            p1 -= step;
            p2 -= step;
        }
        if (next == state) {
            segment += step;
        } else {
            w.add(state, segment);
            segment = step;
            state = next;
        }
    } while (p1 > 0 && p2 > 0);

    int32_t offset;
    if (strategy == PYPHMM_SW_SOFTCLIP) {
        w.add(state, segment);
        if (p2 > 0) w.add('S', p2);
        offset = p1;
    } else if (strategy == PYPHMM_SW_IGNORE) {
        w.add(state, segment + p2);
        offset = p1 - p2;
    } else {
        w.add(state, segment);
        if (p1 > 0)
            w.add('D', p1);
        else if (p2 > 0)
            w.add('I', p2);
        offset = 0;
    }
    w.flush();
    // Move the string to the start of the slot.
    const int64_t len = cap - w.pos;
    for (int64_t t = 0; t < len; ++t) slot[t] = slot[w.pos + t];
    slot[len] = '\0';
    offsets[k] = offset;
}

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
    const size_t budget = static_cast<size_t>(free_bytes * 0.6);
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
