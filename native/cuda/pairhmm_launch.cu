// Kernel launches of the GPU PairHMM (see pairhmm_launch.h). Every launch
// is derived from the bin table: the fused kernel's bins, the standalone
// long-read bins of each pass, the double bins.
#include "cuda/pairhmm_launch.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/tables.h"
#include "cuda/device.h"
#include "cuda/pairhmm_kernels.cuh"
#include "cuda/pairhmm_plan.h"

namespace pyphmm {
namespace cudak {

namespace {

constexpr int kBlock = 128;

// ---------------------------------------------------------------- tables
struct Tables {
    std::once_flag once;
    cudaError_t result = cudaErrorNotReady;
    DevTables<float> f{};
    DevTables<double> d{};
};
Tables g_tables[kMaxCudaDevices];

// One precision's tables, appended to `blob`: ph2pr, ph2pr / 3 (the mismatch
// emission, divided on the host exactly as the CPU backend divides), then
// the match-to-match table. Returns the offsets of the three.
template <typename T>
std::array<size_t, 3> append_tables(const PairhmmTables<T>& t, std::vector<char>& blob) {
    T third[kNumQuals];
    for (int q = 0; q < kNumQuals; ++q) third[q] = t.ph2pr[q] / T(3);
    std::array<size_t, 3> at{};
    blob.resize((blob.size() + 15) & ~size_t(15));  // (the other precision's tables may end unaligned)
    const std::pair<const void*, size_t> parts[] = {
        {t.ph2pr, sizeof(t.ph2pr)}, {third, sizeof(third)}, {t.match_to_match, sizeof(t.match_to_match)}};
    for (int i = 0; i < 3; ++i) {
        at[i] = blob.size();
        const char* p = static_cast<const char*>(parts[i].first);
        blob.insert(blob.end(), p, p + parts[i].second);
    }
    return at;
}

template <typename T>
DevTables<T> dev_tables(const PairhmmTables<T>& t, const char* dev, const std::array<size_t, 3>& at) {
    return {reinterpret_cast<const T*>(dev + at[0]), reinterpret_cast<const T*>(dev + at[1]),
            reinterpret_cast<const T*>(dev + at[2]), t.initial_constant, t.log10_initial_constant};
}

cudaError_t upload_tables(Tables& out) {
    std::vector<char> host;
    const std::array<size_t, 3> af = append_tables(tables_float(), host);
    const std::array<size_t, 3> ad = append_tables(tables_double(), host);
    char* dev = nullptr;
    PYPHMM_CUDA_TRY(cudaMalloc(&dev, host.size()));
    PYPHMM_CUDA_TRY(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice));
    out.f = dev_tables(tables_float(), dev, af);
    out.d = dev_tables(tables_double(), dev, ad);
    return cudaSuccess;
}

// ---------------------------------------------------------------- kernels
// Blocks per SM of a kernel (at least 1), from the occupancy calculator,
// once per instantiation.
template <typename Kernel>
int blocks_per_sm(Kernel kernel) {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kBlock, 0) != cudaSuccess || b < 1) {
        cudaGetLastError();
        b = 1;
    }
    return b;
}

// The launches of variant V's kernel (a Variant, pairhmm_recurrence.cuh).
template <typename V>
struct Kern {
    static int max_blocks_per_sm() {
        static const int v = blocks_per_sm(pairhmm_kernel<V, kBlock>);
        return v;
    }
    // Blocks of a persistent launch (striped kernels need one scratch slot per warp).
    static int persistent_blocks(int d) { return max_blocks_per_sm() * cuda::sm_count(d); }
    static void launch(const KernelArgs<typename V::T>& a, int blocks, cudaStream_t s) {
        pairhmm_kernel<V, kBlock><<<blocks, kBlock, 0, s>>>(a);
    }
};

template <bool FAST, Tr TR>
int fused_blocks_per_sm() {
    static const int v = blocks_per_sm(pairhmm_fused_kernel<FAST, TR, kBlock>);
    return v;
}

int groups_grid(int64_t count, int P) { return static_cast<int>((count + (kBlock / P) - 1) / (kBlock / P)); }

// The float bins' general (striped) kernel and the double pass's, which
// size the scratch: one slot of 3 rows per resident warp.
template <bool FAST>
using FloatGeneral = Kern<Variant<float, Lanes<32>, RowsPerLane<kFloatBins[kNumFloatBins - 1].K>, Striped<>,
                                  Arithmetic<float_arith(FAST, kFloatBins[kNumFloatBins - 1].max_rows)>>>;
