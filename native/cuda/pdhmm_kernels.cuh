// Device side of the GPU PDHMM: GKL 0.9's partially determined PairHMM in
// double precision, as an anti-diagonal wavefront (docs/PDHMM.md, "GPU").
//
// A group of P consecutive lanes computes one read x haplotype pair. Lane t
// owns K consecutive rows of the (padded) read: their transitions and
// emissions in registers, and per row the values of the previous column
// (L, below) and, in shared memory, the branch values captured before a
// deletion span (B). At step s lane t computes column j = s - t + 1 of its
// K rows; what its first row needs of the row above comes from lane t - 1
// by warp shuffle, and each lane loads the codes (pdhmm_layout.h) of its
// own columns. Row padding goes at the top: a padding row (emissions 0,
// gap continuation 1) reproduces row 0 (M = X = 0, Y = 2^1020 / n) at every
// column, so the read's last row is the last lane's last register row.
//
// The recurrence, from GKL's serial code (docs/PDHMM.md): with B the branch
// values of a cell and st(j) the deletion state of column j,
//   B(i,j) = L(i,j-1) unless st(j) = INSIDE_DEL, where B(i,j) = B(i,j-1)
//   M = prior * ((Ld.M*mm + Ld.X*gm) + Ld.Y*gm)    Ld = L(i-1,j-1)
//   Y = Ll.M*to_del + Ll.Y*cont                   Ll = L(i,j-1)
//   X = T.M*to_ins + T.X*cont                     T = L(i-1,j)
//   L(i,j) = max(v, B(i,j)) per quantity where column j has DEL_END, else v
// where v = (M, X, Y) of the cell. That is GKL's: its AFTER_DEL merges of
// the diagonal and the left (the state after a DEL_END column) and its
// DEL_END merge of the top are all max(value, branch) of a cell whose
// column has DEL_END; its branch copies are L of the column before, or the
// span's captured value. The result is sum over j of (M + X) of the last
// row, unmerged, in column order.
//
// Only DEL_END columns read B, and a row captures it only where it will be
// read (kCap): every other column is the plain PairHMM step. Steps go in
// blocks of 4 (pd_forward): a block where no lane of the warp has a flag
// is four plain steps; in the others each lane also captures where its
// column has kCap and merges where it has DEL_END, predicated per lane,
// still without a branch (a lane at a column without the flag leaves the
// same values either way).
//
// Arithmetic: fused multiply-adds in a fixed order (pd_fma, __dmul_rn,
// __dadd_rn: nvcc contracts nothing else), 7 double-precision operations
// a cell where GKL's order takes 12 (form A of PdGaps; form B swaps the
// fma's first and last operands):
//   M = (prior * mm) * fma(Ld.X + Ld.Y, gm / mm, Ld.M)
//   X = fma(T.X, cont, T.M * to_ins)      Y = fma(Ll.Y, cont, Ll.M * to_del)
// (prior * mm and gm / mm once a row; the row-to-row term last: the X
// chain down a lane's rows is one fma a row). A lane's first row takes
// the same operations from the edge, so a pair's sum does not depend on
// its bin; it equals cpu::pd_sum_gpu_order bit for bit. The kernel takes the log10 of a certified sum and marks
// the others, which the host recomputes in GKL's order (pdhmm_plan.h).
//
// Reads longer than 32 * K rows are swept in stripes of 32 * K rows: the
// last lane stores, per column, what the next stripe's first row needs
// (the two sums of the edge below), and lane 0 of the next stripe reads it
// (staged in shared memory a block ahead: pd_stage_block).
//
// The emulator (tests/native/pdhmm_cuda_emu.cc) compiles this file as host
// code, with lanes as fibers.
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/pdhmm_layout.h"

#if defined(__CUDACC__)
#define PYPHMM_PD_DEV __device__ __forceinline__
#else
#define PYPHMM_PD_DEV inline
#endif

