// Builds the PairHMM tables exactly as GKL's Context<float>/Context<double>
// do, because GATK-equal results (|d log10| <= 1e-5) depend on these digits:
// - ph2pr in the target precision (powf for float, pow for double);
// - the Jacobian log table log10(1 + 10^(-k/10^4)), k = 0..80000;
// - match-to-match from GKL's approximate log10-sum, evaluated in the target
//   precision, then log1p(-min(1, 10^s)) * 0.434294 in double (GKL's
//   truncated 1/ln 10), then cast.
#include "tables.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pyphmm {

namespace {

constexpr double kJacobianStep = 0.0001;
constexpr double kJacobianInvStep = 1.0 / kJacobianStep;
constexpr double kMaxJacobianTolerance = 8.0;
constexpr int kJacobianSize = static_cast<int>(kMaxJacobianTolerance / kJacobianStep) + 1;

template <typename T>
const std::vector<T>& jacobian_table() {
    static const std::vector<T> table = [] {
        std::vector<T> t(kJacobianSize);
        for (int k = 0; k < kJacobianSize; ++k)
            t[k] = static_cast<T>(std::log10(1.0 + std::pow(10.0, -static_cast<double>(k) * kJacobianStep)));
        return t;
    }();
    return table;
}

// GKL's rounding: half away from zero, in the working precision.
template <typename T>
int fast_round(T d) {
    return d > T(0) ? static_cast<int>(d + T(0.5)) : static_cast<int>(d - T(0.5));
}

template <typename T>
T approx_log10_sum_log10(T a, T b) {
    T small = std::min(a, b), big = std::max(a, b);
    if (std::isinf(small) || std::isinf(big)) return big;
    T diff = big - small;
    if (diff >= static_cast<T>(kMaxJacobianTolerance)) return big;
    int k = fast_round(static_cast<T>(diff * static_cast<T>(kJacobianInvStep)));
    return big + jacobian_table<T>()[k];
}

template <typename T>
T ph2pr_value(int q);
template <>
float ph2pr_value<float>(int q) {
    return powf(10.f, -static_cast<float>(q) / 10.f);
}
template <>
double ph2pr_value<double>(int q) {
    return std::pow(10.0, -static_cast<double>(q) / 10.0);
}

template <typename T>
void fill(PairhmmTables<T>& t, int log2_initial) {
    const double kInvLn10 = 0.434294;  // GKL's truncated constant, kept on purpose
    for (int q = 0; q < kNumQuals; ++q) t.ph2pr[q] = ph2pr_value<T>(q);
    for (int hi = 0; hi < kNumQuals; ++hi)
        for (int lo = 0; lo <= hi; ++lo) {
            double s = approx_log10_sum_log10<T>(static_cast<T>(-0.1) * static_cast<T>(hi),
                                                 static_cast<T>(-0.1) * static_cast<T>(lo));
            double log10_mm = std::log1p(-std::min(1.0, std::pow(10.0, s))) * kInvLn10;
            t.match_to_match[mm_index(hi, lo)] = static_cast<T>(std::pow(10.0, log10_mm));
        }
    t.initial_constant = static_cast<T>(std::ldexp(1.0, log2_initial));
    t.log10_initial_constant = static_cast<T>(std::log10(static_cast<T>(t.initial_constant)));
}

}  // namespace

// Every byte not listed is A (code 0), like GKL's zero-initialised table.
#define PYPHMM_ROW16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
// clang-format off
const uint8_t kBaseCodes[256] = {
    PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0),
    // 'A' = 65, 'C' = 67, 'G' = 71, 'N' = 78, 'T' = 84
    0, kBaseA, 0, kBaseC, 0, 0, 0, kBaseG, 0, 0, 0, 0, 0, 0, kBaseN, 0,
    0, 0, 0, 0, kBaseT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0),
    PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0), PYPHMM_ROW16(0),
};
// clang-format on
#undef PYPHMM_ROW16

const PairhmmTables<float>& tables_float() {
    static const PairhmmTables<float>* t = [] {
        auto* p = new PairhmmTables<float>();
        fill(*p, 120);
        // GKL takes log10f of the float constant, not log10 of the double.
        p->log10_initial_constant = log10f(p->initial_constant);
        return p;
    }();
    return *t;
}

const PairhmmTables<double>& tables_double() {
    static const PairhmmTables<double>* t = [] {
        auto* p = new PairhmmTables<double>();
        fill(*p, 1020);
        return p;
    }();
    return *t;
}

}  // namespace pyphmm
