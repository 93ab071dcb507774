// CPU PairHMM kernels: GATK's forward algorithm with GKL's precision
// contract, one pair per SIMD lane (the driver, pairhmm_cpu.cc, forms the
// groups of lanes).
//
// Within a group the matrix is swept row by row (read position i), column by
// column (haplotype position j); every arithmetic operation acts on all W
// lanes, so each lane is computed exactly as a scalar would compute its own
// pair. A pair on its own runs the stripe kernel (forward_one): W read rows
// at a time, one lane per row, the lanes a wavefront apart.
//
// Recurrence (docs/ALGORITHM.md), per lane:
//   M[i][j] = e(i,j) * ((mm_i*M[i-1][j-1] + gm_i*X[i-1][j-1]) + gm_i*Y[i-1][j-1])
//   X[i][j] = mx_i*M[i-1][j] + xx_i*X[i-1][j]
//   Y[i][j] = my_i*M[i][j-1] + yy_i*Y[i][j-1]
//   row 0: M = X = 0, Y = INITIAL_CONSTANT / n;  column 0 (rows >= 1): 0
//   result = log10(sum_j M[m][j] + sum_j X[m][j]) - log10(INITIAL_CONSTANT)
// The operation order above is GKL's; the build disables FMA contraction so
// the float path rounds like GKL's AVX code does.
#include "pairhmm_cpu_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../common/config.h"
#include "../common/tables.h"
#include "cpu_arch.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace pyphmm {
namespace cpu {

namespace {

template <typename T>
const PairhmmTables<T>& tables();
template <>
const PairhmmTables<float>& tables<float>() {
    return tables_float();
}
template <>
const PairhmmTables<double>& tables<double>() {
    return tables_double();
}

template <typename T>
struct IntOf;
template <>
struct IntOf<float> {
    typedef int32_t type;
};
template <>
struct IntOf<double> {
    typedef int64_t type;
};

// How a kernel instance forms its lane primitives (match mask, select, lane
// shift) and sweeps its rows. kGeneric: portable GCC vector code, what the
// x86 instances and the portable path compile. kNeon (AArch64): NEON's own
// instructions for the primitives (CMTST, BSL, DUP + EXT) and two rows per
// sweep (sweep_row_pair). Both compute every cell with the same operations
// in the same order, so their results are bit-identical.
enum class Isa { kGeneric, kNeon };

#if defined(__aarch64__)
// The NEON primitives for 4 floats / 2 doubles (GCC's 16-byte vector types
// convert to and from NEON's without a cast).
namespace neon {
typedef int32_t i32v __attribute__((vector_size(16)));
typedef int64_t i64v __attribute__((vector_size(16)));
__attribute__((always_inline)) inline float32x4_t select(i32v m, float32x4_t a, float32x4_t b) {
    return vbslq_f32(vreinterpretq_u32_s32(m), a, b);
}
__attribute__((always_inline)) inline float64x2_t select(i64v m, float64x2_t a, float64x2_t b) {
    return vbslq_f64(vreinterpretq_u64_s64(m), a, b);
}
__attribute__((always_inline)) inline i32v any_shared(i32v a, i32v b) { return vreinterpretq_s32_u32(vtstq_s32(a, b)); }
__attribute__((always_inline)) inline i64v any_shared(i64v a, i64v b) { return vreinterpretq_s64_u64(vtstq_s64(a, b)); }
// Lane 0 takes `in`, lane l takes prev[l - 1].
__attribute__((always_inline)) inline float32x4_t shift_in(float32x4_t prev, float in) {
    return vextq_f32(vdupq_n_f32(in), prev, 3);
}
__attribute__((always_inline)) inline float64x2_t shift_in(float64x2_t prev, double in) {
    return vextq_f64(vdupq_n_f64(in), prev, 1);
}
__attribute__((always_inline)) inline i32v shift_in(i32v prev, int32_t in) {
    return vextq_s32(vdupq_n_s32(in), prev, 3);
}
__attribute__((always_inline)) inline i64v shift_in(i64v prev, int64_t in) {
    return vextq_s64(vdupq_n_s64(in), prev, 1);
}
}  // namespace neon
#endif

// Kernel for one precision and vector width (VB bytes: 64 for AVX-512, 32 for
// AVX2, 16 for NEON and the portable path; wider than the registers spills).
// All vector code is always_inline so each ISA instance below compiles it
// for its own target.
template <typename T, int VB, Isa kIsa = Isa::kGeneric>
struct Kernel {
    static constexpr int W = VB / sizeof(T);
    typedef T vec __attribute__((vector_size(VB), aligned(VB)));
    typedef typename IntOf<T>::type I;
    typedef I ivec __attribute__((vector_size(VB), aligned(VB)));