namespace pyphmm {
namespace pdk {

// Kernel arguments.
struct PdArgs {
    const PdPairDesc* pairs;    // the chunk's pairs, sorted by launch entry
    const PdRowElem* rows;      // read rows
    const uint32_t* codes;      // haplotype column codes (16-byte aligned per haplotype)
    const double* err;          // GKL's error_prob, 255 qualities
    const double* third;        // error_prob / 3.0, as the host divides
    const double* m2m;          // GKL's match-to-match table (gap qualities <= 127)
    const double* ratio;        // the match sum's ratio by continuation and match-to-match entry
    const uint32_t* read_code;  // pd_read_code of each byte
    double ic;                  // 2^1020
    PdCertify cert;             // the chunk's certified sums (pd_certify)
    double log10_ic;            // log10(2^1020)
    bool finish;                // out gets results (pd_checked_result); false: the sums (the emulator's check)
    double* out;                // by PdPairDesc::out
    double* scratch;            // striped entry: 2 * scratch_stride doubles per warp ((w, v) per column)
    int scratch_stride;
};

// ---- arithmetic ------------------------------------------------------------
#if defined(__CUDACC__)
PYPHMM_PD_DEV double pd_mul(double a, double b) { return __dmul_rn(a, b); }
PYPHMM_PD_DEV double pd_add(double a, double b) { return __dadd_rn(a, b); }
PYPHMM_PD_DEV double pd_sub(double a, double b) { return __dsub_rn(a, b); }
PYPHMM_PD_DEV double pd_div(double a, double b) { return __ddiv_rn(a, b); }
PYPHMM_PD_DEV double pd_fma(double a, double b, double c) { return __fma_rn(a, b, c); }
// std::max's rule, the CPU reference's (cheaper than fmax, whose NaN rules
// cost instructions: no operand is ever NaN)
PYPHMM_PD_DEV double pd_max(double a, double b) { return a < b ? b : a; }
template <typename T>
PYPHMM_PD_DEV T pd_ldg(const T* p) {
    return __ldg(p);
}
PYPHMM_PD_DEV PdRowElem pd_ldg(const PdRowElem* p) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    return {v.x, v.y};
}
// v, as a value the compiler cannot recompute in every block of steps.
PYPHMM_PD_DEV double pd_opaque(double v) {
    asm("" : "+d"(v));
    return v;
}
// 16 bytes from global to shared memory, asynchronously (sm_80's cp.async,
// around the L1); commit closes a group of copies, wait_prior<N> waits
// until at most N of this thread's groups are still in flight.
PYPHMM_PD_DEV void pd_copy16_async(double* dst_shared, const double* src) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst_shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
PYPHMM_PD_DEV void pd_copy_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
PYPHMM_PD_DEV void pd_copy_wait_prior() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#else
PYPHMM_PD_DEV double pd_mul(double a, double b) { return a * b; }
PYPHMM_PD_DEV double pd_add(double a, double b) { return a + b; }
PYPHMM_PD_DEV double pd_sub(double a, double b) { return a - b; }
PYPHMM_PD_DEV double pd_div(double a, double b) { return a / b; }
PYPHMM_PD_DEV double pd_fma(double a, double b, double c) { return std::fma(a, b, c); }
PYPHMM_PD_DEV double pd_max(double a, double b) { return a < b ? b : a; }
template <typename T>
PYPHMM_PD_DEV T pd_ldg(const T* p) {
    return *p;
}
PYPHMM_PD_DEV double pd_opaque(double v) { return v; }
PYPHMM_PD_DEV void pd_copy16_async(double* dst_shared, const double* src) {
    dst_shared[0] = src[0];
    dst_shared[1] = src[1];
}
PYPHMM_PD_DEV void pd_copy_commit() {}
template <int N>
PYPHMM_PD_DEV void pd_copy_wait_prior() {}
#endif

// A row's gap transitions (GKL's names: mm = matchToMatch, gm =
// indelToMatch, to_ins, to_del, cont = insertion/deletion continuation),
// with its match sum Ld.M mm + (Ld.X + Ld.Y) gm in one of two forms,
// whichever has a ratio of at most 1 (so no term grows; pdhmm_layout.h):
//   form A (mm >= gm): mm * fma(Ld.X + Ld.Y, gm / mm, Ld.M)
//   form B (gm > mm):  gm * fma(Ld.M, mm / gm, Ld.X + Ld.Y)
// `mult` (mm or gm) is folded into the row's priors (pg = prior * mult,
// M = pg * fma(..)), so a cell takes one multiply fewer. mm = gm = 0 gives
// ratio 0 and mult 0 (M = 0). Plain steps take form A only: a lane with a
// form-B row, or a form-B row below it, is exotic (general steps).
struct PdGaps {
    double ratio, mult, to_ins, to_del, cont;
    bool formb;
};

// The table entries of a row's gaps (pd_gaps_of combines them). A lane
// loads those of all its rows before it uses any: its prologue, which is
// on the kernel's critical path, then waits for one memory round trip
// rather than one a row.
struct PdGapLoads {
    double cont, mm, to_ins, to_del, ratio;
};

PYPHMM_PD_DEV PdGapLoads pd_gap_loads(const PdArgs& a, PdRowElem e) {
    const uint32_t ins = (e.x >> 16) & 0xFFu, del = e.x >> 24, gcp = e.y;
    const uint32_t mi = pd_m2m_index(ins, del);
    return {pd_ldg(a.err + gcp), pd_ldg(a.m2m + mi), pd_ldg(a.err + ins), pd_ldg(a.err + del),
            pd_ldg(a.ratio + pd_ratio_index(gcp, mi))};
}

PYPHMM_PD_DEV PdGaps pd_gaps_of(const PdGapLoads& l) {
    const double gm = pd_sub(1.0, l.cont);
    const bool formb = pd_form_b(gm, l.mm);
    return {l.ratio, formb ? gm : l.mm, l.to_ins, l.to_del, l.cont, formb};
}

// A cell's match sum in the row's form (ANY: form B possible).
template <bool ANY>
PYPHMM_PD_DEV double pd_match_sum(bool formb, double ratio, double m, double x, double y) {
    const double xy = pd_add(x, y);
    if (ANY && formb) return pd_fma(m, ratio, xy);
    return pd_fma(xy, ratio, m);
}

// What a lane hands the lane below after each step, from its last row at
// the step's column j, already combined with the next row's transitions:
// w = that row's match sum at column j + 1 (its M = pg * w), v = its X at
// column j. The same operations as a row within a lane, so the bits agree.
struct PdEdge {
    double w, v;
};

// An edge into 16 bytes of global memory (a striped warp's scratch).
PYPHMM_PD_DEV void pd_store2(double* p, const PdEdge& e) {
#if defined(__CUDACC__)
    *reinterpret_cast<double2*>(p) = make_double2(e.w, e.v);
#else
    p[0] = e.w;
    p[1] = e.v;
#endif
}

template <bool ANY>
PYPHMM_PD_DEV PdEdge pd_edge(const PdGaps& below, double lm, double lx, double ly, double tm, double tx) {
    return {pd_match_sum<ANY>(below.formb, below.ratio, lm, lx, ly), pd_fma(tx, below.cont, pd_mul(tm, below.to_ins))};
}

// A lane's K rows: transitions, priors times the match sum's factor
// (match, mismatch), read codes, and which rows are form B (bit k).
template <int K>
struct PdLaneRows {
    double ratio[K], to_ins[K], to_del[K], cont[K], pgm[K], pgx[K];
    uint32_t rc[K];
    unsigned formb;
};

// The branch values a thread captured, in shared memory (they are read and
// written only at capture and merging steps, so registers hold what every
// step needs): value v (M, X, Y) of row k at bs[(3 * k + v) * kPdBlock],
// bs = the block's array + threadIdx.x (a warp's 32 doubles in a row).
template <int K>
PYPHMM_PD_DEV void pd_capture(uint32_t code, int r1k, const double (&oM)[K], const double (&oX)[K],
                              const double (&oY)[K], double* bs) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const uint32_t f = k == r1k ? code >> kRow1Shift : code;
        if (f & kCap) {
            bs[(3 * k) * kPdBlock] = oM[k];
            bs[(3 * k + 1) * kPdBlock] = oX[k];
            bs[(3 * k + 2) * kPdBlock] = oY[k];
        }
    }
}

