// CPU Smith-Waterman with GATK's semantics (SmithWatermanJavaAligner is the
// specification; see docs/SMITH_WATERMAN.md): the traceback, the overhang
// strategies and the CIGAR, over the matrix that sw_cpu_fill.cc fills.
//
// The backtrack value of a cell is GATK's: 0 (diagonal), -k (insertion of k)
// or +k (deletion of k), so traceback jumps whole gaps. The fill keeps only
// 4 bits per cell; a gap's length, GATK's gap_size, is recovered by walking
// back to the cell where the gap was opened, O(gap length) per gap.
//
// Integer safety: the dispatcher (dispatch/sw_entry.cc) admits a pair only
// when max(|match|, |mismatch|, |open|, |extend|) * (len(ref) + len(alt) + 2)
// <= 2^29, which keeps every score, gap value and GATK's "minus infinity"
// (INT_MIN/2) plus extensions within int32.
#include "sw_cpu.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "../common/config.h"
#include "../common/errors.h"
#include "../common/thread_pool.h"
#include "sw_cpu_fill.h"

namespace pyphmm {

namespace {

using sw_cpu::Op;
using sw_cpu::Workspace;

// Reads the backtrack bits the fill left (layout in sw_cpu_fill.h), one
// plane at a time: every traceback step needs kGap, only gap steps the
// others. The layout's constants are copied once per traceback. A resumed
// fill's columns below ws.resume_from are the base's (same lane width and
// layout): the base's segments name the store, laid out for its fill's n.
class BtReader {
  public:
    BtReader(const Workspace& ws, int n)
        : bt_(ws.bt.data()),
          blk_start_(ws.blk_start.data()),
          n_(n),
          from_(ws.resume_from),
          shift_(ws.lane_shift),
          layout_(ws.layout) {
        if (from_)
            for (const sw_cpu::BtSegment& s : ws.bases[ws.from_base].segments) {
                if (s.from >= from_) break;
                const sw_cpu::BtStore& st = ws.stores[s.store];
                src_[count_++] = {st.bt.data(), st.blk_start.data(), st.n, s.from};
            }
        const int w = 1 << shift_;
        for (int q = 0; q < 4; ++q)
            plane_pos_[q] = layout_ == sw_cpu::kPlanar   ? q * w
                            : layout_ == sw_cpu::kPaired ? (q >> 1) * 2 * w + (q & 1)
                                                         : q;
    }

    // Plane q's bit (BtPlane q = 0..3) of cell (i, j), 1 <= i <= m, 1 <= j <= n.
    bool bit(int q, int i, int j) const {
        if (j >= from_) return bit_in(bt_, blk_start_, n_, q, i, j);  // this fill's (every column unless resumed)
        const Source& s = below(j);
        return bit_in(s.bt, s.blk_start, s.n, q, i, j);
    }
    // The same, in the blocks of a fill of alt length n.
    bool bit_in(const uint8_t* bt, const int64_t* blk_start, int n, int q, int i, int j) const {
        const int d = i + j;
        const int k = i - std::max(1, d - n);
        const int lane = k & ((1 << shift_) - 1);
        const uint8_t* blk = bt + blk_start[d] + (static_cast<int64_t>(k >> shift_) << (shift_ - 1));
        int pos = plane_pos_[q];
        if (layout_ == sw_cpu::kPlanar) {
            pos += lane;
        } else if (layout_ == sw_cpu::kPaired) {
            pos += 2 * lane;
        } else {
            const int half_shift = shift_ - 1;
            pos += 8 * (lane & ((1 << half_shift) - 1)) + 4 * (lane >> half_shift);
        }
        return (blk[pos >> 3] >> (pos & 7)) & 1u;
    }

