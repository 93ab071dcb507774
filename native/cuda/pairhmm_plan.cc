// Host-side planning of a GPU PairHMM call (see pairhmm_plan.h).
#include "cuda/pairhmm_plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>

#include "common/pack_elems.h"
#include "common/tables.h"
#include "common/thread_pool.h"
#include "common/transitions.h"

namespace pyphmm {
namespace cudak {

// ---------------------------------------------------------------- bins
BinRef bin_of(int m, bool dbl, bool uniform, bool constant) {
    if (dbl) {
        for (int b = 0; b < kNumDoubleBins - 1; ++b)
            if (m <= kDoubleBins[b].max_rows) return {Pass::kDouble, b};
        return {Pass::kDouble, kNumDoubleBins - 1};
    }
    for (int b = 0; b < kNumFloatBins - 1; ++b) {
        if (m > kFloatBins[b].max_rows) continue;
        if (constant && b < pass_bins(Pass::kFloatConst)) return {Pass::kFloatConst, b};
        return {uniform ? Pass::kFloatUniform : Pass::kFloatRow, b};
    }
    return {Pass::kFloatRow, kNumFloatBins - 1};
}

bool uniform_transitions(const pyphmm_region& g, int64_t ro, int m) {
    const uint8_t *ins = g.read_ins + ro, *del = g.read_dels + ro, *gcp = g.read_gcp + ro;
    unsigned diff = 0;  // (no early exit: the loop vectorises)
    for (int i = 1; i < m; ++i) diff |= (ins[i] ^ ins[0]) | (del[i] ^ del[0]) | (gcp[i] ^ gcp[0]);
    return (diff & 127u) == 0;
}

// ---------------------------------------------------------------- gap choice
GapChoice make_gap_choice(int ins, int del, int gcp) {
    GapChoice g;
    g.ins = ins;
    g.del = del;
    g.gcp = gcp;
    const RowTransitions<float> tr = row_transitions<float>(tables_float(), ins, del, gcp);
    GapConsts& c = g.c;
    c.mx = tr.mx;
    c.my = tr.my;
    c.cc = tr.cc;
    c.gm = tr.gm;
    c.mm = tr.mm;
    // (see GapConsts) X' <= IC * mx * cc^-(B-1) / gm must stay below 2^126.
    const double cc = c.cc, B = kMaxConstBlock;
    if (!(c.gm > 0.0f) || !(cc > 0.0) || c.mx * std::pow(cc, -(B - 1)) / c.gm > kMaxConstGrowth) return g;
    c.mmg = c.mm / c.gm;
    for (int i = 0; i <= kMaxConstBlock; ++i) {
        c.pw[i] = static_cast<float>(std::pow(cc, i));
        c.gpw[i] = static_cast<float>(static_cast<double>(c.gm) * std::pow(cc, i));
    }
    for (int i = 0; i < kMaxConstBlock; ++i) c.xs[i] = static_cast<float>(c.mx * std::pow(cc, -i));
    g.on = true;
    return g;
}

GapChoice choose_gaps(const pyphmm_region* regions, int64_t num_regions) {
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        if (!g.num_reads || !g.num_haps) continue;
        const int64_t ro = g.read_offsets[0];
        const int m = static_cast<int>(g.read_offsets[1] - ro);
        if (m > 0 && uniform_transitions(g, ro, m)) {
            GapChoice c = make_gap_choice(g.read_ins[ro] & 127, g.read_dels[ro] & 127, g.read_gcp[ro] & 127);
            if (c.on) return c;
        }
        break;
    }
    return make_gap_choice(45, 45, 10);
}

// ---------------------------------------------------------------- chunks
std::vector<Chunk> plan_chunks(const pyphmm_region* regions, int64_t num_regions, int64_t total_cells) {
    const int64_t cell_target = std::max(kMinChunkCells, total_cells / 6 + 1);
    std::vector<Chunk> chunks(1);
    int64_t out = 0, cells = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        if (g.num_reads == 0 || g.num_haps == 0) continue;
        int64_t hap_bytes = 0, hap_bases = 0;
        for (int32_t h = 0; h < g.num_haps; ++h) {
            const int64_t n = g.hap_offsets[h + 1] - g.hap_offsets[h];
            hap_bytes += hap_stride(n);
            hap_bases += n;
        }
        int32_t r = 0;
        bool full = false;  // the previous piece of this region stopped at a limit
        while (r < g.num_reads) {
            Chunk* c = &chunks.back();
            const int64_t m0 = g.read_offsets[r + 1] - g.read_offsets[r];
            if (c->pairs > 0 && (full || c->hap_bytes + hap_bytes > kMaxChunkHapBytes || cells >= cell_target ||
                                 c->pairs + g.num_haps > kMaxChunkPairs || c->read_elems + m0 > kMaxChunkReadElems)) {
                chunks.emplace_back();
                chunks.back().out_first = out;
                cells = 0;
                c = &chunks.back();
            }
            Piece p{k, r, r, out};
            c->hap_bytes += hap_bytes;
            while (r < g.num_reads) {
                const int64_t m = g.read_offsets[r + 1] - g.read_offsets[r];
                if (p.r1 > p.r0 && (c->pairs + g.num_haps > kMaxChunkPairs || c->read_elems + m > kMaxChunkReadElems ||
                                    cells >= cell_target))
                    break;
                c->pairs += g.num_haps;
                c->read_elems += m;
                cells += m * hap_bases;
                out += g.num_haps;
                ++r;
                ++p.r1;
            }
            c->pieces.push_back(p);
            full = r < g.num_reads;
        }
    }
    return chunks;
}