// One step of one lane: its K rows at column j with code `code`. o* hold L
// at column j - 1, n* receive L at column j; bs holds the values captured
// before the current deletion span; d is the lane above's edge at column
// j - 1, u at column j. tm/tx receive the last row's L.M and L.X at column
// j (the edge's top), sm/sx its unmerged M and X (the result's terms).
// MERGE (a warp with a lane at a DEL_END column): where this lane's column
// has DEL_END, L = max(v, b), b = B(i, j) (kCap makes sure). Without MERGE,
// L = v. FAST: the lane is not exotic (pd_matches_fast, form A).
// GATED: a lane that has not started (j < 1) computes with priors of 0, so
// its rows keep column 0 (M = 0 exactly, w finite; then X = 0 and Y stays
// 0, or 2^1020 / n in a padding row) and it hands column 0's edge on.
template <int K, bool MERGE, bool FAST, bool GATED = false>
PYPHMM_PD_DEV void pd_lane_step(const PdLaneRows<K>& r, uint32_t code, const PdEdge& d, const PdEdge& u,
                                const double (&oM)[K], const double (&oX)[K], const double (&oY)[K], double (&nM)[K],
                                double (&nX)[K], double (&nY)[K], const double* bs, double& tm, double& tx, double& sm,
                                double& sx, bool started = true) {
    const bool merge = MERGE && (code & kDelEnd) != 0u;
    double am = 0.0, ax = 0.0;  // L.M and L.X of the row above at column j
#pragma unroll
    for (int k = 0; k < K; ++k) {
        // The branch values first (0 where this lane does not merge: max(v,
        // 0) = v for every v >= 0, NaN included), so the loads' latency
        // passes while the row computes rather than after it.
        double bM = 0.0, bX = 0.0, bY = 0.0;
        if (merge) {
            bM = bs[(3 * k) * kPdBlock];
            bX = bs[(3 * k + 1) * kPdBlock];
            bY = bs[(3 * k + 2) * kPdBlock];
        }
        const bool match = FAST ? pd_matches_fast(code, r.rc[k]) : pd_matches(code, r.rc[k]);
        const double pg = GATED && !started ? 0.0 : match ? r.pgm[k] : r.pgx[k];
        double M, X;
        if (k == 0) {
            M = pd_mul(pg, d.w);
            X = u.v;
        } else {
            M = pd_mul(pg, pd_match_sum<!FAST>((r.formb >> k) & 1u, r.ratio[k], oM[k - 1], oX[k - 1], oY[k - 1]));
            X = pd_fma(ax, r.cont[k], pd_mul(am, r.to_ins[k]));
        }
        double Y = pd_fma(oY[k], r.cont[k], pd_mul(oM[k], r.to_del[k]));
        if (k == K - 1) {
            sm = M;
            sx = X;
        }
        if (MERGE) {
            M = pd_max(M, bM);
            X = pd_max(X, bX);
            Y = pd_max(Y, bY);
        }
        nM[k] = M;
        nX[k] = X;
        nY[k] = Y;
        am = M;
        ax = X;
    }
    tm = am;
    tx = ax;
}