    // Per-row parameters of a group, one lane per pair.
    struct Row {
        vec mm, gm, mx, xx, my, yy, e_match, e_mismatch;
        ivec base_bits;  // read base as a one-hot bit (N: all five bits)
    };

    // Vector typedefs lose their attribute as template arguments, so
    // containers hold them wrapped.
    struct V {
        vec v;
    };
    struct IV {
        ivec v;
    };

    struct Scratch {
        std::vector<Row> rows;
        std::vector<IV> hap;     // haplotype bases as one-hot bits, one lane per pair
        std::vector<V> M, X, Y;  // one row of the matrices, columns 0..n_max
        // forward_one: the last row of the previous stripe, and haplotype bits
        std::vector<T> edge_m, edge_x, edge_y;
        std::vector<I> hap_bits;
    };

#define PYPHMM_INLINE __attribute__((always_inline)) static inline
    PYPHMM_INLINE ivec isplat(I v) { return ivec{} + v; }
    // Bitwise blend: lanes where mask is all ones take a, the others b. (The
    // casts reinterpret bits; vectors of equal size convert this way.)
    PYPHMM_INLINE vec select(ivec mask, vec a, vec b) {
#if defined(__aarch64__)
        if constexpr (kIsa == Isa::kNeon) return neon::select(mask, a, b);
#endif
        return (vec)((mask & (ivec)a) | (~mask & (ivec)b));
    }

    // Bases as one-hot bits, N as all five, so "bases match" (N matching
    // anything) is a single AND; see match_mask.
    PYPHMM_INLINE I base_bits(uint8_t ascii) {
        uint8_t c = base_code(ascii);
        return c == kBaseN ? I(0x1f) : I(1) << c;
    }

    // All ones in lanes whose bases match, zero elsewhere. Built from AND,
    // add, shift and negate because vector compares producing -1/0 lanes are
    // not native on AVX-512F and GCC would scalarise them; NEON has the
    // whole test as one instruction (CMTST).
    PYPHMM_INLINE ivec match_mask(ivec hap_bits, ivec read_bits) {
#if defined(__aarch64__)
        if constexpr (kIsa == Isa::kNeon) return neon::any_shared(hap_bits, read_bits);
#endif
        ivec any = ((hap_bits & read_bits) + I(0x1f)) >> 5;  // 1 if any bit is shared, else 0
        return ivec{} - any;
    }

