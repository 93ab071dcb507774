// Runs the GPU Smith-Waterman kernels (native/cuda/sw_cuda_kernels.cuh) on
// the CPU, on the plans of the GPU backend's host code (native/cuda/sw_plan:
// exact-substring shortcut, chunks, sub-chunks, descriptors), and compares
// their CIGARs and offsets with the CPU backend (sw_align_one) on seeded
// random pairs under every strategy and GATK preset, and with per-pair
// settings. Used by tests/test_sw.py where no GPU is.
//
// Emulation: the P lanes of a pair's group are P std::threads. The kernel
// only exchanges data between lanes with __shfl_up_sync(.., 1, P), lane t
// reading what lane t-1 handed over at the same shuffle, so each lane feeds a
// FIFO that the next lane drains: lanes run as a pipeline without a barrier
// per shuffle, and every lane still sees exactly the values a warp would.
// __syncwarp is a std::barrier. Budgets small enough to give several chunks
// and sub-chunks exercise the plans' offsets.
//
//   g++ -std=c++20 -O1 -pthread -Inative/include -Inative tests/native/sw_cuda_emu.cc native/cuda/sw_plan.cc
//       native/cpu/sw_cpu.cc native/cpu/sw_cpu_fill.cc native/common/thread_pool.cc native/common/config.cc -o sw_cuda_emu
//   ./sw_cuda_emu [lanes P] [seed] [short pairs] [read-vs-hap pairs] [hap-vs-ref pairs] [long pairs]
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/sw_cpu.h"

// ---- just enough CUDA for the kernels ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
struct short2 {
    short x, y;
};
inline short2 make_short2(short x, short y) { return {x, y}; }
struct EmuDim {
    unsigned x;
};
thread_local EmuDim threadIdx, blockIdx;
thread_local EmuDim blockDim;

// Single-producer single-consumer FIFO of 32-bit words between two lanes.
class LaneFifo {
  public:
    void push(uint32_t v) {
        const uint32_t t = tail_.load(std::memory_order_relaxed);
        while (t - head_.load(std::memory_order_acquire) == kCap) std::this_thread::yield();
        buf_[t % kCap] = v;
        tail_.store(t + 1, std::memory_order_release);
    }
    uint32_t pop() {
        const uint32_t h = head_.load(std::memory_order_relaxed);
        while (tail_.load(std::memory_order_acquire) == h) std::this_thread::yield();
        const uint32_t v = buf_[h % kCap];
        head_.store(h + 1, std::memory_order_release);
        return v;
    }

  private:
    static constexpr uint32_t kCap = 1 << 12;
    uint32_t buf_[kCap];
    std::atomic<uint32_t> head_{0}, tail_{0};
};

// The lanes of one emulated group.
struct LaneGroup {
    int lanes;
    std::vector<std::unique_ptr<LaneFifo>> fifo;  // fifo[t]: lane t -> lane t + 1
    std::barrier<> sync;
    explicit LaneGroup(int P) : lanes(P), sync(P) {
        for (int t = 0; t < P; ++t) fifo.emplace_back(new LaneFifo());
    }
};
thread_local LaneGroup* g_group = nullptr;
thread_local int g_lane = 0;
long g_bad_shuffles = 0;  // shuffles the emulation does not model (would be a test failure)

template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    if (delta != 1 || width != g_group->lanes) ++g_bad_shuffles;
    uint32_t w;
    std::memcpy(&w, &v, 4);
    if (g_lane + 1 < g_group->lanes) g_group->fifo[g_lane]->push(w);
    if (g_lane == 0) return v;  // no lane below: a warp returns the caller's own value
    w = g_group->fifo[g_lane - 1]->pop();
    T r;
    std::memcpy(&r, &w, 4);
    return r;
}
inline void __syncwarp() { g_group->sync.arrive_and_wait(); }

namespace pyphmm {
namespace sw_gpu {
using std::abs;
using std::max;
using std::min;
}  // namespace sw_gpu
}  // namespace pyphmm

#include "cuda/sw_cuda_kernels.cuh"
#include "cuda/sw_plan.h"

using namespace pyphmm;
using namespace pyphmm::sw_gpu;

