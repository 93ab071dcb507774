// Host-side planning of a GPU PDHMM call (see pdhmm_plan.h).
#include "cuda/pdhmm_plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/pd_tables.h"
#include "common/thread_pool.h"

namespace pyphmm {
namespace pdk {

namespace {

inline size_t round16(size_t x) { return (x + 15) / 16 * 16; }

int64_t read_len(const pyphmm_pd_region& g, int32_t r) { return g.read_offsets[r + 1] - g.read_offsets[r]; }
int64_t hap_len(const pyphmm_pd_region& g, int32_t h) { return g.hap_offsets[h + 1] - g.hap_offsets[h]; }

// Pieces of more pairs than this are packed in parallel with the others.
constexpr int64_t kParallelPairs = 4096;

// A haplotype's codes before the capture flags: two table lookups a
// column. (Kept scalar: GCC vectorizes the loop into emulated gathers, at
// twice the instructions.)
#if defined(__GNUC__) && !defined(__clang__)
#define PYPHMM_PD_SCALAR_LOOP __attribute__((optimize("no-tree-vectorize")))
#else
#define PYPHMM_PD_SCALAR_LOOP
#endif
PYPHMM_PD_SCALAR_LOOP void pd_plain_codes(const uint8_t* hap, const uint8_t* pd, int n, uint32_t* out) {
    const PdCodeTables& T = kPdCodeTables;
    for (int j = 0; j < n; ++j) out[j] = T.hap[hap[j]] | T.pd[pd[j]];
}

// Writes a haplotype's n codes; returns its DEL_END columns (pd_certify).
int pd_column_codes(const uint8_t* hap, const uint8_t* pd, int n, uint32_t* out) {
    const PdCodeTables& T = kPdCodeTables;
    constexpr uint8_t kMarks = kPdBitDelStart | kPdBitDelEnd;
    uint8_t marks = 0;
    pd_plain_codes(hap, pd, n, out);
    for (int j = 0; j < n; ++j) marks |= pd[j];  // (vectorized: most haplotypes have no span)
    if (!(marks & kMarks)) return 0;             // (no capture flags, no state changes)
    int del_ends = 0;
    for (int j = 0; j < n; ++j) del_ends += (pd[j] >> 2) & 1;
    // The state row 1 ends in (every later row's start): the last marked
    // column's, or NORMAL a column after an AFTER_DEL.
    int last = n - 1;
    while (last >= 0 && !(pd[last] & kMarks)) --last;
    const int end = T.next[kNormal][(pd[last] >> 1) & 3];
    int s1 = kNormal, s2 = last < n - 1 && end == kAfterDel ? kNormal : end;
    // Only a marked column captures or changes a state (but AFTER_DEL,
    // which an unmarked column ends).
    for (int j = 0, prev = -2; j <= last; ++j) {
        if (!(pd[j] & kMarks)) continue;
        if (j > prev + 1) {
            s1 = s1 == kAfterDel ? kNormal : s1;
            s2 = s2 == kAfterDel ? kNormal : s2;
        }
        const int b = (pd[j] >> 1) & 3;
        out[j] |= T.cap[s2][b] | T.cap[s1][b] << kRow1Shift;
        s1 = T.next[s1][b];
        s2 = T.next[s2][b];
        prev = j;
    }
    return del_ends;
}

}  // namespace

// ---------------------------------------------------------------- chunks
PdChunker::PdChunker(const pyphmm_pd_region* regions, int64_t num_regions, int64_t total_cells)
    : regions_(regions), num_regions_(num_regions) {
    // The GPU starts on a small first chunk (the host packs it while
    // nothing computes); the targets double up to a sixth of the workload.
    full_target_ = std::max(kPdMinChunkCells, total_cells / 6 + 1);
    cell_target_ = std::min(full_target_, std::max(kPdFirstChunkCells, total_cells / 32));
}

bool PdChunker::next(PdChunk* out_chunk) {
    PdChunk c;
    c.out_first = out_;
    int64_t cells = 0;
    for (; region_ < num_regions_; ++region_, read_ = 0) {
        const pyphmm_pd_region& g = regions_[region_];
        if (g.num_reads <= 0 || g.num_haps <= 0) continue;
        if (sized_ != region_) {
            sized_ = region_;
            codes_ = hap_bases_ = 0;
            for (int32_t h = 0; h < g.num_haps; ++h) {
                codes_ += pd_code_stride(hap_len(g, h));
                hap_bases_ += hap_len(g, h);
            }
        }
        while (read_ < g.num_reads) {
            const bool over = c.codes + codes_ > kPdMaxChunkCodes || c.pairs + g.num_haps > kPdMaxChunkPairs ||
                              c.rows + read_len(g, read_) > kPdMaxChunkRows || cells >= cell_target_;
            if (c.pairs > 0 && over) {
                cell_target_ = std::min(full_target_, 2 * cell_target_);
                *out_chunk = std::move(c);
                return true;
            }
            PdPiece p{region_, read_, read_, out_};
            c.codes += codes_;
            // (a piece takes at least one read: a read too long for the row
            // bound alone still gets a chunk)
            while (read_ < g.num_reads) {
                const int64_t m = read_len(g, read_);
                if (p.r1 > p.r0 &&
                    (c.pairs + g.num_haps > kPdMaxChunkPairs || c.rows + m > kPdMaxChunkRows || cells >= cell_target_))
                    break;
                c.pairs += g.num_haps;
                c.rows += m;
                cells += m * hap_bases_;
                out_ += g.num_haps;
                ++read_;
                ++p.r1;
            }
            c.pieces.push_back(p);
        }
    }
    if (c.pairs == 0) return false;
    *out_chunk = std::move(c);
    return true;
}

std::vector<PdChunk> pd_plan_chunks(const pyphmm_pd_region* regions, int64_t num_regions, int64_t total_cells) {
    PdChunker chunker(regions, num_regions, total_cells);
    std::vector<PdChunk> chunks;
    PdChunk c;
    while (chunker.next(&c)) chunks.push_back(std::move(c));
    if (chunks.empty()) chunks.emplace_back();
    return chunks;
}

PdLayout pd_layout_of(const PdChunk& c) {
    PdLayout L;
    L.desc_off = 0;
    L.row_off = round16(c.pairs * sizeof(PdPairDesc));
    L.code_off = round16(L.row_off + c.rows * sizeof(PdRowElem));
    L.in_bytes = round16(L.code_off + (kPdCodeGap + c.codes) * sizeof(uint32_t));
    L.out_bytes = c.pairs * sizeof(double);
    return L;
}

// ---------------------------------------------------------------- packing
namespace {

// Where one piece's data goes: its first row and first code, and per bin
// its first descriptor (pass 1 fills sizes, the prefix sums starts); its
// cells.
struct PieceCursor {
    int64_t row = 0, code = 0, cells = 0;
    int64_t bin[kPdNumBins] = {};
    bool suspect = false;  // (pass 1) a read byte GKL may refuse (PdPacked::suspect)
};

// Whether a read position's bytes may be ones GKL refuses (PdPacked::
// suspect): a base other than A, C, G, T (either case) or N, a base
// quality above kPdMaxQual, a gap quality above kPdMaxGapQual.
inline bool suspect_bytes(uint8_t base, uint8_t qual, uint8_t ins, uint8_t del, uint8_t gcp) {
    const uint8_t l = base | 0x20;  // (folds the case of a letter only)
    const bool acgtn = l == 'a' || l == 'c' || l == 'g' || l == 't' || base == 'N';
    return !acgtn || qual > kPdMaxQual || (ins | del | gcp) > kPdMaxGapQual;
}
static_assert(kPdMaxQual == 254 && kPdMaxGapQual == 127, "pack_row_elems' vector screen tests these bounds");

// Read positions [lo, hi) of a region as rows (pd_row_elem), 16 a
// vector on x86 (the five byte arrays interleaved by unpacking: a
// per-region call waits for this loop), screened in the same loads.
// Returns whether a position is suspect (suspect_bytes).
bool pack_row_elems(const pyphmm_pd_region& g, int64_t lo, int64_t hi, PdRowElem* rows) {
    int64_t i = lo;
    bool suspect = false;
#if defined(__SSE2__)
    auto load = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
    auto splat = [](char c) { return _mm_set1_epi8(c); };
    const __m128i zero = _mm_setzero_si128();
    // Lanes of `bad` become nonzero where a base is not ACGTN (either case),
    // a quality is 255 or a gap quality has its top bit set.
    __m128i bad = zero;
    for (; i + 16 <= hi; i += 16) {
        const __m128i b = load(g.read_bases + i), q = load(g.read_quals + i);
        const __m128i ins = load(g.read_ins + i), del = load(g.read_dels + i), gcp = load(g.read_gcp + i);
        const __m128i l = _mm_or_si128(b, splat(0x20));
        const __m128i acgtn =
            _mm_or_si128(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(l, splat('a')), _mm_cmpeq_epi8(l, splat('c'))),
                                      _mm_or_si128(_mm_cmpeq_epi8(l, splat('g')), _mm_cmpeq_epi8(l, splat('t')))),
                         _mm_cmpeq_epi8(b, splat('N')));
        bad = _mm_or_si128(bad, _mm_andnot_si128(acgtn, splat(char(0xFF))));
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(q, splat(char(0xFF))));
        bad = _mm_or_si128(bad, _mm_and_si128(_mm_or_si128(_mm_or_si128(ins, del), gcp), splat(char(0x80))));
        // 16-bit halves: base | quality << 8 and insertion | deletion << 8
        const __m128i bq[2] = {_mm_unpacklo_epi8(b, q), _mm_unpackhi_epi8(b, q)};
        const __m128i id[2] = {_mm_unpacklo_epi8(ins, del), _mm_unpackhi_epi8(ins, del)};
        const __m128i g16[2] = {_mm_unpacklo_epi8(gcp, zero), _mm_unpackhi_epi8(gcp, zero)};
        __m128i* dst = reinterpret_cast<__m128i*>(rows + (i - lo));
        for (int h = 0; h < 2; ++h) {
            const __m128i x[2] = {_mm_unpacklo_epi16(bq[h], id[h]), _mm_unpackhi_epi16(bq[h], id[h])};
            const __m128i y[2] = {_mm_unpacklo_epi16(g16[h], zero), _mm_unpackhi_epi16(g16[h], zero)};
            for (int k = 0; k < 2; ++k) {  // rows 8h + 4k .. + 3: (x, y) pairs
                _mm_storeu_si128(dst + 4 * h + 2 * k, _mm_unpacklo_epi32(x[k], y[k]));
                _mm_storeu_si128(dst + 4 * h + 2 * k + 1, _mm_unpackhi_epi32(x[k], y[k]));
            }
        }
    }
    suspect = _mm_movemask_epi8(_mm_cmpeq_epi8(bad, zero)) != 0xFFFF;
#endif
    for (; i < hi; ++i) {
        const uint8_t b = g.read_bases[i], q = g.read_quals[i], ins = g.read_ins[i], del = g.read_dels[i],
                      gcp = g.read_gcp[i];
        rows[i - lo] = pd_row_elem(b, q, ins, del, gcp);
        suspect = suspect || suspect_bytes(b, q, ins, del, gcp);
    }
    return suspect;
}

