// CPU PDHMM kernels: one pair per SIMD lane (AVX-512: 8 doubles, AVX2: 4,
// NEON and portable: 2). Every lane computes exactly the scalar reference
// (pdhmm_cpu_scalar.cc): the same operations on the same values in the same
// order, so each lane's sum is bit-identical to the reference's whatever its
// lane-mates are.
//
// What differs is how the per-lane choices are made without branches:
// - Base matching: each read base and each haplotype column get a bit set,
//   and a cell matches when the sets share a bit (mismatch_mask): an identity
//   bit per distinct byte of the group (equal bytes), a bit every read has
//   and a haplotype N has, a bit every column has and a read N has, and the
//   A/C/G/T bits of a SNP column against the read base's (either case).
// - The deletion state of every column is known before the sweep: it
//   depends on the haplotype's PD bytes only, and on the state a row starts
//   in, which is NORMAL for row 1 and for every later row the state row 1
//   ended in (docs/PDHMM.md). So each column holds lane masks for "inside"
//   and "after", one pair per row kind, and the branch merges become
//   max(value & mask, ...): all values are >= +0, so max with a masked +0
//   leaves a value unchanged.
// - Columns where no lane is inside or right after a deletion span and none
//   ends one (almost all of them in GATK's haplotypes) take a fast path
//   that is PairHMM's recurrence plus register copies. The branch values of
//   a row are read by the next row only at columns that end a span (top)
//   and right after them (diagonal), so only general columns store them.
// - Rows are swept two at a time (sweep_row_pair) unless a lane's read
//   ends in between: the matrix row is read and written once per two rows
//   and each step carries two independent Y chains.
//
// Lanes of different lengths: columns past a lane's haplotype and rows past
// its read compute values nobody reads (they lie right of or below the
// lane's matrix, and row starts take their state from the masks, not from
// the columns before); each lane's sum is taken at its own last row over
// its own columns.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/config.h"
#include "common/pd_tables.h"
#include "cpu_arch.h"
#include "pdhmm_cpu_kernel.h"

namespace pyphmm {
namespace cpu {

namespace {

// Base bits (see mismatch_mask): A/C/G/T of a SNP position, "every read",
// "every column", then one identity bit per distinct byte of a group.
constexpr int64_t kSnpBits = 0xF;
constexpr int64_t kEveryRead = 0x10;
constexpr int64_t kEveryColumn = 0x20;
constexpr int kFirstIdentityBit = 6;
constexpr int kIdentityBits = 64 - kFirstIdentityBit;

inline int64_t acgt_bit(uint8_t b) {
    switch (b) {
        case 'A':
        case 'a': return 1;
        case 'C':
        case 'c': return 2;
        case 'G':
        case 'g': return 4;
        case 'T':
        case 't': return 8;
        default: return 0;
    }
}

// A PD byte's A/C/G/T bits in acgt_bit's order, if it marks a SNP.
inline int64_t snp_bits(uint8_t pd) { return (pd & kPdSnp) ? (pd >> 3) & kSnpBits : 0; }

// Identity bits of the bytes of a group's reads and haplotypes; false when
// they hold more distinct bytes than there are bits (the caller then runs
// the scalar reference).
struct Identity {
    int8_t id[256];
    bool assign(const PdPair* const* lanes, int count) {
        std::memset(id, -1, sizeof(id));
        int next = 0;
        auto add = [&](const uint8_t* s, int len) {
            for (int k = 0; k < len; ++k)
                if (id[s[k]] < 0) {
                    if (next == kIdentityBits) return false;
                    id[s[k]] = static_cast<int8_t>(next++);
                }
            return true;
        };
        for (int l = 0; l < count; ++l)
            if (!add(lanes[l]->read, lanes[l]->m) || !add(lanes[l]->hap, lanes[l]->n)) return false;
        return true;
    }
    int64_t bit(uint8_t b) const { return static_cast<int64_t>(uint64_t(1) << (kFirstIdentityBit + id[b])); }
};

enum DelState : uint8_t { kNormal, kInside, kAfter };

// Column kinds (PdKernel::Scratch::kind): general (some lane is not plainly
// NORMAL there, or ends a span), and "the next column is general".
constexpr uint8_t kGeneral = 1;
constexpr uint8_t kNextGeneral = 2;

inline DelState next_state(DelState s, uint8_t pd) {
    if (pd & kPdDelEnd) return kAfter;
    if (pd & kPdDelStart) return kInside;
    return s == kAfter ? kNormal : s;
}

// T is double; a template parameter (and I a type that depends on it)
// because GCC drops vector_size from a non-dependent element type whose
// size is a template argument.
template <typename T, int VB>
struct PdKernel {
    static constexpr int W = VB / sizeof(T);
    typedef T vec __attribute__((vector_size(VB), aligned(VB)));
    typedef typename std::conditional<sizeof(T) == 8, int64_t, int32_t>::type I;
    typedef I ivec __attribute__((vector_size(VB), aligned(VB)));