namespace {

struct Setting {
    pyphmm_sw_params params;
    int strategy;
};

const pyphmm_sw_params kPresets[4] = {{3, -1, -4, -3}, {25, -50, -110, -6}, {200, -150, -260, -11}, {10, -15, -30, -5}};
const int kStrategies[4] = {PYPHMM_SW_SOFTCLIP, PYPHMM_SW_INDEL, PYPHMM_SW_LEADING_INDEL, PYPHMM_SW_IGNORE};

using Pair = std::pair<std::string, std::string>;

struct Gen {
    std::mt19937_64 rng;
    int rnd(int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); }
    std::string seq(int len) {
        std::string s(len, 'A');
        for (auto& c : s) c = "ACGT"[rng() % 4];
        return s;
    }
    void snps(std::string& s, int k) {
        while (k-- > 0 && !s.empty()) s[rng() % s.size()] = "ACGTN"[rng() % 5];
    }
    void indel(std::string& s, int max_len) {
        const size_t at = rng() % (s.size() + 1);
        if (rng() % 2)
            s.erase(at, rnd(1, max_len));
        else
            s.insert(at, seq(rnd(1, max_len)));
    }

    // Pairs like devtools/sw_pairs.py's, in miniature: edits, overhangs, repeats, N.
    Pair small(int kind, int max_len) {
        std::string ref = seq(rnd(1, max_len)), alt;
        switch (kind % 6) {
            case 0:  // SNPs in a window
                alt = ref.substr(rnd(0, ref.size() / 3));
                snps(alt, rnd(0, 3));
                break;
            case 1:  // one indel
                alt = ref;
                indel(alt, 30);
                break;
            case 2:  // overhangs
                alt = seq(rnd(0, 20)) + ref.substr(rng() % ref.size()) + seq(rnd(0, 20));
                break;
            case 3: {  // tandem repeat
                std::string unit = seq(rnd(1, 4)), l = seq(rnd(0, 10)), r = seq(rnd(0, 10));
                ref = l;
                alt = l;
                const int c = rnd(2, 10);
                for (int k = 0; k < c; ++k) ref += unit;
                for (int k = c + rnd(-2, 3); k > 0; --k) alt += unit;
                ref += r;
                alt += r;
                break;
            }
            case 4:  // unrelated
                alt = seq(rnd(1, max_len));
                break;
            default:  // exact substring
                alt = ref.substr(rng() % ref.size());
                alt = alt.substr(0, rnd(1, alt.size()));
        }
        if (alt.empty()) alt = "A";
        if (ref.empty()) ref = "C";
        return {ref, alt};
    }
    // HaplotypeCaller's read vs best haplotype: 40-151 bp reads of a 300 bp hap.
    Pair read_vs_hap() {
        std::string hap = seq(300);
        const int k = rnd(40, 151);
        std::string read = hap.substr(rnd(0, 300 - k), k);
        snps(read, rnd(0, 4));
        if (rng() % 5 == 0) indel(read, 10);
        if (rng() % 8 == 0) read = seq(rnd(1, 15)) + read;  // soft-clip-like overhang
        if (read.empty()) read = "A";
        return {hap, read.substr(0, 151)};
    }
    // Haplotype vs reference: 300-520 bp, SNPs and indels up to 30 bp.
    Pair hap_vs_ref(int lo = 300, int hi = 520) {
        std::string ref = seq(rnd(lo, hi)), hap = ref;
        snps(hap, rnd(0, 5));
        for (int k = rnd(0, 2); k-- > 0;) indel(hap, 30);
        if (hap.empty()) hap = "A";
        return {ref, hap.substr(0, hi)};
    }
};

// Runs the fill kernel for descs[first, first + count) (one K) with P lanes.
template <int P, int K>
void emulate_fill(const PairDesc* d, int count, const uint8_t* refs, const uint8_t* alts, short2* bt, int32_t* edges,
                  int32_t* scratch) {
    LaneGroup group(P);
    std::vector<std::thread> lanes;
    for (int t = 0; t < P; ++t)
        lanes.emplace_back([&, t] {
            g_group = &group;
            g_lane = t;
            threadIdx.x = t;
            blockDim.x = P;
            for (int g = 0; g < count; ++g) {  // block g holds group g alone
                blockIdx.x = g;
                sw_warp_fill_kernel<P, K>(d, count, refs, alts, bt, edges, scratch);
            }
        });
    for (auto& t : lanes) t.join();
}

template <int P>
void fill_all(const std::vector<PairDesc>& descs, const std::vector<uint8_t>& refs, const std::vector<uint8_t>& alts,
              std::vector<short2>& bt, std::vector<int32_t>& edges, std::vector<int32_t>& scratch) {
    for (size_t g = 0; g < descs.size();) {
        size_t e = g;
        while (e < descs.size() && descs[e].cols == descs[g].cols) ++e;
        with_cols(descs[g].cols, [&](auto kc) {
            emulate_fill<P, decltype(kc)::value>(descs.data() + g, static_cast<int>(e - g), refs.data(), alts.data(),
                                                 bt.data(), edges.data(), scratch.data());
        });
        g = e;
    }
}

