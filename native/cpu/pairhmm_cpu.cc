// CPU PairHMM: GATK's forward algorithm with GKL's precision contract.
//
// Layout of the work: every (read, haplotype) pair of every region is one
// SIMD lane. Pairs are sorted by (read length, haplotype length) and cut into
// groups of W lanes (W = vector bytes / sizeof(T): 16 floats on AVX-512, 8 on
// AVX2, 4 portable; half as many doubles), so a
// group's lanes have nearly equal shapes and little padding. Within a group
// the matrix is swept row by row (read position i), column by column
// (haplotype position j); every arithmetic operation acts on all W lanes, so
// each lane is computed exactly as a scalar would compute its own pair.
//
// Recurrence (SPEC section 1), per lane:
//   M[i][j] = e(i,j) * ((mm_i*M[i-1][j-1] + gm_i*X[i-1][j-1]) + gm_i*Y[i-1][j-1])
//   X[i][j] = mx_i*M[i-1][j] + xx_i*X[i-1][j]
//   Y[i][j] = my_i*M[i][j-1] + yy_i*Y[i][j-1]
//   row 0: M = X = 0, Y = INITIAL_CONSTANT / n;  column 0 (rows >= 1): 0
//   result = log10(sum_j M[m][j] + sum_j X[m][j]) - log10(INITIAL_CONSTANT)
// The operation order above is GKL's; the build disables FMA contraction so
// the float path rounds like GKL's AVX code does.
//
// Precision: float first; a pair whose float sum is below 1e-28 is
// recomputed in double (INITIAL_CONSTANT 2^1020), as GKL does. Flush-to-zero
// is on while kernels run (GKL runs with FTZ too, and denormals would make
// underflowing pairs a hundred times slower).
#include "pairhmm_cpu.h"

#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../common/tables.h"
#include "../common/thread_pool.h"

namespace pyphmm {

namespace {

// One read x haplotype pair, pointing into the caller's packed buffers.
struct Pair {
    const uint8_t* read;   // bases; quals, ins, dels, gcp at the same offset
    const uint8_t* quals;
    const uint8_t* ins;
    const uint8_t* dels;
    const uint8_t* gcp;
    const uint8_t* hap;
    int32_t m;             // read length
    int32_t n;             // haplotype length
    int64_t out;           // index into the caller's output array
};

template <typename T> const PairhmmTables<T>& tables();
template <> const PairhmmTables<float>& tables<float>() { return tables_float(); }
template <> const PairhmmTables<double>& tables<double>() { return tables_double(); }

template <typename T> struct IntOf;
template <> struct IntOf<float> { typedef int32_t type; };
template <> struct IntOf<double> { typedef int64_t type; };

constexpr int kMaxLanes = 16;

// Kernel for one precision and vector width (VB bytes: 64 for AVX-512, 32 for
// AVX2, 16 for the portable SSE2 path; wider than the registers spills). All
// vector code is always_inline so each ISA instance below compiles it for
// its own target.
template <typename T, int VB>
struct Kernel {
    static constexpr int W = VB / sizeof(T);
    typedef T vec __attribute__((vector_size(VB), aligned(VB)));
    typedef typename IntOf<T>::type I;
    typedef I ivec __attribute__((vector_size(VB), aligned(VB)));

    // Per-row parameters of a group, one lane per pair.
    struct Row {
        vec mm, gm, mx, xx, my, yy, e_match, e_mismatch;
        ivec base_bits;     // read base as a one-hot bit (N: all five bits)
    };

    // Vector typedefs lose their attribute as template arguments, so
    // containers hold them wrapped.
    struct V { vec v; };
    struct IV { ivec v; };

