// Reads doubles as 16-hex-digit bit patterns, one per line, and prints
// pyphmm::format_double_repr of each (tests/test_records.py compares the
// lines with Python's repr()).
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/repr.h"

int main() {
    char line[64], out[64];
    while (std::fgets(line, sizeof(line), stdin)) {
        unsigned long long bits = 0;
        if (std::sscanf(line, "%llx", &bits) != 1) return 2;
        double v;
        std::memcpy(&v, &bits, sizeof(v));
        pyphmm::format_double_repr(v, out);
        std::puts(out);
    }
    return 0;
}
