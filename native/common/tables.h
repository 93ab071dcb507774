// Constants and tables shared by every backend (CPU and CUDA), generated once
// per process on the host so both backends see bit-identical values.
#pragma once
#include <cstdint>

#include "common/transitions.h"

namespace pyphmm {

// Base codes. The mapping mirrors GKL's: A, C, G, T, N are significant and
// any other byte (lowercase included) is read as A, because that is what
// GKL's zero-initialised conversion table does. N matches anything.
enum BaseCode : uint8_t { kBaseA = 0, kBaseC = 1, kBaseG = 2, kBaseT = 3, kBaseN = 4 };
extern const uint8_t kBaseCodes[256];
inline uint8_t base_code(uint8_t ascii) { return kBaseCodes[ascii]; }

constexpr int kQualMask = 127;  // GKL masks every quality with & 127
constexpr int kNumQuals = 128;
constexpr int kMatchToMatchSize = kNumQuals * (kNumQuals + 1) / 2;

// Per-precision tables. float and double differ not only in width: GKL
// builds the float match-to-match table with float Jacobian arithmetic, and
// the last digits of GATK's likelihoods depend on that.
template <typename T>
struct PairhmmTables {
    T ph2pr[kNumQuals];  // 10^(-q/10)
    T match_to_match[kMatchToMatchSize];
    T initial_constant;  // 2^120 (float) or 2^1020 (double)
    T log10_initial_constant;

    // The table view row_transitions reads.
    T prob(int q) const { return ph2pr[q]; }
    T mm_at(int index) const { return match_to_match[index]; }
};

const PairhmmTables<float>& tables_float();
const PairhmmTables<double>& tables_double();

// A float result below this (before log10) is recomputed in double, as GKL does.
constexpr float kMinAcceptedFloat = 1e-28f;

}  // namespace pyphmm