    struct Scratch {
        std::vector<Row> rows;
        std::vector<IV> hap;        // haplotype bases as one-hot bits, one lane per pair
        std::vector<V> M, X, Y;     // one row of the matrices, columns 0..n_max
    };

#define PYPHMM_INLINE __attribute__((always_inline)) static inline
    PYPHMM_INLINE ivec isplat(I v) { return ivec{} + v; }
    // Bitwise blend: lanes where mask is all ones take a, the others b. (The
    // casts reinterpret bits; vectors of equal size convert this way.)
    PYPHMM_INLINE vec select(ivec mask, vec a, vec b) {
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
    // not native on AVX-512F and GCC would scalarise them.
    PYPHMM_INLINE ivec match_mask(ivec hap_bits, ivec read_bits) {
        ivec any = ((hap_bits & read_bits) + I(0x1f)) >> 5;   // 1 if any bit is shared, else 0
        return ivec{} - any;
    }

    // Fills per-row parameters and haplotype codes for lanes[0..count);
    // missing lanes repeat the last pair so padding computes harmless values.
    PYPHMM_INLINE void prepare(const Pair* const* lanes, int count,
                                                              int m_max, int n_max, Scratch& s) {
        const PairhmmTables<T>& t = table();
        s.rows.resize(m_max + 1);
        s.hap.resize(n_max + 1);
        for (int l = 0; l < W; ++l) {
            const Pair& p = *lanes[std::min(l, count - 1)];
            for (int i = 1; i <= m_max; ++i) {
                int r = std::min(i, p.m) - 1;   // rows past the read repeat its last row
                int q = p.quals[r] & kQualMask, ins = p.ins[r] & kQualMask;
                int del = p.dels[r] & kQualMask, c = p.gcp[r] & kQualMask;
                Row& row = s.rows[i];
                row.mm[l] = t.match_to_match[mm_index(ins, del)];
                row.gm[l] = T(1) - t.ph2pr[c];
                row.mx[l] = t.ph2pr[ins];
                row.xx[l] = t.ph2pr[c];
                row.my[l] = t.ph2pr[del];
                row.yy[l] = t.ph2pr[c];
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
    PYPHMM_INLINE void collect(int i, const ivec& read_len,
                                                              const ivec& hap_len, int n_max,
                                                              Scratch& s, vec& sum_m, vec& sum_x) {
        ivec ends_here = read_len == isplat(i);
        for (int j = 1; j <= n_max; ++j) {
            ivec keep = ends_here & (hap_len >= isplat(j));
            sum_m += select(keep, s.M[j].v, vec{});
            sum_x += select(keep, s.X[j].v, vec{});
        }
    }

    // The forward algorithm for up to W pairs; writes the raw (scaled) sums.
    PYPHMM_INLINE void forward(const Pair* const* lanes, int count,
                                                              T* sums, Scratch& s) {
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
            const Row& r = s.rows[i];
            vec m_diag = s.M[0].v, x_diag = s.X[0].v, y_diag = s.Y[0].v;
            s.M[0].v = s.X[0].v = s.Y[0].v = vec{};
            vec m_left{}, y_left{};
            for (int j = 1; j <= n_max; ++j) {
                vec e = select(match_mask(s.hap[j].v, r.base_bits), r.e_match, r.e_mismatch);
                vec m_up = s.M[j].v, x_up = s.X[j].v, y_up = s.Y[j].v;
                vec m_new = e * ((r.mm * m_diag + r.gm * x_diag) + r.gm * y_diag);
                vec x_new = r.mx * m_up + r.xx * x_up;
                vec y_new = r.my * m_left + r.yy * y_left;
                s.M[j].v = m_new;
                s.X[j].v = x_new;
                s.Y[j].v = y_new;
                m_diag = m_up;
                x_diag = x_up;
                y_diag = y_up;
                m_left = m_new;
                y_left = y_new;
            }
            for (int l = 0; l < W; ++l)
                if (read_len[l] == i) {
                    collect(i, read_len, hap_len, n_max, s, sum_m, sum_x);
                    break;
                }
        }
        vec total = sum_m + sum_x;
        for (int l = 0; l < count; ++l) sums[l] = total[l];
    }

    static const PairhmmTables<T>& table() { return tables<T>(); }
};

// One instance of the kernels per instruction set. The vector code above is
// always_inline, so each instance is compiled for its own target.
typedef void (*ForwardFloat)(const Pair* const*, int, float*);
typedef void (*ForwardDouble)(const Pair* const*, int, double*);

#define PYPHMM_DEFINE_FORWARD(suffix, bytes, target_attr)                                   \
    target_attr void forward_float_##suffix(const Pair* const* lanes, int count, float* sums) { \
        static thread_local Kernel<float, bytes>::Scratch scratch;                           \
        Kernel<float, bytes>::forward(lanes, count, sums, scratch);                          \
    }                                                                                        \
    target_attr void forward_double_##suffix(const Pair* const* lanes, int count, double* sums) { \
        static thread_local Kernel<double, bytes>::Scratch scratch;                          \
        Kernel<double, bytes>::forward(lanes, count, sums, scratch);                         \
    }

PYPHMM_DEFINE_FORWARD(avx512, 64, __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))))
PYPHMM_DEFINE_FORWARD(avx2, 32, __attribute__((target("avx2,fma"))))
PYPHMM_DEFINE_FORWARD(portable, 16, )

struct KernelChoice {
    const char* name;
    int vector_bytes;   // lanes per group: vector_bytes / sizeof(T)
    ForwardFloat f;
    ForwardDouble d;
};

