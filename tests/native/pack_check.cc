// Checks the vectorised host packer (native/common/pack_elems.cc) against its
// scalar loops and against the layouts written out here (read elements, base
// planes, whether a read's transitions are uniform), on random bytes of every
// value, every length 0..300 and unaligned starts. Prints
// "avx2 N mismatches" (or "no-avx2") and exits non-zero on any mismatch.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "common/pack_elems.h"

using namespace pyphmm;

static uint32_t literal(uint8_t b, uint8_t q, uint8_t i, uint8_t d, uint8_t c) {
    uint32_t mask = b == 'A' ? 1 : b == 'C' ? 2 : b == 'G' ? 4 : b == 'T' ? 8 : b == 'N' ? 15 : 1;
    return mask + 16u * (q % 128) + 2048u * (i % 128) + 262144u * (d % 128) + 33554432u * (c % 128);
}

int main() {
    if (!__builtin_cpu_supports("avx2")) {
        std::printf("no-avx2\n");
        return 0;
    }
    std::mt19937 rng(7);
    const char common[] = "ACGTNacgtn";
    long bad = 0, checked = 0;
    for (int m = 0; m <= 300; ++m) {
        for (int start = 0; start < 6; ++start) {
            std::vector<uint8_t> s[5];
            for (auto& v : s) {
                v.resize(start + m);
                for (auto& x : v) x = static_cast<uint8_t>(rng());
            }
            for (int j = 0; j < start + m; ++j)  // mostly real bases, some of every other byte
                if (rng() % 4) s[0][j] = static_cast<uint8_t>(common[rng() % 10]);
            if (start >= 3) {  // one transition triple (bit 7 may vary); then maybe one position differs
                for (int f = 2; f < 5; ++f)
                    for (auto& x : s[f]) x = static_cast<uint8_t>((45 + 10 * f) | (rng() % 2) << 7);
                if (m > 0 && start == 4) s[2 + rng() % 3][start + rng() % m] ^= static_cast<uint8_t>(1 << rng() % 7);
            }
            bool want_uniform = true;
            for (int j = 1; j < m; ++j)
                for (int f = 2; f < 5; ++f) want_uniform &= (s[f][start + j] & 127) == (s[f][start] & 127);
            std::vector<uint32_t> fast(m + 1, 0xdeadbeef), slow(m + 1, 0xdeadbeef);
            const bool fast_uniform =
                pack_read_elems(&s[0][start], &s[1][start], &s[2][start], &s[3][start], &s[4][start], m, fast.data());
            const bool slow_uniform = pack_read_elems_scalar(&s[0][start], &s[1][start], &s[2][start], &s[3][start],
                                                             &s[4][start], m, slow.data());
            if ((fast_uniform != want_uniform || slow_uniform != want_uniform) && bad++ < 5)
                std::printf("m=%d start=%d: uniform fast %d scalar %d want %d\n", m, start, fast_uniform, slow_uniform,
                            want_uniform);
            std::vector<uint8_t> pf(m + 1, 0xee), ps(m + 1, 0xee);
            pack_base_planes(&s[0][start], m, pf.data());
            pack_base_planes_scalar(&s[0][start], m, ps.data());
            for (int j = 0; j <= m; ++j) {
                uint32_t want = j < m ? literal(s[0][start + j], s[1][start + j], s[2][start + j], s[3][start + j],
                                                s[4][start + j])
                                      : 0xdeadbeef;  // nothing written past m
                uint32_t mask = want & 15;
                uint8_t want_plane = j < m ? static_cast<uint8_t>(mask == 15 ? 4 : __builtin_ctz(mask)) : 0xee;
                bool ok = fast[j] == want && slow[j] == want && pf[j] == want_plane && ps[j] == want_plane;
                if (!ok && bad++ < 5)
                    std::printf("m=%d start=%d j=%d: fast %08x scalar %08x want %08x; planes %d %d want %d\n", m, start,
                                j, fast[j], slow[j], want, pf[j], ps[j], want_plane);
                ++checked;
            }
        }
    }
    std::printf("avx2 %ld checked, %ld mismatches\n", checked, bad);
    return bad ? 1 : 0;
}
