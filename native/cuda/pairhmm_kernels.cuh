// Device side of the CUDA PairHMM: one warp-cooperative wavefront kernel,
// instantiated per (precision, group size P, rows per thread K).
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
// Float arithmetic (the AR template parameter; PYPHMM_CUDA_ARITH picks):
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
// Transition constants (the TR template parameter, fast arithmetic only):
// per read row from the tables (Tr::kRow); once per pair when the read has
// one insertion/deletion/gap-continuation quality triple (Tr::kUniform); or
// once per launch for the reads of the call's chosen triple (Tr::kConst, GATK's
// usual data: every read at 45/45/10), which reads them from the constant
// bank and keeps X scaled so that its recurrence is one FFMA (GapConsts).
#pragma once
#include <cstdint>
#include <utility>

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
//  - The others (double, striped, 16 rows a lane: see SUMS in forward_pair):
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
template <typename T, bool SUMS, Tr TR, int K, int B, Arith AR>
__device__ __forceinline__ Edge<T, SUMS> edge_of(const GapConsts& g, const RowTransitions<T>& below, T m, T x, T y) {
    if constexpr (!SUMS) {
        return {m, x, y};
    } else if constexpr (TR == Tr::kConst) {
        constexpr int r = (K - 1) % B;  // the last row's block row (the next row starts a block)
        return {m_sum_const<AR>(g, r, m, x, y), x_block_start(g, r, m, x)};
    } else {
        return {m_sum<T, AR>(below.mm, below.gm, m, x, y), x_of<T, AR>(below.mx, below.cc, m, x)};
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
__device__ __forceinline__ RowTransitions<T> row_consts(const KernelArgs<T>& a, uint32_t e, bool& unfactorable) {
    RowTransitions<T> r = row_transitions<T>(a.tab, (e >> 11) & 127, (e >> 18) & 127, e >> 25);
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
// CB: the Tr::kConst kernels' block of rows (see const_block in
// pairhmm_layout.h).
template <typename T, int P, int K, bool STRIPED, Arith AR, Tr TR, bool ETAB, bool PF, int CB>
__device__ __forceinline__ T forward_pair(const KernelArgs<T>& a, const PairDesc& d, int n_act, int n_min, int steps,
                                          int t, T* scratch, float4* etab, bool& unfactorable) {
    static_assert(!ETAB || (!STRIPED && sizeof(T) == 4), "emission tables: float kernels without stripes");
    static_assert(!PF || (ETAB && P == 32), "prefetched emissions: the latency variants, one pair a warp");
    static_assert(!STRIPED || P == 32, "striped kernels use one group per warp");
    static_assert(TR != Tr::kConst || (ETAB && AR >= Arith::kFma),
                  "constant transitions: fused float kernels with tables");
    constexpr bool UNIFORM = TR != Tr::kRow, CONST = TR == Tr::kConst;
    // Edges carry the first row's sums (see Edge), except with 16 rows a lane:
    // there the shuffle saved is a small share of a step, and the registers
    // it takes cost the uniform kernel a block per SM.
    constexpr bool SUMS = ETAB && K <= kMaxFusedK;
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
            u = row_consts<T, AR>(a, __ldg(rd), unfactorable);
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
                c = row_consts<T, AR>(a, e, unf);
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
        const E bE = edge_of<T, SUMS, TR, K, CB, AR>(a.gc, own, T(0), T(0), ic_n);  // lane 0's boundary in stripe 0
        E d0 = shfl_edge(gmask, edge_of<T, SUMS, TR, K, CB, AR>(a.gc, below, Ma[K - 1], Xa[K - 1], Ya[K - 1]), P);
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

        // After each step: the lane's last row goes to lane t+1; lane 0 takes
        // its boundary (row 0, or the previous stripe's last row).
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
        const E e_ =                                                                                                \
            shfl_edge(gmask, edge_of<T, SUMS, TR, K, CB, AR>(a.gc, below, NM[K - 1], NX[K - 1], NY[K - 1]), P);     \
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
template <typename T, int P, int K, bool STRIPED, Arith AR, Tr TR, int BLOCK, bool PF = false, int CB = kConstBlock>
__device__ __forceinline__ void run_bin(const KernelArgs<T>& a, int block, int nblocks, float4* etab_block) {
    constexpr bool ETAB = !STRIPED && sizeof(T) == 4;
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
        const T sum =
            forward_pair<T, P, K, STRIPED, AR, TR, ETAB, PF, CB>(a, d, n_act, n_min, steps, t, scratch, etab, redo);
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

template <typename T, int P, int K, bool STRIPED, Arith AR, Tr TR, int BLOCK>
__global__ void __launch_bounds__(BLOCK, (min_blocks<TR, K>())) pairhmm_kernel(KernelArgs<T> a) {
    constexpr bool ETAB = !STRIPED && sizeof(T) == 4;
    __shared__ float4 etab[ETAB ? (BLOCK / 32) * etab_warp_float4s<K>() : 1];
    run_bin<T, P, K, STRIPED, AR, TR, BLOCK>(a, blockIdx.x, gridDim.x, etab);
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
              "latency variants share one arithmetic (see run_latency)");
struct FusedPlan {
    int nb;
    int block_start[kNumFusedBins + 1];
    int bin[kNumFusedBins];
    int first[kNumFusedBins];
    int count[kNumFusedBins];
};

// Runs plan code `code`: fused bin b (code b) with the table's P, K and
// arithmetic, or the latency variant with K rows per lane (code
// kLatencyBin + K; in the kConst kernels each lane is one block, as
// const_block assumes). A switch (one jump table) keeps the kernel's register
// allocation as low as hand-written cases: an if-chain over the codes costs
// registers in the kConst kernels, which run at the 128-register cap.
template <bool FAST, Tr TR, int BLOCK>
__device__ __forceinline__ void run_fused(int code, const KernelArgs<float>& a, int block, int nblocks, float4* etab) {
// clang-format off
#define PYPHMM_FUSED(b)                                                                                        \
    case b:                                                                                                    \
        run_bin<float, kFloatBins[b].P, kFloatBins[b].K, false, float_arith(FAST, kFloatBins[b].max_rows), TR, \
                BLOCK, false, const_block(b)>(a, block, nblocks, etab);                                        \
        break;
#define PYPHMM_LATENCY(K)                                                                                           \
    case kLatencyBin + K:                                                                                           \
        run_bin<float, 32, K, false, float_arith(FAST, kFloatBins[0].max_rows), TR, BLOCK, true, K>(a, block,       \
                                                                                                    nblocks, etab); \
        break;
    static_assert(kNumFusedBins == 7 && kMaxLatencyK == 5, "one case per fused bin and latency K below");
    switch (code) {
        PYPHMM_FUSED(0) PYPHMM_FUSED(1) PYPHMM_FUSED(2) PYPHMM_FUSED(3) PYPHMM_FUSED(4) PYPHMM_FUSED(5) PYPHMM_FUSED(6)
        PYPHMM_LATENCY(1) PYPHMM_LATENCY(2) PYPHMM_LATENCY(3) PYPHMM_LATENCY(4) PYPHMM_LATENCY(5)
        default: break;
    }
#undef PYPHMM_FUSED
#undef PYPHMM_LATENCY
    // clang-format on
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