template <int P>
PYPHMM_PD_DEV PdEdge pd_shfl_edge(const PdEdge& e) {
    return {__shfl_up_sync(0xffffffffu, e.w, 1, P), __shfl_up_sync(0xffffffffu, e.v, 1, P)};
}

// A lane's rows at the start of a stripe: transitions, emissions and read
// codes of read rows row0 .. row0 + K - 1 (rows before 0 are padding: they
// reproduce row 0), both register sets at column 0, the branch values 0
// (a row that starts inside a span merges with them); *below: the gaps of
// the row below the lane's last (the next lane's first, or the next
// stripe's first), to_ins = cont = 1 below the read's last row m - 1, so
// that the last lane's edge v is M + X of the last row (its sum's term
// where no merge changed them). Returns whether the lane is exotic: a read
// byte (pd_code_exotic) or a form-B row (PdGaps). The rows are loaded
// first, then every table entry they need, then the arithmetic: three
// memory round trips, no division, no branch.
template <int K>
PYPHMM_PD_DEV bool pd_lane_rows(const PdArgs& a, const PdRowElem* rd, int row0, int m, double ic_n, PdLaneRows<K>& r,
                                PdGaps* below, double (&Ma)[K], double (&Xa)[K], double (&Ya)[K], double (&Mb)[K],
                                double (&Xb)[K], double (&Yb)[K], double* bs) {
    PdRowElem elem[K + 1];  // (k = K: the row below)
#pragma unroll
    for (int k = 0; k <= K; ++k) {
        const int row = row0 + k;
        elem[k] = row >= 0 && (k < K || row < m) ? pd_ldg(rd + row) : PdRowElem{'N', 0};
    }
    PdGapLoads gaps[K + 1];
    double e[K], third[K];
    uint32_t code[K];
#pragma unroll
    for (int k = 0; k <= K; ++k) gaps[k] = pd_gap_loads(a, elem[k]);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const uint32_t q = (elem[k].x >> 8) & 0xFFu;
        e[k] = pd_ldg(a.err + q);
        third[k] = pd_ldg(a.third + q);
        code[k] = pd_ldg(a.read_code + (elem[k].x & 0xFFu));
    }
    const int rb = row0 + K;
    *below = rb >= 0 && rb < m ? pd_gaps_of(gaps[K]) : PdGaps{0.0, 0.0, 1.0, 0.0, 1.0, false};
    bool exotic = below->formb;
    r.formb = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const bool padding = row0 + k < 0;
        const PdGaps g = pd_gaps_of(gaps[k]);
        r.ratio[k] = padding ? 0.0 : g.ratio;
        r.to_ins[k] = padding ? 0.0 : g.to_ins;
        r.to_del[k] = padding ? 0.0 : g.to_del;
        r.cont[k] = padding ? 1.0 : g.cont;
        r.pgm[k] = padding ? 0.0 : pd_mul(pd_sub(1.0, e[k]), g.mult);
        r.pgx[k] = padding ? 0.0 : pd_mul(third[k], g.mult);
        const bool formb = !padding && g.formb;
        r.formb |= static_cast<unsigned>(formb) << k;
        exotic = exotic || formb || (!padding && pd_code_exotic(code[k]));
        r.rc[k] = padding ? 0u : code[k];
        // Both register sets start as column 0, so a lane that has not
        // started (j < 1) reads column 0 from either.
        Ma[k] = Xa[k] = Mb[k] = Xb[k] = 0.0;
        Ya[k] = Yb[k] = padding ? ic_n : 0.0;
        bs[(3 * k) * kPdBlock] = bs[(3 * k + 1) * kPdBlock] = bs[(3 * k + 2) * kPdBlock] = 0.0;
    }
    return exotic;
}

