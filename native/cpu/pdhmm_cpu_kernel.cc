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
        std::vector<IV> bits;       // haplotype bits per column
        std::vector<uint8_t> kind;  // per column: 1 = general (masks at masks[index[j]])
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
            for (int j = 1; j <= p.n; ++j) {
                const uint8_t y = p.hap[j - 1];
                s.bits[j].v[l] = ident.bit(y) | kEveryColumn | (y == 'N' ? kEveryRead : 0) | snp_bits(p.pd[j - 1]);
            }
        }
        mark_general(lanes, count, n_max, s);
        return true;
    }

    // The deletion state of each lane's columns for both row kinds, and the
    // masks of the columns where some lane is not plainly NORMAL.
    PD_INLINE void mark_general(const PdPair* const* lanes, int count, int n_max, Scratch& s) {
        static thread_local std::vector<uint8_t> states;  // per lane, column: kind-0 state | kind-1 state << 2
        states.assign(static_cast<size_t>(W) * (n_max + 1), 0);
        for (int l = 0; l < W; ++l) {
            const PdPair& p = *lanes[std::min(l, count - 1)];
            DelState first = kNormal;
            for (int j = 1; j <= p.n; ++j) first = next_state(first, p.pd[j - 1]);
            DelState a = kNormal, b = p.n > 0 ? first : kNormal;  // rows 2.. start where row 1 ended
            for (int j = 1; j <= p.n; ++j) {
                const uint8_t pd = p.pd[j - 1];
                states[l * (n_max + 1) + j] = static_cast<uint8_t>(a | b << 2);
                if (a != kNormal || b != kNormal || (pd & kPdDelEnd)) s.kind[j] = 1;
                a = next_state(a, pd);
                b = next_state(b, pd);
            }
        }
        for (int j = 1; j <= n_max; ++j) {
            if (!s.kind[j]) continue;
            Masks mk{};
            for (int l = 0; l < W; ++l) {
                const PdPair& p = *lanes[std::min(l, count - 1)];
                if (j > p.n) continue;
                const uint8_t st = states[l * (n_max + 1) + j];
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

    // One row: s.cells / s.branch hold row i - 1 on entry and row i on return
    // (branch values at general columns only).
    PD_INLINE void sweep_row(const Row& r, int kind, vec y_corner, int n_max, Scratch& s) {
        vec m_left{}, x_left{}, y_left{}, bm_left{}, bx_left{}, by_left{};
        vec m_diag{}, x_diag{}, y_diag = y_corner, bm_diag{}, bx_diag{}, by_diag{};
        Cells* cells = s.cells.data();
        for (int j = 1; j <= n_max; ++j) {
            const Cells top = cells[j];
            const vec e = select(mismatch_mask(s.bits[j].v, r.bits), r.p_mismatch, r.p_match);
            Cells c;
            if (!s.kind[j]) {
                // NORMAL in every lane: the branch values are the left ones.
                c.m = e * ((m_diag * r.mm + x_diag * r.gap_to_match) + y_diag * r.gap_to_match);
                c.y = m_left * r.to_del + y_left * r.cont;
                c.x = top.m * r.to_ins + top.x * r.cont;
                bm_left = m_left, bx_left = x_left, by_left = y_left;
            } else {
                const Masks& mk = s.masks[s.index[j]];
                const ivec inside = mk.inside[kind], after = mk.after[kind], branching = inside | after;
                const Cells b_top = s.branch[j];
                Cells b;
                b.m = vmax(keep(bm_left, branching), drop(m_left, inside));
                b.x = vmax(keep(bx_left, branching), drop(x_left, inside));
                b.y = vmax(keep(by_left, branching), drop(y_left, inside));
                const vec md = vmax(m_diag, keep(bm_diag, after)), xd = vmax(x_diag, keep(bx_diag, after));
                const vec yd = vmax(y_diag, keep(by_diag, after));
                const vec ml = vmax(m_left, keep(bm_left, after)), yl = vmax(y_left, keep(by_left, after));
                c.m = e * ((md * r.mm + xd * r.gap_to_match) + yd * r.gap_to_match);
                c.y = ml * r.to_del + yl * r.cont;
                c.x =
                    vmax(keep(b_top.m, mk.del_end), top.m) * r.to_ins + vmax(keep(b_top.x, mk.del_end), top.x) * r.cont;
                s.branch[j] = b;
                bm_diag = b_top.m, bx_diag = b_top.x, by_diag = b_top.y;
                bm_left = b.m, bx_left = b.x, by_left = b.y;
            }
            cells[j] = c;
            m_diag = top.m, x_diag = top.x, y_diag = top.y;
            m_left = c.m, x_left = c.x, y_left = c.y;
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
            sweep_row(s.rows[i], i == 1 ? 0 : 1, i == 1 ? y_init : vec{}, n_max, s);
            bool ends = false;
            for (int l = 0; l < W; ++l) ends |= read_len[l] == i;
            if (ends) collect(read_len == i, hap_len, n_max, s, sum);
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