using DoubleGeneral = Kern<Variant<double, Lanes<32>, RowsPerLane<kDoubleBins[kNumDoubleBins - 1].K>, Striped<>>>;
static_assert(kFloatBins[kNumFloatBins - 1].P == 32 && kDoubleBins[kNumDoubleBins - 1].P == 32,
              "striped bins use one group per warp");

// Standalone float bins B, B-1, ..., kNumFusedBins of one pass, longest first.
template <bool FAST, Tr TR, int B>
void launch_standalone(KernelArgs<float> a, Pass pass, const BinRanges& bins, int d, cudaStream_t s) {
    if constexpr (B >= kNumFusedBins) {
        constexpr BinSpec spec = kFloatBins[B];
        typedef Kern<Variant<float, Lanes<spec.P>, RowsPerLane<spec.K>, Striped<spec.striped>,
                             Arithmetic<float_arith(FAST, spec.max_rows)>, Transitions<spec.striped ? Tr::kRow : TR>>>
            G;
        if (const int64_t n = bins.count_of(pass, B)) {
            a.first = static_cast<int>(bins.start_of(pass, B));
            a.count = static_cast<int>(n);
            const int grid = groups_grid(n, spec.P);
            G::launch(a, spec.striped ? std::min(grid, G::persistent_blocks(d)) : grid, s);
        }
        launch_standalone<FAST, TR, B - 1>(a, pass, bins, d, s);
    }
}

// One float pass: its standalone bins, then its fused bins in one launch.
// A pass small enough to run every pair as a whole warp within one wave
// (GATK's per-region calls mostly) is latency-bound: its time is one pair's
// steps x rows per lane, so its bins then run their latency variants, but
// for a bin with a read longer than latency_max_rows. (Which variant runs
// depends on the call alone, so a call's results never depend on what else
// runs: the launch-constant kernels of reads up to 96 rows round slightly
// differently in the two variants; see const_block.)
template <bool FAST, Tr TR>
cudaError_t launch_float_pass(const KernelArgs<float>& a, const BinRanges& bins, int d, cudaStream_t s) {
    static_assert(TR != Tr::kConst || FAST, "constant transitions: fast arithmetic only");
    constexpr Pass pass = float_pass(TR);
    launch_standalone<FAST, TR, pass_bins(pass) - 1>(a, pass, bins, d, s);
    PYPHMM_CUDA_TRY(cudaGetLastError());
    int64_t pairs = 0;
    for (int b = 0; b < kNumFusedBins; ++b) pairs += bins.count_of(pass, b);
    const int64_t resident_threads = int64_t(cuda::sm_count(d)) * fused_blocks_per_sm<FAST, TR>() * kBlock;
    const bool latency = pairs * 32 <= resident_threads;
    FusedPlan plan{};
    int blocks = 0;
    for (int b = kNumFusedBins - 1; b >= 0; --b) {  // longest reads first
        const int64_t n = bins.count_of(pass, b);
        if (!n) continue;
        const bool lat = latency && b < kNumLatencyBins && bins.rows_of(pass, b) <= latency_max_rows(b);
        const int i = plan.nb++;
        plan.bin[i] = lat ? kLatencyBin + latency_k(b) : b;
        plan.first[i] = static_cast<int>(bins.start_of(pass, b));
        plan.count[i] = static_cast<int>(n);
        plan.block_start[i] = blocks;
        blocks += groups_grid(n, lat ? 32 : kFloatBins[b].P);
    }
    plan.block_start[plan.nb] = blocks;
    if (plan.nb) pairhmm_fused_kernel<FAST, TR, kBlock><<<blocks, kBlock, 0, s>>>(a, plan);
    return cudaGetLastError();
}

// Double bin B's launch over a.count pairs (a.first.. or a.index).
template <int B>
void launch_double_bin(const KernelArgs<double>& a, int d, cudaStream_t s) {
    constexpr BinSpec spec = kDoubleBins[B];
    typedef Kern<Variant<double, Lanes<spec.P>, RowsPerLane<spec.K>, Striped<spec.striped>>> G;
    const int grid = groups_grid(a.count, spec.P);
    G::launch(a, spec.striped ? std::min(grid, G::persistent_blocks(d)) : grid, s);
}

template <int... B>
cudaError_t launch_double_bins(KernelArgs<double> a, const BinRanges& bins, int d, cudaStream_t s,
                               std::integer_sequence<int, B...>) {
    cudaError_t e = cudaSuccess;
    auto one = [&](auto bin) {
        constexpr int b = decltype(bin)::value;
        const int64_t n = bins.count_of(Pass::kDouble, b);
        if (!n || e != cudaSuccess) return;
        a.first = static_cast<int>(bins.start_of(Pass::kDouble, b));
        a.count = static_cast<int>(n);
        launch_double_bin<b>(a, d, s);
        e = cudaGetLastError();
    };
    (one(std::integral_constant<int, kNumDoubleBins - 1 - B>{}), ...);  // longest reads first
    return e;
}

}  // namespace

