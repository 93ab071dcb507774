// Checks the GPU PairHMM's host planning (native/cuda/pairhmm_plan.cc),
// which only the CUDA build links, with the host compiler: bins, the
// constant-triple choice, chunk plans and the packed buffer a chunk sends.
// Prints "ok" and exits 0, or names the first violated invariant.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "common/pack_elems.h"
#include "common/tables.h"
#include "cuda/pairhmm_plan.h"

using namespace pyphmm;
using namespace pyphmm::cudak;

namespace {

int g_failures = 0;
#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            if (++g_failures <= 10) {                            \
                std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
                std::printf(__VA_ARGS__);                        \
                std::printf("\n");                               \
            }                                                    \
        }                                                        \
    } while (0)

// Reads of every length land in the smallest bin that holds them, in the
// pass their transitions call for.
void check_bins() {
    for (int m = 1; m <= 1200; ++m) {
        for (int mode = 0; mode < 4; ++mode) {
            const bool dbl = mode == 3, uni = mode >= 1, cst = mode == 2;
            const BinRef b = bin_of(m, dbl, uni, cst);
            const BinSpec* table = dbl ? kDoubleBins : kFloatBins;
            CHECK(b.bin >= 0 && b.bin < pass_bins(b.pass), "m %d mode %d: bin %d outside pass", m, mode, b.bin);
            CHECK(m <= table[b.bin].max_rows || table[b.bin].striped, "m %d: bin %d too small", m, b.bin);
            CHECK(b.bin == 0 || m > table[b.bin - 1].max_rows, "m %d: a smaller bin fits", m);
            Pass want = dbl ? Pass::kDouble : Pass::kFloatRow;
            if (!dbl && !table[b.bin].striped) {
                if (cst && b.bin < kNumFusedBins)
                    want = Pass::kFloatConst;
                else if (uni)
                    want = Pass::kFloatUniform;
            }
            CHECK(b.pass == want, "m %d mode %d: pass %d, want %d", m, mode, static_cast<int>(b.pass),
                  static_cast<int>(want));
        }
    }
}

void check_gaps() {
    const GapChoice g = make_gap_choice(45, 45, 10);
    const PairhmmTables<float>& t = tables_float();
    CHECK(g.on, "GATK's default triple must be accepted");
    CHECK(g.c.mx == t.ph2pr[45] && g.c.my == t.ph2pr[45] && g.c.cc == t.ph2pr[10], "constants from the tables");
    CHECK(g.c.gm == 1.0f - t.ph2pr[10] && g.c.mm == t.match_to_match[mm_index(45, 45)], "gm and mm");
    for (int i = 0; i < kMaxConstBlock; ++i)
        CHECK(std::fabs(g.c.xs[i] - g.c.mx * std::pow(g.c.cc, -i)) <= 1e-6 * g.c.xs[i], "xs[%d]", i);
    // mx * cc^-4 / gm (blocks of up to 5 rows): 11 for (30, 70, 10), 111 for (20, 70, 10), over the bound of 64
    CHECK(make_gap_choice(30, 70, 10).on, "(30,70,10) is within the bound");
    CHECK(!make_gap_choice(20, 70, 10).on, "(20,70,10) would overflow X'");
    CHECK(make_gap_choice(4, 45, 5).on, "(4,45,5): 58");
    CHECK(!make_gap_choice(45, 45, 0).on, "gm == 0 cannot be a constant triple");
}

// Regions of offsets only: plan_chunks reads nothing else.
struct Shapes {
    std::vector<std::vector<int64_t>> read_off, hap_off;
    std::vector<pyphmm_region> regions;
    int64_t cells = 0;
    Shapes(int n, std::mt19937_64& rng, int max_reads, int max_haps) {
        for (int k = 0; k < n; ++k) {
            const int nr = static_cast<int>(rng() % max_reads) + (k % 7 ? 1 : 0);  // some empty regions
            const int nh = static_cast<int>(rng() % max_haps) + 1;
            std::vector<int64_t> ro{1000}, ho{0};  // (offsets need not start at 0)
            for (int r = 0; r < nr; ++r) ro.push_back(ro.back() + 10 + static_cast<int>(rng() % 142));
            for (int h = 0; h < nh; ++h) ho.push_back(ho.back() + 30 + static_cast<int>(rng() % 492));
            cells += (ro.back() - ro[0]) * ho.back();
            read_off.push_back(ro);
            hap_off.push_back(ho);
        }
        for (int k = 0; k < n; ++k) {
            pyphmm_region g{};
            g.num_reads = static_cast<int32_t>(read_off[k].size() - 1);
            g.num_haps = static_cast<int32_t>(hap_off[k].size() - 1);
            g.read_offsets = read_off[k].data();
            g.hap_offsets = hap_off[k].data();
            regions.push_back(g);
        }
    }
};

