// Device side of the CUDA PairHMM: one warp-cooperative wavefront kernel,
// instantiated per variant (KernelTraits: precision, group size P, rows per
// lane K, stripes, arithmetic, transitions), and the fused kernel that runs
// several short-read bins in one launch. What a lane computes at a step is in
// pairhmm_recurrence.cuh; here: a pair's sweep (forward_pair), a launch's
// share of a bin (run_bin), the results, and the kernels.
#pragma once
#include <cstdint>
#include <utility>

#include <cuda_runtime.h>

#include "common/transitions.h"
#include "cuda/pairhmm_layout.h"
#include "cuda/pairhmm_recurrence.cuh"

namespace pyphmm {
namespace cudak {

// Kernel arguments shared by every instantiation.
template <typename T>
struct KernelArgs {
    const PairDesc* pairs;  // all pairs of the chunk, sorted by pass and bin
    int first;              // first pair of this launch (when index == nullptr)
    int count;              // number of pairs (when count_ptr == nullptr)
    const int* count_ptr;   // device count (double pass)
    const int* index;       // pair indices (double pass), else nullptr
    const uint32_t* reads;
    const uint8_t* haps;
    DevTables<T> tab;
    double* out;      // results, by PairDesc::out
    int* under_list;  // float pass: pairs to redo in double
    int* under_count;
    int* header_count;  // double pass: copies *count_ptr here for the host
    T* scratch;         // striped: 3 * scratch_stride values per group
    int scratch_stride;
    GapConsts gc;  // Tr::kConst launches
};

// The forward algorithm for one pair by one group. Returns the raw sum
// (meaningful in lane P-1 only).
// PF (the latency variants): a step's haplotype base and emissions are
// fetched during the step before, so the shuffle of the base and the shared
// memory load are off the step's critical path (K more registers). A lane
// alone on its scheduler (a call too small to fill the GPU) otherwise waits
// for them every step. The latency variants also rely on lane 0 holding
// padding rows only (the host sends them no read longer than
// latency_max_rows): such a lane reproduces row 0 in its last row at every
// column, so the shuffles that bring each lane the row above bring lane 0
// its own boundary, and no lane selects it (a select per edge value a
// step). (Lane 0's edge is made with lane 1's first-row transitions, but
// its own first row still gets M = X = 0: the emission is 0, and the M and
// X above are 0.)
template <typename V, typename T = typename V::T>
__device__ __forceinline__ T forward_pair(const KernelArgs<T>& a, const PairDesc& d, int n_act, int n_min, int steps,
                                          int t, T* scratch, float4* etab, bool& unfactorable) {
    constexpr int P = V::P, K = V::K, CB = V::CB;
    constexpr bool STRIPED = V::STRIPED, ETAB = V::ETAB, PF = V::PF, SUMS = V::SUMS;
    constexpr bool UNIFORM = V::UNIFORM, CONST = V::CONST;
    constexpr Arith AR = V::AR;
    constexpr unsigned gmask = 0xffffffffu;  // every lane of the warp runs the same steps
    constexpr int R = P * K;
    constexpr int NMASKW = (K + 7) / 8;  // read base masks, 8 rows (nibbles) per word
    const int m = d.m, n = d.n;
    const int nstripes = STRIPED ? (m + R - 1) / R : 1;
    const int pad = nstripes * R - m;
    const T ic_n = opaque(tdiv<T>(a.tab.ic, static_cast<T>(n)));
    const uint32_t* hap4 = reinterpret_cast<const uint32_t*>(a.haps + d.hoff);
    const uint32_t* rd = a.reads + d.roff;
    const int ss = a.scratch_stride;
    T sum_m = T(0), sum_x = T(0);
    unfactorable = false;

    for (int stripe = 0; stripe < nstripes; ++stripe) {
        T mm[K], gm[K], mx[K], my[K], cc[K], em[K], ex[K];
        T Ma[K], Xa[K], Ya[K], Mb[K], Xb[K], Yb[K];
        uint32_t rmask[NMASKW];
#pragma unroll
        for (int w = 0; w < NMASKW; ++w) rmask[w] = 0;
        // UNIFORM pairs (the host checked that every row of the read has the
        // same insertion, deletion and gap-continuation quality, as in GATK's
        // usual data) take the transition constants from row 0 as scalars:
        // the arrays below then hold one value, which the compiler keeps in
        // one register, so only the emissions and cc stay per row. (Padding
        // rows need only e = 0 and cc = 1 to reproduce row 0: M = e*(...) = 0,
        // X = mx*0 + cc*0 = 0, Y = my*0 + 1*Y.)
        RowTransitions<T> u{};
        if (CONST) {         // gm scales the emissions, cc the Y rows; lane_step_const reads the rest from a.gc
            u.gm = a.gc.gm;  // (the host checked gm > 0)
            u.cc = a.gc.cc;
        } else if (UNIFORM) {
            u = row_consts<T, AR>(a.tab, __ldg(rd), unfactorable);
        }
        // All K elements first, then their table entries: two rounds of
        // loads in flight instead of two per row (a padding row loads
        // nothing and takes element 0's table entries, which it discards).
        const int row0 = stripe * R + t * K - pad;  // 0-based read row of k = 0; < 0: padding
        uint32_t elem[K];
#pragma unroll
        for (int k = 0; k < K; ++k) elem[k] = row0 + k >= 0 ? __ldg(rd + row0 + k) : 0u;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const bool padding = row0 + k < 0;
            const uint32_t e = elem[k];
            const int q = (e >> 4) & 127;
            const T err = __ldg(a.tab.ph2pr + q), third = __ldg(a.tab.third + q);
            Ma[k] = Xa[k] = T(0);
            RowTransitions<T> c = u;
            if (!UNIFORM) {
                bool unf = false;
                c = row_consts<T, AR>(a.tab, e, unf);
                unfactorable |= unf && !padding;
                if (padding) c.mm = c.gm = c.mx = c.my = T(0);
            }
            mm[k] = c.mm;
            gm[k] = c.gm;
            mx[k] = c.mx;
            my[k] = c.my;
            cc[k] = padding ? T(1) : c.cc;
            em[k] = T(1) - err;
            ex[k] = third;
            if (AR == Arith::kFactored) {  // e*gm (see row_consts)
                em[k] = em[k] * c.gm;
                ex[k] = ex[k] * c.gm;
            }
            if (padding) em[k] = ex[k] = T(0);
            rmask[k / 8] |= (e & 15u) << (4 * (k % 8));
            Ya[k] = padding ? ic_n : T(0);
            // Both register sets start as column 0, so a lane that has not
            // started yet (j < 1) reads column 0 from either.
            Mb[k] = Ma[k];
            Xb[k] = Xa[k];
            Yb[k] = Ya[k];
        }
        const int wl = threadIdx.x & 31;
        if constexpr (ETAB) etab_fill<K>(etab, wl, em, ex, rmask);
        // Row above this lane's first row, as an Edge. Even steps use (d0 =
        // column j-1, u1 = column j) and refill d0 for the next-but-one step;
        // odd steps use (d1, u0). Lanes > 0 get them from lane t-1 by shuffle.
        using E = Edge<T, SUMS>;
        // The first row's transitions: this lane's own (for lane 0's
        // boundary) and the next lane's (for this lane's edge; the last lane
        // of a group gets its own back, and its edge goes nowhere).
        const RowTransitions<T> own{mm[0], gm[0], mx[0], my[0], cc[0]};
        RowTransitions<T> below = own;
        if constexpr (SUMS && !CONST) {
            if constexpr (!UNIFORM) {  // (a Tr::kUniform pair's rows differ in cc only: 1 in padding rows)
                below.mm = __shfl_down_sync(gmask, mm[0], 1, P);
                below.gm = __shfl_down_sync(gmask, gm[0], 1, P);
                below.mx = __shfl_down_sync(gmask, mx[0], 1, P);
            }
            below.cc = __shfl_down_sync(gmask, cc[0], 1, P);
        }
        const E bE = edge_of<V>(a.gc, own, T(0), T(0), ic_n);  // lane 0's boundary in stripe 0
        E d0 = shfl_edge(gmask, edge_of<V>(a.gc, below, Ma[K - 1], Xa[K - 1], Ya[K - 1]), P);
        E d1 = d0;  // "u1" of the even step is d1 of the odd one
        const T* sM = scratch;
        const T* sX = scratch + ss;
        const T* sY = scratch + 2 * ss;
        if (t == 0) {
            d0 = d1 = bE;
            if constexpr (STRIPED) {
                if (stripe > 0) {
                    d0 = E{T(0), T(0), T(0)};  // column 0 of rows >= 1
                    d1 = E{sM[1], sX[1], sY[1]};
                }
            }
        }
        // striped: lane 0 prefetches the previous stripe's last row 4 steps ahead
        T pfM[4], pfX[4], pfY[4];
        const bool from_scratch = STRIPED && stripe > 0 && t == 0;
        if (STRIPED) {
#pragma unroll
            for (int b = 0; b < 4; ++b) {
                const int col = min(b + 2, n + 1);
                pfM[b] = from_scratch ? sM[col] : T(0);
                pfX[b] = from_scratch ? sX[col] : T(0);
                pfY[b] = from_scratch ? sY[col] : ic_n;
            }
        }
        // Lane 0's edge after step b of a block: its boundary (row 0, or the
        // previous stripe's last row; a Tr::kConst kernel is never striped).
        auto lane0_edge = [&](int b) -> E {
            if constexpr (STRIPED)
                return E{pfM[b], pfX[b], pfY[b]};
            else
                return bE;
        };
        const bool last_stripe = stripe == nstripes - 1;
        uint32_t h = ETAB ? kPadPlane : 0u;  // (a lane that has not started passes it on: emissions 0)
        // Haplotype words are loaded two blocks of 4 steps ahead: one block
        // is shorter than a load that misses L1.
        uint32_t next_word = __ldg(hap4), after_next = __ldg(hap4 + 1);
        T evA[K], evB[K];  // PF: the emissions of this step and the next (alternating)
        if constexpr (PF) {
            if (t == 0) h = byte_at(next_word, 0);  // step 0's base (the other lanes have not started)
            etab_load<K>(etab, wl, h, evA);
        }

        // One step b of a block: rows O* (column j-1) -> N* (column j), edges
        // D (column j-1, refilled with this step's) and U (column j); EVC/EVN
        // (PF): this step's emissions and the next's. After each step: the
        // lane's last row goes to lane t+1; lane 0 takes its boundary (row 0,
        // or the previous stripe's last row).
        // A macro, not a function: the same statements in a __forceinline__
        // function (the registers passed by reference) compile to other SASS
        // in every instantiation (instruction order, registers), so the
        // kernels' measured speed holds for the macro's code only.
#define PYPHMM_STEP(CHECK, B, OM, OX, OY, NM, NX, NY, D, U, EVC, EVN)                                               \
    {                                                                                                               \
        h = shfl_up(gmask, h, P);                                                                                   \
        if constexpr (PF) { /* the next step's base and emissions */                                                \
            if (t == 0) h = (B) < 3 ? byte_at(word, (B) + 1) : byte_at(next_word, 0);                               \
            etab_load<K>(etab, wl, h, EVN);                                                                         \
        } else if (t == 0) {                                                                                        \
            h = ETAB ? byte_at(word, B) : mask_of(byte_at(word, B));                                                \
        }                                                                                                           \
        const int j = s0 + (B)-t + 1;                                                                               \
        const bool in_hap = static_cast<unsigned>(j - 1) < static_cast<unsigned>(n_act);                            \
        if (!(CHECK) || in_hap) {                                                                                   \
            T ev[K];                                                                                                \
            if constexpr (PF) {                                                                                     \
                _Pragma("unroll") for (int k_ = 0; k_ < K; ++k_) ev[k_] = EVC[k_];                                  \
            } else if constexpr (ETAB) {                                                                            \
                etab_load<K>(etab, wl, h, ev);                                                                      \
            }                                                                                                       \
            if constexpr (CONST)                                                                                    \
                lane_step_const<K, CB, AR>(a.gc, cc, ev, D, U, OM, OX, OY, NM, NX, NY);                             \
            else                                                                                                    \
                lane_step<T, K, AR, ETAB, SUMS>(mm, gm, mx, my, cc, em, ex, ev, rmask, h, D, U, OM, OX, OY, NM, NX, \
                                                NY);                                                                \
            if (t == P - 1 && (!(CHECK) || in_hap)) {                                                               \
                if (last_stripe) {                                                                                  \
                    sum_m += NM[K - 1];                                                                             \
                    sum_x += NX[K - 1];                                                                             \
                } else if (STRIPED) {                                                                               \
                    scratch[j] = NM[K - 1];                                                                         \
                    scratch[ss + j] = NX[K - 1];                                                                    \
                    scratch[2 * ss + j] = NY[K - 1];                                                                \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        const E e_ = shfl_edge(gmask, edge_of<V>(a.gc, below, NM[K - 1], NX[K - 1], NY[K - 1]), P);                 \
        D = t == 0 && !PF ? lane0_edge(B) : e_; /* (PF: lane 0 got its own boundary) */                             \
    }

        // STEPS. Blocks of 4 steps in which every lane of every group of the
        // warp has started (lane t at column s-t+1 >= 1) and no lane has
        // passed its haplotype's end (column <= n) run with no per-step
        // checks. With emission tables every block runs so: a lane outside
        // columns 1..n has the padding plane's emissions, 0. Before its start
        // that reproduces column 0 exactly (M = 0*(...), X = mx*0 + cc*0,
        // Y = my*0 + cc*Y: 0 in read rows, IC/n in padding rows where cc =
        // 1), and past the end every row's M and X are 0 (X's rows above
        // are, down from lane 0's boundary, 0): the last lane adds exact
        // zeros to the result sum there. One copy of the steps' code: each
        // process under MPS loads its own copy of the kernels, and the
        // instruction caches hold fewer copies of a larger loop. (n_min: the
        // shortest haplotype of the warp's valid groups.)
        const int fast_lo = (P - 1 + 3) & ~3;
        const int fast_hi = n_min - 4;  // lane 0 at column s0 + 4 <= n_min
        for (int s0 = 0; s0 < steps; s0 += 4) {
            const uint32_t word = next_word;
            next_word = after_next;
            // (clamped: a warp may run more steps than this pair's padding covers)
            after_next = __ldg(hap4 + min((s0 >> 2) + 2, (n + 3) / 4 + 10));
            T qM[4], qX[4], qY[4];
            if (STRIPED) {
#pragma unroll
                for (int b = 0; b < 4; ++b) {  // values for steps s0+4..s0+7 (columns s0+b+6)
                    const int col = min(s0 + b + 6, n + 1);
                    qM[b] = from_scratch ? sM[col] : T(0);
                    qX[b] = from_scratch ? sX[col] : T(0);
                    qY[b] = from_scratch ? sY[col] : ic_n;
                }
            }
            // even step: old a -> new b, diag d0, up d1, refill d0
            if (ETAB || (s0 >= fast_lo && s0 <= fast_hi)) {  // warp-uniform: every lane active in all 4 steps
                PYPHMM_STEP(false, 0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, evA, evB)
                PYPHMM_STEP(false, 1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, evB, evA)
                PYPHMM_STEP(false, 2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, evA, evB)
                PYPHMM_STEP(false, 3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, evB, evA)
            } else {  // wavefront fill / drain: lanes outside 1..n idle
                PYPHMM_STEP(true, 0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, evA, evB)
                PYPHMM_STEP(true, 1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, evB, evA)
                PYPHMM_STEP(true, 2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, evA, evB)
                PYPHMM_STEP(true, 3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, evB, evA)
            }
            if (STRIPED) {
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    pfM[b] = qM[b];
                    pfX[b] = qX[b];
                    pfY[b] = qY[b];
                }
            }
        }
#undef PYPHMM_STEP
        if (STRIPED) __syncwarp();
    }
    // A pair is unfactorable if any lane of its group found a gm == 0 row.
    if (AR == Arith::kFactored) {
        const unsigned lanes = __ballot_sync(gmask, unfactorable);
        const unsigned group = P == 32 ? 0xffffffffu : ((1u << P) - 1u) << ((threadIdx.x & 31) & ~(P - 1));
        unfactorable = (lanes & group) != 0u;
    }
    if constexpr (CONST) return __fmaf_rn(sum_x, a.gc.pw[(K - 1) % CB], sum_m);  // sum_x: X' of row K-1
    return sum_m + sum_x;
}

template <typename T>
__device__ __forceinline__ void store_result(const KernelArgs<T>& a, int pi, const PairDesc& d, T sum, bool redo);

template <>
__device__ __forceinline__ void store_result<float>(const KernelArgs<float>& a, int pi, const PairDesc& d, float sum,
                                                    bool redo) {
    // GKL's underflow guard: redo this pair in double. (Also for a sum that is
    // not finite, which valid input cannot give: never return inf or NaN.)
    // The slot gets kRedoMark until then (see kPendingMark).
    if (!(sum >= 1e-28f && sum <= 3.4028235e38f) || redo) {
        a.under_list[atomicAdd(a.under_count, 1)] = pi;
        a.out[d.out] = __longlong_as_double(static_cast<long long>(kRedoMark));
        return;
    }
    // log10 of the float sum, correctly rounded to float (through double, so
    // it equals the host's log10f), then the subtraction in float as GKL does.
    const float l = static_cast<float>(log10(static_cast<double>(sum)));
    a.out[d.out] = static_cast<double>(__fsub_rn(l, a.tab.log10_ic));
}

template <>
__device__ __forceinline__ void store_result<double>(const KernelArgs<double>& a, int, const PairDesc& d, double sum,
                                                     bool) {
    a.out[d.out] = log10(sum) - a.tab.log10_ic;
}

// One launch's share of a bin: the pairs [a.first, a.first + count) (or the
// listed ones), `nblocks` blocks of which this is block `block`. Groups of a
// warp take consecutive pairs and run the warp's longest step count, so all
// shuffles are full-warp and converged.
template <typename V, int BLOCK, typename T = typename V::T>
__device__ __forceinline__ void run_bin(const KernelArgs<T>& a, int block, int nblocks, float4* etab_block) {
    constexpr int P = V::P, K = V::K;
    constexpr bool STRIPED = V::STRIPED, ETAB = V::ETAB;
    float4* etab = ETAB ? etab_block + (threadIdx.x >> 5) * etab_warp_float4s<K>() : nullptr;
    constexpr int G = 32 / P;  // groups per warp
    const int lane = threadIdx.x & 31;
    const int t = lane & (P - 1);
    const int g = lane / P;
    const int warp = (block * BLOCK + static_cast<int>(threadIdx.x)) >> 5;
    const int nwarps = nblocks * (BLOCK / 32);
    const int total = a.count_ptr ? *a.count_ptr : a.count;
    if (a.header_count && block == 0 && threadIdx.x == 0) *a.header_count = total;
    T* scratch = STRIPED ? a.scratch + static_cast<size_t>(warp) * 3 * a.scratch_stride : nullptr;
    for (int base = warp * G; base < total; base += nwarps * G) {
        const int q = base + g;
        const bool valid = q < total;
        const int qq = valid ? q : base;
        const int pi = a.index ? a.index[qq] : a.first + qq;
        const PairDesc d = a.pairs[pi];
        const int n_act = valid ? d.n : 0;
        const int steps = __reduce_max_sync(0xffffffffu, valid ? d.n + P - 1 : 0);
        // (only the kernels without tables check steps against the shortest haplotype)
        const int n_min = ETAB ? INT_MAX : __reduce_min_sync(0xffffffffu, valid ? d.n : INT_MAX);
        bool redo = false;
        const T sum = forward_pair<V>(a, d, n_act, n_min, steps, t, scratch, etab, redo);
        if (valid && t == P - 1) store_result<T>(a, pi, d, sum, redo);
    }
}

// Blocks per SM the register allocation must allow. The uniform kernels fit
// more warps without spilling when asked to (checked with ptxas -v: no spill
// stores); the others keep ptxas's own choice.
#ifndef PYPHMM_UNIFORM_MIN_BLOCKS
#define PYPHMM_UNIFORM_MIN_BLOCKS 4
#endif
template <Tr TR, int K>
constexpr int min_blocks() {
    return TR != Tr::kRow ? (K <= 10 ? PYPHMM_UNIFORM_MIN_BLOCKS : 3) : 1;
}

template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK, (min_blocks<V::TR, V::K>())) pairhmm_kernel(KernelArgs<typename V::T> a) {
    __shared__ float4 etab[V::ETAB ? (BLOCK / 32) * etab_warp_float4s<V::K>() : 1];
    run_bin<V, BLOCK>(a, blockIdx.x, gridDim.x, etab);
}

// Several short-read bins in ONE launch: block ranges map to bins, so bins
// run side by side (no per-bin tail, one launch per call for typical
// regions). plan.bin[i] is a float bin below kNumFusedBins, or
// kLatencyBin + K for a latency variant with K rows per lane (a whole warp
// per pair: a call too small to fill the GPU finishes in fewer steps per
// lane; bins of equal latency_k share it).
constexpr int kLatencyBin = 16;
static_assert(kNumFusedBins <= kLatencyBin, "latency bin codes follow the fused bins");
constexpr int kMaxLatencyK = latency_k(kNumLatencyBins - 1);
static_assert(kFloatBins[kNumLatencyBins - 1].max_rows <= kFactoredMaxRows,
              "latency variants share one arithmetic (see LatencyBin)");
struct FusedPlan {
    int nb;
    int block_start[kNumFusedBins + 1];
    int bin[kNumFusedBins];
    int first[kNumFusedBins];
    int count[kNumFusedBins];
};

// Fused bin b's variant: the table's P, K and arithmetic.
template <bool FAST, Tr TR, int b>
using FusedBin =
    Variant<float, Lanes<kFloatBins[b].P>, RowsPerLane<kFloatBins[b].K>,
            Arithmetic<float_arith(FAST, kFloatBins[b].max_rows)>, Transitions<TR>, ConstBlock<const_block(b)>>;
// The latency variant with K rows per lane: a whole warp per pair, emissions
// prefetched, and in the kConst kernels each lane one block, as const_block
// assumes.
template <bool FAST, Tr TR, int K>
using LatencyBin = Variant<float, Lanes<32>, RowsPerLane<K>, Arithmetic<float_arith(FAST, kFloatBins[0].max_rows)>,
                           Transitions<TR>, Prefetch<>, ConstBlock<K>>;

// Runs plan code `code`: fused bin b (code b) with the table's P, K and
// arithmetic, or the latency variant with K rows per lane (code
// kLatencyBin + K; in the kConst kernels each lane is one block, as
// const_block assumes). A switch (one jump table) keeps the kernel's register
// allocation as low as hand-written cases: an if-chain over the codes costs
// registers in the kConst kernels, which run at the 128-register cap.
template <bool FAST, Tr TR, int BLOCK>
__device__ __forceinline__ void run_fused(int code, const KernelArgs<float>& a, int block, int nblocks, float4* etab) {
    static_assert(kNumFusedBins == 7 && kMaxLatencyK == 5, "one case per fused bin and latency K below");
    switch (code) {
        case 0: run_bin<FusedBin<FAST, TR, 0>, BLOCK>(a, block, nblocks, etab); break;
        case 1: run_bin<FusedBin<FAST, TR, 1>, BLOCK>(a, block, nblocks, etab); break;
        case 2: run_bin<FusedBin<FAST, TR, 2>, BLOCK>(a, block, nblocks, etab); break;
        case 3: run_bin<FusedBin<FAST, TR, 3>, BLOCK>(a, block, nblocks, etab); break;
        case 4: run_bin<FusedBin<FAST, TR, 4>, BLOCK>(a, block, nblocks, etab); break;
        case 5: run_bin<FusedBin<FAST, TR, 5>, BLOCK>(a, block, nblocks, etab); break;
        case 6: run_bin<FusedBin<FAST, TR, 6>, BLOCK>(a, block, nblocks, etab); break;
        case kLatencyBin + 1: run_bin<LatencyBin<FAST, TR, 1>, BLOCK>(a, block, nblocks, etab); break;
        case kLatencyBin + 2: run_bin<LatencyBin<FAST, TR, 2>, BLOCK>(a, block, nblocks, etab); break;
        case kLatencyBin + 3: run_bin<LatencyBin<FAST, TR, 3>, BLOCK>(a, block, nblocks, etab); break;
        case kLatencyBin + 4: run_bin<LatencyBin<FAST, TR, 4>, BLOCK>(a, block, nblocks, etab); break;
        case kLatencyBin + 5: run_bin<LatencyBin<FAST, TR, 5>, BLOCK>(a, block, nblocks, etab); break;
        default: break;
    }
}

// This block's entry of the plan, read at constant offsets only. A kernel's
// parameters reach the SM's constant cache cold with every launch; a lookup
// indexed by a loaded value would wait for one miss after another, while
// these reads (and the kernel's touch of its arguments) issue together.
struct FusedEntry {
    int code, first, count, block, nblocks;
};
__device__ __forceinline__ FusedEntry fused_entry(const FusedPlan& plan) {
    const int b = blockIdx.x;
    FusedEntry e{plan.bin[0], plan.first[0], plan.count[0], 0, 0};
    int start = 0, end = plan.block_start[1];
#pragma unroll
    for (int i = 1; i < kNumFusedBins; ++i) {
        if (i < plan.nb && b >= plan.block_start[i]) {
            e.code = plan.bin[i];
            e.first = plan.first[i];
            e.count = plan.count[i];
            start = plan.block_start[i];
            end = plan.block_start[i + 1];
        }
    }
    e.block = b - start;
    e.nblocks = end - start;
    return e;
}

template <bool FAST, Tr TR, int BLOCK>
__global__ void __launch_bounds__(BLOCK, (min_blocks<TR, kMaxFusedK>()))
    pairhmm_fused_kernel(KernelArgs<float> a, FusedPlan plan) {
    __shared__ float4 etab[(BLOCK / 32) * etab_warp_float4s<kMaxFusedK>()];  // the largest K of these bins
    // Some of the arguments the bins read first, spread over the parameter
    // block, so that their misses overlap those of the plan (see fused_entry).
    asm volatile("" ::"l"(a.pairs), "l"(a.tab.mm), "f"(a.gc.pw[1]), "f"(a.gc.xs[kMaxConstBlock - 1]));
    const FusedEntry e = fused_entry(plan);
    a.first = e.first;
    a.count = e.count;
    run_fused<FAST, TR, BLOCK>(e.code, a, e.block, e.nblocks, etab);
}

}  // namespace cudak
}  // namespace pyphmm