cudaError_t pairhmm_setup_device(int d) {
    Tables& t = g_tables[d];
    std::call_once(t.once, [&] { t.result = upload_tables(t); });
    return t.result;
}

int pairhmm_scratch_stride(int max_hap_len) { return static_cast<int>(round_up(max_hap_len + 2, 32)); }

size_t pairhmm_scratch_bytes(int d, int stride, bool fast) {
    const size_t per_warp = size_t(3) * stride;
    const int float_blocks =
        fast ? FloatGeneral<true>::persistent_blocks(d) : FloatGeneral<false>::persistent_blocks(d);
    return std::max(size_t(DoubleGeneral::persistent_blocks(d)) * (kBlock / 32) * per_warp * sizeof(double),
                    size_t(float_blocks) * (kBlock / 32) * per_warp * sizeof(float));
}

namespace {

// The arguments every launch over chunk c takes, in precision T.
template <typename T>
KernelArgs<T> chunk_args(int d, const ChunkBuffers& c) {
    KernelArgs<T> a{};
    a.pairs = c.pairs;
    a.reads = c.reads;
    a.haps = c.haps;
    if constexpr (std::is_same<T, float>::value)
        a.tab = g_tables[d].f;
    else
        a.tab = g_tables[d].d;
    a.out = c.results;
    a.scratch = static_cast<T*>(c.scratch);
    a.scratch_stride = c.scratch_stride;
    return a;
}

// The double pass over the float pass's underflow list (da.index). When
// every read of the chunk has at most kDoubleSweepRows rows it runs
// unstriped, one sweep of 32 lanes x kDoubleSweepK rows: for GATK's 150 bp
// reads that is half the steps of the general kernel's two 128-row stripes
// (a call with an underflowed pair waits for this kernel). The grid is
// at most one resident wave: the count may be known only on the device.
constexpr int kDoubleSweepK = 5;
constexpr int kDoubleSweepRows = 32 * kDoubleSweepK;
static_assert(kDoubleSweepRows > kDoubleBins[kNumDoubleBins - 1].P * kDoubleBins[kNumDoubleBins - 1].K,
              "the sweep kernel covers more rows than one stripe of the general one");
using DoubleSweep = Kern<Variant<double, Lanes<32>, RowsPerLane<kDoubleSweepK>>>;

// count: the pairs the grid covers; count_ptr (may be null): the list's
// length on the device, when the host does not know it.
cudaError_t launch_underflow_pass(int d, const ChunkBuffers& c, int count, const int* count_ptr, cudaStream_t s) {
    KernelArgs<double> da = chunk_args<double>(d, c);
    da.index = c.list;
    da.header_count = c.header;
    da.count = count;
    da.count_ptr = count_ptr;
    if (c.longest_rows <= kDoubleSweepRows)
        DoubleSweep::launch(da, std::min(groups_grid(da.count, 32), DoubleSweep::persistent_blocks(d)), s);
    else
        launch_double_bin<kNumDoubleBins - 1>(da, d, s);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_pairhmm_underflow(int d, const ChunkBuffers& c, int count, cudaStream_t s) {
    return launch_underflow_pass(d, c, count, nullptr, s);
}

cudaError_t launch_pairhmm_chunk(int d, const ChunkBuffers& c, const BinRanges& bins, bool dbl, bool fast,
                                 const GapConsts& gaps, cudaStream_t s) {
    if (dbl)
        return launch_double_bins(chunk_args<double>(d, c), bins, d, s,
                                  std::make_integer_sequence<int, kNumDoubleBins>{});

    KernelArgs<float> fa = chunk_args<float>(d, c);
    fa.under_list = c.list;
    fa.under_count = c.counter;
    fa.gc = gaps;
    if (fast) {
        PYPHMM_CUDA_TRY((launch_float_pass<true, Tr::kRow>(fa, bins, d, s)));
        PYPHMM_CUDA_TRY((launch_float_pass<true, Tr::kUniform>(fa, bins, d, s)));
        PYPHMM_CUDA_TRY((launch_float_pass<true, Tr::kConst>(fa, bins, d, s)));
    } else {
        PYPHMM_CUDA_TRY((launch_float_pass<false, Tr::kRow>(fa, bins, d, s)));
    }
    if (c.watched) return cudaSuccess;
    // The double pass over the float pass's underflow list (its length is
    // only known on the device: the grid covers every pair of the chunk).
    return launch_underflow_pass(d, c, static_cast<int>(c.num_pairs), c.counter, s);
}

}  // namespace cudak
}  // namespace pyphmm