    // Fills per-row parameters and haplotype codes for lanes[0..count);
    // missing lanes repeat the last pair so padding computes harmless values.
    PYPHMM_INLINE void prepare(const Pair* const* lanes, int count, int m_max, int n_max, Scratch& s) {
        const PairhmmTables<T>& t = table();
        s.rows.resize(m_max + 1);
        s.hap.resize(n_max + 1);
        for (int l = 0; l < W; ++l) {
            const Pair& p = *lanes[std::min(l, count - 1)];
            for (int i = 1; i <= m_max; ++i) {
                int r = std::min(i, p.m) - 1;  // rows past the read repeat its last row
                int q = p.quals[r] & kQualMask, ins = p.ins[r] & kQualMask;
                int del = p.dels[r] & kQualMask, c = p.gcp[r] & kQualMask;
                Row& row = s.rows[i];
                const RowTransitions<T> tr = row_transitions<T>(t, ins, del, c);
                row.mm[l] = tr.mm;
                row.gm[l] = tr.gm;
                row.mx[l] = tr.mx;
                row.xx[l] = tr.cc;
                row.my[l] = tr.my;
                row.yy[l] = tr.cc;
                T err = t.ph2pr[q];
                row.e_match[l] = T(1) - err;
                row.e_mismatch[l] = err / T(3);
                row.base_bits[l] = base_bits(p.read[r]);
            }
            for (int j = 1; j <= n_max; ++j) s.hap[j].v[l] = base_bits(p.hap[std::min(j, p.n) - 1]);
        }
    }

    // Sums of the last row over the real columns of the lanes whose read ends
    // at row i, accumulated column by column as GKL does.
    PYPHMM_INLINE void collect(int i, const ivec& read_len, const ivec& hap_len, int n_max, Scratch& s, vec& sum_m,
                               vec& sum_x) {
        ivec ends_here = read_len == isplat(i);
        for (int j = 1; j <= n_max; ++j) {
            ivec keep = ends_here & (hap_len >= isplat(j));
            sum_m += select(keep, s.M[j].v, vec{});
            sum_x += select(keep, s.X[j].v, vec{});
        }
    }

    // The forward algorithm for up to W pairs; writes the raw (scaled) sums.
    PYPHMM_INLINE void forward(const Pair* const* lanes, int count, T* sums, Scratch& s) {
        int m_max = 0, n_max = 0;
        ivec read_len{}, hap_len{};
        vec init_y{};
        const T ic = table().initial_constant;
        for (int l = 0; l < W; ++l) {
            const Pair& p = *lanes[std::min(l, count - 1)];
            m_max = std::max(m_max, p.m);
            n_max = std::max(n_max, p.n);
            read_len[l] = p.m;
            hap_len[l] = p.n;
            init_y[l] = ic / static_cast<T>(p.n);
        }
        prepare(lanes, count, m_max, n_max, s);
        s.M.assign(n_max + 1, V{vec{}});
        s.X.assign(n_max + 1, V{vec{}});
        s.Y.assign(n_max + 1, V{init_y});
        vec sum_m{}, sum_x{};
        for (int i = 1; i <= m_max; ++i) {
            if constexpr (kIsa == Isa::kNeon) {
                // Rows i and i + 1 together, unless a lane's read ends at
                // row i: its sums need row i, which the pair overwrites.
                if (i < m_max && !ends_at(read_len, i)) {
                    sweep_row_pair(s.rows[i], s.rows[i + 1], n_max, s);
                    ++i;
                } else {
                    sweep_row(s.rows[i], n_max, s);
                }
                if (ends_at(read_len, i)) collect(i, read_len, hap_len, n_max, s, sum_m, sum_x);
            } else {
                sweep_row(s.rows[i], n_max, s);
                if (ends_at(read_len, i)) collect(i, read_len, hap_len, n_max, s, sum_m, sum_x);
            }
        }
        vec total = sum_m + sum_x;
        for (int l = 0; l < count; ++l) sums[l] = total[l];
    }

    PYPHMM_INLINE bool ends_at(const ivec& read_len, int i) {
        for (int l = 0; l < W; ++l)
            if (read_len[l] == i) return true;
        return false;
    }

    // One cell of row r, in GKL's operation order: both sweeps compute every
    // cell through this, so they round alike.
    struct Cell {
        vec m, x, y;
    };
    PYPHMM_INLINE Cell cell(const Row& r, ivec hap, vec m_diag, vec x_diag, vec y_diag, vec m_up, vec x_up, vec m_left,
                            vec y_left) {
        const vec e = select(match_mask(hap, r.base_bits), r.e_match, r.e_mismatch);
        return {e * ((r.mm * m_diag + r.gm * x_diag) + r.gm * y_diag), r.mx * m_up + r.xx * x_up,
                r.my * m_left + r.yy * y_left};
    }