// The previous stripe's edges that lane 0 of a striped warp takes as its
// boundary, staged in shared memory two blocks of steps ahead (registers
// would cost every lane of the kernel): kPdStageSlots slots of the 4 steps
// of a block, (w, v) per step. The scratch holds (w, v) per column.
constexpr int kPdStageSlots = 4;  // (a slot is refilled two blocks after its last read)
constexpr int kPdStageDoubles = kPdStageSlots * 4 * 2;
// A block's shared memory: its threads' branch values, its warps' stages.
constexpr int kPdSharedDoubles = kPdBranchDoubles + kPdBlock / 32 * kPdStageDoubles;

// Lane 0, stripe > 0: the edges of block `blk`'s steps (columns 4 blk + 2
// .. 4 blk + 5) into its slot, asynchronously. Past column n the scratch
// holds whatever it holds (pd_scratch_stride leaves room): those steps
// compute columns past the haplotype.
PYPHMM_PD_DEV void pd_stage_block(double* stage, const double* scratch, int blk) {
    double* slot = stage + (blk & (kPdStageSlots - 1)) * 8;
    const double* src = scratch + 8 * blk + 4;
#pragma unroll
    for (int b = 0; b < 4; ++b) pd_copy16_async(slot + 2 * b, src + 2 * b);
    pd_copy_commit();
}