// Pass 1 for one piece: its read rows at `rows`, and its sizes.
PieceCursor pack_rows(const pyphmm_pd_region& g, const PdPiece& p, PdRowElem* rows) {
    PieceCursor sz;
    int32_t live_haps = 0;
    int64_t hap_bases = 0;
    for (int32_t h = 0; h < g.num_haps; ++h) {
        sz.code += pd_code_stride(hap_len(g, h));
        live_haps += hap_len(g, h) > 0;
        hap_bases += hap_len(g, h);
    }
    // (the piece's reads are one range of the caller's arrays, and of the rows)
    const int64_t lo = g.read_offsets[p.r0], hi = g.read_offsets[p.r1];
    sz.suspect = pack_row_elems(g, lo, hi, rows);
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int64_t m = read_len(g, r);
        if (m > 0) sz.bin[pd_bin_of(static_cast<int>(m))] += live_haps;
    }
    sz.row = hi - lo;
    sz.cells = sz.row * hap_bases;
    return sz;
}

// What pass 2 learns of a piece's pairs.
struct PieceMax {
    int hap_len = 1, del_ends = 0;
    int64_t pair_cells = 0;
};

// Pass 2 for one piece: its haplotypes' codes and one descriptor per
// non-empty (read, haplotype) in its bins (haplotype-major within a bin, so
// the groups of a warp share a haplotype length); result slots. A per-region
// call waits for this function: what a descriptor takes from its read and
// its haplotype is looked up once, before the loop that writes them.
PieceMax pack_piece(const pyphmm_pd_region& g, const PdPiece& p, int64_t out, PieceCursor cur, PdPairDesc* desc,
                    uint32_t* codes, uint64_t* slots, uint64_t pending) {
    struct Read {
        uint32_t roff;
        int32_t m, out;  // its length; the output index of its pair with haplotype 0
    };
    struct Hap {
        uint32_t hoff;
        int32_t n, h;
    };
    thread_local std::vector<Hap> haps;    // the non-empty haplotypes
    thread_local std::vector<Read> reads;  // the piece's non-empty reads, by bin
    const int32_t nr = p.r1 - p.r0, nh = g.num_haps;
    haps.clear();
    reads.resize(nr);
    PieceMax most;
    for (int32_t h = 0; h < nh; ++h) {
        const int64_t n = hap_len(g, h), at = g.hap_offsets[h];
        uint32_t* hc = codes + cur.code;
        const int del_ends = pd_column_codes(g.hap_bases + at, g.hap_pd + at, static_cast<int>(n), hc);
        std::fill(hc + n, hc + pd_code_stride(n), 0u);
        if (n > 0) haps.push_back({static_cast<uint32_t>(kPdCodeGap + cur.code), static_cast<int32_t>(n), h});
        cur.code += pd_code_stride(n);
        most.hap_len = std::max<int>(most.hap_len, static_cast<int>(n));
        most.del_ends = std::max(most.del_ends, del_ends);
    }
    int64_t longest_read = 0;
    int32_t first[kPdNumBins + 1] = {};  // reads of bin b: [first[b], first[b + 1])
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int64_t m = read_len(g, r);
        longest_read = std::max(longest_read, m);
        if (m > 0) ++first[pd_bin_of(static_cast<int>(m)) + 1];
    }
    most.pair_cells = longest_read * most.hap_len;
    for (int b = 0; b < kPdNumBins; ++b) first[b + 1] += first[b];
    int32_t fill[kPdNumBins];
    std::copy(first, first + kPdNumBins, fill);
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int32_t m = static_cast<int32_t>(read_len(g, r));
        if (m > 0)
            reads[fill[pd_bin_of(m)]++] = {static_cast<uint32_t>(cur.row), m,
                                           static_cast<int32_t>(out + int64_t(r - p.r0) * nh)};
        cur.row += m;
    }
    // Slots: `pending` where a descriptor goes, the uncertified NaN at an
    // empty pair (rare: only then are all of them filled first).
    if (slots && (static_cast<int32_t>(haps.size()) < nh || first[kPdNumBins] < nr))
        std::fill(slots + out, slots + out + int64_t(nr) * nh, kPdUncertifiedBits);
    for (int b = 0; b < kPdNumBins; ++b) {
        PdPairDesc* d = desc + cur.bin[b];
        for (const Hap& hp : haps)
            for (int32_t i = first[b]; i < first[b + 1]; ++i) {
                const Read& rd = reads[i];
                *d++ = {rd.roff, hp.hoff, rd.m, hp.n, rd.out + hp.h};
                if (slots) slots[rd.out + hp.h] = pending;
            }
    }
    return most;
}

}  // namespace