    // One row: s.M/X/Y hold row i - 1 on entry and row i on return.
    PYPHMM_INLINE void sweep_row(const Row& r, int n_max, Scratch& s) {
        vec m_diag = s.M[0].v, x_diag = s.X[0].v, y_diag = s.Y[0].v;
        s.M[0].v = s.X[0].v = s.Y[0].v = vec{};
        vec m_left{}, y_left{};
        for (int j = 1; j <= n_max; ++j) {
            vec m_up = s.M[j].v, x_up = s.X[j].v, y_up = s.Y[j].v;
            const Cell c = cell(r, s.hap[j].v, m_diag, x_diag, y_diag, m_up, x_up, m_left, y_left);
            s.M[j].v = c.m;
            s.X[j].v = c.x;
            s.Y[j].v = c.y;
            m_diag = m_up;
            x_diag = x_up;
            y_diag = y_up;
            m_left = c.m;
            y_left = c.y;
        }
    }

    // Rows i (a) and i + 1 (b) in one sweep: s.M/X/Y hold row i - 1 on entry
    // and row i + 1 on return. Cell (i + 1, j) is computed right after
    // (i, j) from registers. A row's only serial chain is Y's (a multiply
    // and an add per column); a step here carries two independent ones,
    // which a core with four vector pipes (Neoverse V1/V2) overlaps, and the
    // matrices are read and written once per two rows instead of every row.
    PYPHMM_INLINE void sweep_row_pair(const Row& a, const Row& b, int n_max, Scratch& s) {
        vec am_diag = s.M[0].v, ax_diag = s.X[0].v, ay_diag = s.Y[0].v;  // row i - 1, column 0
        vec bm_diag{}, bx_diag{}, by_diag{};                             // row i, column 0
        s.M[0].v = s.X[0].v = s.Y[0].v = vec{};
        vec am_left{}, ay_left{}, bm_left{}, by_left{};
        for (int j = 1; j <= n_max; ++j) {
            const ivec hap = s.hap[j].v;
            vec m_up = s.M[j].v, x_up = s.X[j].v, y_up = s.Y[j].v;
            const Cell ca = cell(a, hap, am_diag, ax_diag, ay_diag, m_up, x_up, am_left, ay_left);
            const Cell cb = cell(b, hap, bm_diag, bx_diag, by_diag, ca.m, ca.x, bm_left, by_left);
            s.M[j].v = cb.m;
            s.X[j].v = cb.x;
            s.Y[j].v = cb.y;
            am_diag = m_up;
            ax_diag = x_up;
            ay_diag = y_up;
            am_left = ca.m;
            ay_left = ca.y;
            bm_diag = ca.m;
            bx_diag = ca.x;
            by_diag = ca.y;
            bm_left = cb.m;
            by_left = cb.y;
        }
    }

    // Lane l takes prev[l-1]; lane 0 takes `in` (a one-lane shift along rows).
    PYPHMM_INLINE vec shift_in(vec prev, T in) {
#if defined(__aarch64__)
        if constexpr (kIsa == Isa::kNeon) return neon::shift_in(prev, in);
#endif
        return __builtin_shuffle(prev, vec{} + in, shift_mask());
    }
    PYPHMM_INLINE ivec shift_in(ivec prev, I in) {
#if defined(__aarch64__)
        if constexpr (kIsa == Isa::kNeon) return neon::shift_in(prev, in);
#endif
        return __builtin_shuffle(prev, ivec{} + in, shift_mask());
    }
    PYPHMM_INLINE ivec shift_mask() {
        ivec mask;
        mask[0] = W;  // first element of the second operand
        for (int l = 1; l < W; ++l) mask[l] = l - 1;
        return mask;
    }

