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
// Every quantity is kept relative to a neighbour, in narrow lanes; with
// x = extend, a cell's candidates are computed relative to B + 2x:
//   down = F - B - 2x,  right = E - B - 2x,  diag - B - 2x = s - 2x,
//   h = H - B - 2x = the largest of the three,
// and the state it leaves is
//   dh = H[i][j] - H[i][j-1] - x  and  dn = the down of cell (i+1, j),
//   dv = H[i][j] - H[i-1][j] - x  and  rt = the right of cell (i, j+1),
// (dh, dn read by cell (i+1, j) as up and down, dv, rt by cell (i, j+1) as
// left and right). With ho = h + open - x (a gap opened here, relative):
//   dn = max(ho, down) - left,  rt = max(ho, right) - up,
//   dh = h - left,  dv = h - up,
// since cell (i+1, j)'s B is H[i][j-1] = B + x + left (cell (i, j+1)'s alike).
// Every comparison GATK makes (which candidate wins, whether a gap is
// opened or extended) compares two of these, i.e. is the same comparison
// shifted by B + 2x: the backtrack bits are GATK's exactly. The bits of
// whether a gap is opened belong to the cell below and the cell to the
// right, and are stored with the cell that computes them (kNewH, kNewV in
// sw_cpu_fill.h). The bounds that make a lane type exact are derived in
// sw_cpu_fill.cc (diff_lane_bytes).
//
// Anti-diagonal order (d = i + j), vectorised along i. Lane L of diagonal
// d's state holds cell i = lo(d) + L (the backtrack blocks' order too).
// Cell (i, j) reads cell (i-1, j) (dh, dn of slot i-1) and cell (i, j-1)
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

