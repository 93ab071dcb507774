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
// Anti-diagonal order (d = i + j), vectorised along i. Lane L of diagonal
// d's state holds cell i = lo(d) + L (the backtrack blocks' order too).
// Cell (i, j) reads cell (i-1, j) (dh, te... of slot i-1) and cell (i, j-1)
// (slot i) of diagonal d-1, which with delta = lo(d) - lo(d-1) (0 while
// d <= n + 1, then 1) are lanes L - 1 + delta and L + delta there: one pair
// of arrays is read in place, the other shifted by one lane in registers.
// So every vector of state is read back whole from where it was written
// (in registers, or at the same address: store-forwarded), never across two
// earlier stores, which would stall each diagonal on the previous one's.
// Edge cells: cell (0, d-1) enters lane 0 by the shift (delta 0 only, which
// is exactly while that cell exists); cell (d, 0) is the lane just past
// diagonal d's last cell and is blended in after the diagonal. Lanes past
// the diagonal's end compute garbage that is never read as a cell.

// What both sweeps share: parameters, outputs and one vector of cells.
// Everything the sweep reads is a local copy: the backtrack stores are
// bytes, which may alias anything, so ws's members would be reloaded after
// every store.
struct SweepBase {
    typedef Ops::V V;
    typedef Ops::T T;
    typedef Ops::M M;
    static constexpr int W = 1 << Ops::kShift;

    const int m, n;
    const V match, mis, open, ext;
    const V edge_v, no_gap;  // dv of a cell (d, 0) (or dh of (0, d)), d >= 2, and te / tf of either
    const T* const ref;
    const T* const alt_r;
    int32_t* const last_col;
    int32_t* const last_row;
    int64_t* const blk_start;
    uint8_t* const base;
    uint8_t* out;
    int32_t col_sum, row_sum;  // H[d-n][n] and H[m][d-m] so far
    ColRowMax best;
    V row_dh;  // dh of cell (0, d-1), shifted into lane 0 while d <= n + 1

    SweepBase(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge)
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
          row_dh(Ops::set1(edge ? p.gap_open : 0)) {}

    // One vector of cells from its two neighbours' state (relative to B)
    // and s; writes the new state and the backtrack block at bits.
    __attribute__((always_inline)) inline void step(V s, V up, V tf_in, V left, V te_in, uint8_t* bits, V& dh, V& dv,
                                                    V& te, V& tf) const {
        const V down = Ops::add(up, Ops::max(open, tf_in));     // F - B
        const V right = Ops::add(left, Ops::max(open, te_in));  // E - B
        const V gap = Ops::max(down, right);
        const V h = Ops::max(s, gap);
        const V h_ext = Ops::sub(h, ext);
        dh = Ops::sub(h, left);
        dv = Ops::sub(h, up);
        tf = Ops::sub(down, h_ext);
        te = Ops::sub(right, h_ext);
        Ops::put_bits(bits, Ops::gt(gap, s), Ops::gt(down, right), Ops::gt(open, te_in), Ops::gt(open, tf_in));
    }

    // The diagonals split where delta (d = n + 1 | n + 2), the column edge
    // (m | m + 1) and the last column (n | n + 1) change:
    // run<delta, cell (d, 0) exists, cell (d-n, n) exists>(d0, d1), where
    // no cell (d, 0) means that cell (m, d-m) exists.
    template <typename S>
    __attribute__((always_inline)) static inline void sweep(S& s, int m, int n) {
        if (n < m) {
            s.template run<false, true, false>(2, n);
            s.template run<false, true, true>(n + 1, n + 1);
            s.template run<true, true, true>(n + 2, m);
            s.template run<true, false, true>(m + 1, m + n);
        } else {
            s.template run<false, true, false>(2, m);
            s.template run<false, false, false>(m + 1, n);
            s.template run<false, false, true>(n + 1, n + 1);
            s.template run<true, false, true>(n + 2, m + n);
        }
    }
};

// The whole diagonal in registers, for diagonals of at most NV * W - 1
// cells (a read against its haplotype: two or three vectors).
template <int NV>
struct RegSweep : SweepBase {
    V dh[NV], dv[NV], te[NV], tf[NV];  // diagonal d-1

    RegSweep(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge) : SweepBase(ws, m_, n_, p, edge) {
        for (int t = 0; t < NV; ++t) {  // diagonal 1: cell (1, 0) in lane 0
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
                constexpr int before = t ? t - 1 : 0, after = t + 1 < NV ? t + 1 : t;
                const V s = Ops::subst(fixed[t], Ops::load(slide + W * t), match, mis);
                uint8_t* bits = out + t * (W / 2);
                if (kD1)
                    step(s, dh[t], tf[t], Ops::shift_down(dv[t], dv[after]), Ops::shift_down(te[t], te[after]), bits,
                         ndh[t], ndv[t], nte[t], ntf[t]);
                else
                    step(s, Ops::shift_up(dh[t], t ? dh[before] : row_dh),
                         Ops::shift_up(tf[t], t ? tf[before] : no_gap), dv[t], te[t], bits, ndh[t], ndv[t], nte[t],
                         ntf[t]);
            });
            out += active * (W / 2);
            if (kColEdge) {  // cell (d, 0), in lane d - lo
                const int edge = kD1 ? n : d - 1;
                each([&](auto tc) __attribute__((always_inline)) {
                    constexpr int t = decltype(tc)::value;
                    if (W * (t + 1) <= edge) return;  // no lane at or above the edge
                    const M above = Ops::lanes_from(edge - W * t);
                    ndv[t] = Ops::blend(above, ndv[t], edge_v);
                    nte[t] = Ops::blend(above, nte[t], no_gap);
                });
            }
            if (kLastCol) best.col(last_col, d - n, col_sum += Ops::first(ndv[0]));  // cell (d-n, n), lane 0
            if (!kColEdge) {                                                         // cell (m, d-m), lane m - lo
                const int lane = m - lo;
                V v = ndh[0];
                each([&](auto tc) __attribute__((always_inline)) {
                    constexpr int t = decltype(tc)::value;
                    if (t && t == lane >> Ops::kShift) v = ndh[t];
                });
                alignas(64) T buf[W];
                Ops::store(buf, v);
                best.row(last_row, d - m, row_sum += buf[lane & (W - 1)]);
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
};

// Longer diagonals: the state in slot arrays, lane-addressed as the
// registers above, for diagonals d-1 (prev) and d (cur), each four arrays
// S lanes apart: dh, dv, te, tf. A constant S makes every access one base
// register plus a displacement. The neighbour vector a shift needs is the
// one the previous iteration loaded (delta 0) or loads ahead (delta 1).
struct MemSweep : SweepBase {
    static constexpr int S = kStateStride / sizeof(T);
    static constexpr int DH = 0, DV = S, TE = 2 * S, TF = 3 * S;
    T* prev;
    T* cur;