    // One pair with its W lanes spread over W consecutive read rows (a
    // stripe), as GKL does: at step t lane l computes row i0+l, column t-l,
    // so every lane's inputs are its own previous step (left) or its upper
    // neighbour's previous two steps (up, diagonal), moved down one lane by
    // shift_in; the stripe's first row takes them from the previous stripe's
    // last row (edge_*). Used for pairs that would leave a lane-per-pair
    // group mostly empty: small GATK regions are latency-bound on them.
    // Arithmetic and summation order are those of forward(), so results are
    // identical whichever kernel a pair runs on.
    PYPHMM_INLINE T forward_one(const Pair& p, Scratch& s) {
        const PairhmmTables<T>& tb = table();
        const int m = p.m, n = p.n;
        s.edge_m.assign(n + 1, T(0));
        s.edge_x.assign(n + 1, T(0));
        s.edge_y.assign(n + 1, tb.initial_constant / static_cast<T>(n));  // row 0
        s.hap_bits.resize(n + W + 1);
        for (int j = 1; j <= n; ++j) s.hap_bits[j] = base_bits(p.hap[j - 1]);
        for (int j = n + 1; j <= n + W; ++j) s.hap_bits[j] = 0;
        ivec lane;
        for (int l = 0; l < W; ++l) lane[l] = l;
        vec sum_m{}, sum_x{};
        for (int i0 = 0; i0 < m; i0 += W) {
            vec mm, gm, mx, xx, my, yy, em, ex;
            ivec rbits;
            for (int l = 0; l < W; ++l) {
                int r = std::min(i0 + l, m - 1);  // rows past the read repeat its last row
                int q = p.quals[r] & kQualMask, ins = p.ins[r] & kQualMask;
                int del = p.dels[r] & kQualMask, c = p.gcp[r] & kQualMask;
                const RowTransitions<T> tr = row_transitions<T>(tb, ins, del, c);
                mm[l] = tr.mm;
                gm[l] = tr.gm;
                mx[l] = tr.mx;
                xx[l] = tr.cc;
                my[l] = tr.my;
                yy[l] = tr.cc;
                T err = tb.ph2pr[q];
                em[l] = T(1) - err;
                ex[l] = err / T(3);
                rbits[l] = base_bits(p.read[r]);
            }
            const bool last_stripe = i0 + W >= m;
            const ivec last_row = lane == isplat(m - 1 - i0);  // the lane holding row m
            vec m_prev{}, x_prev{}, y_prev{};
            vec m_up = shift_in(vec{}, s.edge_m[0]), x_up = shift_in(vec{}, s.edge_x[0]);
            vec y_up = shift_in(vec{}, s.edge_y[0]);
            ivec hap{};
            for (int t = 1; t <= n + W - 1; ++t) {
                const bool in_hap = t <= n;
                vec m_diag = m_up, x_diag = x_up, y_diag = y_up;
                m_up = shift_in(m_prev, in_hap ? s.edge_m[t] : T(0));
                x_up = shift_in(x_prev, in_hap ? s.edge_x[t] : T(0));
                y_up = shift_in(y_prev, in_hap ? s.edge_y[t] : T(0));
                hap = shift_in(hap, s.hap_bits[t]);
                vec e = select(match_mask(hap, rbits), em, ex);
                vec m_new = e * ((mm * m_diag + gm * x_diag) + gm * y_diag);
                vec x_new = mx * m_up + xx * x_up;
                vec y_new = my * m_prev + yy * y_prev;
                if (t < W || t > n) {
                    // Filling or draining: lanes outside columns 1..n hold
                    // column-0 zeros (or values nobody reads).
                    ivec col = isplat(t) - lane;
                    ivec inside = (col >= isplat(1)) & (col <= isplat(n));
                    m_new = select(inside, m_new, vec{});
                    x_new = select(inside, x_new, vec{});
                    y_new = select(inside, y_new, vec{});
                }
                if (last_stripe) {
                    sum_m += select(last_row, m_new, vec{});
                    sum_x += select(last_row, x_new, vec{});
                } else {
                    int j = t - (W - 1);  // column of the stripe's last row
                    if (j >= 0) {
                        s.edge_m[j] = m_new[W - 1];
                        s.edge_x[j] = x_new[W - 1];
                        s.edge_y[j] = y_new[W - 1];
                    }
                }
                m_prev = m_new;
                x_prev = x_new;
                y_prev = y_new;
            }
        }
        vec total = sum_m + sum_x;
        return total[(m - 1) % W];
    }

