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

// The sweep with the whole diagonal in registers, for diagonals of at most
// NV * W - 1 cells (a read against its haplotype: two or three vectors).
// Lane L of the state (lane L % W of vector L / W) holds cell i = lo(d) + L
// of diagonal d, the backtrack blocks' order. With delta = lo(d) - lo(d-1)
// (0 while d <= n + 1, then 1), cell i reads lane L - 1 + delta (slot i-1)
// and lane L + delta (slot i) of diagonal d-1: one pair of arrays is read in
// place, the other one lane shifted, within registers. No state goes
// through memory, so no diagonal waits for the previous one's stores.
// Edge cells: cell (0, d-1) is shifted into lane 0 (delta 0 only, which is
// exactly while it exists); cell (d, 0) is the lane just past diagonal d's
// last cell, blended in (with every lane above it) after the diagonal.
template <int NV>
struct RegSweep {
    typedef Ops::V V;
    typedef Ops::T T;
    typedef Ops::M M;
    static constexpr int W = 1 << Ops::kShift;

    const int m, n;
    const V match, mis, open, ext;
    const V edge_v, no_gap;  // the state of an edge cell (d, 0) or (0, d), d >= 2
    const T* const ref;
    const T* const alt_r;
    int32_t* const last_col;
    int32_t* const last_row;
    int64_t* const blk_start;
    uint8_t* const base;
    uint8_t* out;
    int32_t col_sum, row_sum;
    V row_dh;                          // dh of cell (0, d-1), in the last lane
    V dh[NV], dv[NV], te[NV], tf[NV];  // diagonal d-1

    RegSweep(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge)
        : m(m_),
          n(n_),
          match(Ops::set1(p.match)),
          mis(Ops::set1(p.mismatch)),
          open(Ops::set1(p.gap_open)),
          ext(Ops::set1(p.gap_extend)),
          edge_v(Ops::set1(edge ? p.gap_extend : 0)),
          no_gap(Ops::set1(Ops::kNoGap)),
          ref(lanes<T>(ws.ref16)),
          alt_r(lanes<T>(ws.alt16)),
          last_col(ws.last_col.data()),
          last_row(ws.last_row.data()),
          blk_start(ws.blk_start.data()),
          base(ws.bt.data()),
          out(ws.bt.data()),
          col_sum(edge ? p.gap_open + (n_ - 1) * p.gap_extend : 0),
          row_sum(edge ? p.gap_open + (m_ - 1) * p.gap_extend : 0),
          row_dh(Ops::set1(edge ? p.gap_open : 0)) {
        // Diagonal 1: cell (1, 0) in lane 0, dh(0, 1) in row_dh.
        for (int t = 0; t < NV; ++t) {
            dh[t] = tf[t] = Ops::set1(0);
            dv[t] = row_dh;
            te[t] = no_gap;
        }
    }

    template <typename F, int... I>
    __attribute__((always_inline)) static inline void each(F&& f, std::integer_sequence<int, I...>) {
        (f(std::integral_constant<int, I>{}), ...);
    }
    // f(std::integral_constant<int, t>) for t = 0..NV-1, unrolled, so that
    // every index into the state arrays is a constant and they stay in registers.
    template <typename F>
    __attribute__((always_inline)) static inline void each(F&& f) {
        each(f, std::make_integer_sequence<int, NV>{});
    }