// The forward algorithm for one pair by one group of P lanes; returns the
// sum (meaningful in lane P - 1). n_act: the pair's haplotype length, 0 for
// a group without a pair (it runs the warp's steps and computes nothing
// that is kept); steps: the warp's step count; bs: this thread's branch
// values (pd_capture); striped: the warp's scratch and stage.
//
// Steps go in blocks of 4. Each lane loads the codes of its own columns,
// one block ahead (codes are padded with zeros on both sides: a column
// before 1 or after n has none). A block in which every lane has started
// (j >= 1), no lane of the warp is at a capture or DEL_END column and no
// lane has an exotic read byte is plain: four PairHMM steps with no vote,
// no branch and no per-lane test, which the compiler schedules as one
// piece. A lane past its last column computes on (its columns have no
// flags, and nothing it computes reaches a column of the haplotype); only
// the sum takes j <= n. Other blocks take general steps (the plain step
// with the captures and merges that lanes' codes mark); every block of a
// warp with an exotic lane is general, with GKL's match test and both
// forms of the match sum.
template <int P, int K, bool STRIPED>
PYPHMM_PD_DEV double pd_forward(const PdArgs& a, const PdPairDesc& d, int n_act, int steps, int t, double* bs,
                                double* scratch, double* stage) {
    constexpr unsigned kFull = 0xffffffffu;
    constexpr int R = P * K;
    const int m = d.m, n = d.n;
    const int nstripes = STRIPED ? (m + R - 1) / R : 1;
    const int pad = nstripes * R - m;
    const double ic_n = pd_opaque(pd_div(a.ic, static_cast<double>(n)));
    const PdRowElem* rd = a.rows + d.roff;
    const uint32_t* cp = a.codes + d.hoff;  // column j's code at cp[j - 1]
    double sum = 0.0;

    for (int stripe = 0; stripe < nstripes; ++stripe) {
        PdLaneRows<K> r;
        double Ma[K], Xa[K], Ya[K], Mb[K], Xb[K], Yb[K];
        const int row0 = stripe * R + t * K - pad;  // read row (0-based) of register row 0; < 0: padding
        const int r1k = -row0;
        // This lane's codes of the first block (columns 1 - t ..: at index
        // -t of cp, from -31 on; codes before column 1 are 0), loaded with
        // the rows. A block loads the next block's codes (clamped to n,
        // past which all are 0).
        uint32_t nx[4];
#pragma unroll
        for (int b = 0; b < 4; ++b) nx[b] = pd_ldg(cp - t + b);
        PdGaps below;
        const bool exotic = pd_lane_rows<K>(a, rd, row0, m, ic_n, r, &below, Ma, Xa, Ya, Mb, Xb, Yb, bs);
        // (every block of an exotic warp is general, with GKL's match test and both forms)
        const bool warp_exotic = __any_sync(kFull, exotic);
        // Lane 0's boundary: row 0 (L = (0, 0, 2^1020/n), T = (0, 0)), or
        // the previous stripe's last row from the scratch.
        const PdGaps own{r.ratio[0], 0.0, r.to_ins[0], r.to_del[0], r.cont[0], (r.formb & 1u) != 0u};
        const PdEdge bE = pd_edge<true>(own, 0.0, 0.0, ic_n, 0.0, 0.0);
        double tm = 0.0, tx = 0.0;  // the last row's T at the step's column (column 0: 0)
        PdEdge d0 = pd_shfl_edge<P>(pd_edge<true>(below, Ma[K - 1], Xa[K - 1], Ya[K - 1], tm, tx));
        PdEdge d1 = d0;
        const bool from_scratch = STRIPED && stripe > 0 && t == 0;
        if (t == 0) {
            d0 = d1 = bE;
            if (from_scratch) {
                d0 = PdEdge{0.0, 0.0};  // column 0 of rows >= 2
                d1 = PdEdge{scratch[2], scratch[3]};
            }
        }
        if (STRIPED && t == 0) {
            if (from_scratch) {
                pd_stage_block(stage, scratch, 0);
                pd_stage_block(stage, scratch, 1);
            } else {
                for (int i = 0; i < kPdStageDoubles; i += 2) {
                    stage[i] = bE.w;
                    stage[i + 1] = bE.v;
                }
            }
        }
        const bool last_stripe = stripe == nstripes - 1;

// A step's end: the sum (the last lane, inside the haplotype), the next
// stripe's edges (striped, the last lane), the edge to the lane below; lane
// 0 takes its boundary instead (striped: from the stage). No branch: the
// last lane's tests are predicates.
#define PYPHMM_PD_STEP_END(B, NM, NX, NY, D, TERM, KEEP, ANY)                                \
    {                                                                                        \
        const PdEdge e_ = pd_edge<ANY>(below, NM[K - 1], NX[K - 1], NY[K - 1], tm, tx);      \
        const bool keep_ = t == P - 1 && (KEEP);                                             \
        if (STRIPED && keep_ && !last_stripe) pd_store2(scratch + 2 * (s0 + (B)-t + 1), e_); \
        if (keep_ && last_stripe) sum = pd_add(sum, TERM);                                   \
        const PdEdge d_ = pd_shfl_edge<P>(e_);                                               \
        const double* sg_ = stage + ((blk & (kPdStageSlots - 1)) * 4 + (B)) * 2;             \
        D = t != 0 ? d_ : STRIPED ? PdEdge{sg_[0], sg_[1]} : bE;                             \
    }

// A plain step: every lane computes (see above). A gated one (the blocks
// before every lane has started) keeps a lane before column 1 at column 0.
#define PYPHMM_PD_PLAIN(B, OM, OX, OY, NM, NX, NY, D, U, GATED)                                                  \
    {                                                                                                            \
        double sm = 0.0, sx = 0.0;                                                                               \
        const int j_ = s0 + (B)-t + 1;                                                                           \
        pd_lane_step<K, false, true, GATED>(r, c[B], D, U, OM, OX, OY, NM, NX, NY, bs, tm, tx, sm, sx, j_ >= 1); \
        PYPHMM_PD_STEP_END(B, NM, NX, NY, D, e_.v, static_cast<unsigned>(j_ - 1) < static_cast<unsigned>(n_act), \
                           false)                                                                                \
    }

// A general step: a plain step that also captures and merges. Each lane
// computes (gated before column 1, like a plain step), captures the rows
// its column's code marks and merges where the column has DEL_END:
// predicated per lane, no vote and no branch, so the four steps of a
// block schedule as one piece (columns outside the haplotype have no
// flags; a group without a pair, which reads the first group's codes,
// keeps nothing it computes). FAST: no lane of the warp is exotic (the
// plain steps' match test and form A only); GATED: a block before every
// lane started.
#define PYPHMM_PD_GENERAL(B, OM, OX, OY, NM, NX, NY, D, U, FAST, GATED)                                         \
    {                                                                                                           \
        const int j_ = s0 + (B)-t + 1;                                                                          \
        double sm = 0.0, sx = 0.0;                                                                              \
        pd_capture<K>(c[B], r1k, OM, OX, OY, bs);                                                               \
        pd_lane_step<K, true, FAST, GATED>(r, c[B], D, U, OM, OX, OY, NM, NX, NY, bs, tm, tx, sm, sx, j_ >= 1); \
        PYPHMM_PD_STEP_END(B, NM, NX, NY, D, pd_add(sm, sx),                                                    \
                           static_cast<unsigned>(j_ - 1) < static_cast<unsigned>(n_act), !(FAST))               \
    }

        for (int s0 = 0, blk = 0; s0 < steps; s0 += 4, ++blk) {
            uint32_t c[4], flags = 0;
            const int at = s0 + 4 - t < n ? s0 + 4 - t : n;
#pragma unroll
            for (int b = 0; b < 4; ++b) {
                c[b] = nx[b];
                nx[b] = pd_ldg(cp + at + b);
                flags |= static_cast<unsigned>(s0 + b - t) < static_cast<unsigned>(n_act) ? c[b] : 0u;
            }
            if (from_scratch) pd_copy_wait_prior<1>();  // this block's slot has arrived
            if (warp_exotic) {
                PYPHMM_PD_GENERAL(0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, false, true)
                PYPHMM_PD_GENERAL(1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, false, true)
                PYPHMM_PD_GENERAL(2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, false, true)
                PYPHMM_PD_GENERAL(3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, false, true)
            } else if (__any_sync(kFull, (flags & (kCapBoth | kDelEnd)) != 0u)) {
                if (s0 < P) {
                    PYPHMM_PD_GENERAL(0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, true, true)
                    PYPHMM_PD_GENERAL(1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, true, true)
                    PYPHMM_PD_GENERAL(2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, true, true)
                    PYPHMM_PD_GENERAL(3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, true, true)
                } else {
                    PYPHMM_PD_GENERAL(0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, true, false)
                    PYPHMM_PD_GENERAL(1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, true, false)
                    PYPHMM_PD_GENERAL(2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, true, false)
                    PYPHMM_PD_GENERAL(3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, true, false)
                }
            } else if (s0 < P) {
                PYPHMM_PD_PLAIN(0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, true)
                PYPHMM_PD_PLAIN(1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, true)
                PYPHMM_PD_PLAIN(2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, true)
                PYPHMM_PD_PLAIN(3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, true)
            } else {
                PYPHMM_PD_PLAIN(0, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, false)
                PYPHMM_PD_PLAIN(1, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, false)
                PYPHMM_PD_PLAIN(2, Ma, Xa, Ya, Mb, Xb, Yb, d0, d1, false)
                PYPHMM_PD_PLAIN(3, Mb, Xb, Yb, Ma, Xa, Ya, d1, d0, false)
            }
            if (from_scratch) pd_stage_block(stage, scratch, blk + 2);
        }
#undef PYPHMM_PD_GENERAL
#undef PYPHMM_PD_PLAIN
#undef PYPHMM_PD_STEP_END
        if (STRIPED) {
            pd_copy_wait_prior<0>();
            __syncwarp();
        }
    }
    return sum;
}

