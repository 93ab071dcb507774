// Checks the GPU PDHMM's host planning (native/cuda/pdhmm_plan.cc), which
// only the CUDA build links, with the host compiler: how PdChunker cuts a
// call (every read of every region once, in order, within the bounds, the
// cell targets growing from the first chunk), the read rows a chunk packs
// and the screen of refusable bytes in the same pass. Prints "ok" and exits
// 0, or names the first violated invariants.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/pdhmm_plan.h"

using namespace pyphmm;
using namespace pyphmm::pdk;

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

// Regions with random shapes over shared byte arrays (the planner reads
// offsets; the row check reads the bytes). Some regions have no reads or
// no haplotypes (the planner skips them) and some reads are empty.
struct Workload {
    std::vector<uint8_t> bytes[5], hap, pd;
    std::vector<std::vector<int64_t>> read_offsets, hap_offsets;
    std::vector<pyphmm_pd_region> regions;
    int64_t cells = 0, pairs = 0;

    Workload(int n, int max_reads, int max_haps, int max_len, uint32_t seed) {
        std::mt19937 rng(seed);
        auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
        read_offsets.resize(n);
        hap_offsets.resize(n);
        int64_t read_bytes = 0, hap_bytes = 0;
        std::vector<std::pair<int, int>> shape(n);
        for (int k = 0; k < n; ++k) {
            const int nr = pick(0, 40) == 0 ? 0 : pick(1, max_reads), nh = pick(0, 40) == 0 ? 0 : pick(1, max_haps);
            shape[k] = {nr, nh};
            read_offsets[k].push_back(read_bytes);
            for (int r = 0; r < nr; ++r)
                read_offsets[k].push_back(read_bytes += pick(0, 30) == 0 ? 0 : pick(1, max_len));
            hap_offsets[k].push_back(hap_bytes);
            for (int h = 0; h < nh; ++h) hap_offsets[k].push_back(hap_bytes += pick(1, 2 * max_len));
        }
        for (auto& b : bytes) {
            b.resize(read_bytes + 1);
            for (auto& x : b) x = static_cast<uint8_t>(rng());
        }
        hap.assign(hap_bytes + 1, 'A');
        pd.assign(hap_bytes + 1, 0);
        for (int k = 0; k < n; ++k) {
            const auto [nr, nh] = shape[k];
            regions.push_back({nr, nh, bytes[0].data(), bytes[1].data(), bytes[2].data(), bytes[3].data(),
                               bytes[4].data(), read_offsets[k].data(), hap.data(), pd.data(), hap_offsets[k].data()});
            if (nr == 0 || nh == 0) continue;
            pairs += int64_t(nr) * nh;
            cells += (read_offsets[k][nr] - read_offsets[k][0]) * (hap_offsets[k][nh] - hap_offsets[k][0]);
        }
    }
};

