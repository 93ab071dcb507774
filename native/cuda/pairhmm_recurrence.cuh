// The recurrence of the CUDA PairHMM's wavefront kernels
// (pairhmm_kernels.cuh): what one lane computes at one step, and the
// parameters of a kernel instantiation (KernelTraits, named by Variant).
//
// A group of P consecutive lanes computes one read x haplotype pair. Lane t
// owns K consecutive rows of the (padded) read in registers: its transition
// probabilities (computed once per pair from the host-built tables), and the
// M/X/Y values of the previous column. At step s lane t computes column
// j = s - t + 1 for its K rows, so the group sweeps an anti-diagonal; what
// lane t's first row needs of lane t-1's last row reaches it by warp
// shuffles (an Edge: two sums, or M, X and Y), and the haplotype base enters
// at lane 0 and moves down one lane per step.
//
// Row padding goes at the TOP of the matrix, so the read's last row is
// always the last register row of the last lane (no dynamic register index
// when summing the result). A padding row has mm = gm = mx = my = 0 and
// xx = yy = 1 and starts with Y = INITIAL_CONSTANT / n: it reproduces row 0
// (M = X = 0, Y = IC/n) exactly, so padding changes no bit of the result.
//
// Emissions: the float kernels without stripes keep, per lane, the emission
// of each of its rows for each haplotype base (A, C, G, T, N, and 0 for the
// padding past a haplotype's end) in shared memory and fetch a step's K
// values with K/4 vector loads (see etab_fill); the others choose
// match ? em : ex per cell from registers.
//
// Reads longer than P*K rows (STRIPED instantiations) are swept in stripes of
// P*K rows; the last lane stores the stripe's last row (M, X, Y per column)
// in a per-group scratch slot and lane 0 of the next stripe reads it back.
//
// Float arithmetic (KernelTraits::AR; PYPHMM_DEV's cuda_arith picks):
//  exact (Arith::kExact): GKL's operation order, every product and sum rounded on
//    its own (__fmul_rn/__fadd_rn, so nvcc cannot contract), the same
//    roundings as the CPU backend:
//      M = e * ((mm*M' + gm*X') + gm*Y'),  X = mx*M^ + xx*X^,  Y = my*M< + yy*Y<
//  fast (default) uses, for reads of up to kFactoredMaxRows rows (kFactored),
//      M = (e*gm) * ((mm/gm)*M' + (X' + Y'))   with fused multiply-adds,
//    9 instead of 12 floating-point instructions per cell; and for longer
//    reads GKL's order with fused multiply-adds (kFma). The factored
//    constants are rounded once per row, an error that grows with the read
//    length (docs/PERFORMANCE.md has the measurements), hence the row limit.
// The double pass always uses the exact arithmetic.
//
// Transition constants (KernelTraits::TR, fast arithmetic only): per read
// row from the tables (Tr::kRow); once per pair when the read has one
// insertion/deletion/gap-continuation quality triple (Tr::kUniform); or
// once per launch for the reads of the call's chosen triple (Tr::kConst, GATK's
// usual data: every read at 45/45/10), which reads them from the constant
// bank and keeps X scaled so that its recurrence is one FFMA (GapConsts).
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

#include "common/transitions.h"
#include "cuda/pairhmm_layout.h"

namespace pyphmm {
namespace cudak {

template <typename T>
struct DevTables {
    const T* ph2pr;  // 128 entries
    const T* third;  // ph2pr / 3, the mismatch emission (as the host divides)
    const T* mm;     // GKL's triangular match-to-match table
    T ic;            // INITIAL_CONSTANT
    T log10_ic;      // log10(INITIAL_CONSTANT), as the host computed it