// The pairs [first, first + count) of one bin, `nblocks` blocks of which
// this is block `block`. Groups of a warp take consecutive pairs (the host
// puts pairs of one haplotype side by side) and run the warp's longest
// step count, so every shuffle is full-warp and converged. smem: the
// block's shared memory (kPdSharedDoubles).
template <int P, int K, bool STRIPED>
PYPHMM_PD_DEV void pd_run_bin(const PdArgs& a, int first, int count, int block, int nblocks, double* smem) {
    constexpr int G = 32 / P;
    const int lane = threadIdx.x & 31;
    const int t = lane & (P - 1);
    const int g = lane / P;
    const int warp = (block * kPdBlock + static_cast<int>(threadIdx.x)) >> 5;
    const int nwarps = nblocks * (kPdBlock / 32);
    double* bs = smem + threadIdx.x;
    double* stage = smem + kPdBranchDoubles + (threadIdx.x >> 5) * kPdStageDoubles;
    double* scratch = STRIPED ? a.scratch + static_cast<int64_t>(warp) * 2 * a.scratch_stride : nullptr;
    for (int base = warp * G; base < count; base += nwarps * G) {
        const int q = base + g;
        const bool valid = q < count;
        const PdPairDesc d = a.pairs[first + (valid ? q : base)];
        const int n_act = valid ? d.n : 0;
        const int steps = __reduce_max_sync(0xffffffffu, valid ? d.n + P - 1 : 0);
        const double sum = pd_forward<P, K, STRIPED>(a, d, n_act, steps, t, bs, scratch, stage);
        if (valid && t == P - 1) a.out[d.out] = a.finish ? pd_checked_result(a.cert, sum, a.log10_ic) : sum;
    }
}