// Every read of every region in exactly one piece, pieces in output order,
// chunks within their limits.
void check_chunks(const Shapes& s, int64_t min_chunks) {
    const std::vector<Chunk> chunks = plan_chunks(s.regions.data(), static_cast<int64_t>(s.regions.size()), s.cells);
    CHECK(static_cast<int64_t>(chunks.size()) >= min_chunks, "%zu chunks, expected at least %lld", chunks.size(),
          (long long)min_chunks);
    int64_t out = 0;
    size_t k = 0;
    int32_t next_read = 0;
    for (const Chunk& c : chunks) {
        CHECK(c.out_first == out, "chunk output starts at %lld, expected %lld", (long long)c.out_first, (long long)out);
        int64_t pairs = 0, elems = 0;
        for (const Piece& p : c.pieces) {
            while (k < s.regions.size() && (s.regions[k].num_reads == 0 || next_read == s.regions[k].num_reads)) {
                ++k;
                next_read = 0;
            }
            CHECK(p.region == static_cast<int64_t>(k) && p.r0 == next_read && p.r1 > p.r0,
                  "piece (%lld, %d..%d) does not continue (%zu, %d)", (long long)p.region, p.r0, p.r1, k, next_read);
            CHECK(p.out_first == out, "piece output %lld, expected %lld", (long long)p.out_first, (long long)out);
            const pyphmm_region& g = s.regions[p.region];
            pairs += int64_t(p.r1 - p.r0) * g.num_haps;
            elems += g.read_offsets[p.r1] - g.read_offsets[p.r0];
            out += int64_t(p.r1 - p.r0) * g.num_haps;
            next_read = p.r1;
        }
        CHECK(pairs == c.pairs && elems == c.read_elems, "chunk totals");
        CHECK(c.pairs <= kMaxChunkPairs || c.pieces.size() == 1, "chunk of %lld pairs", (long long)c.pairs);
    }
    int64_t total = 0;
    for (const pyphmm_region& g : s.regions) total += int64_t(g.num_reads) * g.num_haps;
    CHECK(out == total, "planned %lld pairs of %lld", (long long)out, (long long)total);
}

