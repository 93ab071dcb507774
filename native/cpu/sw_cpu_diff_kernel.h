// The difference fill of the CPU Smith-Waterman, written once for every
// vector width. sw_cpu_fill.cc includes this file once per instruction set
// and lane type, inside a namespace that defines `Ops` (lane type Ops::T,
// int8 or int16; W = 2^Ops::kShift lanes; the operations listed in
// sw_cpu_fill_isa.h) and under that ISA's `#pragma GCC target`, so the
// AVX-512, AVX2, NEON and baseline kernels are this same code at different
// widths. No include guard: that is the point.
//
// Recurrence (GATK's, docs/SMITH_WATERMAN.md), for cell (i, j) with
// B = H[i-1][j-1]:
//   diag  = B + s(i, j)
//   F     = max(H[i-1][j] + open, F[i-1][j] + extend)   (deletion, column state)
//   E     = max(H[i][j-1] + open, E[i][j-1] + extend)   (insertion, row state)
//   H     = max(diag, F, E)
// Every quantity is kept relative to a neighbour, in narrow lanes:
//   dh(i, j) = H[i][j] - H[i][j-1]     dv(i, j) = H[i][j] - H[i-1][j]
//   de(i, j) = E[i][j] - H[i][j]       df(i, j) = F[i][j] - H[i][j]
// so the cell's candidates relative to B are
//   diag - B = s,  F - B = dh(i-1, j) + max(open, df(i-1, j) + extend),
//   E - B = dv(i, j-1) + max(open, de(i, j-1) + extend),
// and every comparison GATK makes (which candidate wins, whether a gap is
// opened or extended) compares two of these, i.e. is the same comparison
// shifted by B: the backtrack bits are GATK's exactly. The bounds that make
// a lane type exact are derived in sw_cpu_fill.cc (diff_range).
//
// Anti-diagonal order (d = i + j), vectorised along i: the inputs of cell
// (i, j) are slot i-1 (cell (i-1, j)) and slot i (cell (i, j-1)) of diagonal
// d-1, so two diagonals of state suffice. Lanes past the diagonal's end
// compute garbage that is never read as a cell; the boundary slots they may
// overrun are rewritten after each diagonal.

// Slot arrays of diagonals d-1 (prev) and d (cur), each four arrays S lanes
// apart: dh, dv, te, tf (te and tf hold de + extend and df + extend: the
// only way the next diagonal uses them). A constant S makes every access one
// base register plus a displacement, so the loop keeps its pointers in
// registers. Everything the sweep reads is a local copy: the backtrack
// stores are bytes, which may alias anything, so ws's members would be
// reloaded after every store.
struct DiffSweep {
    typedef Ops::V V;
    typedef Ops::T T;
    static constexpr int W = 1 << Ops::kShift;
    static constexpr int S = kStateStride / sizeof(T);
    static constexpr int DH = 0, DV = S, TE = 2 * S, TF = 3 * S;

    const int m, n;
    const V match, mis, open, ext;
    const T* const ref;
    const T* const alt_r;
    const T edge_step;  // dh(0, d) and dv(d, 0) for d >= 2: extend with edge gaps, else 0
    int32_t* const last_col;
    int32_t* const last_row;
    int64_t* const blk_start;
    uint8_t* const base;
    T* prev;
    T* cur;
    uint8_t* out;
    int32_t col_sum, row_sum;  // H[d-n][n] and H[m][d-m] so far

    DiffSweep(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge)
        : m(m_),
          n(n_),
          match(Ops::set1(p.match)),
          mis(Ops::set1(p.mismatch)),
          open(Ops::set1(p.gap_open)),
          ext(Ops::set1(p.gap_extend)),
          ref(lanes<T>(ws.ref16)),
          alt_r(lanes<T>(ws.alt16)),
          edge_step(static_cast<T>(edge ? p.gap_extend : 0)),
          last_col(ws.last_col.data()),
          last_row(ws.last_row.data()),
          blk_start(ws.blk_start.data()),
          base(ws.bt.data()),
          prev(lanes<T>(ws.diag)),
          cur(lanes<T>(ws.diag) + 4 * S),
          out(ws.bt.data()),
          col_sum(edge ? p.gap_open + (n_ - 1) * p.gap_extend : 0),
          row_sum(edge ? p.gap_open + (m_ - 1) * p.gap_extend : 0) {}