// Pass 1 packs every piece's rows and sizes the rest, pass 2 the codes and
// descriptors, each in parallel over pieces for whole workloads; in
// between, prefix sums tell each piece where its data goes.
PdPacked pd_pack_chunk(const pyphmm_pd_region* regions, const PdChunk& c, const PdLayout& L, char* buf, uint64_t* slots,
                       uint64_t pending) {
    PdPairDesc* desc = reinterpret_cast<PdPairDesc*>(buf + L.desc_off);
    PdRowElem* rows = reinterpret_cast<PdRowElem*>(buf + L.row_off);
    uint32_t* codes = reinterpret_cast<uint32_t*>(buf + L.code_off);
    std::fill(codes, codes + kPdCodeGap, 0u);
    codes += kPdCodeGap;  // (pieces write after the zeros; descriptors count from the area's start)
    const int64_t np = static_cast<int64_t>(c.pieces.size());
    std::vector<int64_t> row_first(np + 1, 0);
    for (int64_t k = 0; k < np; ++k) {
        const PdPiece& p = c.pieces[k];
        const int64_t* ro = regions[p.region].read_offsets;
        row_first[k + 1] = row_first[k] + ro[p.r1] - ro[p.r0];
    }
    std::vector<PieceCursor> cur(np);
    std::vector<PieceMax> most(np);
    std::atomic<bool> no_memory{false};
    auto each_piece = [&](auto&& fn) {  // parallel_for's fn must not throw
        auto guarded = [&](int64_t k) {
            try {
                fn(k);
            } catch (const std::bad_alloc&) {
                no_memory = true;
            }
        };
        if (np > 1 && c.pairs >= kParallelPairs)
            parallel_for(np, 0, guarded);
        else
            for (int64_t k = 0; k < np; ++k) guarded(k);
        if (no_memory) throw std::bad_alloc();
    };
    each_piece([&](int64_t k) { cur[k] = pack_rows(regions[c.pieces[k].region], c.pieces[k], rows + row_first[k]); });
    // sizes -> starts; bins from the longest reads down (the striped bin's
    // pairs take longest: first in the launch)
    PieceCursor total;
    for (PieceCursor& pc : cur) {
        const PieceCursor sz = pc;
        pc = total;
        total.suspect = total.suspect || sz.suspect;
        total.row += sz.row;
        total.code += sz.code;
        total.cells += sz.cells;
        for (int b = 0; b < kPdNumBins; ++b) total.bin[b] += sz.bin[b];
    }
    PdPacked out;
    int64_t start[kPdNumBins], acc = 0;
    for (int b = kPdNumBins - 1; b >= 0; --b) {
        start[b] = acc;
        acc += total.bin[b];
        if (total.bin[b] == 0) continue;
        out.bin[out.entries] = b;
        out.first[out.entries] = static_cast<int>(start[b]);
        out.count[out.entries] = static_cast<int>(total.bin[b]);
        ++out.entries;
    }
    out.descs = acc;
    out.suspect = total.suspect;
    for (PieceCursor& pc : cur)
        for (int b = 0; b < kPdNumBins; ++b) pc.bin[b] += start[b];
    each_piece([&](int64_t k) {
        const PdPiece& p = c.pieces[k];
        most[k] = pack_piece(regions[p.region], p, p.out_first - c.out_first, cur[k], desc, codes, slots, pending);
    });
    for (const PieceMax& pm : most) {
        out.max_hap_len = std::max(out.max_hap_len, pm.hap_len);
        out.max_del_ends = std::max(out.max_del_ends, pm.del_ends);
        out.max_pair_cells = std::max(out.max_pair_cells, pm.pair_cells);
    }
    out.kernel_cells = total.cells;
    return out;
}