    // Per-row parameters, one lane per pair.
    struct Row {
        vec mm, gap_to_match, to_ins, cont, to_del, p_match, p_mismatch;
        ivec bits;  // the read base's bits
    };
    // A general column's lane masks: DEL_END, and the state for rows of
    // kind 0 (row 1) and 1 (the others).
    struct Masks {
        ivec del_end, inside[2], after[2];
    };
    struct Cells {
        vec m, x, y;
    };
    struct IV {
        ivec v;
    };
    struct Scratch {
        std::vector<Row> rows;
        std::vector<IV> bits;         // haplotype bits per column
        std::vector<uint8_t> states;  // per lane and column: deletion states (prepare_columns)
        std::vector<uint8_t> kind;    // per column: kGeneral (masks at masks[index[j]]), kNextGeneral
        std::vector<int32_t> index;
        std::vector<Masks> masks;
        std::vector<Cells> cells, branch;  // previous row: M, X, Y and BM, BX, BY
    };

#define PD_INLINE __attribute__((always_inline)) static inline
    PD_INLINE ivec bits_of(vec v) { return (ivec)v; }
    PD_INLINE vec keep(vec v, ivec mask) { return (vec)(bits_of(v) & mask); }
    PD_INLINE vec drop(vec v, ivec mask) { return (vec)(bits_of(v) & ~mask); }
    PD_INLINE vec select(ivec mask, vec a, vec b) { return (vec)((mask & bits_of(a)) | (~mask & bits_of(b))); }
    // max for values that are never NaN and never -0 (all of the kernel's).
    PD_INLINE vec vmax(vec a, vec b) { return a > b ? a : b; }
    // All ones where the bit sets share no bit (a mismatch).
    PD_INLINE ivec mismatch_mask(ivec h, ivec r) { return (h & r) == ivec{}; }

    // Rows, columns and masks of lanes[0..count); missing lanes repeat the
    // last pair. Returns false if the group needs the scalar reference.
    PD_INLINE bool prepare(const PdPair* const* lanes, int count, int m_max, int n_max, Scratch& s) {
        Identity ident;
        if (!ident.assign(lanes, count)) return false;
        const PdTables& t = pd_tables();
        s.rows.resize(m_max + 1);
        s.bits.assign(n_max + 1, IV{ivec{}});
        s.kind.assign(n_max + 1, 0);
        s.index.assign(n_max + 1, -1);
        s.masks.clear();
        for (int l = 0; l < W; ++l) {
            const PdPair& p = *lanes[std::min(l, count - 1)];
            for (int i = 1; i <= m_max; ++i) {
                Row& row = s.rows[i];
                if (p.m == 0) {  // no row of its own: zeros, and its sum stays 0
                    row.mm[l] = row.gap_to_match[l] = row.to_ins[l] = row.cont[l] = row.to_del[l] = 0;
                    row.p_match[l] = row.p_mismatch[l] = 0;
                    row.bits[l] = 0;
                    continue;
                }
                const int k = std::min(i, p.m) - 1;  // rows past the read repeat its last row
                const double err = t.error_prob[p.quals[k]];
                row.mm[l] = t.m2m(p.ins[k], p.dels[k]);
                row.gap_to_match[l] = 1.0 - t.error_prob[p.gcp[k]];
                row.to_ins[l] = t.error_prob[p.ins[k]];
                row.cont[l] = t.error_prob[p.gcp[k]];
                row.to_del[l] = t.error_prob[p.dels[k]];
                row.p_match[l] = 1.0 - err;
                row.p_mismatch[l] = err / 3.0;
                const uint8_t x = p.read[k];
                row.bits[l] = ident.bit(x) | kEveryRead | (x == 'N' ? kEveryColumn : 0) | acgt_bit(x);
            }
        }
        prepare_columns(lanes, count, n_max, ident, s);
        return true;
    }