// The chunks cover every (region, read) of the regions with reads and
// haplotypes once, in order, each piece inside its region; outputs are
// contiguous; a chunk's pairs, rows and codes match its pieces and stay
// within the bounds (a chunk of one piece of one read may exceed the row
// bound: that read gets a chunk of its own); a chunk's first region is
// never before the previous chunk's last (the GPU backend checks each
// region's bytes before the first chunk holding it); the first chunk's
// cells are near max(2^26, cells / 32) and later targets double.
void check_chunks(const Workload& w, const char* what) {
    const std::vector<PdChunk> chunks = pd_plan_chunks(w.regions.data(), int64_t(w.regions.size()), w.cells);
    int64_t region = 0, next_read = 0, out = 0, last_region = 0, pairs = 0;
    std::vector<int64_t> chunk_cells;
    for (const PdChunk& c : chunks) {
        CHECK(c.out_first == out, "%s: chunk starts at output %lld, expected %lld", what, (long long)c.out_first,
              (long long)out);
        int64_t cp = 0, rows = 0, codes = 0, cells = 0;
        CHECK(c.pieces.empty() || c.pieces.front().region >= last_region, "%s: a chunk goes back a region", what);
        for (const PdPiece& p : c.pieces) {
            while (region < int64_t(w.regions.size()) &&
                   (w.regions[region].num_reads == 0 || w.regions[region].num_haps == 0 ||
                    next_read == w.regions[region].num_reads)) {
                ++region;
                next_read = 0;
            }
            const pyphmm_pd_region& g = w.regions[std::min<int64_t>(region, w.regions.size() - 1)];
            CHECK(p.region == region && p.r0 == next_read && p.r1 > p.r0 && p.r1 <= g.num_reads,
                  "%s: piece (%lld, %d..%d), expected region %lld from read %lld", what, (long long)p.region, p.r0,
                  p.r1, (long long)region, (long long)next_read);
            CHECK(p.out_first == out, "%s: piece output %lld, expected %lld", what, (long long)p.out_first,
                  (long long)out);
            next_read = p.r1;
            const int64_t n_bases = g.hap_offsets[g.num_haps] - g.hap_offsets[0];
            for (int32_t h = 0; h < g.num_haps; ++h) codes += pd_code_stride(g.hap_offsets[h + 1] - g.hap_offsets[h]);
            rows += g.read_offsets[p.r1] - g.read_offsets[p.r0];
            cells += (g.read_offsets[p.r1] - g.read_offsets[p.r0]) * n_bases;
            cp += int64_t(p.r1 - p.r0) * g.num_haps;
            out += int64_t(p.r1 - p.r0) * g.num_haps;
            last_region = p.region;
        }
        CHECK(cp == c.pairs && rows == c.rows && codes == c.codes,
              "%s: chunk sizes %lld/%lld/%lld, pieces %lld/%lld/%lld", what, (long long)c.pairs, (long long)c.rows,
              (long long)c.codes, (long long)cp, (long long)rows, (long long)codes);
        const bool lone_read = c.pieces.size() == 1 && c.pieces[0].r1 - c.pieces[0].r0 == 1;
        CHECK(c.pairs <= kPdMaxChunkPairs && c.codes <= kPdMaxChunkCodes && (c.rows <= kPdMaxChunkRows || lone_read),
              "%s: chunk over its bounds", what);
        pairs += c.pairs;
        chunk_cells.push_back(cells);
    }
    CHECK(pairs == w.pairs, "%s: chunks hold %lld pairs of %lld", what, (long long)pairs, (long long)w.pairs);
    if (chunks.size() > 1) {
        const int64_t first = std::max<int64_t>(kPdFirstChunkCells, w.cells / 32);
        CHECK(chunk_cells[0] >= first, "%s: first chunk of %lld cells, target %lld", what, (long long)chunk_cells[0],
              (long long)first);
        for (size_t c = 1; c + 1 < chunk_cells.size(); ++c)
            CHECK(chunk_cells[c] >= std::min(std::max(kPdMinChunkCells, w.cells / 6 + 1), first << c) ||
                      chunks[c].pairs + 2000 > kPdMaxChunkPairs || chunks[c].rows + 2000 > kPdMaxChunkRows,
                  "%s: chunk %zu of %lld cells under its target", what, c, (long long)chunk_cells[c]);
    }
}

// A packed chunk's read rows are the reads' bytes, position by position.
void check_rows(const Workload& w) {
    const std::vector<PdChunk> chunks = pd_plan_chunks(w.regions.data(), int64_t(w.regions.size()), w.cells);
    for (const PdChunk& c : chunks) {
        const PdLayout L = pd_layout_of(c);
        std::vector<uint64_t> buf(L.in_bytes / 8 + 2);
        std::vector<uint64_t> slots(c.pairs);
        pd_pack_chunk(w.regions.data(), c, L, reinterpret_cast<char*>(buf.data()), slots.data(), 1);
        const PdRowElem* rows =
            reinterpret_cast<const PdRowElem*>(reinterpret_cast<const char*>(buf.data()) + L.row_off);
        for (const PdPiece& p : c.pieces) {
            const pyphmm_pd_region& g = w.regions[p.region];
            for (int64_t i = g.read_offsets[p.r0]; i < g.read_offsets[p.r1]; ++i, ++rows) {
                const PdRowElem want =
                    pd_row_elem(g.read_bases[i], g.read_quals[i], g.read_ins[i], g.read_dels[i], g.read_gcp[i]);
                CHECK(rows->x == want.x && rows->y == want.y, "row of position %lld: %08x %08x, expected %08x %08x",
                      (long long)i, rows->x, rows->y, want.x, want.y);
            }
        }
    }
}