int pd_launch_plan(const PdPacked& p, int max_striped_warps, PdLaunchPlan* plan) {
    constexpr int kWarpsPerBlock = kPdBlock / 32;
    std::memset(plan, 0, sizeof(*plan));
    int blocks = 0;
    for (int e = 0; e < p.entries; ++e) {
        const PdBin& b = kPdBins[p.bin[e]];
        const int groups_per_block = kWarpsPerBlock * (32 / b.P);
        int nb = (p.count[e] + groups_per_block - 1) / groups_per_block;
        if (b.striped) nb = std::min(nb, std::max(1, max_striped_warps / kWarpsPerBlock));
        plan->bin[e] = p.bin[e];
        plan->first[e] = p.first[e];
        plan->count[e] = p.count[e];
        plan->block_start[e] = blocks;
        blocks += nb;
    }
    plan->nb = p.entries;
    plan->block_start[p.entries] = blocks;
    return blocks;
}

int pd_striped_warps(const PdLaunchPlan& plan) {
    for (int e = 0; e < plan.nb; ++e)
        if (kPdBins[plan.bin[e]].striped) return (plan.block_start[e + 1] - plan.block_start[e]) * (kPdBlock / 32);
    return 0;
}

// ---------------------------------------------------------------- tables
const PdKernelTables& pd_kernel_tables() {
    static const PdKernelTables t = [] {
        const PdTables& h = pd_tables();
        PdKernelTables k;
        k.err.assign(h.error_prob, h.error_prob + kPdNumQuals);
        for (const double e : k.err) k.third.push_back(e / 3.0);
        k.m2m.assign(h.match_to_match, h.match_to_match + kPdM2mEntries);
        k.ratio.resize(size_t(kPdMaxGapQual + 1) * kPdM2mEntries);
        for (int gcp = 0; gcp <= kPdMaxGapQual; ++gcp) {
            const double gm = 1.0 - k.err[gcp];
            for (int i = 0; i < kPdM2mEntries; ++i) k.ratio[pd_ratio_index(gcp, i)] = pd_gap_ratio(gm, k.m2m[i]);
        }
        for (uint32_t v = 0; v < 256; ++v) k.read_code.push_back(pd_read_code(v));
        return k;
    }();
    return t;
}