// Whether the instruction set's Ops has a half-width set (Ops::Half).
template <typename O, typename = void>
struct HasHalf : std::false_type {};
template <typename O>
struct HasHalf<O, std::void_t<typename O::Half>> : std::true_type {};

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
    const V match, mis, open;  // s - 2x for a match and a mismatch, open - x
    const V edge_v, edge_gap;  // dv of a cell (d, 0) (or dh of (0, d)), d >= 2, and rt (dn) of either
    const int32_t ext;
    const T* const ref;
    const T* const alt_r;
    int32_t* const last_col;
    int32_t* const last_row;
    int64_t* const blk_start;
    uint8_t* const base;
    uint8_t* out;
    int32_t col_sum, row_sum;  // H[d-n][n] and H[m][d-m] so far
    ColRowMax best;
    V row_dh, row_dn;  // dh, dn of cell (0, d-1), shifted into lane 0 while d <= n + 1

    SweepBase(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge)
        : m(m_),
          n(n_),
          match(Ops::set1(p.match - 2 * p.gap_extend)),
          mis(Ops::set1(p.mismatch - 2 * p.gap_extend)),
          open(Ops::set1(p.gap_open - p.gap_extend)),
          edge_v(Ops::set1(edge ? 0 : -p.gap_extend)),
          edge_gap(Ops::set1((edge ? 0 : -p.gap_extend) + p.gap_open - p.gap_extend)),
          ext(p.gap_extend),
          ref(lanes<T>(ws.ref16)),
          alt_r(lanes<T>(ws.alt16)),
          last_col(ws.last_col.data()),
          last_row(ws.last_row.data()),
          blk_start(ws.blk_start.data()),
          base(ws.bt.data()),
          out(ws.bt.data()),
          col_sum(edge ? p.gap_open + (n_ - 1) * p.gap_extend : 0),
          row_sum(edge ? p.gap_open + (m_ - 1) * p.gap_extend : 0),
          row_dh(Ops::set1((edge ? p.gap_open : 0) - p.gap_extend)),
          row_dn(Ops::set1((edge ? p.gap_open : 0) + p.gap_open - 2 * p.gap_extend)) {}

    // One vector of cells, in operations O (Ops, or Ops::Half for a half
    // vector), from its two neighbours' state and s - 2x; writes the new
    // state and the backtrack block at bits. kLate: the left neighbour's
    // state is the one shifted in registers (delta 1), so h takes its
    // candidate last.
    template <typename O, bool kLate>
    __attribute__((always_inline)) static inline void cell(typename O::V s, typename O::V up, typename O::V down,
                                                           typename O::V left, typename O::V right, typename O::V open,
                                                           uint8_t* bits, typename O::V& dh, typename O::V& dv,
                                                           typename O::V& rt, typename O::V& dn) {
        const auto h = kLate ? O::max(O::max(s, down), right) : O::max(O::max(s, right), down);
        const auto ho = O::add(h, open);
        dh = O::sub(h, left);
        dn = O::sub(O::max(ho, down), left);
        dv = O::sub(h, up);
        rt = O::sub(O::max(ho, right), up);
        // h > s: a gap beats the diagonal (GATK's ties prefer the diagonal);
        // ho > right: the cell to the right opens its gap here (rather than
        // extending this cell's); ho > down: the cell below.
        O::put_bits(bits, O::gt(h, s), O::gt(down, right), O::gt(ho, right), O::gt(ho, down));
    }
    template <bool kLate>
    __attribute__((always_inline)) inline void step(V s, V up, V down, V left, V right, uint8_t* bits, V& dh, V& dv,
                                                    V& rt, V& dn) const {
        cell<Ops, kLate>(s, up, down, left, right, open, bits, dh, dv, rt, dn);
    }
    // The same on the low half of the vectors (O = Ops, only where it has a
    // Half); the high half of the new state is undefined.
    template <bool kLate, typename O = Ops>
    __attribute__((always_inline)) inline void step_half(V fixed, const T* slide, V up, V down, V left, V right,
                                                         uint8_t* bits, V& dh, V& dv, V& rt, V& dn) const {
        typedef typename O::Half H;
        typename H::V ndh, ndv, nrt, ndn;
        cell<H, kLate>(H::subst(O::low(fixed), H::load(slide), O::low(match), O::low(mis)), O::low(up), O::low(down),
                       O::low(left), O::low(right), O::low(open), bits, ndh, ndv, nrt, ndn);
        dh = O::widen(ndh);
        dv = O::widen(ndv);
        rt = O::widen(nrt);
        dn = O::widen(ndn);
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
    // The same from diagonal `start` on (a resumed fill starts at its
    // column's first cell); a separate copy, so that the full fills' code
    // stays as the compiler lays it out without the clipping.
    template <bool kD1, bool kColEdge, bool kLastCol, typename S>
    __attribute__((always_inline)) static inline void run_from(S& s, int start, int d0, int d1) {
        d0 = std::max(d0, start);
        if (d0 <= d1) s.template run<kD1, kColEdge, kLastCol>(d0, d1);
    }
    template <typename S>
    __attribute__((always_inline)) static inline void sweep_from(S& s, int m, int n, int start) {
        if (n < m) {
            run_from<false, true, false>(s, start, 2, n);
            run_from<false, true, true>(s, start, n + 1, n + 1);
            run_from<true, true, true>(s, start, n + 2, m);
            run_from<true, false, true>(s, start, m + 1, m + n);
        } else {
            run_from<false, true, false>(s, start, 2, m);
            run_from<false, false, false>(s, start, m + 1, n);
            run_from<false, false, true>(s, start, n + 1, n + 1);
            run_from<true, false, true>(s, start, n + 2, m + n);
        }
    }
};

// The whole diagonal in registers, for diagonals of at most NV * W - 1
// cells (a read against its haplotype: two or three vectors).
template <int NV>
struct RegSweep : SweepBase {
    V dh[NV], dv[NV], rt[NV], dn[NV];  // diagonal d-1