// The best kernel this CPU runs, or the one PYPHMM_CPU_KERNEL names (for
// tests and comparisons; a kernel the CPU cannot run is refused with a note).
const KernelChoice& kernel_choice() {
    static const KernelChoice choice = [] {
        const KernelChoice avx512{"avx512", 64, forward_float_avx512, forward_double_avx512};
        const KernelChoice avx2{"avx2", 32, forward_float_avx2, forward_double_avx2};
        const KernelChoice portable{"portable", 16, forward_float_portable, forward_double_portable};
        __builtin_cpu_init();
        bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
        bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        KernelChoice best = has512 ? avx512 : has2 ? avx2 : portable;
        const char* want = std::getenv("PYPHMM_CPU_KERNEL");
        if (!want || !*want) return best;
        if (!std::strcmp(want, "portable")) return portable;
        if (!std::strcmp(want, "avx2") && has2) return avx2;
        if (!std::strcmp(want, "avx512") && has512) return avx512;
        std::fprintf(stderr, "pyphmm: warning: PYPHMM_CPU_KERNEL=%s is not available here; using %s\n",
                     want, best.name);
        return best;
    }();
    return choice;
}

// Sets flush-to-zero for the current thread while alive, then restores it.
class FlushToZero {
  public:
    FlushToZero() : saved_(_MM_GET_FLUSH_ZERO_MODE()) { _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON); }
    ~FlushToZero() { _MM_SET_FLUSH_ZERO_MODE(saved_); }

  private:
    unsigned saved_;
};

std::vector<Pair> collect_pairs(const pyphmm_region* regions, int64_t num_regions) {
    std::vector<Pair> pairs;
    int64_t total = 0;
    for (int64_t k = 0; k < num_regions; ++k)
        total += static_cast<int64_t>(regions[k].num_reads) * regions[k].num_haps;
    pairs.reserve(total);
    int64_t out = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        for (int32_t r = 0; r < g.num_reads; ++r) {
            int64_t ro = g.read_offsets[r];
            int32_t m = static_cast<int32_t>(g.read_offsets[r + 1] - ro);
            for (int32_t h = 0; h < g.num_haps; ++h) {
                int64_t ho = g.hap_offsets[h];
                Pair p{g.read_bases + ro, g.read_quals + ro, g.read_ins + ro, g.read_dels + ro,
                       g.read_gcp + ro, g.hap_bases + ho, m,
                       static_cast<int32_t>(g.hap_offsets[h + 1] - ho), out++};
                pairs.push_back(p);
            }
        }
    }
    return pairs;
}

// Runs `forward` over `order` in groups of W lanes, in parallel; calls
// done(pair, raw_sum) for every pair.
template <typename T, typename Forward, typename Done>
void run_groups(const std::vector<const Pair*>& order, int vector_bytes, int threads, Forward forward,
                Done done) {
    const int W = vector_bytes / static_cast<int>(sizeof(T));
    int64_t groups = (static_cast<int64_t>(order.size()) + W - 1) / W;
    parallel_for(groups, threads, [&](int64_t g) {
        FlushToZero ftz;
        int64_t first = g * W;
        int count = static_cast<int>(std::min<int64_t>(W, order.size() - first));
        T sums[kMaxLanes];
        forward(&order[first], count, sums);
        for (int l = 0; l < count; ++l) done(*order[first + l], sums[l]);
    });
}

}  // namespace

const char* cpu_pairhmm_kernel_name() { return kernel_choice().name; }

int cpu_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, int threads,
                bool double_precision, pyphmm_stats* stats) {
    auto start = std::chrono::steady_clock::now();
    std::vector<Pair> pairs = collect_pairs(regions, num_regions);
    std::vector<const Pair*> order(pairs.size());
    int64_t cells = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
        order[i] = &pairs[i];
        cells += static_cast<int64_t>(pairs[i].m) * pairs[i].n;
    }
    // Equal shapes side by side: lanes of a group then do equal work.
    std::sort(order.begin(), order.end(), [](const Pair* a, const Pair* b) {
        return a->m != b->m ? a->m < b->m : a->n < b->n;
    });

    std::vector<const Pair*> redo;  // pairs for the double pass
    if (double_precision) {
        redo = order;
    } else {
        const float log10_ic = tables_float().log10_initial_constant;
        std::vector<char> underflow(pairs.size(), 0);
        run_groups<float>(order, kernel_choice().vector_bytes, threads, kernel_choice().f, [&](const Pair& p, float sum) {
            if (sum < kMinAcceptedFloat) {
                underflow[&p - pairs.data()] = 1;
            } else {
                // GKL subtracts in float, then widens: keep that rounding.
                out[p.out] = static_cast<double>(log10f(sum) - log10_ic);
            }
        });
        for (size_t i = 0; i < pairs.size(); ++i)
            if (underflow[i]) redo.push_back(&pairs[i]);
    }
    const double log10_icd = tables_double().log10_initial_constant;
    run_groups<double>(redo, kernel_choice().vector_bytes, threads, kernel_choice().d, [&](const Pair& p, double sum) {
        out[p.out] = std::log10(sum) - log10_icd;
    });

    if (stats) {
        stats->pairs = static_cast<int64_t>(pairs.size());
        stats->cells = cells;
        stats->double_pairs = static_cast<int64_t>(redo.size());
        stats->backend_used = PYPHMM_BACKEND_CPU;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