// ---------------------------------------------------------------- results
PdCertify pd_certify(const PdPacked& p) {
    const double cells = static_cast<double>(std::max<int64_t>(p.max_pair_cells, 1));
    return {std::ldexp(cells, p.max_del_ends - 1000), std::ldexp(1.0 - std::ldexp(1.0, -30), 1020)};
}

int64_t pd_copy_results(const PdChunk& c, const double* results, double* out, int64_t* above_zero) {
    double* dst = out + c.out_first;
    constexpr int64_t kBlockPairs = 16384;
    const int64_t blocks = (c.pairs + kBlockPairs - 1) / kBlockPairs;
    std::atomic<int64_t> marked{0}, positive{0};
    auto block = [&](int64_t b) {
        const int64_t lo = b * kBlockPairs, hi = std::min(c.pairs, lo + kBlockPairs);
        int64_t nan = 0, pos = 0;
        for (int64_t i = lo; i < hi; ++i) {
            dst[i] = results[i];
            nan += std::isnan(results[i]);
            pos += results[i] > 0.0;
        }
        if (nan) marked += nan;
        if (pos) positive += pos;
    };
    if (blocks > 1)
        parallel_for(blocks, 0, block);
    else if (blocks == 1)
        block(0);
    *above_zero += positive;
    return marked;
}

}  // namespace pdk
}  // namespace pyphmm
