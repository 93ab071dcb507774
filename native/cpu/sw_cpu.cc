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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

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

}  // namespace

// Aligns one pair (already validated). Returns the alignment offset and
// writes the NUL-terminated CIGAR.
int32_t sw_align_one(const uint8_t* ref, int m, const uint8_t* alt, int n, const pyphmm_sw_params& p, int strategy,
                     char* cigar, int64_t* reused_cells) {
    static thread_local Workspace ws;
    if (strategy == PYPHMM_SW_SOFTCLIP || strategy == PYPHMM_SW_IGNORE) {
        int pos = n <= m ? last_index_of(ref, m, alt, n) : -1;
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