Layout layout_of(const Chunk& c) {
    Layout L;
    L.desc_off = kHeaderBytes;
    L.read_off = round_up(L.desc_off + c.pairs * sizeof(PairDesc), 16);
    L.hap_off = round_up(L.read_off + c.read_elems * 4, 16);
    L.in_bytes = round_up(L.hap_off + c.hap_bytes, 16);
    L.list_off = L.in_bytes;
    L.dev_in_bytes = L.list_off + c.pairs * sizeof(int);
    L.out_bytes = kHeaderBytes + c.pairs * sizeof(double);
    return L;
}

// ---------------------------------------------------------------- packing
namespace {

// Where one piece's data goes in the chunk's buffer: its first read element,
// first haplotype byte and, per (pass, bin) slot, its first descriptor;
// and per slot its longest read.
struct PieceCursor {
    int64_t rpos = 0, hpos = 0;
    int64_t slot[kNumSlots] = {};
    int32_t rows[kNumSlots] = {};
};

// Pass 1 for one piece: packs its reads at `relem` (packing tells whether a
// read's transitions are uniform, which picks its slot) and returns its
// sizes (read elements, haplotype bytes, pairs per slot) as a cursor
// relative to 0.
PieceCursor pack_reads(const pyphmm_region& g, const Piece& p, bool dbl, bool uni, const GapChoice& gaps,
                       uint8_t* read_slot, uint32_t* relem) {
    PieceCursor sz;
    for (int32_t h = 0; h < g.num_haps; ++h) sz.hpos += hap_stride(g.hap_offsets[h + 1] - g.hap_offsets[h]);
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int64_t ro = g.read_offsets[r];
        const int m = static_cast<int>(g.read_offsets[r + 1] - ro);
        const bool same = pack_read_elems(g.read_bases + ro, g.read_quals + ro, g.read_ins + ro, g.read_dels + ro,
                                          g.read_gcp + ro, m, relem + sz.rpos);
        const bool u = uni && same;
        const BinRef b = bin_of(m, dbl, u, u && gaps.matches(g, ro));
        const int s = slot_of(b.pass, b.bin);
        read_slot[r - p.r0] = static_cast<uint8_t>(s);
        sz.rpos += m;
        sz.slot[s] += g.num_haps;
        if (g.num_haps) sz.rows[s] = std::max(sz.rows[s], m);
    }
    return sz;
}

// Pass 2 for one piece: its haplotypes (base planes, padded with kPadPlane) and one
// descriptor per (read, haplotype) into its slots. Returns the longest
// haplotype.
int pack_piece(const pyphmm_region& g, const Piece& p, int64_t out, PieceCursor cur, const uint8_t* read_slot,
               PairDesc* desc, uint8_t* hbytes) {
    int longest = 1;
    std::vector<uint32_t> hoff(g.num_haps), hlen(g.num_haps);
    for (int32_t h = 0; h < g.num_haps; ++h) {
        const uint8_t* src = g.hap_bases + g.hap_offsets[h];
        const int64_t n = g.hap_offsets[h + 1] - g.hap_offsets[h];
        hoff[h] = static_cast<uint32_t>(cur.hpos);
        hlen[h] = static_cast<uint32_t>(n);
        uint8_t* dst = hbytes + cur.hpos;
        pack_base_planes(src, n, dst);
        std::memset(dst + n, kPadPlane, hap_stride(n) - n);
        cur.hpos += hap_stride(n);
        longest = std::max<int>(longest, static_cast<int>(n));
    }
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int m = static_cast<int>(g.read_offsets[r + 1] - g.read_offsets[r]);
        int64_t& next = cur.slot[read_slot[r - p.r0]];
        for (int32_t h = 0; h < g.num_haps; ++h) {
            PairDesc& d = desc[next++];
            d.roff = static_cast<uint32_t>(cur.rpos);
            d.hoff = hoff[h];
            d.m = m;
            d.n = static_cast<int32_t>(hlen[h]);
            d.out = static_cast<int32_t>(out++);
        }
        cur.rpos += m;
    }
    return longest;
}