    // The table view row_transitions reads (through the read-only cache).
    __device__ __forceinline__ T prob(int q) const { return __ldg(ph2pr + q); }
    __device__ __forceinline__ T mm_at(int index) const { return __ldg(mm + index); }
};

// What one instantiation of the wavefront kernels computes. Instantiation
// sites name each parameter (Variant, below); the kernel templates take this
// one type.
template <typename Real, int kLanes, int kRows, bool kStriped, Arith kArith, Tr kTr, bool kPrefetch, int kBlock>
struct KernelTraits {
    using T = Real;                            // float or double
    static constexpr int P = kLanes;           // lanes per pair (a group), a divisor of 32
    static constexpr int K = kRows;            // rows per lane
    static constexpr bool STRIPED = kStriped;  // reads longer than P*K rows, in stripes
    static constexpr Arith AR = kArith;
    static constexpr Tr TR = kTr;
    static constexpr bool PF = kPrefetch;  // a step's base and emissions fetched a step ahead (see forward_pair)
    static constexpr int CB = kBlock;      // the Tr::kConst kernels' block of rows (const_block in pairhmm_layout.h)
    // Emission tables: float kernels without stripes.
    static constexpr bool ETAB = !STRIPED && sizeof(T) == 4;
    // Edges carry the first row's sums (see Edge), except with 16 rows a lane:
    // there the shuffle saved is a small share of a step, and the registers
    // it takes cost the uniform kernel a block per SM.
    static constexpr bool SUMS = ETAB && K <= kMaxFusedK;
    static constexpr bool UNIFORM = TR != Tr::kRow, CONST = TR == Tr::kConst;
    static_assert(!PF || (ETAB && P == 32), "prefetched emissions: the latency variants, one pair a warp");
    static_assert(!STRIPED || P == 32, "striped kernels use one group per warp");
    static_assert(TR != Tr::kConst || (ETAB && AR >= Arith::kFma),
                  "constant transitions: fused float kernels with tables");
};

// A kernel variant's parameters by name, in any order, each at most once:
//   Variant<float, Lanes<16>, RowsPerLane<8>, Arithmetic<Arith::kFma>>
// Lanes and RowsPerLane are required; the others default to no stripes,
// Arith::kExact, Tr::kRow, no prefetch and blocks of kConstBlock rows.
// Variant is the one KernelTraits type of those values, so sites that name
// the same parameters in another order share a kernel.
enum class Param : int { kLanes, kRowsPerLane, kStriped, kArith, kTransitions, kPrefetch, kConstBlock, kCount };
template <Param F, int V>
struct Named {
    static constexpr Param param = F;
    static constexpr int value = V;
};
template <int P>
using Lanes = Named<Param::kLanes, P>;  // lanes per pair
template <int K>
using RowsPerLane = Named<Param::kRowsPerLane, K>;
template <bool S = true>
using Striped = Named<Param::kStriped, S>;  // reads of any length, in stripes of P*K rows
template <Arith A>
using Arithmetic = Named<Param::kArith, static_cast<int>(A)>;
template <Tr X>
using Transitions = Named<Param::kTransitions, static_cast<int>(X)>;
template <bool PF = true>
using Prefetch = Named<Param::kPrefetch, PF>;  // see forward_pair
template <int CB>
using ConstBlock = Named<Param::kConstBlock, CB>;  // see const_block

template <Param F, int kDefault, typename... N>
constexpr int named_value() {
    int v = kDefault;
    ((N::param == F ? static_cast<void>(v = N::value) : static_cast<void>(0)), ...);
    return v;
}
template <typename... N>
constexpr bool named_once() {
    int seen[static_cast<int>(Param::kCount)] = {};
    bool once = true;
    ((once = once && seen[static_cast<int>(N::param)]++ == 0), ...);
    return once;
}
template <typename Real, typename... N>
struct VariantOf {
    static_assert(named_once<N...>(), "each parameter named at most once");
    static constexpr int P = named_value<Param::kLanes, 0, N...>(), K = named_value<Param::kRowsPerLane, 0, N...>();
    static_assert(P > 0 && K > 0, "Lanes and RowsPerLane are required");
    using type = KernelTraits<Real, P, K, named_value<Param::kStriped, false, N...>() != 0,
                              static_cast<Arith>(named_value<Param::kArith, static_cast<int>(Arith::kExact), N...>()),
                              static_cast<Tr>(named_value<Param::kTransitions, static_cast<int>(Tr::kRow), N...>()),
                              named_value<Param::kPrefetch, false, N...>() != 0,
                              named_value<Param::kConstBlock, kConstBlock, N...>()>;
};
template <typename Real, typename... N>
using Variant = typename VariantOf<Real, N...>::type;

template <typename T, bool FMA>
struct Ops;

template <>
struct Ops<float, false> {
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
    // a*b + acc, product rounded first
    static __device__ __forceinline__ float madd(float a, float b, float acc) {
        return __fadd_rn(__fmul_rn(a, b), acc);
    }
};
template <>
struct Ops<float, true> {
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
    static __device__ __forceinline__ float madd(float a, float b, float acc) { return __fmaf_rn(a, b, acc); }
};
template <>
struct Ops<double, false> {
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
    static __device__ __forceinline__ double madd(double a, double b, double acc) {
        return __dadd_rn(__dmul_rn(a, b), acc);
    }
};

template <typename T>
__device__ __forceinline__ T shfl_up(unsigned mask, T v, int width) {
    return __shfl_up_sync(mask, v, 1, width);
}

// v, as a value the compiler cannot recompute: without it, nvcc re-derives
// a pair's loop-invariant division in every block of steps (a dozen
// instructions, with a call) rather than keep one register.
__device__ __forceinline__ float opaque(float v) {
    asm("" : "+f"(v));
    return v;
}
__device__ __forceinline__ double opaque(double v) {
    asm("" : "+d"(v));
    return v;
}

template <typename T>
__device__ __forceinline__ T tdiv(T a, T b);
template <>
__device__ __forceinline__ float tdiv<float>(float a, float b) {
    return __fdiv_rn(a, b);
}
template <>
__device__ __forceinline__ double tdiv<double>(double a, double b) {
    return __ddiv_rn(a, b);
}

// A cell's sums, shared by the rows of a lane and by the edge a lane hands
// the lane below (Edge), so that both round alike. M's sum is M before the
// emission: M = e * m_sum.
template <typename T, Arith AR>
__device__ __forceinline__ T m_sum(T mm, T gm, T pm, T px, T py) {
    typedef Ops<T, (AR >= Arith::kFma)> A;
    if (AR == Arith::kFactored)  // (see row_consts): mm = mm/gm, the emissions carry gm
        return A::madd(mm, pm, px + py);
    return A::madd(gm, py, A::madd(mm, pm, A::mul(gm, px)));
}
template <typename T, Arith AR>
__device__ __forceinline__ T x_of(T mx, T cc, T am, T ax) {
    typedef Ops<T, (AR >= Arith::kFma)> A;
    return A::madd(mx, am, A::mul(cc, ax));
}
// The same for the Tr::kConst kernels, whose X is held as X' = X * cc^-r in
// blocks of B rows (r: the block row of px and ax; see GapConsts).
template <Arith AR>
__device__ __forceinline__ float m_sum_const(const GapConsts& g, int r, float pm, float px, float py) {
    if (AR == Arith::kFactored)  // ev = e*gm: M = e*gm*((mm/gm)*M + X + Y)
        return __fmaf_rn(g.mmg, pm, __fmaf_rn(g.pw[r], px, py));
    return __fmaf_rn(g.gm, py, __fmaf_rn(g.mm, pm, __fmul_rn(g.gpw[r], px)));  // GKL's order
}
// a block's first row: X' = X = mx*M_above + cc*(X'_above * cc^r)
__device__ __forceinline__ float x_block_start(const GapConsts& g, int r, float am, float ax) {
    return __fmaf_rn(g.pw[r + 1], ax, __fmul_rn(g.mx, am));
}

// What a lane hands the lane below after each step, from its last row at
// the step's column. The lane below's first row takes M's sum from the
// diagonal (column j-1) and X from above (column j).
//  - Kernels with emission tables (float, not striped; SUMS): those two,
//    already computed with the first row's transitions, which the lane above
//    keeps (`below`; the Tr::kConst kernels have them in GapConsts):
//      w = the row below's M sum (its M = e * w, a column later),
//      v = the row below's X at this column.
//    The warp then shuffles two values a step instead of three, and the row
//    below spends no instruction on them. It is the same arithmetic (m_sum,
//    x_of), so results keep their bits.
//  - The others (double, striped, 16 rows a lane: see KernelTraits::SUMS):
//    M, X and Y themselves (a striped kernel's lane 0 reads the previous
//    stripe's last row back as values).
template <typename T, bool SUMS>
struct Edge {
    T m, x, y;
};
template <typename T>
struct Edge<T, true> {
    T w, v;
};

template <typename T, bool SUMS>
__device__ __forceinline__ Edge<T, SUMS> shfl_edge(unsigned mask, const Edge<T, SUMS>& e, int width) {
    if constexpr (SUMS)
        return {shfl_up(mask, e.w, width), shfl_up(mask, e.v, width)};
    else
        return {shfl_up(mask, e.m, width), shfl_up(mask, e.x, width), shfl_up(mask, e.y, width)};
}

// The edge of a lane whose last row holds (m, x, y) at some column; `below`:
// the transitions of the next row (the next lane's first).
template <typename V, typename T = typename V::T>
__device__ __forceinline__ Edge<T, V::SUMS> edge_of(const GapConsts& g, const RowTransitions<T>& below, T m, T x, T y) {
    if constexpr (!V::SUMS) {
        return {m, x, y};
    } else if constexpr (V::CONST) {
        constexpr int r = (V::K - 1) % V::CB;  // the last row's block row (the next row starts a block)
        return {m_sum_const<V::AR>(g, r, m, x, y), x_block_start(g, r, m, x)};
    } else {
        return {m_sum<T, V::AR>(below.mm, below.gm, m, x, y), x_of<T, V::AR>(below.mx, below.cc, m, x)};
    }
}

// A lane's first row at column j, from the lane above's edges at columns
// j-1 (d) and j (u): ready-made sums, or the values to combine (mm, gm, mx,
// cc: this row's transitions).
template <typename T, Arith AR>
__device__ __forceinline__ void first_row(const Edge<T, true>& d, const Edge<T, true>& u, T e, T, T, T, T, T& nM,
                                          T& nX) {
    nM = Ops<T, (AR >= Arith::kFma)>::mul(e, d.w);
    nX = u.v;
}
template <typename T, Arith AR>
__device__ __forceinline__ void first_row(const Edge<T, false>& d, const Edge<T, false>& u, T e, T mm, T gm, T mx, T cc,
                                          T& nM, T& nX) {
    nM = Ops<T, (AR >= Arith::kFma)>::mul(e, m_sum<T, AR>(mm, gm, d.m, d.x, d.y));
    nX = x_of<T, AR>(mx, cc, u.m, u.x);
}

// One wavefront step of one lane: its K rows at column j. `o*` hold the
// rows at column j-1, `n*` receive column j; d is the lane above's edge at
// column j-1 and u at column j. Callers alternate two register sets for o/n
// (and for d/u), so no value is ever copied between steps.
template <typename T, int K, Arith AR, bool ETAB, bool SUMS>
__device__ __forceinline__ void lane_step(const T (&mm)[K], const T (&gm)[K], const T (&mx)[K], const T (&my)[K],
                                          const T (&cc)[K], const T (&em)[K], const T (&ex)[K], const T (&ev)[K],
                                          const uint32_t (&rmask)[(K + 7) / 8], uint32_t h, const Edge<T, SUMS>& d,
                                          const Edge<T, SUMS>& u, const T (&oM)[K], const T (&oX)[K], const T (&oY)[K],
                                          T (&nM)[K], T (&nX)[K], T (&nY)[K]) {
    typedef Ops<T, (AR >= Arith::kFma)> A;
    const uint32_t hrep = h * 0x11111111u;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const bool match = (rmask[k / 8] & hrep & (0xfu << (4 * (k % 8)))) != 0u;
        const T e = ETAB ? ev[k] : match ? em[k] : ex[k];
        if (k == 0) {
            first_row<T, AR>(d, u, e, mm[0], gm[0], mx[0], cc[0], nM[0], nX[0]);
        } else {
            nM[k] = A::mul(e, m_sum<T, AR>(mm[k], gm[k], oM[k - 1], oX[k - 1], oY[k - 1]));
            nX[k] = x_of<T, AR>(mx[k], cc[k], nM[k - 1], nX[k - 1]);
        }
        nY[k] = A::madd(my[k], oM[k], A::mul(cc[k], oY[k]));
    }
}

// lane_step of the Tr::kConst kernels (float, fused arithmetic, emission
// tables): X held as X' = X * cc^-(k % B) in blocks of B rows (see
// GapConsts). Row 0 starts a block.
template <int K, int B, Arith AR>
__device__ __forceinline__ void lane_step_const(const GapConsts& g, const float (&cc)[K], const float (&ev)[K],
                                                const Edge<float, true>& d, const Edge<float, true>& u,
                                                const float (&oM)[K], const float (&oX)[K], const float (&oY)[K],
                                                float (&nM)[K], float (&nX)[K], float (&nY)[K]) {
    static_assert(B >= 1 && B <= kMaxConstBlock, "GapConsts holds kMaxConstBlock powers");
    nM[0] = __fmul_rn(ev[0], d.w);
    nX[0] = u.v;
#pragma unroll
    for (int k = 1; k < K; ++k) {
        const int r_above = (k - 1) % B;  // block row of oX[k-1] and nX[k-1]
        nM[k] = __fmul_rn(ev[k], m_sum_const<AR>(g, r_above, oM[k - 1], oX[k - 1], oY[k - 1]));
        if (k % B == 0)
            nX[k] = x_block_start(g, r_above, nM[k - 1], nX[k - 1]);
        else
            nX[k] = __fmaf_rn(g.xs[k % B], nM[k - 1], nX[k - 1]);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) nY[k] = __fmaf_rn(g.my, oM[k], __fmul_rn(cc[k], oY[k]));  // cc[k] = 1 in padding rows
}

// Arith::kFactored: gm is factored out of M's sum: e*(mm*M + gm*X + gm*Y)
// = (e*gm) * ((mm/gm)*M + (X + Y)), so mm holds mm/gm and the caller scales
// the emissions by gm. gm == 0 (gap-continuation quality 0) cannot be
// factored: such a row sets `unfactorable` and the pair is redone in double.
template <typename T, Arith AR>
__device__ __forceinline__ RowTransitions<T> row_consts(const DevTables<T>& tab, uint32_t e, bool& unfactorable) {
    RowTransitions<T> r = row_transitions<T>(tab, (e >> 11) & 127, (e >> 18) & 127, e >> 25);
    if (AR == Arith::kFactored) {
        if (r.gm == T(0)) {
            unfactorable = true;
            r.mm = T(0);
        } else {
            r.mm = tdiv<T>(r.mm, r.gm);
        }
    }
    return r;
}

// Emission table (float kernels without stripes, ETAB): each lane keeps the
// emission of each of its K rows for each haplotype base in shared memory,
// laid out [plane][K/4 chunks][32 lanes] of float4, so a step fetches its K
// emissions with K/4 conflict-free vector loads instead of choosing
// match ? em : ex per cell (a LOP3 to a predicate and an FSEL: two of the
// ~11 instructions per cell). The table is private to its lane (no sync).
// Planes: A, C, G, T, N and kPadPlane, whose emissions are 0; the host packs
// each haplotype byte as its plane (0-4) and the bytes past its end as
// kPadPlane, which lane 0 reads and the lanes pass on.
constexpr int kPlanes = 6;
static_assert(kPadPlane == kPlanes - 1, "the padding plane follows the five bases");
template <int K>
__host__ __device__ constexpr int etab_chunks() {
    return (K + 3) / 4;
}
template <int K>
__host__ __device__ constexpr int etab_warp_float4s() {
    return kPlanes * etab_chunks<K>() * 32;
}

// Byte b of a haplotype word (one byte permute).
__device__ __forceinline__ uint32_t byte_at(uint32_t word, int b) { return __byte_perm(word, 0u, 0x4440u + b); }

// A haplotype byte's base mask (A=1 C=2 G=4 T=8 N=15), for the kernels
// without tables.
__device__ __forceinline__ uint32_t mask_of(uint32_t plane) { return (0xF8421u >> (4u * plane)) & 0xfu; }

template <int K>
__device__ __forceinline__ void etab_fill(float4* tab, int wl, const float (&em)[K], const float (&ex)[K],
                                          const uint32_t (&rmask)[(K + 7) / 8]) {
    constexpr int KV = etab_chunks<K>();
#pragma unroll
    for (int p = 0; p < kPlanes; ++p) {
        const uint32_t pm = mask_of(p);
        const bool pad = p == kPadPlane;
#pragma unroll
        for (int v = 0; v < KV; ++v) {
            float q[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int k = 4 * v + i;
                q[i] = k < K && !pad ? (((rmask[k / 8] >> (4 * (k % 8))) & pm) ? em[k] : ex[k]) : 0.0f;
            }
            tab[(p * KV + v) * 32 + wl] = make_float4(q[0], q[1], q[2], q[3]);
        }
    }
}

template <int K>
__device__ __forceinline__ void etab_load(const float4* tab, int wl, uint32_t plane, float (&ev)[K]) {
    constexpr int KV = etab_chunks<K>();
    const float4* row = tab + plane * (KV * 32) + wl;
#pragma unroll
    for (int v = 0; v < KV; ++v) {
        const float4 q = row[v * 32];
        const float w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
            if (4 * v + i < K) ev[4 * v + i] = w[i];
    }
}

}  // namespace cudak
}  // namespace pyphmm