// A small call packed for real: decode the buffer and compare with the input.
void check_pack(bool dbl, bool merge) {
    std::mt19937_64 rng(7);
    const char* acgt = "ACGTN";
    std::vector<std::vector<uint8_t>> bases(6), quals(6), ins(6), dels(6), gcp(6), haps(6);
    std::vector<std::vector<int64_t>> ro(6), ho(6);
    std::vector<pyphmm_region> regions;
    for (int k = 0; k < 6; ++k) {
        const int nr = 1 + k * 3, nh = 1 + k % 4;
        ro[k] = {0};
        ho[k] = {0};
        for (int r = 0; r < nr; ++r) {
            const int m = k == 5 ? 300 + r : 1 + static_cast<int>(rng() % 160);  // region 5: standalone bins
            const bool uniform = r % 3 != 0;
            for (int i = 0; i < m; ++i) {
                bases[k].push_back(acgt[rng() % 5]);
                quals[k].push_back(static_cast<uint8_t>(rng() % 128));
                ins[k].push_back(uniform ? (r % 2 ? 45 : 40) : static_cast<uint8_t>(rng() % 128));
                dels[k].push_back(uniform ? (r % 2 ? 45 : 40) : static_cast<uint8_t>(rng() % 128));
                gcp[k].push_back(uniform ? 10 : static_cast<uint8_t>(rng() % 128));
            }
            ro[k].push_back(static_cast<int64_t>(bases[k].size()));
        }
        for (int h = 0; h < nh; ++h) {
            const int n = 1 + static_cast<int>(rng() % 300);
            for (int j = 0; j < n; ++j) haps[k].push_back(acgt[rng() % 5]);
            ho[k].push_back(static_cast<int64_t>(haps[k].size()));
        }
        regions.push_back({nr, nh, bases[k].data(), quals[k].data(), ins[k].data(), dels[k].data(), gcp[k].data(),
                           ro[k].data(), haps[k].data(), ho[k].data()});
    }
    int64_t cells = 0;
    for (const pyphmm_region& g : regions) cells += g.read_offsets[g.num_reads] * g.hap_offsets[g.num_haps];
    const std::vector<Chunk> chunks = plan_chunks(regions.data(), static_cast<int64_t>(regions.size()), cells);
    CHECK(chunks.size() == 1, "a small call is one chunk");
    const Chunk& c = chunks[0];
    const Layout L = layout_of(c);
    std::vector<char> buf(L.in_bytes + 64, '\x5a');
    const GapChoice gaps = dbl ? GapChoice{} : choose_gaps(regions.data(), static_cast<int64_t>(regions.size()));
    const Packed packed = pack_chunk(regions.data(), c, L, dbl, !dbl, merge, gaps, buf.data());
    const PairDesc* desc = reinterpret_cast<const PairDesc*>(buf.data() + L.desc_off);
    const uint32_t* elems = reinterpret_cast<const uint32_t*>(buf.data() + L.read_off);
    const uint8_t* planes = reinterpret_cast<const uint8_t*>(buf.data() + L.hap_off);
    // Map output index -> (region, read, hap).
    struct Where {
        int k, r, h;
    };
    std::vector<Where> where;
    for (int k = 0; k < 6; ++k)
        for (int r = 0; r < regions[k].num_reads; ++r)
            for (int h = 0; h < regions[k].num_haps; ++h) where.push_back({k, r, h});
    std::set<int> seen;
    int64_t const_pairs = 0, merged = 0;
    for (int s = 0; s < kNumSlots; ++s) {
        int32_t longest = 0;  // (the latency variants' choice reads it)
        for (int64_t i = packed.bins.start[s]; i < packed.bins.start[s] + packed.bins.count[s]; ++i)
            longest = std::max(longest, desc[i].m);
        CHECK(packed.bins.rows[s] == longest, "slot %d: longest read %d, counted %d", s, longest, packed.bins.rows[s]);
        for (int64_t i = packed.bins.start[s]; i < packed.bins.start[s] + packed.bins.count[s]; ++i) {
            const PairDesc& d = desc[i];
            CHECK(d.out >= 0 && d.out < static_cast<int>(where.size()) && seen.insert(d.out).second,
                  "descriptor %lld: output %d repeated or out of range", (long long)i, d.out);
            if (d.out < 0 || d.out >= static_cast<int>(where.size())) continue;
            const Where w = where[d.out];
            const pyphmm_region& g = regions[w.k];
            const int64_t r0 = g.read_offsets[w.r], h0 = g.hap_offsets[w.h];
            CHECK(d.m == g.read_offsets[w.r + 1] - r0 && d.n == g.hap_offsets[w.h + 1] - h0, "pair %d sizes", d.out);
            const bool uni = !dbl && uniform_transitions(g, r0, d.m);
            BinRef b = bin_of(d.m, dbl, uni, uni && gaps.matches(g, r0));
            if (merge && b.pass == Pass::kFloatUniform) {  // (every chunk here has per-row reads)
                b.pass = Pass::kFloatRow;
                ++merged;
            }
            CHECK(slot_of(b.pass, b.bin) == s, "pair %d in slot %d, expected %d", d.out, s, slot_of(b.pass, b.bin));
            const_pairs += b.pass == Pass::kFloatConst;
            std::vector<uint32_t> want(d.m);
            pack_read_elems(g.read_bases + r0, g.read_quals + r0, g.read_ins + r0, g.read_dels + r0, g.read_gcp + r0,
                            d.m, want.data());
            CHECK(!std::memcmp(elems + d.roff, want.data(), d.m * 4u), "pair %d read elements", d.out);
            std::vector<uint8_t> plane(d.n);
            pack_base_planes(g.hap_bases + h0, d.n, plane.data());
            CHECK(d.hoff % 4 == 0 && !std::memcmp(planes + d.hoff, plane.data(), d.n), "pair %d haplotype", d.out);
            for (int64_t j = d.n; j < hap_stride(d.n); ++j)
                CHECK(planes[d.hoff + j] == kPadPlane, "pair %d haplotype padding", d.out);
        }
    }
    CHECK(seen.size() == where.size(), "%zu of %zu pairs packed", seen.size(), where.size());
    CHECK(const_pairs == packed.const_pairs, "const pairs %lld, counted %lld", (long long)packed.const_pairs,
          (long long)const_pairs);
    CHECK(dbl || const_pairs > 0, "the uniform 45/45/10 reads take the constant pass");
    CHECK(!merge || dbl || merged > 0, "the uniform 40/40/10 reads join the per-row pass");
    for (int b = 0; merge && b < pass_bins(Pass::kFloatUniform); ++b)
        CHECK(packed.bins.count_of(Pass::kFloatUniform, b) == 0, "merged: no uniform pairs in bin %d", b);
    int zero = 0;
    CHECK(!std::memcmp(buf.data(), &zero, sizeof(zero)), "header zeroed (the double pass's counter)");
}

}  // namespace

int main() {
    check_bins();
    check_gaps();
    std::mt19937_64 rng(1);
    check_chunks(Shapes(300, rng, 60, 8), 1);
    // Large enough to cut: chunks by cells (total / 6) and regions split by the pair limit.
    check_chunks(Shapes(2000, rng, 500, 40), 6);
    for (bool merge : {false, true}) {
        check_pack(false, merge);
        check_pack(true, merge);
    }
    if (g_failures) {
        std::printf("%d failures\n", g_failures);
        return 1;
    }
    std::printf("ok\n");
    return 0;
}