    // Diagonals d0..d1 (inclusive), all on the same side of m and n, so
    // which edges and last row / column they touch is known at compile time:
    // kRowEdge: d <= n (cell (0, d)), kColEdge: d <= m (cell (d, 0)),
    // kLastCol: d > n (cell (d-n, n)), kLastRow: d > m (cell (m, d-m)).
    template <bool kRowEdge, bool kColEdge, bool kLastCol, bool kLastRow>
    __attribute__((always_inline)) inline void run(int d0, int d1) {
        // The diagonal's cells lo..hi and alt_d (alt_d[i] = alt[d - i - 1])
        // move by at most one per diagonal, as the phase fixes.
        int lo = kLastCol ? d0 - n : 1, hi = kLastRow ? m : d0 - 1;
        const T* alt_d = alt_r + (n - d0);
        for (int d = d0; d <= d1; ++d, --alt_d) {
            blk_start[d] = out - base;
            for (int i = lo; i <= hi; i += W, out += W / 2) {
                const V s = Ops::subst(Ops::load(ref + i - 1), Ops::load(alt_d + i), match, mis);
                const V up = Ops::load(prev + DH + i - 1);  // H[i-1][j] - B
                const V tf = Ops::load(prev + TF + i - 1);
                const V down = Ops::add(up, Ops::max(open, tf));
                const V left = Ops::load(prev + DV + i);  // H[i][j-1] - B
                const V te = Ops::load(prev + TE + i);
                const V right = Ops::add(left, Ops::max(open, te));
                const V gap = Ops::max(down, right);
                const V h = Ops::max(s, gap);
                const V h_ext = Ops::sub(h, ext);
                Ops::store(cur + DH + i, Ops::sub(h, left));
                Ops::store(cur + DV + i, Ops::sub(h, up));
                Ops::store(cur + TF + i, Ops::sub(down, h_ext));
                Ops::store(cur + TE + i, Ops::sub(right, h_ext));
                Ops::put_bits(out, Ops::gt(gap, s), Ops::gt(down, right), Ops::gt(open, te), Ops::gt(open, tf));
            }
            if (kLastCol) last_col[lo] = col_sum += cur[DV + lo];  // cell (d-n, n)
            if (kLastRow) last_row[d - m] = row_sum += cur[DH + m];
            if (kRowEdge) {
                cur[DH] = edge_step;
                cur[TF] = Ops::kNoGap;
            }
            if (kColEdge) {  // cell (d, 0): hi = d - 1
                cur[DV + hi + 1] = edge_step;
                cur[TE + hi + 1] = Ops::kNoGap;
            }
            T* t = prev;
            prev = cur;
            cur = t;
            if (kLastCol) ++lo;  // lo = d - n
            if (kColEdge) ++hi;  // hi = d - 1
        }
    }
};

// Fills ws.bt (layout in sw_cpu_fill.h), ws.blk_start, ws.last_col and
// ws.last_row; prepare() has written the inputs and prepare_diff() diagonal 1.
static void diff_fill(Workspace& ws, int m, int n, const pyphmm_sw_params& p, bool edge_gaps) {
    DiffSweep sweep(ws, m, n, p, edge_gaps);
    const int lo = std::min(m, n), hi = std::max(m, n);
    sweep.run<true, true, false, false>(2, lo);
    if (n < m)
        sweep.run<false, true, true, false>(lo + 1, hi);
    else
        sweep.run<true, false, false, true>(lo + 1, hi);
    sweep.run<false, false, true, true>(hi + 1, m + n);
}