    RegSweep(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge) : SweepBase(ws, m_, n_, p, edge) {
        for (int t = 0; t < NV; ++t) {  // diagonal 1: cell (1, 0) in lane 0
            dh[t] = dn[t] = Ops::set1(0);
            dv[t] = row_dh;
            rt[t] = row_dn;
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
            V ndh[NV], ndv[NV], nrt[NV], ndn[NV];
            each([&](auto tc) __attribute__((always_inline)) {
                constexpr int t = decltype(tc)::value;
                ndh[t] = dh[t];
                ndv[t] = dv[t];
                nrt[t] = rt[t];
                ndn[t] = dn[t];
                if (t >= active) return;
                constexpr int before = t ? t - 1 : 0, after = t + 1 < NV ? t + 1 : t;
                const V up = kD1 ? dh[t] : Ops::shift_up(dh[t], t ? dh[before] : row_dh);
                const V down = kD1 ? dn[t] : Ops::shift_up(dn[t], t ? dn[before] : row_dn);
                const V left = kD1 ? Ops::shift_down(dv[t], dv[after]) : dv[t];
                const V right = kD1 ? Ops::shift_down(rt[t], rt[after]) : rt[t];
                uint8_t* bits = out + t * (W / 2);
                if constexpr (HasHalf<Ops>::value) {
                    if (t == active - 1 && hi - lo < W * t + W / 2) {  // at most W/2 cells in this vector
                        step_half<kD1>(fixed[t], slide + W * t, up, down, left, right, bits, ndh[t], ndv[t], nrt[t],
                                       ndn[t]);
                        return;
                    }
                }
                step<kD1>(Ops::subst(fixed[t], Ops::load(slide + W * t), match, mis), up, down, left, right, bits,
                          ndh[t], ndv[t], nrt[t], ndn[t]);
            });
            out += active * (W / 2);
            if (kColEdge) {  // cell (d, 0), in lane d - lo
                const int edge = kD1 ? n : d - 1;
                each([&](auto tc) __attribute__((always_inline)) {
                    constexpr int t = decltype(tc)::value;
                    if (W * (t + 1) <= edge) return;  // no lane at or above the edge
                    const M above = Ops::lanes_from(edge - W * t);
                    ndv[t] = Ops::blend(above, ndv[t], edge_v);
                    nrt[t] = Ops::blend(above, nrt[t], edge_gap);
                });
            }
            if (kLastCol) best.col(last_col, d - n, col_sum += Ops::first(ndv[0]) + ext);  // cell (d-n, n), lane 0
            if (!kColEdge) {                                                               // cell (m, d-m), lane m - lo
                const int lane = m - lo;
                V v = ndh[0];
                each([&](auto tc) __attribute__((always_inline)) {
                    constexpr int t = decltype(tc)::value;
                    if (t && t == lane >> Ops::kShift) v = ndh[t];
                });
                alignas(64) T buf[W];
                Ops::store(buf, v);
                best.row(last_row, d - m, row_sum += buf[lane & (W - 1)] + ext);
            }
            each([&](auto tc) __attribute__((always_inline)) {
                constexpr int t = decltype(tc)::value;
                dh[t] = ndh[t];
                dv[t] = ndv[t];
                rt[t] = nrt[t];
                dn[t] = ndn[t];
            });
            if (!kD1) {
                row_dh = edge_v;
                row_dn = edge_gap;
            }
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
// S lanes apart: dh, dv, rt, dn, lane 0 kLead lanes into its array. A
// constant S makes every access one base register plus a displacement. The
// neighbour vector a shift needs is the one the previous iteration loaded
// (delta 0) or loads ahead (delta 1). Where Ops::kShiftByLoad (SSE2, whose
// two-register shift costs three instructions), the shifted vectors are
// loaded one lane off instead, with the row edge in lane -1: those loads
// span two stores, but diagonals of many 8-lane vectors are long enough
// for the stores to have reached the cache.
template <typename O, typename = void>
struct ShiftByLoad : std::false_type {};
template <typename O>
struct ShiftByLoad<O, std::enable_if_t<O::kShiftByLoad>> : std::true_type {};

// Prefix reuse (FillBase in sw_cpu_fill.h) is MemSweep's alone: a capturing
// fill copies, after each diagonal, the cells of the checkpoint columns it
// computed (dv and rt, the state cell (i, c + 1) reads); a resumed fill at
// column L computes on diagonal d only the cells i <= d - L and then puts
// checkpoint L-1's cell (d + 1 - L, L - 1) into the slot after them, the one
// cell of a column below L that diagonal d + 1 reads. It may write the
// checkpoints of the base it reads: those it writes lie at columns
// L + kResumeStep - 1 and beyond, past the one it reads.
// kReuse: the prefix-reuse form (reuse_fill); without it, the full fill's
// code has none of the reuse branches.
template <bool kReuse>
struct MemSweep : SweepBase {
    static constexpr int S = kStateStride / sizeof(T);
    static constexpr int DH = 0, DV = S, RT = 2 * S, DN = 3 * S;
    static constexpr bool kLoads = ShiftByLoad<Ops>::value;
    static constexpr int kLead = kLoads ? 64 : 0;  // room for lane -1
    T* prev;
    T* cur;
    const int from;         // resumed at this column, or 0
    const size_t ck_words;  // lanes per checkpoint: cells 0..m, two each
    const T* const ck_in;   // checkpoint from - 1 (resumed)
    T* const ck_out;        // checkpoint 0 (capturing), or null
    const int ck_last;      // the last checkpoint column a capture keeps

    // The arrays from the first 64-byte boundary (kStateStride a multiple
    // of 64): vectors of state do not straddle cache lines.
    static T* aligned(Workspace& ws) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(ws.diag.data());
        return reinterpret_cast<T*>((a + 63) & ~uintptr_t(63));
    }
    // Diagonal 1: cell (1, 0) in lane 0, cell (0, 1) in lane -1 (or row_dh).
    // Resumed: diagonal `from`, of which the sweep reads cell (1, from - 1)
    // (lane 0, from <= n) and row 0's edge; the last row left of column
    // `from` is the base's.
    MemSweep(Workspace& ws, int m_, int n_, const pyphmm_sw_params& p, bool edge)
        : SweepBase(ws, m_, n_, p, edge),
          prev(aligned(ws) + kLead),
          cur(aligned(ws) + 4 * S + kLead),
          from(kReuse ? ws.resume_from : 0),
          ck_words(2 * (static_cast<size_t>(m_) + 1)),
          ck_in(kReuse && from
                    ? lanes<T>(ws.bases[ws.from_base].ck) + static_cast<size_t>(from / kResumeStep - 1) * ck_words
                    : nullptr),
          ck_out(kReuse && ws.capture ? lanes<T>(ws.bases[ws.to_base].ck) : nullptr),
          ck_last((n_ - 1) / kResumeStep * kResumeStep - 1) {
        if (!kReuse || !from) {
            prev[DV] = Ops::first(row_dh);
            prev[RT] = Ops::first(row_dn);
            if (kLoads) {
                prev[DH - 1] = prev[DV];
                prev[DN - 1] = prev[RT];
            }
            return;
        }
        row_dh = edge_v;
        row_dn = edge_gap;
        prev[DV] = ck_in[2];
        prev[RT] = ck_in[3];
        if (kLoads) {
            prev[DH - 1] = Ops::first(edge_v);
            prev[DN - 1] = Ops::first(edge_gap);
        }
        const int32_t* row = ws.bases[ws.from_base].last_row.data();
        for (int j = 1; j < from; ++j) best.row(last_row, j, row[j]);
        row_sum = row[from - 1];
    }

    // The checkpoint columns c = t * kResumeStep - 1 (c <= ck_last) whose
    // cell (d - c, c) diagonal d, in `state`, holds: lo <= d - c <= hi.
    __attribute__((always_inline)) inline void capture(const T* state, int d, int lo, int hi) const {
        int c = std::max(kResumeStep - 1, d - hi);
        c += (kResumeStep - 1 - c) & (kResumeStep - 1);  // up to the next checkpoint column
        const int last = std::min(ck_last, d - lo);
        if (c > last) return;
        // From one checkpoint to the next: column + kResumeStep, cell i - kResumeStep.
        const T* dv = state + DV + (d - c - lo);
        T* at = ck_out + static_cast<size_t>(c >> kResumeShift) * ck_words + 2 * (d - c);
        const ptrdiff_t step = static_cast<ptrdiff_t>(ck_words) - 2 * kResumeStep;
        for (int k = (last - c) >> kResumeShift; k >= 0; --k, dv -= kResumeStep, at += step) {
            at[0] = dv[0];
            at[1] = dv[RT - DV];
        }
    }

    template <bool kD1, bool kColEdge, bool kLastCol>
    __attribute__((always_inline)) inline void run(int d0, int d1) {
        const T* fixed = kD1 ? alt_r : ref;  // as in RegSweep
        const T* slide = kD1 ? ref + (d0 - n - 1) : alt_r + (n + 1 - d0);
        int lo = kD1 ? d0 - n : 1, hi = kColEdge ? d0 - 1 : m;
        for (int d = d0; d <= d1; ++d) {
            blk_start[d] = out - base;
            const int top = kReuse && from ? std::min(hi, d - from) : hi;  // the last cell computed
            const int cells = top - lo + 1;
            const int edge = kD1 ? n : d - 1;  // lane of cell (d, 0) where kColEdge
            V carry_a = kD1 ? Ops::load(prev + DV) : row_dh;
            V carry_b = kD1 ? Ops::load(prev + RT) : row_dn;
            V col = edge_v;
            for (int i = 0; i < cells; i += W, out += W / 2) {
                V up, down, left, right;
                if (kLoads) {
                    up = Ops::load(prev + DH + i - 1 + kD1);
                    down = Ops::load(prev + DN + i - 1 + kD1);
                    left = Ops::load(prev + DV + i + kD1);
                    right = Ops::load(prev + RT + i + kD1);
                } else if (kD1) {
                    const V next_dv = Ops::load(prev + DV + i + W), next_rt = Ops::load(prev + RT + i + W);
                    up = Ops::load(prev + DH + i);
                    down = Ops::load(prev + DN + i);
                    left = Ops::shift_down(carry_a, next_dv);
                    right = Ops::shift_down(carry_b, next_rt);
                    carry_a = next_dv;
                    carry_b = next_rt;
                } else {
                    const V dh_i = Ops::load(prev + DH + i), dn_i = Ops::load(prev + DN + i);
                    up = Ops::shift_up(dh_i, carry_a);
                    down = Ops::shift_up(dn_i, carry_b);
                    left = Ops::load(prev + DV + i);
                    right = Ops::load(prev + RT + i);
                    carry_a = dh_i;
                    carry_b = dn_i;
                }
                V dh, dv, rt, dn;
                step<kD1>(Ops::subst(Ops::load(fixed + i), Ops::load(slide + i), match, mis), up, down, left, right,
                          out, dh, dv, rt, dn);
                if (!kLoads && kColEdge && edge < i + W) {  // the last vector: cell (d, 0) in it
                    const M above = Ops::lanes_from(edge - i);
                    dv = Ops::blend(above, dv, edge_v);
                    rt = Ops::blend(above, rt, edge_gap);
                }
                if (kLastCol && i == 0) col = dv;
                Ops::store(cur + DH + i, dh);
                Ops::store(cur + DV + i, dv);
                Ops::store(cur + RT + i, rt);
                Ops::store(cur + DN + i, dn);
            }
            if (!kLoads && kColEdge && (edge & (W - 1)) == 0) {  // cell (d, 0) starts a vector past the last
                Ops::store(cur + DV + edge, edge_v);
                Ops::store(cur + RT + edge, edge_gap);
            }
            if (kLoads && kColEdge) {  // out of the loop, which then has no branch: the vector read back whole
                const int at = edge & -W;
                const M above = Ops::lanes_from(edge - at);
                Ops::store(cur + DV + at, Ops::blend(above, Ops::load(cur + DV + at), edge_v));
                Ops::store(cur + RT + at, Ops::blend(above, Ops::load(cur + RT + at), edge_gap));
            }
            if (kReuse && from && d + 1 - from <= m) {  // cell (d + 1 - from, from - 1), right after the cells computed
                const int i = d + 1 - from;
                cur[DV + i - lo] = ck_in[2 * i];
                cur[RT + i - lo] = ck_in[2 * i + 1];
            }
            if (kReuse && ck_out) capture(cur, d, lo, top);
            if (kLastCol) best.col(last_col, d - n, col_sum += Ops::first(col) + ext);
            if (!kColEdge && (!kReuse || !from || d - m >= from))
                best.row(last_row, d - m, row_sum += cur[DH + m - lo] + ext);
            T* t = prev;
            prev = cur;
            cur = t;
            if (!kD1) {
                row_dh = edge_v;
                row_dn = edge_gap;
                if (kLoads) {  // cell (0, d) of the diagonal now in prev
                    prev[DH - 1] = Ops::first(edge_v);
                    prev[DN - 1] = Ops::first(edge_gap);
                }
            }
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

// How many vectors a diagonal may have and still be swept in registers:
// Ops::kRegVectors where the instance sets it, else 3 (a read against its
// haplotype with AVX-512 int8 lanes; 12 vectors of state).
template <typename O, typename = void>
struct RegVectors : std::integral_constant<int, 3> {};
template <typename O>
struct RegVectors<O, std::void_t<decltype(O::kRegVectors)>> : std::integral_constant<int, O::kRegVectors> {};

// Inlined, so that the sweep's state is a local of diff_fill: behind a
// reference its arrays would live in memory (the backtrack's byte stores
// may alias them).
template <typename S>
__attribute__((always_inline)) static inline void fill_with(Workspace& ws, int m, int n, const pyphmm_sw_params& p,
                                                            bool edge_gaps) {
    S s(ws, m, n, p, edge_gaps);
    SweepBase::sweep(s, m, n);
    ws.best = s.best;
}

// Fills ws.bt (layout in sw_cpu_fill.h), ws.blk_start, ws.last_col,
// ws.last_row and ws.best; prepare() has written the inputs and
// size_diff_state() sized ws.diag.
static void diff_fill(Workspace& ws, int m, int n, const pyphmm_sw_params& p, bool edge_gaps) {
    constexpr int kReg = RegVectors<Ops>::value;
    static_assert(kReg >= 3 && kReg <= 5, "diff_fill instantiates RegSweep<1..5>");
    switch ((std::min(m, n) + SweepBase::W) >> Ops::kShift) {  // vectors for the cells and an edge lane
        case 1: return fill_with<RegSweep<1>>(ws, m, n, p, edge_gaps);
        case 2: return fill_with<RegSweep<2>>(ws, m, n, p, edge_gaps);
        case 3: return fill_with<RegSweep<3>>(ws, m, n, p, edge_gaps);
        case 4:
            if constexpr (kReg >= 4) return fill_with<RegSweep<4>>(ws, m, n, p, edge_gaps);
            break;
        case 5:
            if constexpr (kReg >= 5) return fill_with<RegSweep<5>>(ws, m, n, p, edge_gaps);
            break;
    }
    fill_with<MemSweep<false>>(ws, m, n, p, edge_gaps);
}

// The same fill in slot arrays, capturing checkpoints (ws.capture) or
// resumed at column ws.resume_from (prefix reuse, sw_cpu_fill.h).
static void reuse_fill(Workspace& ws, int m, int n, const pyphmm_sw_params& p, bool edge_gaps) {
    MemSweep<true> s(ws, m, n, p, edge_gaps);
    SweepBase::sweep_from(s, m, n, ws.resume_from ? ws.resume_from + 1 : 2);
    ws.best = s.best;
}