    // Diagonals d0..d1 (inclusive) with delta kD1, cell (d, 0) present
    // (kColEdge, d <= m) or cell (m, d-m) present (d > m), and cell (d-n, n)
    // present (kLastCol, d > n).
    template <bool kD1, bool kColEdge, bool kLastCol>
    __attribute__((always_inline)) inline void run(int d0, int d1) {
        // One sequence is constant per lane (ref, i = L + 1 for delta 0; alt,
        // j = n - L for delta 1), the other slides by one base per diagonal.
        V fixed[NV];
        each([&](auto tc) __attribute__((always_inline)) {
            constexpr int t = decltype(tc)::value;
            fixed[t] = Ops::load((kD1 ? alt_r : ref) + W * t);
        });
        const T* slide = kD1 ? ref + (d0 - n - 1) : alt_r + (n + 1 - d0);
        int lo = kD1 ? d0 - n : 1, hi = kColEdge ? d0 - 1 : m;
        for (int d = d0; d <= d1; ++d) {
            blk_start[d] = out - base;
            const int active = (hi - lo + W) >> Ops::kShift;  // vectors holding cells
            V ndh[NV], ndv[NV], nte[NV], ntf[NV];
            each([&](auto tc) __attribute__((always_inline)) {
                constexpr int t = decltype(tc)::value;
                ndh[t] = dh[t];
                ndv[t] = dv[t];
                nte[t] = te[t];
                ntf[t] = tf[t];
                if (t >= active) return;
                V up, tf_in, left, te_in;
                if (kD1) {
                    up = dh[t];
                    tf_in = tf[t];
                    left = Ops::shift_down(dv[t], dv[t + 1 < NV ? t + 1 : t]);
                    te_in = Ops::shift_down(te[t], te[t + 1 < NV ? t + 1 : t]);
                } else {
                    up = Ops::shift_up(dh[t], t ? dh[t ? t - 1 : 0] : row_dh);
                    tf_in = Ops::shift_up(tf[t], t ? tf[t ? t - 1 : 0] : no_gap);
                    left = dv[t];
                    te_in = te[t];
                }
                const V s = Ops::subst(fixed[t], Ops::load(slide + W * t), match, mis);
                const V down = Ops::add(up, Ops::max(open, tf_in));     // F - B
                const V right = Ops::add(left, Ops::max(open, te_in));  // E - B
                const V gap = Ops::max(down, right);
                const V h = Ops::max(s, gap);
                const V h_ext = Ops::sub(h, ext);
                ndh[t] = Ops::sub(h, left);
                ndv[t] = Ops::sub(h, up);
                ntf[t] = Ops::sub(down, h_ext);
                nte[t] = Ops::sub(right, h_ext);
                Ops::put_bits(out + t * (W / 2), Ops::gt(gap, s), Ops::gt(down, right), Ops::gt(open, te_in),
                              Ops::gt(open, tf_in));
            });
            out += active * (W / 2);
            if (kColEdge) {  // cell (d, 0) in lane d - lo
                const int edge = kD1 ? n : d - 1;
                each([&](auto tc) __attribute__((always_inline)) {
                    constexpr int t = decltype(tc)::value;
                    if (W * (t + 1) <= edge) return;  // no lane at or above the edge
                    const M above = Ops::lanes_from(edge - W * t);
                    ndv[t] = Ops::blend(above, ndv[t], edge_v);
                    nte[t] = Ops::blend(above, nte[t], no_gap);
                });
            }
            if (kLastCol) last_col[d - n] = col_sum += Ops::first(ndv[0]);  // cell (d-n, n), lane 0
            if (!kColEdge) {                                                // cell (m, d-m) in lane m - lo
                const int lane = m - lo;
                V v = ndh[0];
                each([&](auto tc) __attribute__((always_inline)) {
                    constexpr int t = decltype(tc)::value;
                    if (t && t == lane >> Ops::kShift) v = ndh[t];
                });
                alignas(64) T buf[W];
                Ops::store(buf, v);
                last_row[d - m] = row_sum += buf[lane & (W - 1)];
            }
            each([&](auto tc) __attribute__((always_inline)) {
                constexpr int t = decltype(tc)::value;
                dh[t] = ndh[t];
                dv[t] = ndv[t];
                te[t] = nte[t];
                tf[t] = ntf[t];
            });
            if (!kD1) row_dh = edge_v;
            if (kD1) {
                ++slide;
                ++lo;
            } else {
                --slide;
            }
            if (kColEdge) ++hi;
        }
    }

    // The diagonals split where delta (d = n + 1 | n + 2), the column edge
    // (m | m + 1) and the last column (n | n + 1) change.
    __attribute__((always_inline)) inline void sweep() {
        if (n < m) {
            run<false, true, false>(2, n);
            run<false, true, true>(n + 1, n + 1);
            run<true, true, true>(n + 2, m);
            run<true, false, true>(m + 1, m + n);
        } else {
            run<false, true, false>(2, m);
            run<false, false, false>(m + 1, n);
            run<false, false, true>(n + 1, n + 1);
            run<true, false, true>(n + 2, m + n);
        }
    }
};

// Fills ws.bt (layout in sw_cpu_fill.h), ws.blk_start, ws.last_col and
// ws.last_row; prepare() has written the inputs and prepare_diff() diagonal 1.
static void diff_fill(Workspace& ws, int m, int n, const pyphmm_sw_params& p, bool edge_gaps) {
    const int lo = std::min(m, n), hi = std::max(m, n);
    switch ((lo + DiffSweep::W) >> Ops::kShift) {  // vectors for lo + 1 lanes: the cells and an edge
        case 1: return RegSweep<1>(ws, m, n, p, edge_gaps).sweep();
        case 2: return RegSweep<2>(ws, m, n, p, edge_gaps).sweep();
        case 3: return RegSweep<3>(ws, m, n, p, edge_gaps).sweep();
        default: break;
    }
    DiffSweep sweep(ws, m, n, p, edge_gaps);
    sweep.run<true, true, false, false>(2, lo);
    if (n < m)
        sweep.run<false, true, true, false>(lo + 1, hi);
    else
        sweep.run<true, false, false, true>(lo + 1, hi);
    sweep.run<false, false, true, true>(hi + 1, m + n);
}