    // Per column: the haplotype bits of each lane, its deletion state for
    // both row kinds (rows 2.. start in the state row 1 ended in), the
    // column kinds, and the lane masks of the general columns. A lane whose
    // haplotype is the previous lane's (the driver groups pairs by
    // haplotype) copies that lane's columns.
    PD_INLINE void prepare_columns(const PdPair* const* lanes, int count, int n_max, const Identity& ident,
                                   Scratch& s) {
        const size_t stride = static_cast<size_t>(n_max) + 1;
        s.states.assign(W * stride, 0);
        uint8_t* kinds = s.kind.data();
        IV* bits = s.bits.data();
        for (int l = 0; l < W; ++l) {
            const PdPair& p = *lanes[std::min(l, count - 1)];
            uint8_t* states = s.states.data() + l * stride;  // kind-0 state | kind-1 state << 2
            if (l > 0) {
                const PdPair& q = *lanes[std::min(l - 1, count - 1)];
                if (q.hap == p.hap && q.pd == p.pd && q.n == p.n) {
                    for (int j = 1; j <= p.n; ++j) bits[j].v[l] = bits[j].v[l - 1];
                    std::memcpy(states, states - stride, stride);
                    continue;
                }
            }
            DelState first = kNormal;
            for (int j = 1; j <= p.n; ++j) first = next_state(first, p.pd[j - 1]);
            DelState a = kNormal, b = p.n > 0 ? first : kNormal;
            for (int j = 1; j <= p.n; ++j) {
                const uint8_t y = p.hap[j - 1], pd = p.pd[j - 1];
                bits[j].v[l] = ident.bit(y) | kEveryColumn | (y == 'N' ? kEveryRead : 0) | snp_bits(pd);
                states[j] = static_cast<uint8_t>(a | b << 2);
                if (a != kNormal || b != kNormal || (pd & kPdDelEnd)) kinds[j] = kGeneral;
                a = next_state(a, pd);
                b = next_state(b, pd);
            }
        }
        for (int j = 1; j < n_max; ++j)
            if (kinds[j + 1] & kGeneral) kinds[j] |= kNextGeneral;
        for (int j = 1; j <= n_max; ++j) {
            if (!(kinds[j] & kGeneral)) continue;
            Masks mk{};
            for (int l = 0; l < W; ++l) {
                const PdPair& p = *lanes[std::min(l, count - 1)];
                if (j > p.n) continue;
                const uint8_t st = s.states[l * stride + j];
                mk.del_end[l] = (p.pd[j - 1] & kPdDelEnd) ? -1 : 0;
                for (int kind = 0; kind < 2; ++kind) {
                    const int state = (st >> (2 * kind)) & 3;
                    mk.inside[kind][l] = state == kInside ? -1 : 0;
                    mk.after[kind][l] = state == kAfter ? -1 : 0;
                }
            }
            s.index[j] = static_cast<int32_t>(s.masks.size());
            s.masks.push_back(mk);
        }
    }

    // The cells of a column, in the reference's operation order. `fast`:
    // every lane NORMAL, no DEL_END (the branch values are the left ones and
    // nothing is merged). A general cell also yields its branch values `b`.
    PD_INLINE Cells fast_cell(const Row& r, vec e, const Cells& diag, const Cells& left, const Cells& top) {
        return {e * ((diag.m * r.mm + diag.x * r.gap_to_match) + diag.y * r.gap_to_match),
                top.m * r.to_ins + top.x * r.cont, left.m * r.to_del + left.y * r.cont};
    }
    // diag/left/top: M, X, Y of those cells; bdiag/bleft/btop: their branch values.
    PD_INLINE Cells general_cell(const Row& r, vec e, const Masks& mk, int kind, const Cells& diag, const Cells& bdiag,
                                 const Cells& left, const Cells& bleft, const Cells& top, const Cells& btop, Cells& b) {
        const ivec inside = mk.inside[kind], after = mk.after[kind], branching = inside | after;
        b.m = vmax(keep(bleft.m, branching), drop(left.m, inside));
        b.x = vmax(keep(bleft.x, branching), drop(left.x, inside));
        b.y = vmax(keep(bleft.y, branching), drop(left.y, inside));
        const Cells d{vmax(diag.m, keep(bdiag.m, after)), vmax(diag.x, keep(bdiag.x, after)),
                      vmax(diag.y, keep(bdiag.y, after))};
        const vec ml = vmax(left.m, keep(bleft.m, after)), yl = vmax(left.y, keep(bleft.y, after));
        return {e * ((d.m * r.mm + d.x * r.gap_to_match) + d.y * r.gap_to_match),
                vmax(keep(btop.m, mk.del_end), top.m) * r.to_ins + vmax(keep(btop.x, mk.del_end), top.x) * r.cont,
                ml * r.to_del + yl * r.cont};
    }
    PD_INLINE vec prior(const Row& r, ivec hap_bits) {
        return select(mismatch_mask(hap_bits, r.bits), r.p_mismatch, r.p_match);
    }