// A batch in the ABI's form (per-pair settings) and its output buffers.
struct Batch {
    std::vector<uint8_t> ref, alt;
    std::vector<int64_t> ref_off{0}, alt_off{0}, cigar_off{0};
    std::vector<pyphmm_sw_params> params;
    std::vector<int8_t> strategies;
    pyphmm_sw_batch c{};
    std::vector<char> cigars;
    std::vector<int32_t> offsets;

    Batch(const std::vector<Pair>& data, const std::vector<Setting>& settings) {
        for (size_t i = 0; i < data.size(); ++i) {
            const auto& [r, a] = data[i];
            ref.insert(ref.end(), r.begin(), r.end());
            alt.insert(alt.end(), a.begin(), a.end());
            ref_off.push_back(ref.size());
            alt_off.push_back(alt.size());
            cigar_off.push_back(cigar_off.back() + 2 * static_cast<int64_t>(r.size() + a.size()) + 1);
            params.push_back(settings[i].params);
            strategies.push_back(static_cast<int8_t>(settings[i].strategy));
        }
        c = {static_cast<int64_t>(data.size()),
             ref.data(),
             ref_off.data(),
             alt.data(),
             alt_off.data(),
             params.data(),
             strategies.data(),
             1};
        cigars.assign(cigar_off.back(), '#');  // poisoned: a result nobody writes is a mismatch
        offsets.assign(data.size(), -77777);
    }
};

// One planned chunk through both emulated kernels, results scattered to
// the batch's outputs as the GPU backend does.
template <int P>
void run_chunk(const Todo& todo, const sw_gpu::Chunk& c, const BufferSizes& z, Batch& b) {
    std::vector<PairDesc> descs;
    const int64_t cig = describe_chunk(todo, c, &descs);
    const int64_t first = todo.pairs[c.begin];
    const uint8_t* refs = b.ref.data() + b.ref_off[first];
    const uint8_t* alts = b.alt.data() + b.alt_off[first];
    // Poisoned work buffers: a cell the fill forgets shows up as a mismatch.
    std::vector<short2> bt(std::max<int64_t>(z.work.bt_cells, 1), short2{-999, -999});
    std::vector<int32_t> edges(std::max<int64_t>(z.work.edge_ints, 1), 12345);
    std::vector<int32_t> scratch(std::max<int64_t>(z.work.scratch_ints, 1), 777);
    std::vector<char> cigars(std::max<int64_t>(cig, 1), '#'), short_cigars(descs.size() * kShortCigar, '#');
    std::vector<int32_t> lens(descs.size(), -1), offsets(descs.size(), -77777);
    for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
        const int sb = c.sub_begin[s], se = c.sub_begin[s + 1];
        for (int g = sb; g < se;) {  // one fill per K, as the GPU launches them
            int e = g;
            while (e < se && descs[e].cols == descs[g].cols) ++e;
            with_cols(descs[g].cols, [&](auto kc) {
                emulate_fill<P, decltype(kc)::value>(descs.data() + g, e - g, refs, alts, bt.data(), edges.data(),
                                                     scratch.data());
            });
            g = e;
        }
        blockDim.x = 1;  // stage 2: one emulated thread per pair
        threadIdx.x = 0;
        for (int k = 0; k < se - sb; ++k) {
            blockIdx.x = k;
            sw_traceback_kernel(descs.data() + sb, se - sb, bt.data(), edges.data(), cigars.data(),
                                short_cigars.data() + int64_t(sb) * kShortCigar, lens.data() + sb, offsets.data() + sb);
        }
    }
    for (size_t k = 0; k < descs.size(); ++k) {
        const PairDesc& d = descs[k];
        if (lens[k] < 0) continue;  // never written: the check reports it
        const char* src = lens[k] < kShortCigar ? short_cigars.data() + k * kShortCigar : cigars.data() + d.cigar;
        std::memcpy(b.cigars.data() + b.cigar_off[d.index], src, lens[k] + 1);
        b.offsets[d.index] = offsets[k];
    }
}

