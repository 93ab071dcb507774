// Runs the GPU Smith-Waterman kernels (native/cuda/sw_cuda_kernels.cuh) on
// the CPU and compares their CIGARs and offsets with the CPU backend
// (sw_align_one) on seeded random pairs under every strategy and GATK preset,
// and with per-pair settings. Used by tests/test_sw.py where no GPU is.
//
// Emulation: the P lanes of a pair's group are P std::threads. The kernel
// only exchanges data between lanes with __shfl_up_sync(.., 1, P), lane t
// reading what lane t-1 handed over at the same shuffle, so each lane feeds a
// FIFO that the next lane drains: lanes run as a pipeline without a barrier
// per shuffle, and every lane still sees exactly the values a warp would.
// __syncwarp is a std::barrier. The layout of a chunk (pairs grouped by K,
// offsets) mirrors the host code of sw_cuda.cu.
//
//   g++ -std=c++20 -O1 -pthread -Inative/include -Inative tests/native/sw_cuda_emu.cc
//       native/cpu/sw_cpu.cc native/common/thread_pool.cc -o sw_cuda_emu
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
    std::vector<std::unique_ptr<LaneFifo>> fifo;   // fifo[t]: lane t -> lane t + 1
    std::barrier<> sync;
    explicit LaneGroup(int P) : lanes(P), sync(P) {
        for (int t = 0; t < P; ++t) fifo.emplace_back(new LaneFifo());
    }
};
thread_local LaneGroup* g_group = nullptr;
thread_local int g_lane = 0;
long g_bad_shuffles = 0;   // shuffles the emulation does not model (would be a test failure)

template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    if (delta != 1 || width != g_group->lanes) ++g_bad_shuffles;
    uint32_t w;
    std::memcpy(&w, &v, 4);
    if (g_lane + 1 < g_group->lanes) g_group->fifo[g_lane]->push(w);
    if (g_lane == 0) return v;   // no lane below: a warp returns the caller's own value
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
        if (rng() % 8 == 0) read = seq(rnd(1, 15)) + read;   // soft-clip-like overhang
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
void emulate_fill(const PairDesc* d, int count, const uint8_t* refs, const uint8_t* alts, short2* bt,
                  int32_t* edges, int32_t* scratch) {
    LaneGroup group(P);
    std::vector<std::thread> lanes;
    for (int t = 0; t < P; ++t)
        lanes.emplace_back([&, t] {
            g_group = &group;
            g_lane = t;
            threadIdx.x = t;
            blockDim.x = P;
            for (int g = 0; g < count; ++g) {   // block g holds group g alone
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

// One chunk as the host lays it out, through both kernels; returns mismatches.
long run_chunk(const std::vector<Pair>& data, const std::vector<Setting>& settings, int P, long& checked) {
    std::vector<int> order(data.size());
    for (size_t i = 0; i < data.size(); ++i) order[i] = static_cast<int>(i);
    auto cols = [&](int i) { return choose_cols(static_cast<int>(data[i].second.size()), P); };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cols(a) < cols(b); });
    std::vector<PairDesc> descs;
    std::vector<uint8_t> refs, alts;
    int64_t bt = 0, edge = 0, scratch = 0, cig = 0;
    for (int i : order) {
        const auto& [r, a] = data[i];
        PairDesc d{};
        d.m = r.size();
        d.n = a.size();
        d.lanes = P;
        d.cols = cols(i);
        d.ref = refs.size();
        refs.insert(refs.end(), r.begin(), r.end());
        d.alt = alts.size();
        alts.insert(alts.end(), a.begin(), a.end());
        d.bt = bt;
        bt += backtrack_cells(d.m, d.n, d.lanes, d.cols);
        d.edge = edge;
        edge += d.m + d.n + 2;
        d.scratch = scratch;
        if (d.n > d.lanes * d.cols) scratch += 6 * int64_t(d.m);
        d.cigar = cig;
        cig += 2 * (int64_t(d.m) + d.n) + 1;
        const Setting& s = settings[i];
        d.match = s.params.match;
        d.mismatch = s.params.mismatch;
        d.open = s.params.gap_open;
        d.extend = s.params.gap_extend;
        d.strategy = s.strategy;
        d.index = i;
        descs.push_back(d);
    }
    // Poisoned outputs: a cell the fill forgets shows up as a mismatch.
    std::vector<short2> btm(std::max<int64_t>(bt, 1), short2{-999, -999});
    std::vector<int32_t> edges(edge, 12345), scr(std::max<int64_t>(scratch, 1), 777);
    std::vector<char> cigars(cig, '#'), short_cigars(descs.size() * kShortCigar, '#');
    std::vector<int32_t> lens(descs.size(), -1), offsets(descs.size(), -77777);
    switch (P) {
        case 4: fill_all<4>(descs, refs, alts, btm, edges, scr); break;
        case 8: fill_all<8>(descs, refs, alts, btm, edges, scr); break;
        default: fill_all<32>(descs, refs, alts, btm, edges, scr); break;
    }
    // stage 2: one emulated thread per pair
    blockDim.x = 1;
    threadIdx.x = 0;
    for (size_t k = 0; k < descs.size(); ++k) {
        blockIdx.x = k;
        sw_traceback_kernel(descs.data(), descs.size(), btm.data(), edges.data(), cigars.data(), short_cigars.data(),
                            lens.data(), offsets.data());
    }
    long failures = 0;
    for (size_t k = 0; k < descs.size(); ++k) {
        const int i = descs[k].index;
        const auto& [r, a] = data[i];
        const Setting& s = settings[i];
        // The GPU path leaves exact substrings (SOFTCLIP/IGNORE) to the host.
        if ((s.strategy == PYPHMM_SW_SOFTCLIP || s.strategy == PYPHMM_SW_IGNORE) && r.find(a) != std::string::npos)
            continue;
        std::vector<char> want(2 * (r.size() + a.size()) + 1);
        const int32_t off = sw_align_one(reinterpret_cast<const uint8_t*>(r.data()), r.size(),
                                         reinterpret_cast<const uint8_t*>(a.data()), a.size(), s.params, s.strategy,
                                         want.data());
        const char* got = lens[k] < kShortCigar ? short_cigars.data() + k * kShortCigar : cigars.data() + descs[k].cigar;
        ++checked;
        if (lens[k] < 0 || std::strcmp(got, want.data()) != 0 || off != offsets[k] ||
            static_cast<size_t>(lens[k]) != std::strlen(want.data())) {
            if (++failures <= 10)
                std::printf("MISMATCH P %d params (%d,%d,%d,%d) strategy %d ref %s alt %s: gpu %s %d cpu %s %d\n", P,
                            s.params.match, s.params.mismatch, s.params.gap_open, s.params.gap_extend, s.strategy,
                            r.c_str(), a.c_str(), got, offsets[k], want.data(), off);
        }
    }
    return failures;
}

}  // namespace

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
        data.push_back({p.first.substr(0, gen.rnd(1, 40)), p.second});   // short ref, long alt
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
            failures += run_chunk(data, settings, P, checked);
        }
    // Per-pair settings in one chunk, including a non-preset one.
    for (size_t i = 0; i < data.size(); ++i) {
        const pyphmm_sw_params odd{50, -100, -220, -12};
        settings[i] = {i % 5 == 4 ? odd : kPresets[i % 4], kStrategies[(i / 4) % 4]};
    }
    failures += run_chunk(data, settings, P, checked);
    std::printf("lanes %d: checked %ld pairs, %ld mismatches, %ld unmodelled shuffles\n", P, checked, failures,
                g_bad_shuffles);
    return failures || g_bad_shuffles ? 1 : 0;
}