    // Branch values live in registers along a row and in s.branch (the
    // previous row's) at general columns only: a row reads its upper
    // row's branch values at columns with DEL_END (top) and right after
    // them (diagonal, in AFTER lanes), which are general columns. The left
    // branch values of a general column are the left values when the column
    // before was fast (kNextGeneral marks it), so fast columns copy nothing
    // else. Diagonal branch registers are stale after a fast column, but
    // only AFTER lanes read them, and those follow a DEL_END column.

    // One row: s.cells holds row i - 1 on entry and row i on return.
    PD_INLINE void sweep_row(const Row& r, int kind, vec y_corner, int n_max, Scratch& s) {
        Cells diag{vec{}, vec{}, y_corner}, left{}, bdiag{}, bleft{};
        Cells* cells = s.cells.data();
        for (int j = 1; j <= n_max; ++j) {
            const Cells top = cells[j];
            const vec e = prior(r, s.bits[j].v);
            const uint8_t k = s.kind[j];
            Cells c;
            if (!(k & kGeneral)) {
                c = fast_cell(r, e, diag, left, top);
                if (k & kNextGeneral) bleft = left;
            } else {
                const Cells btop = s.branch[j];
                Cells b;
                c = general_cell(r, e, s.masks[s.index[j]], kind, diag, bdiag, left, bleft, top, btop, b);
                s.branch[j] = b;
                bdiag = btop, bleft = b;
            }
            cells[j] = c;
            diag = top, left = c;
        }
    }

    // Rows i (a, of `kind`) and i + 1 (b) in one sweep: s.cells holds row
    // i - 1 on entry and row i + 1 on return. Cell (i + 1, j) follows
    // (i, j) from registers, so a step carries two independent chains (Y's
    // multiply and add along each row) and the row is read and written once
    // per two rows.
    PD_INLINE void sweep_row_pair(const Row& a, const Row& b, int kind, vec y_corner, int n_max, Scratch& s) {
        Cells diag_a{vec{}, vec{}, y_corner}, left_a{}, bdiag_a{}, bleft_a{};
        Cells diag_b{}, left_b{}, bdiag_b{}, bleft_b{};
        Cells* cells = s.cells.data();
        for (int j = 1; j <= n_max; ++j) {
            const Cells top = cells[j];
            const ivec hap_bits = s.bits[j].v;
            const uint8_t k = s.kind[j];
            Cells ca, cb;
            if (!(k & kGeneral)) {
                ca = fast_cell(a, prior(a, hap_bits), diag_a, left_a, top);
                cb = fast_cell(b, prior(b, hap_bits), diag_b, left_b, ca);
                if (k & kNextGeneral) bleft_a = left_a, bleft_b = left_b;
            } else {
                const Masks& mk = s.masks[s.index[j]];
                const Cells btop = s.branch[j];
                Cells ba, bb;
                ca = general_cell(a, prior(a, hap_bits), mk, kind, diag_a, bdiag_a, left_a, bleft_a, top, btop, ba);
                cb = general_cell(b, prior(b, hap_bits), mk, 1, diag_b, bdiag_b, left_b, bleft_b, ca, ba, bb);
                s.branch[j] = bb;
                bdiag_a = btop, bleft_a = ba;
                bdiag_b = ba, bleft_b = bb;
            }
            cells[j] = cb;
            diag_a = top, left_a = ca;
            diag_b = ca, left_b = cb;
        }
    }

    // Adds row i's M + X over each lane's own columns, column by column, to
    // the sums of the lanes whose read ends at row i.
    PD_INLINE void collect(ivec ends_here, const ivec& hap_len, int n_max, const Scratch& s, vec& sum) {
        for (int j = 1; j <= n_max; ++j) {
            const ivec in = ends_here & (hap_len >= j);
            sum += select(in, s.cells[j].m + s.cells[j].x, vec{});
        }
    }

    PD_INLINE bool ends_at(const ivec& read_len, int i) {
        for (int l = 0; l < W; ++l)
            if (read_len[l] == i) return true;
        return false;
    }