// The batch as the GPU backend plans it, through both kernels; returns mismatches.
long run_batch(const std::vector<Pair>& data, const std::vector<Setting>& settings, int P, int64_t fixed_budget,
               int64_t work_budget, long& checked) {
    Batch b(data, settings);
    const Todo todo = make_todo(b.c, take_exact_matches(b.c, b.cigars.data(), b.cigar_off.data(), b.offsets.data()), P);
    const std::vector<sw_gpu::Chunk> chunks = plan_chunks(todo, fixed_budget, work_budget);
    const BufferSizes z = buffer_sizes(todo, chunks);
    for (const sw_gpu::Chunk& c : chunks) {
        switch (P) {
            case 4: run_chunk<4>(todo, c, z, b); break;
            case 8: run_chunk<8>(todo, c, z, b); break;
            default: run_chunk<32>(todo, c, z, b); break;
        }
    }
    long failures = 0;
    for (size_t i = 0; i < data.size(); ++i) {
        const auto& [r, a] = data[i];
        const Setting& s = settings[i];
        std::vector<char> want(2 * (r.size() + a.size()) + 1);
        const int32_t off =
            sw_align_one(reinterpret_cast<const uint8_t*>(r.data()), r.size(),
                         reinterpret_cast<const uint8_t*>(a.data()), a.size(), s.params, s.strategy, want.data());
        const char* got = b.cigars.data() + b.cigar_off[i];
        ++checked;
        if (strnlen(got, b.cigar_off[i + 1] - b.cigar_off[i]) ==
                static_cast<size_t>(b.cigar_off[i + 1] - b.cigar_off[i]) ||
            std::strcmp(got, want.data()) != 0 || off != b.offsets[i]) {
            if (++failures <= 10)
                std::printf("MISMATCH P %d params (%d,%d,%d,%d) strategy %d ref %s alt %s: gpu %.40s %d cpu %s %d\n", P,
                            s.params.match, s.params.mismatch, s.params.gap_open, s.params.gap_extend, s.strategy,
                            r.c_str(), a.c_str(), got, b.offsets[i], want.data(), off);
        }
    }
    size_t subs = 0;
    for (const sw_gpu::Chunk& c : chunks) subs += c.sub_begin.size() - 1;
    std::printf("P %d: %zu chunks, %zu sub-chunks, budgets %lld / %lld bytes\n", P, chunks.size(), subs,
                (long long)fixed_budget, (long long)work_budget);
    return failures;
}

}  // namespace

constexpr int64_t kUnlimited = int64_t(1) << 40;

int main(int argc, char** argv) {
    const int P = argc > 1 ? std::atoi(argv[1]) : 32;
    const unsigned seed = argc > 2 ? std::atoi(argv[2]) : 1;
    const int n_small = argc > 3 ? std::atoi(argv[3]) : 60;
    const int n_reads = argc > 4 ? std::atoi(argv[4]) : 12;
    const int n_haps = argc > 5 ? std::atoi(argv[5]) : 4;
    const int n_long = argc > 6 ? std::atoi(argv[6]) : 1;
    if (P != 4 && P != 8 && P != 32) {
        std::printf("lanes must be 4, 8 or 32\n");
        return 2;
    }
    Gen gen{std::mt19937_64(seed)};
    std::vector<Pair> data;
    for (int k = 0; k < n_small; ++k) data.push_back(gen.small(k, k % 10 == 0 ? 200 : 60));
    for (int k = 0; k < n_reads; ++k) data.push_back(gen.read_vs_hap());
    for (int k = 0; k < n_haps; ++k) data.push_back(gen.hap_vs_ref());
    // Alts over 16 columns per lane: several stripes even with 32 lanes.
    for (int k = 0; k < n_long; ++k) {
        Pair p = gen.hap_vs_ref(600, 1100);
        data.push_back(p);
        data.push_back({p.first.substr(0, gen.rnd(1, 40)), p.second});  // short ref, long alt
    }
    data.push_back({"A", "A"});
    data.push_back({"A", "C"});
    data.push_back({"ACGT", "ACGTACGT"});
    data.push_back({"ACGTN", "NN"});

    long checked = 0, failures = 0;
    std::vector<Setting> settings(data.size());
    for (int pi = 0; pi < 4; ++pi)
        for (int si = 0; si < 4; ++si) {
            for (auto& s : settings) s = {kPresets[pi], kStrategies[si]};
            failures += run_batch(data, settings, P, kUnlimited, kUnlimited, checked);
        }
    // Per-pair settings in one chunk, including a non-preset one.
    for (size_t i = 0; i < data.size(); ++i) {
        const pyphmm_sw_params odd{50, -100, -220, -12};
        settings[i] = {i % 5 == 4 ? odd : kPresets[i % 4], kStrategies[(i / 4) % 4]};
    }
    failures += run_batch(data, settings, P, kUnlimited, kUnlimited, checked);
    // Small budgets: several chunks, each of several sub-chunks.
    failures += run_batch(data, settings, P, 8 << 10, 64 << 10, checked);
    std::printf("lanes %d: checked %ld pairs, %ld mismatches, %ld unmodelled shuffles\n", P, checked, failures,
                g_bad_shuffles);
    return failures || g_bad_shuffles ? 1 : 0;
}
