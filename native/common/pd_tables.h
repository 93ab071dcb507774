// PDHMM's probability tables (docs/PDHMM.md): GKL 0.9's double tables,
// built once per process with the libm formulas GKL uses, so that on the
// same C library every transition and prior is bit-identical to GKL's.
// They differ from the PairHMM tables (tables.h): 255 qualities instead of
// 128, an exact 1/ln(10), and no float variant.
#pragma once
#include <cstdint>

namespace pyphmm {

// PD byte bits (GATK's PartiallyDeterminedHaplotype; pyphmm.h's PYPHMM_PD_*).
constexpr uint8_t kPdSnp = 1;
constexpr uint8_t kPdDelStart = 2;
constexpr uint8_t kPdDelEnd = 4;
constexpr uint8_t kPdA = 8;
constexpr uint8_t kPdC = 16;
constexpr uint8_t kPdG = 32;
constexpr uint8_t kPdT = 64;

// Qualities 0..254 have table entries (GKL's MAX_QUAL); 255 has none (GKL
// reads past its table), so validation refuses it.
constexpr int kPdMaxQual = 254;
constexpr int kPdNumQuals = kPdMaxQual + 1;
// Gap qualities (insertion, deletion, continuation) above this are negative
// Java bytes, which GKL refuses.
constexpr int kPdMaxGapQual = 127;
constexpr int kPdMatchToMatchSize = kPdNumQuals * (kPdNumQuals + 1) / 2;

struct PdTables {
    double error_prob[kPdNumQuals];              // 10^(-q/10)
    double match_to_match[kPdMatchToMatchSize];  // at max*(max+1)/2 + min
    double initial_condition;                    // 2^1020
    double log10_initial_condition;

    double m2m(int ins, int del) const {
        const int lo = ins < del ? ins : del, hi = ins < del ? del : ins;
        return match_to_match[hi * (hi + 1) / 2 + lo];
    }
};

// Built on first use (thread-safe), never freed.
const PdTables& pd_tables();

}  // namespace pyphmm