    // GATK's backtrack value of cell (i, j): 0 (diagonal), -k (insertion of
    // k) or +k (deletion of k). A gap's length is GATK's gap_size: 1 where it
    // was opened, one more per cell it was extended, counted from 0 at the edge.
    int32_t value(int i, int j) const {
        if (!bit(0, i, j)) return 0;  // kGap
        if (!bit(1, i, j)) {          // kDown: insertion
            int jj = j;
            while (jj > 1 && !bit(2, i, jj - 1)) --jj;  // kNewH, stored by the cell to the left
            return -(j - jj + 1);
        }
        int ii = i;
        while (ii > 1 && !bit(3, ii - 1, j)) --ii;  // kNewV, stored by the cell above
        return i - ii + 1;
    }

  private:
    // Where the base's bits of columns from `from` on (up to the next source's) are.
    struct Source {
        const uint8_t* bt;
        const int64_t* blk_start;
        int n, from;
    };
    const Source& below(int j) const {
        int k = count_ - 1;
        while (k > 0 && j < src_[k].from) --k;
        return src_[k];
    }

    const uint8_t* bt_;
    const int64_t* blk_start_;
    Source src_[sw_cpu::kMaxSegments];
    int count_ = 0, n_, from_, shift_;
    sw_cpu::BtLayout layout_;
    int plane_pos_[4];
};

// Last occurrence of alt in ref, or -1 (GATK's Utils.lastIndexOf). The
// first four bytes are compared as one word before the whole; 16 positions
// at a time first (byte compares of ref at offsets 0-3 with alt's first four
// bases, GCC vector extensions, so any target), the positions left over one
// by one.
int last_index_of(const uint8_t* ref, int m, const uint8_t* alt, int n) {
    if (n >= 4) {
        typedef uint8_t V16 __attribute__((vector_size(16)));
        uint32_t head;
        std::memcpy(&head, alt, 4);
        int pos = m - n;
        for (; pos >= 15; pos -= 16) {  // positions pos-15..pos; loads end at pos + 3 <= m - 1
            V16 hit = V16{} == V16{};
            for (int k = 0; k < 4; ++k) {
                V16 v;
                std::memcpy(&v, ref + pos - 15 + k, 16);
                hit &= v == alt[k];
            }
            uint64_t halves[2];
            std::memcpy(halves, &hit, 16);
            if (!(halves[0] | halves[1])) continue;
            for (int p = pos; p > pos - 16; --p)
                if (hit[p - (pos - 15)] && std::memcmp(ref + p + 4, alt + 4, n - 4) == 0) return p;
        }
        for (; pos >= 0; --pos) {
            uint32_t w;
            std::memcpy(&w, ref + pos, 4);
            if (w == head && std::memcmp(ref + pos + 4, alt + 4, n - 4) == 0) return pos;
        }
        return -1;
    }
    for (int pos = m - n; pos >= 0; --pos)
        if (ref[pos] == alt[0] && std::memcmp(ref + pos, alt, n) == 0) return pos;
    return -1;
}

// Where the alignment ends for SOFTCLIP, IGNORE and LEADING_INDEL (GATK's
// rule, docs/SMITH_WATERMAN.md): the bottom-most maximum of the last column;
// then, unless LEADING_INDEL, a last-row cell that scores more, or as much
// and closer to the diagonal, scanning left to right. The fill keeps both
// maxima (ws.best), so the row is scanned only where a cell can win.
// Returns the overhang (alt bases after the end cell).
int32_t find_end(const Workspace& ws, int m, int n, bool scan_row, int& p1, int& p2) {
    int32_t best = ws.best.col_max;
    p1 = ws.best.col_at;
    p2 = n;
    if (!scan_row || ws.best.row_max < best) return 0;
    const int32_t* row = ws.last_row.data();
    int32_t segment = 0;
    for (int j = 1; j <= n; ++j) {
        const int32_t s = row[j];
        if (s > best || (s == best && std::abs(m - j) < std::abs(p1 - p2))) {
            p1 = m;
            p2 = j;
            best = s;
            segment = n - j;
        }
    }
    return segment;
}

// Writes "<len><op>" at out, returns the number of characters written.
int put_element(char* out, int32_t len, char op) {
    char tmp[12];
    int k = 0;
    do {
        tmp[k++] = static_cast<char>('0' + len % 10);
        len /= 10;
    } while (len);
    for (int t = 0; t < k; ++t) out[t] = tmp[k - 1 - t];
    out[k] = op;
    return k + 1;
}

// Writes the CIGAR from elements listed last-to-first, dropping zero-length
// elements and merging equal neighbours (GATK's consolidateCigar).
void write_cigar(const std::vector<Op>& rev, char* out) {
    char* w = out;
    char cur = 0;
    int64_t run = 0;
    for (size_t k = rev.size(); k-- > 0;) {
        const Op& o = rev[k];
        if (o.len == 0) continue;
        if (cur && o.op != cur) {
            w += put_element(w, static_cast<int32_t>(run), cur);
            run = 0;
        }
        cur = o.op;
        run += o.len;
    }
    if (run > 0) w += put_element(w, static_cast<int32_t>(run), cur);
    *w = '\0';
}

// ---- alts a few mismatches from a diagonal of ref (SOFTCLIP, IGNORE) ----
// With free edges, an alignment without gaps is a diagonal o = i - j of the
// matrix, from its first cell on row or column 0 to its last on the last
// column (o + n <= m) or the last row; it scores match or mismatch for each
// pair of bases it holds. Where the best diagonal scores S above every
// alignment with a gap, every cell whose score reaches S is the last cell
// of a diagonal scoring S (its gapped paths score less), GATK's end is
// chosen among those cells as find_end chooses it, and the traceback from
// it stays on its diagonal (a step into a gap would give a gapped path of
// score S): the result is a diagonal's CIGAR, without a matrix.
//
// An alignment falls short of match * n by its deficit: match for each
// base of alt it leaves unpaired (clipped at an edge, or inserted),
// match - mismatch for each mismatch, and at least -open for each gap
// (extend <= 0). One that could reach S has a deficit of at most
// D = match * n - S. So where D < -open no gapped alignment can, and where
// D < -2 open with no room for a mismatch, only one gap between two exact
// segments: those are enumerated and scored (single_gap_best). Which
// diagonals and segments to look at: alt is cut into `pieces` pieces; a
// diagonal with fewer mismatches than pieces, or a gapped alignment whose
// gap and clipped ends leave a piece whole, holds a piece unchanged, found
// by one pass over ref; diagonals that leave bases of alt off an end of ref
// are added one by one. A read within two sequencing errors of its
// haplotype takes this path (ALIGNMENT_TO_BEST_HAPLOTYPE).
constexpr int kNearMaxDiagonals = 32;  // more candidates (a repeat): fill the matrix
constexpr int kNearMinPiece = 8;
constexpr int kNearMaxPieces = 4;
constexpr int kNearMaxDeletion = 64;  // the longest single-gap rival worth enumerating

typedef uint8_t V16 __attribute__((vector_size(16)));

// Bit k set where byte k of v (0 or 0xFF) is set.
inline uint32_t byte_mask(V16 v) {
#if defined(__SSE2__)
    return static_cast<uint32_t>(_mm_movemask_epi8(reinterpret_cast<__m128i>(v)));
#else
    uint64_t h[2];
    std::memcpy(h, &v, 16);
    constexpr uint64_t kBit = 0x0102040810204080ull;  // (x & ones) * kBit gathers the bytes' low bits in the top byte
    constexpr uint64_t kOnes = 0x0101010101010101ull;
    return static_cast<uint32_t>(((h[0] & kOnes) * kBit) >> 56 | (((h[1] & kOnes) * kBit) >> 56) << 8);
#endif
}

// Calls fn(q, r) for each start r in ref[0..m) of piece q (the len[q] bytes
// at pat[q], q < count), while it returns true. One pass for all pieces, 16
// starts at a time: their first four bytes compared to each piece's (the
// loads shared), then the rest of a piece where those match.
template <typename F>
void each_occurrence(const uint8_t* ref, int m, const uint8_t* const* pat, const int* len, int count, F&& fn) {
    int shortest = len[0];
    for (int q = 1; q < count; ++q) shortest = std::min(shortest, len[q]);
    auto check = [&](int q, int r) {
        return r + len[q] > m || std::memcmp(ref + r + 4, pat[q] + 4, len[q] - 4) != 0 || fn(q, r);
    };
    const int last = m - shortest;  // the last start of any piece
    V16 head[kNearMaxPieces][4];    // each piece's first four bytes, in every lane
    for (int q = 0; q < count; ++q)
        for (int k = 0; k < 4; ++k) head[q][k] = V16{} + pat[q][k];
    int r = 0;
    for (; r + 15 <= last; r += 16) {  // starts r..r+15; loads end at r + 18 < m
        V16 v[4];
        for (int k = 0; k < 4; ++k) std::memcpy(&v[k], ref + r + k, 16);
        for (int q = 0; q < count; ++q) {
            const V16 hit = (v[0] == head[q][0]) & (v[1] == head[q][1]) & (v[2] == head[q][2]) & (v[3] == head[q][3]);
            for (uint32_t starts = byte_mask(hit); starts; starts &= starts - 1)  // a bit per start whose head matched
                if (!check(q, r + __builtin_ctz(starts))) return;
        }
    }
    for (; r <= last; ++r)
        for (int q = 0; q < count; ++q)
            if (std::memcmp(ref + r, pat[q], 4) == 0 && !check(q, r)) return;
}

// The bytes where a[0..len) and b[0..len) differ, counted until more than
// `limit` (then some number above it).
int mismatches(const uint8_t* a, const uint8_t* b, int len, int limit) {
    int miss = 0, j = 0;
    for (; j + 16 <= len; j += 16) {
        V16 x, y;
        std::memcpy(&x, a + j, 16);
        std::memcpy(&y, b + j, 16);
        const V16 differ = x != y;  // 0xFF where they differ
        uint64_t h[2];
        std::memcpy(h, &differ, 16);
        constexpr uint64_t kOnes = 0x0101010101010101ull;  // (x & ones) * ones sums x's bytes in its top byte
        miss += static_cast<int>(((h[0] & kOnes) * kOnes) >> 56) + static_cast<int>(((h[1] & kOnes) * kOnes) >> 56);
        if (miss > limit) return miss;
    }
    for (; j < len; ++j) miss += a[j] != b[j];
    return miss;
}

enum Diagonal { kOutside, kFill, kAligned };

// Diagonal o's bases of alt that pair with ref: alt[first, last).
struct Overlap {
    int first, last;
};
inline Overlap overlap(int o, int m, int n) { return {std::max(0, -o), std::min(n, m - o)}; }

// Consecutive equal pairs on diagonal o from alt[j] on, forward (step 1)
// or backward (step -1), within [lo, hi).
int run_length(const uint8_t* ref, const uint8_t* alt, int o, int j, int step, int lo, int hi) {
    int k = 0;
    for (; j >= lo && j < hi && ref[o + j] == alt[j]; j += step) ++k;
    return k;
}

// The best score of an alignment with one gap between two exact segments,
// its first segment on diagonal d1 from that diagonal's start and its
// second on d2 to that diagonal's end, where one of d1, d2 is in diag[]
// and the gap costs at most `deficit` less than its unpaired bases (see
// above); INT64_MIN where none exists.
int64_t single_gap_best(const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
                        const int* diag, int count, int64_t deficit) {
    const int64_t match = p.match, open_cost = -int64_t(p.gap_open), extend_cost = -int64_t(p.gap_extend);
    int64_t best = INT64_MIN;
    auto pair = [&](int d1, int d2, int ins) {  // ins: alt bases the gap holds (0: a deletion of d2 - d1 ref bases)
        const Overlap a = overlap(d1, m, n), b = overlap(d2, m, n);
        if (a.first >= a.last || b.first >= b.last || b.last - a.first <= ins) return;
        const int head = run_length(ref, alt, d1, a.first, 1, a.first, a.last);
        const int tail = run_length(ref, alt, d2, b.last - 1, -1, b.first, b.last);
        if (b.last - ins - tail > a.first + head) return;  // no split point leaves both segments exact
        const int length = ins ? ins : d2 - d1;
        const int64_t score = match * (b.last - a.first - ins) - open_cost - (length - 1) * extend_cost;
        best = std::max(best, score);
    };
    for (int k = 0; k < count; ++k) {
        const int o = diag[k];
        for (int len = 1; open_cost + (len - 1) * extend_cost <= deficit && len <= m; ++len) {
            pair(o, o + len, 0);  // deletions
            pair(o - len, o, 0);
        }
        for (int len = 1; open_cost + (len - 1) * extend_cost + match * len <= deficit && len < n; ++len) {
            pair(o, o - len, len);  // insertions
            pair(o + len, o, len);
        }
    }
    return best;
}

// For SOFTCLIP and IGNORE: the CIGAR and offset of (ref, alt) where alt
// occurs in ref (GATK's shortcut: its last occurrence) or one diagonal
// scores above every gapped alignment (see above): kAligned. kFill: neither
// (the matrix decides). kOutside: the parameters or sequences are outside
// what this proof covers, or the candidates too many; the caller tests for
// an occurrence itself.
Diagonal diagonal_alignment(const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p,
                            int strategy, char* cigar, int32_t* offset) {
    const int64_t match = p.match, mismatch = p.mismatch, open_cost = -int64_t(p.gap_open);
    const int64_t most =
        std::max<int64_t>({std::llabs(match), std::llabs(mismatch), open_cost, std::llabs(int64_t(p.gap_extend))});
    // (scores far from GATK's -1e8 floor, which would raise a cell above its paths)
    if (n > m || match <= 0 || mismatch >= match || open_cost <= 0 || p.gap_extend > 0 ||
        most * (int64_t(m) + n + 2) >= 100000000)
        return kOutside;
    const int64_t miss_cost = match - mismatch;
    // Enough pieces for the diagonals that may beat one gap (fewer than
    // -open / (match - mismatch) mismatches), and three for a single gap's
    // segments (an insertion may touch two pieces).
    const int pieces =
        static_cast<int>(std::min<int64_t>(kNearMaxPieces, std::max<int64_t>(3, (open_cost - 1) / miss_cost + 1)));
    const int piece = n / pieces;
    if (piece < kNearMinPiece) return kOutside;

    int diag[kNearMaxDiagonals], count = 0;
    bool overflow = false;
    auto add = [&](int o) {
        for (int k = 0; k < count; ++k)
            if (diag[k] == o) return true;
        if (count == kNearMaxDiagonals) return !(overflow = true);
        diag[count++] = o;
        return true;
    };
    const uint8_t* pat[kNearMaxPieces];
    int len[kNearMaxPieces], first[kNearMaxPieces];
    for (int q = 0; q < pieces; ++q) {
        first[q] = q * piece;
        pat[q] = alt + first[q];
        len[q] = q + 1 < pieces ? piece : n - first[q];
    }
    each_occurrence(ref, m, pat, len, pieces, [&](int q, int r) { return add(r - first[q]); });
    if (overflow) return kOutside;
    const int found = count;  // diagonals holding a piece

    // Scores from `floor` up: a diagonal holding all of alt but no piece
    // whole has a mismatch in each piece, so scores at most
    // match * n - pieces * miss_cost; no result of this path may be that low.
    const int64_t floor = match * n - pieces * miss_cost + 1;
    int64_t score[kNearMaxDiagonals], best = INT64_MIN;
    int exact = -1;  // the last start of alt in ref
    auto score_of = [&](int k) {
        score[k] = INT64_MIN;
        const Overlap a = overlap(diag[k], m, n);
        const int pairs = a.last - a.first;
        if (pairs <= 0 || match * pairs < floor) return;
        const int allowed = static_cast<int>((match * pairs - floor) / miss_cost);
        const int miss = mismatches(ref + diag[k] + a.first, alt + a.first, pairs, allowed);
        if (miss > allowed) return;
        score[k] = match * (pairs - miss) + mismatch * miss;
        best = std::max(best, score[k]);
        if (miss == 0 && pairs == n) exact = std::max(exact, diag[k]);  // (both pieces occur there: a candidate)
    };
    for (int k = 0; k < count; ++k) score_of(k);
    char* w = cigar;
    if (exact >= 0) {  // GATK's exact-substring shortcut, before any matrix
        w += put_element(w, n, 'M');
        *w = '\0';
        *offset = exact;
        return kAligned;
    }
    if (best == INT64_MIN || !config::on(config::Knob::kSwNearExact)) return kFill;
    // Diagonals that leave c bases of alt off an end of ref score at most
    // match * (n - c): those that may reach `best` are scored too.
    for (int c = 1; c < n && match * (n - c) >= best; ++c) {
        add(-c);
        add(m - n + c);
        if (overflow) return kFill;
    }
    for (int k = found; k < count; ++k) score_of(k);

    // What a gapped alignment may reach: below best by the deficit argument,
    // or by the single-gap alignments that could reach it.
    const int64_t deficit = match * n - best;
    if (deficit >= open_cost) {
        if (deficit >= 2 * open_cost || deficit - open_cost >= miss_cost) return kFill;
        if ((deficit - open_cost) / match >= piece) return kFill;  // an insertion could touch three pieces
        const int64_t extend_cost = -int64_t(p.gap_extend);
        if (extend_cost == 0 || (deficit - open_cost) / extend_cost >= kNearMaxDeletion)
            return kFill;  // (deletions of any length: the matrix costs less than the rivals)
        if (single_gap_best(ref, m, alt, n, p, diag, count, deficit) >= best) return kFill;
    }

    // find_end's choice among the cells scoring `best`: the bottom-most in
    // the last column, then the last row left to right, each cell that
    // scores more or as much and lies closer to the diagonal.
    int p1 = -1, p2 = n;
    for (int k = 0; k < count; ++k)
        if (score[k] == best && diag[k] + n <= m) p1 = std::max(p1, diag[k] + n);
    int row_j[kNearMaxDiagonals], rows = 0;
    for (int k = 0; k < count; ++k)
        if (score[k] == best && diag[k] >= m - n) row_j[rows++] = m - diag[k];
    std::sort(row_j, row_j + rows);
    for (int k = 0; k < rows; ++k) {
        const int j = row_j[k];
        if (p1 < 0 || std::abs(m - j) < std::abs(p1 - p2)) {
            p1 = m;
            p2 = j;
        }
    }
    ++diagonal_alignments();
    const int overhang = n - p2, steps = std::min(p1, p2);
    const int i0 = p1 - steps, j0 = p2 - steps;  // where the traceback stops
    if (strategy == PYPHMM_SW_SOFTCLIP) {
        if (j0 > 0) w += put_element(w, j0, 'S');
        w += put_element(w, steps, 'M');
        if (overhang > 0) w += put_element(w, overhang, 'S');
        *offset = i0;
    } else {  // IGNORE: the overhangs are part of the M
        w += put_element(w, n, 'M');
        *offset = i0 - j0;
    }
    *w = '\0';
    return kAligned;
}

}  // namespace

int64_t& diagonal_alignments() {
    static thread_local int64_t count = 0;
    return count;
}

// Aligns one pair (already validated). Returns the alignment offset and
// writes the NUL-terminated CIGAR.
int32_t sw_align_one(const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p, int strategy,
                     char* cigar, int64_t* reused_cells) {
    static thread_local Workspace ws;
    if (strategy == PYPHMM_SW_SOFTCLIP || strategy == PYPHMM_SW_IGNORE) {
        int32_t offset = 0;
        const Diagonal d = diagonal_alignment(ref, m, alt, n, p, strategy, cigar, &offset);
        if (d == kAligned) return offset;
        const int pos = d == kOutside && n <= m ? last_index_of(ref, m, alt, n) : -1;
        if (pos >= 0) {
            int k = put_element(cigar, n, 'M');
            cigar[k] = '\0';
            return pos;
        }
    }
    const bool edge = strategy == PYPHMM_SW_INDEL || strategy == PYPHMM_SW_LEADING_INDEL;
    sw_cpu::fill(ws, ref, m, alt, n, p, edge);
    if (reused_cells) *reused_cells += static_cast<int64_t>(ws.resume_from) * m;

    int p1 = 0, p2 = 0;
    int32_t segment = 0;
    if (strategy == PYPHMM_SW_INDEL) {
        p1 = m;
        p2 = n;
    } else {
        segment = find_end(ws, m, n, strategy != PYPHMM_SW_LEADING_INDEL, p1, p2);
    }
    std::vector<Op>& ops = ws.ops;
    ops.clear();
    if (segment > 0 && strategy == PYPHMM_SW_SOFTCLIP) {
        ops.push_back({'S', segment});
        segment = 0;
    }
    const BtReader bt(ws, n);
    char state = 'M';
    do {
        const int32_t b = bt.value(p1, p2);
        char next;
        int32_t step;
        if (b > 0) {
            next = 'D';
            step = b;
            p1 -= b;
        } else if (b < 0) {
            next = 'I';
            step = -b;
            p2 += b;
        } else {
            next = 'M';
            step = 1;
            --p1;
            --p2;
        }
        if (next == state) {
            segment += step;
        } else {
            ops.push_back({state, segment});
            segment = step;
            state = next;
        }
    } while (p1 > 0 && p2 > 0);

    int32_t offset;
    if (strategy == PYPHMM_SW_SOFTCLIP) {
        ops.push_back({state, segment});
        if (p2 > 0) ops.push_back({'S', p2});
        offset = p1;
    } else if (strategy == PYPHMM_SW_IGNORE) {
        ops.push_back({state, segment + p2});
        offset = p1 - p2;
    } else {
        ops.push_back({state, segment});
        if (p1 > 0)
            ops.push_back({'D', p1});
        else if (p2 > 0)
            ops.push_back({'I', p2});
        offset = 0;
    }
    write_cigar(ops, cigar);
    if (ws.capture) sw_cpu::keep_base(ws, ref, m, alt, n, p, edge);
    ws.trim();
    return offset;
}

int cpu_sw_align(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets, int32_t* alignment_offsets,
                 int threads, pyphmm_stats* stats, pyphmm_error* error) {
    auto start = std::chrono::steady_clock::now();
    const int64_t n = batch.num_pairs;
    std::atomic<int> failed{0};
    std::atomic<int64_t> reused{0};
    auto one = [&](int64_t i) {
        const int64_t r0 = batch.ref_offsets[i], a0 = batch.alt_offsets[i];
        const int m = static_cast<int>(batch.ref_offsets[i + 1] - r0);
        const int la = static_cast<int>(batch.alt_offsets[i + 1] - a0);
        const pyphmm_sw_params& p = batch.params[batch.per_pair ? i : 0];
        const int s = batch.strategies[batch.per_pair ? i : 0];
        try {
            int64_t pair_reused = 0;
            alignment_offsets[i] =
                sw_align_one(batch.ref + r0, m, batch.alt + a0, la, p, s, cigars + cigar_offsets[i], &pair_reused);
            if (pair_reused) reused += pair_reused;
        } catch (const std::bad_alloc&) {
            int expected = 0;
            failed.compare_exchange_strong(expected, PYPHMM_E_NOMEM);
        } catch (...) {
            int expected = 0;
            failed.compare_exchange_strong(expected, PYPHMM_E_INTERNAL);
        }
    };
    if (n == 1 || threads == 1) {
        for (int64_t i = 0; i < n; ++i) one(i);
    } else {
        parallel_for(n, threads, one);
    }
    if (failed.load() == PYPHMM_E_NOMEM)
        return set_error(error, PYPHMM_E_NOMEM, "out of host memory for the Smith-Waterman matrices");
    if (failed.load()) return set_error(error, PYPHMM_E_INTERNAL, "internal error in the CPU Smith-Waterman");
    if (stats) {
        int64_t cells = 0;
        for (int64_t i = 0; i < n; ++i)
            cells +=
                (batch.ref_offsets[i + 1] - batch.ref_offsets[i]) * (batch.alt_offsets[i + 1] - batch.alt_offsets[i]);
        stats->pairs = n;
        stats->cells = cells;
        stats->reused_cells = reused.load();
        stats->backend_used = PYPHMM_BACKEND_CPU;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
