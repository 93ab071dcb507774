// GKL 0.9's PDHMM tables, formula for formula (docs/PDHMM.md, "Tables"):
// - error_prob[q] = pow(10, q / -10.0), q = 0..254;
// - match_to_match for 0 <= min <= max <= 254: s = approximate
//   log10(10^(-0.1 max) + 10^(-0.1 min)) through the 80,001-entry Jacobian
//   table log10(1 + 10^(-k/10^4)); then pow(10, log1p(-min(1, 10^s)) / ln 10);
// - initial condition 2^1020 and its log10.
// The operations, their order and the libm functions are GKL's, so the
// values are bit-identical to GKL's on the same C library
// (tests/data/gkl-pdhmm-tables.txt holds GKL's own, compared in the tests).
#include "pd_tables.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pyphmm {

namespace {

constexpr double kTableStep = 0.0001;
constexpr double kMaxTolerance = 8.0;

// log10(1 + 10^(-k * step)) for k = 0..80000, as GKL's JacobianLogTable.
std::vector<double> jacobian_table() {
    const int size = static_cast<int>(kMaxTolerance / kTableStep) + 1;
    std::vector<double> t(size);
    for (int k = 0; k < size; ++k) t[k] = std::log10(1.0 + std::pow(10.0, -k * kTableStep));
    return t;
}

// GKL's fastRound: half away from zero, truncating to int32.
int32_t fast_round(double d) { return d > 0.0 ? static_cast<int32_t>(d + 0.5) : static_cast<int32_t>(d - 0.5); }

// GKL's approximateLog10SumLog10 for finite a, b (its -1e10 "minus
// infinity" never occurs while the tables are built).
double approx_log10_sum_log10(const std::vector<double>& jacobian, double a, double b) {
    if (a > b) std::swap(a, b);
    const double inv_step = 1.0 / kTableStep;
    const double diff = b - a;
    return b + (diff < kMaxTolerance ? jacobian[fast_round(diff * inv_step)] : 0.0);
}

void fill(PdTables& t) {
    const std::vector<double> jacobian = jacobian_table();
    const double inv_ln10 = 1.0 / std::log(10.0);
    for (int hi = 0, offset = 0; hi <= kPdMaxQual; offset += ++hi) {
        for (int lo = 0; lo <= hi; ++lo) {
            const double log10_sum = approx_log10_sum_log10(jacobian, -0.1 * hi, -0.1 * lo);
            const double log10_mm = std::log1p(-std::min(1.0, std::pow(10.0, log10_sum))) * inv_ln10;
            t.match_to_match[offset + lo] = std::pow(10.0, log10_mm);
        }
    }
    for (int q = 0; q <= kPdMaxQual; ++q) t.error_prob[q] = std::pow(10.0, static_cast<double>(q) / -10.0);
    t.initial_condition = std::pow(2.0, 1020.0);
    t.log10_initial_condition = std::log10(t.initial_condition);
}

}  // namespace

const PdTables& pd_tables() {
    static const PdTables* tables = [] {
        auto* t = new PdTables();
        fill(*t);
        return t;
    }();
    return *tables;
}

}  // namespace pyphmm
