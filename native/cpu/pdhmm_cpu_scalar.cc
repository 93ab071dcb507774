// The scalar PDHMM: GKL 0.9's serial algorithm (docs/PDHMM.md), the
// reference every lane of the SIMD kernels equals bit for bit.
//
// One row of six quantities per column, rolled over the read: M, X, Y and
// the branch copies BM, BX, BY that carry values across an undetermined
// deletion. The deletion state (normal, inside a deletion span, right
// after one) advances column by column and carries from the end of a row
// to the start of the next, as in GKL's serial code and GATK's Java. Every
// sum is evaluated left to right as written (the build has no FMA
// contraction), merges are max(), and the final sum runs over the columns
// in order, M + X first.
//
// The same code in the GPU kernel's operation order (pd_sum_gpu_order:
// fused multiply-adds, docs/PDHMM.md "GPU") is the kernel's reference in
// the tests.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/pd_tables.h"
#include "pdhmm_cpu_kernel.h"

namespace pyphmm {
namespace cpu {

namespace {

enum class DelState { kNormal, kInside, kAfter };

struct Cells {
    double m, x, y, bm, bx, by;
};

// Whether read base x matches haplotype base y whose PD byte is pd: equal
// bytes, an N on either side, or one of the bases of a SNP position
// (either case; validation has refused other read bytes there).
inline bool pd_match(uint8_t x, uint8_t y, uint8_t pd) {
    if (x == y || x == 'N' || y == 'N') return true;
    if (!(pd & kPdSnp)) return false;
    switch (x) {
        case 'A':
        case 'a': return (pd & kPdA) != 0;
        case 'C':
        case 'c': return (pd & kPdC) != 0;
        case 'G':
        case 'g': return (pd & kPdG) != 0;
        case 'T':
        case 't': return (pd & kPdT) != 0;
        default: return false;
    }
}

// The state that applies to the column after one with PD byte pd.
inline DelState next_state(DelState s, uint8_t pd) {
    if (pd & kPdDelEnd) return DelState::kAfter;
    if (pd & kPdDelStart) return DelState::kInside;
    return s == DelState::kAfter ? DelState::kNormal : s;
}

// A cell's three sums: GKL's order, or the GPU kernel's (pdhmm_kernels.cuh).
// The kernel's match sum is in one of two forms per row, with the factor
// mult folded into the row's priors (the kernel's PdGaps): form A (mm >=
// gm) fma(x + y, gm / mm, m), form B fma(m, mm / gm, x + y).
struct MatchForm {
    bool b;
    double ratio, mult;
};
inline MatchForm match_form(double mm, double gm) {
    const bool b = gm > mm;
    const double mult = b ? gm : mm;
    return {b, mult > 0.0 ? (b ? mm : gm) / mult : 0.0, mult};
}
inline double match_sum(const Cells& d, double mm, double gm) { return (d.m * mm + d.x * gm) + d.y * gm; }
inline double match_sum_gpu(const Cells& d, const MatchForm& f) {
    return f.b ? std::fma(d.m, f.ratio, d.x + d.y) : std::fma(d.x + d.y, f.ratio, d.m);
}
template <bool kGpuOrder>
inline double gap_sum(double open_from, double open, double cont_from, double cont) {
    if (kGpuOrder) return std::fma(cont_from, cont, open_from * open);
    return open_from * open + cont_from * cont;
}

template <bool kGpuOrder>
double pd_sum(const PdPair& p) {
    if (p.n == 0) return 0.0;
    const PdTables& t = pd_tables();
    static thread_local std::vector<Cells> row;
    // Row 0: deletions before the read starts are free (Y = 2^1020 / n).
    row.assign(p.n + 1, Cells{0, 0, t.initial_condition / p.n, 0, 0, 0});
    DelState state = DelState::kNormal;
    for (int i = 1; i <= p.m; ++i) {
        const int k = i - 1;
        const double mm = t.m2m(p.ins[k], p.dels[k]);
        const double gap_to_match = 1.0 - t.error_prob[p.gcp[k]];
        const double to_ins = t.error_prob[p.ins[k]], to_del = t.error_prob[p.dels[k]];
        const double cont = t.error_prob[p.gcp[k]];
        const double p_match = 1.0 - t.error_prob[p.quals[k]];
        const double p_mismatch = t.error_prob[p.quals[k]] / 3.0;
        const MatchForm form = match_form(mm, gap_to_match);
        const double pg_match = p_match * form.mult, pg_mismatch = p_mismatch * form.mult;
        const uint8_t x = p.read[k];
        Cells left{0, 0, 0, 0, 0, 0}, diag{0, 0, i == 1 ? row[0].y : 0.0, 0, 0, 0};
        for (int j = 1; j <= p.n; ++j) {
            const Cells top = row[j];
            const uint8_t pd = p.pd[j - 1];
            Cells c;
            double m_left = left.m, y_left = left.y;
            if (state == DelState::kNormal) {
                c.bm = left.m, c.bx = left.x, c.by = left.y;
            } else if (state == DelState::kInside) {
                c.bm = left.bm, c.bx = left.bx, c.by = left.by;
            } else {
                c.bm = std::max(left.bm, left.m), c.bx = std::max(left.bx, left.x), c.by = std::max(left.by, left.y);
                diag.m = std::max(diag.m, diag.bm), diag.x = std::max(diag.x, diag.bx);
                diag.y = std::max(diag.y, diag.by);
                m_left = std::max(m_left, left.bm), y_left = std::max(y_left, left.by);
            }
            const bool match = pd_match(x, p.hap[j - 1], pd);
            if (kGpuOrder)
                c.m = (match ? pg_match : pg_mismatch) * match_sum_gpu(diag, form);
            else
                c.m = (match ? p_match : p_mismatch) * match_sum(diag, mm, gap_to_match);
            c.y = gap_sum<kGpuOrder>(m_left, to_del, y_left, cont);
            if (pd & kPdDelEnd) {
                c.x = gap_sum<kGpuOrder>(std::max(top.bm, top.m), to_ins, std::max(top.bx, top.x), cont);
            } else {
                c.x = gap_sum<kGpuOrder>(top.m, to_ins, top.x, cont);
            }
            state = next_state(state, pd);
            row[j] = c;
            diag = top;
            left = c;
        }
    }
    double sum = 0.0;
    for (int j = 1; j <= p.n; ++j) sum += row[j].m + row[j].x;
    return sum;
}

}  // namespace

double pd_sum_scalar(const PdPair& p) { return pd_sum<false>(p); }
double pd_sum_gpu_order(const PdPair& p) { return pd_sum<true>(p); }

}  // namespace cpu
}  // namespace pyphmm