// Packing screens the bytes it packs (PdPacked::suspect): a workload of
// bytes GKL accepts packs clean, and one refusable byte (each kind, at
// random positions, half of them in the scalar tail of a piece)
// marks the chunk that packs it, and no other.
void check_screen(Workload& w, uint32_t seed) {
    std::mt19937 rng(seed);
    const char kBases[] = "ACGTNacgt";
    for (auto& x : w.bytes[0]) x = static_cast<uint8_t>(kBases[rng() % 9]);
    for (auto& x : w.bytes[1]) x = static_cast<uint8_t>(rng() % 255);  // base qualities 0..254
    for (int k = 2; k < 5; ++k)
        for (auto& x : w.bytes[k]) x = static_cast<uint8_t>(rng() % 128);  // gap qualities 0..127
    const std::vector<PdChunk> chunks = pd_plan_chunks(w.regions.data(), int64_t(w.regions.size()), w.cells);
    auto screens = [&](std::vector<bool>* out) {
        out->clear();
        for (const PdChunk& c : chunks) {
            const PdLayout L = pd_layout_of(c);
            std::vector<uint64_t> buf(L.in_bytes / 8 + 2);
            std::vector<uint64_t> slots(c.pairs);
            out->push_back(
                pd_pack_chunk(w.regions.data(), c, L, reinterpret_cast<char*>(buf.data()), slots.data(), 1).suspect);
        }
    };
    std::vector<bool> got;
    screens(&got);
    for (size_t c = 0; c < got.size(); ++c) CHECK(!got[c], "chunk %zu of clean bytes is suspect", c);
    // (field, byte) of each kind GKL may refuse
    const std::pair<int, uint8_t> kBad[] = {{0, 'X'}, {0, 'n'}, {0, 0}, {1, 255}, {2, 128}, {3, 200}, {4, 255}};
    for (int trial = 0; trial < 140; ++trial) {
        const size_t c = rng() % chunks.size();
        const PdPiece& p = chunks[c].pieces[rng() % chunks[c].pieces.size()];
        const int64_t lo = w.regions[p.region].read_offsets[p.r0], hi = w.regions[p.region].read_offsets[p.r1];
        const int64_t tail = (hi - lo) % 16;  // (the piece's positions past its last whole vector)
        if (hi == lo || (trial % 2 && tail == 0)) continue;
        const int64_t i = trial % 2 ? hi - 1 - static_cast<int64_t>(rng() % uint64_t(tail))
                                    : lo + static_cast<int64_t>(rng() % uint64_t(hi - lo));
        const auto& bad = kBad[trial % 7];
        const uint8_t keep = w.bytes[bad.first][i];
        w.bytes[bad.first][i] = bad.second;
        screens(&got);
        for (size_t k = 0; k < got.size(); ++k)
            CHECK(got[k] == (k == c), "byte %u in field %d at %lld: chunk %zu suspect %d", bad.second, bad.first,
                  (long long)i, k, int(got[k]));
        w.bytes[bad.first][i] = keep;
    }
}

}  // namespace

int main() {
    // One chunk; a few chunks; a workload over the full-chunk size; chunks
    // bounded by pairs (many haplotypes).
    const Workload small(30, 20, 6, 60, 1), medium(200, 90, 8, 150, 2), large(600, 120, 12, 250, 3),
        wide(40, 200, 400, 30, 4);
    check_chunks(small, "small");
    check_chunks(medium, "medium");
    check_chunks(large, "large");
    check_chunks(wide, "wide");
    check_rows(small);
    check_rows(medium);
    Workload screened(200, 90, 8, 150, 5);
    check_screen(screened, 6);
    if (g_failures) return 1;
    std::printf("ok\n");
    return 0;
}