    static const PairhmmTables<T>& table() { return tables<T>(); }
};

// One instance of the kernels per instruction set. The vector code above is
// always_inline, so each instance is compiled for its own target.

#define PYPHMM_DEFINE_FORWARD(suffix, bytes, isa, target_attr)                                    \
    target_attr void forward_float_##suffix(const Pair* const* lanes, int count, float* sums) {   \
        static thread_local Kernel<float, bytes, isa>::Scratch scratch;                           \
        Kernel<float, bytes, isa>::forward(lanes, count, sums, scratch);                          \
    }                                                                                             \
    target_attr void forward_double_##suffix(const Pair* const* lanes, int count, double* sums) { \
        static thread_local Kernel<double, bytes, isa>::Scratch scratch;                          \
        Kernel<double, bytes, isa>::forward(lanes, count, sums, scratch);                         \
    }                                                                                             \
    target_attr float forward_one_float_##suffix(const Pair& p) {                                 \
        static thread_local Kernel<float, bytes, isa>::Scratch scratch;                           \
        return Kernel<float, bytes, isa>::forward_one(p, scratch);                                \
    }                                                                                             \
    target_attr double forward_one_double_##suffix(const Pair& p) {                               \
        static thread_local Kernel<double, bytes, isa>::Scratch scratch;                          \
        return Kernel<double, bytes, isa>::forward_one(p, scratch);                               \
    }

#if defined(__x86_64__) || defined(__i386__)
PYPHMM_DEFINE_FORWARD(avx512, 64, Isa::kGeneric, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))))
PYPHMM_DEFINE_FORWARD(avx2, 32, Isa::kGeneric, __attribute__((target("avx2,fma"))))
#elif defined(__aarch64__)
// Advanced SIMD is in the AArch64 baseline, so this needs no target attribute.
PYPHMM_DEFINE_FORWARD(neon, 16, Isa::kNeon, )
#endif
// The baseline target's 16-byte vectors: SSE2 on x86-64, Advanced SIMD on
// AArch64 (GCC's generic vector code, no ISA-specific primitives).
PYPHMM_DEFINE_FORWARD(portable, 16, Isa::kGeneric, )

}  // namespace

const KernelChoice& kernel_choice() {
    static const KernelChoice choice = [] {
#define PYPHMM_CHOICE(name, bytes)                                                                                     \
    KernelChoice {                                                                                                     \
#name, bytes, forward_float_##name, forward_double_##name, forward_one_float_##name, forward_one_double_##name \
    }
        const KernelChoice portable = PYPHMM_CHOICE(portable, 16);
        KernelChoice candidates[2]{};  // this architecture's kernels, best first
        bool usable[2] = {false, false};
        int count = 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        candidates[count] = PYPHMM_CHOICE(avx512, 64);
        usable[count++] = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
        candidates[count] = PYPHMM_CHOICE(avx2, 32);
        usable[count++] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(__aarch64__)
        candidates[count] = PYPHMM_CHOICE(neon, 16);
        usable[count++] = cpu_has_neon();
#endif
#undef PYPHMM_CHOICE
        KernelChoice best = portable;
        for (int k = count - 1; k >= 0; --k)
            if (usable[k]) best = candidates[k];
        const std::string wanted = config::get_string(config::Knob::kCpuKernel);
        const char* want = wanted.c_str();
        if (!*want) return best;
        if (!std::strcmp(want, "portable")) return portable;
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
