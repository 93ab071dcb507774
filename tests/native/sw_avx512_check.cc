// The AVX-512 instance of the Smith-Waterman difference fill on any x86-64
// CPU: built by tests/test_sw_kernel.py with -DPYPHMM_SW_EMULATE_AVX512 and
// -include sw_avx512_emulation.h (portable definitions of the intrinsics it
// uses), run with PYPHMM_DEV=sw_isa=avx512. Reads "REF ALT MATCH MISMATCH OPEN
// EXTEND STRATEGY" lines (sequences hex) on standard input and writes
// "CIGAR OFFSET" per line, aligned one pair per call as GATK calls, then
// "reused_cells N diagonal_alignments N" on standard error (prefix reuse,
// sw_cpu_fill.h; pairs aligned without a matrix, sw_cpu.cc).
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/sw_cpu.h"

namespace {

std::vector<uint8_t> unhex(const std::string& s) {
    std::vector<uint8_t> out(s.size() / 2);
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<uint8_t>(std::stoi(s.substr(2 * k, 2), nullptr, 16));
    return out;
}

}  // namespace

int main() {
    std::string line;
    int64_t reused = 0;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string ref_hex, alt_hex;
        pyphmm_sw_params p;
        int strategy;
        if (!(in >> ref_hex >> alt_hex >> p.match >> p.mismatch >> p.gap_open >> p.gap_extend >> strategy)) return 2;
        const std::vector<uint8_t> ref = unhex(ref_hex), alt = unhex(alt_hex);
        std::vector<char> cigar(2 * (ref.size() + alt.size()) + 1);
        const int32_t offset = pyphmm::sw_align_one(ref.data(), static_cast<int>(ref.size()), alt.data(),
                                                    static_cast<int>(alt.size()), p, strategy, cigar.data(), &reused);
        std::printf("%s %d\n", cigar.data(), offset);
    }
    std::fprintf(stderr, "reused_cells %lld diagonal_alignments %lld\n", static_cast<long long>(reused),
                 static_cast<long long>(pyphmm::diagonal_alignments()));
    return 0;
}
