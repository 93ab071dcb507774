// Prints pyphmm's PDHMM tables (native/common/pd_tables.cc) as IEEE-754
// bits in the format of tests/data/gkl-pdhmm-tables.txt.gz, for
// tests/test_pdhmm_tables.py to compare with GKL's:
//   qe Q BITS        error probability of quality Q = 0..254
//   mm MAX MIN BITS  match-to-match, 0 <= MIN <= MAX <= 254
//   ic BITS BITS     initial condition and its log10
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/pd_tables.h"

namespace {

uint64_t bits(double d) {
    uint64_t b;
    std::memcpy(&b, &d, sizeof(b));
    return b;
}

}  // namespace

int main() {
    const pyphmm::PdTables& t = pyphmm::pd_tables();
    for (int q = 0; q <= pyphmm::kPdMaxQual; ++q) std::printf("qe %d %016" PRIx64 "\n", q, bits(t.error_prob[q]));
    for (int hi = 0; hi <= pyphmm::kPdMaxQual; ++hi)
        for (int lo = 0; lo <= hi; ++lo) std::printf("mm %d %d %016" PRIx64 "\n", hi, lo, bits(t.m2m(hi, lo)));
    std::printf("ic %016" PRIx64 " %016" PRIx64 "\n", bits(t.initial_condition), bits(t.log10_initial_condition));
    return 0;
}