    // prepare_diff() has written diagonal 1: cell (1, 0) in lane 0.
    MemSweep(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge)
        : SweepBase(ws, m_, n_, p, edge), prev(lanes<T>(ws.diag)), cur(lanes<T>(ws.diag) + 4 * S) {}

    template <bool kD1, bool kColEdge, bool kLastCol>
    __attribute__((always_inline)) inline void run(int d0, int d1) {
        const T* fixed = kD1 ? alt_r : ref;  // as in RegSweep
        const T* slide = kD1 ? ref + (d0 - n - 1) : alt_r + (n + 1 - d0);
        int lo = kD1 ? d0 - n : 1, hi = kColEdge ? d0 - 1 : m;
        for (int d = d0; d <= d1; ++d) {
            blk_start[d] = out - base;
            const int cells = hi - lo + 1;
            const int edge = kD1 ? n : d - 1;  // lane of cell (d, 0) where kColEdge
            V carry_a = kD1 ? Ops::load(prev + DV) : row_dh;
            V carry_b = kD1 ? Ops::load(prev + TE) : no_gap;
            V col = no_gap;
            for (int i = 0; i < cells; i += W, out += W / 2) {
                V up, tf_in, left, te_in;
                if (kD1) {
                    const V next_dv = Ops::load(prev + DV + i + W), next_te = Ops::load(prev + TE + i + W);
                    up = Ops::load(prev + DH + i);
                    tf_in = Ops::load(prev + TF + i);
                    left = Ops::shift_down(carry_a, next_dv);
                    te_in = Ops::shift_down(carry_b, next_te);
                    carry_a = next_dv;
                    carry_b = next_te;
                } else {
                    const V dh_i = Ops::load(prev + DH + i), tf_i = Ops::load(prev + TF + i);
                    up = Ops::shift_up(dh_i, carry_a);
                    tf_in = Ops::shift_up(tf_i, carry_b);
                    left = Ops::load(prev + DV + i);
                    te_in = Ops::load(prev + TE + i);
                    carry_a = dh_i;
                    carry_b = tf_i;
                }
                V dh, dv, te, tf;
                step(Ops::subst(Ops::load(fixed + i), Ops::load(slide + i), match, mis), up, tf_in, left, te_in, out,
                     dh, dv, te, tf);
                if (kColEdge && edge < i + W) {  // the last vector: cell (d, 0) in it
                    const M above = Ops::lanes_from(edge - i);
                    dv = Ops::blend(above, dv, edge_v);
                    te = Ops::blend(above, te, no_gap);
                }
                if (kLastCol && i == 0) col = dv;
                Ops::store(cur + DH + i, dh);
                Ops::store(cur + DV + i, dv);
                Ops::store(cur + TE + i, te);
                Ops::store(cur + TF + i, tf);
            }
            if (kColEdge && (edge & (W - 1)) == 0) {  // cell (d, 0) starts a vector past the last
                Ops::store(cur + DV + edge, edge_v);
                Ops::store(cur + TE + edge, no_gap);
            }
            if (kLastCol) best.col(last_col, d - n, col_sum += Ops::first(col));
            if (!kColEdge) best.row(last_row, d - m, row_sum += cur[DH + m - lo]);
            T* t = prev;
            prev = cur;
            cur = t;
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
};

// Fills ws.bt (layout in sw_cpu_fill.h), ws.blk_start, ws.last_col,
// ws.last_row and ws.best; prepare() has written the inputs and
// prepare_diff() diagonal 1.
static void diff_fill(Workspace& ws, int m, int n, const pyphmm_sw_params& p, bool edge_gaps) {
    switch ((std::min(m, n) + SweepBase::W) >> Ops::kShift) {  // vectors for the cells and an edge lane
        case 1: {
            RegSweep<1> s(ws, m, n, p, edge_gaps);
            SweepBase::sweep(s, m, n);
            ws.best = s.best;
            return;
        }
        case 2: {
            RegSweep<2> s(ws, m, n, p, edge_gaps);
            SweepBase::sweep(s, m, n);
            ws.best = s.best;
            return;
        }
        case 3: {
            RegSweep<3> s(ws, m, n, p, edge_gaps);
            SweepBase::sweep(s, m, n);
            ws.best = s.best;
            return;
        }
        default: {
            MemSweep s(ws, m, n, p, edge_gaps);
            SweepBase::sweep(s, m, n);
            ws.best = s.best;
            return;
        }
    }
}