    PD_INLINE void forward(const PdPair* const* lanes, int count, double* sums, Scratch& s) {
        int m_max = 0, n_max = 0;
        ivec read_len{}, hap_len{};
        vec y_init{};
        const double ic = pd_tables().initial_condition;
        for (int l = 0; l < W; ++l) {
            const PdPair& p = *lanes[std::min(l, count - 1)];
            m_max = std::max(m_max, p.m);
            n_max = std::max(n_max, p.n);
            read_len[l] = p.m;
            hap_len[l] = p.n;
            y_init[l] = p.n > 0 ? ic / p.n : 0.0;
        }
        if (!prepare(lanes, count, m_max, n_max, s)) {
            for (int l = 0; l < count; ++l) sums[l] = pd_sum_scalar(*lanes[l]);
            return;
        }
        s.cells.assign(n_max + 1, Cells{vec{}, vec{}, y_init});
        s.branch.assign(n_max + 1, Cells{vec{}, vec{}, vec{}});
        vec sum{};
        for (int i = 1; i <= m_max; ++i) {
            const int kind = i == 1 ? 0 : 1;
            const vec y_corner = i == 1 ? y_init : vec{};
            // Rows i and i + 1 together, unless a lane's read ends at row i
            // (its sum needs row i, which the pair overwrites).
            if (i < m_max && !ends_at(read_len, i)) {
                sweep_row_pair(s.rows[i], s.rows[i + 1], kind, y_corner, n_max, s);
                ++i;
            } else {
                sweep_row(s.rows[i], kind, y_corner, n_max, s);
            }
            if (ends_at(read_len, i)) collect(read_len == i, hap_len, n_max, s, sum);
        }
        for (int l = 0; l < count; ++l) sums[l] = sum[l];
    }
#undef PD_INLINE
};

void forward_scalar(const PdPair* const* lanes, int count, double* sums) {
    for (int l = 0; l < count; ++l) sums[l] = pd_sum_scalar(*lanes[l]);
}

// One instance per instruction set; the vector code is always_inline, so
// each is compiled for its own target.
#define PYPHMM_DEFINE_PD_FORWARD(suffix, bytes, target_attr)                                    \
    target_attr void pd_forward_##suffix(const PdPair* const* lanes, int count, double* sums) { \
        static thread_local PdKernel<double, bytes>::Scratch scratch;                           \
        PdKernel<double, bytes>::forward(lanes, count, sums, scratch);                          \
    }

#if defined(__x86_64__) || defined(__i386__)
PYPHMM_DEFINE_PD_FORWARD(avx512, 64, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))))
PYPHMM_DEFINE_PD_FORWARD(avx2, 32, __attribute__((target("avx2,fma"))))
#elif defined(__aarch64__)
// Advanced SIMD is in the AArch64 baseline: GCC's 16-byte vectors are NEON.
PYPHMM_DEFINE_PD_FORWARD(neon, 16, )
#endif
PYPHMM_DEFINE_PD_FORWARD(portable, 16, )

}  // namespace

const PdKernelChoice& pd_kernel_choice() {
    static const PdKernelChoice choice = [] {
        const PdKernelChoice scalar{"scalar", 1, forward_scalar};
        const PdKernelChoice portable{"portable", 2, pd_forward_portable};
        PdKernelChoice candidates[2]{};  // this architecture's kernels, best first
        bool usable[2] = {false, false};
        int count = 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        candidates[count] = PdKernelChoice{"avx512", 8, pd_forward_avx512};
        usable[count++] = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
        candidates[count] = PdKernelChoice{"avx2", 4, pd_forward_avx2};
        usable[count++] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(__aarch64__)
        candidates[count] = PdKernelChoice{"neon", 2, pd_forward_neon};
        usable[count++] = cpu_has_neon();
#endif
        PdKernelChoice best = portable;
        for (int k = count - 1; k >= 0; --k)
            if (usable[k]) best = candidates[k];
        const std::string wanted = config::get_string(config::Knob::kCpuKernel);
        const char* want = wanted.c_str();
        if (!*want) return best;
        if (!std::strcmp(want, "portable")) return portable;
        if (!std::strcmp(want, "scalar")) return scalar;
        for (int k = 0; k < count; ++k)
            if (usable[k] && !std::strcmp(want, candidates[k].name)) return candidates[k];
        std::fprintf(stderr, "pyphmm: warning: PYPHMM_DEV's cpu_kernel=%s is not available here; using %s\n", want,
                     best.name);
        return best;
    }();
    return choice;
}

}  // namespace cpu
}  // namespace pyphmm