// Runs bin `bin` with the table's P and K.
PYPHMM_PD_DEV void pd_run_any(int bin, const PdArgs& a, int first, int count, int block, int nblocks, double* smem) {
#define PYPHMM_PD_BIN(b) \
    case b: pd_run_bin<kPdBins[b].P, kPdBins[b].K, kPdBins[b].striped>(a, first, count, block, nblocks, smem); break;
    static_assert(kPdNumBins == 9, "one case per bin");
    switch (bin) {
        PYPHMM_PD_BIN(0)
        PYPHMM_PD_BIN(1)
        PYPHMM_PD_BIN(2)
        PYPHMM_PD_BIN(3)
        PYPHMM_PD_BIN(4)
        PYPHMM_PD_BIN(5)
        PYPHMM_PD_BIN(6)
        PYPHMM_PD_BIN(7)
        PYPHMM_PD_BIN(8)
        default: break;
    }
#undef PYPHMM_PD_BIN
}

// This block's entry of the plan (at constant offsets only: see
// pairhmm_kernels.cuh's fused_entry).
struct PdEntry {
    int bin, first, count, block, nblocks;
};
PYPHMM_PD_DEV PdEntry pd_entry(const PdLaunchPlan& plan, int b) {
    PdEntry e{plan.bin[0], plan.first[0], plan.count[0], 0, 0};
    int start = 0, end = plan.block_start[1];
#pragma unroll
    for (int i = 1; i < kPdNumBins; ++i) {
        if (i < plan.nb && b >= plan.block_start[i]) {
            e.bin = plan.bin[i];
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

#if defined(__CUDACC__)
// Every bin of a chunk in one launch.
__global__ void __launch_bounds__(kPdBlock, kPdMinBlocksPerSm) pdhmm_kernel(PdArgs a, PdLaunchPlan plan) {
    __shared__ alignas(16) double smem[kPdSharedDoubles];
    const PdEntry e = pd_entry(plan, blockIdx.x);
    pd_run_any(e.bin, a, e.first, e.count, e.block, e.nblocks, smem);
}
#endif

}  // namespace pdk
}  // namespace pyphmm