// Moves the kUniform reads of a chunk to the kRow pass, bin for bin, when
// the chunk has kRow pairs (pack_chunk's merge_uniform); between pass 1
// (sizes per piece) and the prefix sums.
void merge_uniform_into_rows(std::vector<PieceCursor>& sizes, std::vector<uint8_t>& read_slot) {
    constexpr int row = slot_of(Pass::kFloatRow, 0), uni = slot_of(Pass::kFloatUniform, 0);
    constexpr int bins = pass_bins(Pass::kFloatUniform);
    int64_t row_pairs = 0, uni_pairs = 0;
    for (const PieceCursor& pc : sizes)
        for (int b = 0; b < kNumFloatBins; ++b) {
            row_pairs += pc.slot[row + b];
            if (b < bins) uni_pairs += pc.slot[uni + b];
        }
    if (!row_pairs || !uni_pairs) return;
    for (PieceCursor& pc : sizes)
        for (int b = 0; b < bins; ++b) {
            pc.slot[row + b] += pc.slot[uni + b];
            pc.slot[uni + b] = 0;
            pc.rows[row + b] = std::max(pc.rows[row + b], pc.rows[uni + b]);
            pc.rows[uni + b] = 0;
        }
    for (uint8_t& s : read_slot)
        if (s >= uni && s < uni + bins) s = static_cast<uint8_t>(s - uni + row);
}

}  // namespace

// Pass 1 packs every piece's reads and sizes the rest, pass 2 packs the
// haplotypes and descriptors, each in parallel over pieces (whole workloads
// have thousands); in between, prefix sums tell each piece where its data
// goes. (A piece's read elements start where the previous pieces' end,
// which the read offsets tell before pass 1.)
Packed pack_chunk(const pyphmm_region* regions, const Chunk& c, const Layout& L, bool dbl, bool uni, bool merge_uniform,
                  const GapChoice& gaps, char* buf) {
    std::memset(buf, 0, kHeaderBytes);
    PairDesc* desc = reinterpret_cast<PairDesc*>(buf + L.desc_off);
    uint32_t* relem = reinterpret_cast<uint32_t*>(buf + L.read_off);
    uint8_t* hbytes = reinterpret_cast<uint8_t*>(buf + L.hap_off);
    const int64_t np = static_cast<int64_t>(c.pieces.size());
    // where each piece's reads go in read_slot and in relem
    std::vector<int64_t> read_first(np + 1, 0), elem_first(np + 1, 0);
    for (int64_t k = 0; k < np; ++k) {
        const Piece& p = c.pieces[k];
        const int64_t* ro = regions[p.region].read_offsets;
        read_first[k + 1] = read_first[k] + p.r1 - p.r0;
        elem_first[k + 1] = elem_first[k] + ro[p.r1] - ro[p.r0];
    }
    std::vector<uint8_t> read_slot(read_first[np]);
    std::vector<PieceCursor> cur(np);
    std::vector<int> longest(np, 1);
    std::atomic<bool> no_memory{false};
    auto each_piece = [&](auto&& fn) {  // parallel_for's fn must not throw
        auto guarded = [&](int64_t k) {
            try {
                fn(k);
            } catch (const std::bad_alloc&) {
                no_memory = true;
            }
        };
        if (np > 1 && c.pairs >= 4096)  // per-region calls (one piece) stay on the calling thread
            parallel_for(np, 0, guarded);
        else
            for (int64_t k = 0; k < np; ++k) guarded(k);
        if (no_memory) throw std::bad_alloc();
    };
    each_piece([&](int64_t k) {
        cur[k] = pack_reads(regions[c.pieces[k].region], c.pieces[k], dbl, uni, gaps, read_slot.data() + read_first[k],
                            relem + elem_first[k]);
    });
    if (merge_uniform) merge_uniform_into_rows(cur, read_slot);
    Packed out;
    PieceCursor total;
    for (PieceCursor& pc : cur) {  // sizes -> starts (per slot: relative to the slot's start)
        const PieceCursor sz = pc;
        pc = total;
        total.rpos += sz.rpos;
        total.hpos += sz.hpos;
        for (int s = 0; s < kNumSlots; ++s) {
            total.slot[s] += sz.slot[s];
            total.rows[s] = std::max(total.rows[s], sz.rows[s]);
        }
    }
    int64_t acc = 0;
    for (int s = 0; s < kNumSlots; ++s) {
        out.bins.start[s] = acc;
        out.bins.count[s] = total.slot[s];
        out.bins.rows[s] = total.rows[s];
        acc += total.slot[s];
    }
    for (PieceCursor& pc : cur)
        for (int s = 0; s < kNumSlots; ++s) pc.slot[s] += out.bins.start[s];
    each_piece([&](int64_t k) {
        const Piece& p = c.pieces[k];
        longest[k] = pack_piece(regions[p.region], p, p.out_first - c.out_first, cur[k],
                                read_slot.data() + read_first[k], desc, hbytes);
    });
    out.max_hap_len = *std::max_element(longest.begin(), longest.end());
    for (int b = 0; b < pass_bins(Pass::kFloatConst); ++b) out.const_pairs += out.bins.count_of(Pass::kFloatConst, b);
    return out;
}

}  // namespace cudak
}  // namespace pyphmm
