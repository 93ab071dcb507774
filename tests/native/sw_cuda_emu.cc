// Runs the GPU Smith-Waterman kernels (native/cuda/sw_cuda_kernels.cuh) on
// the CPU: every CUDA thread of a block is a std::thread, __syncthreads is a
// std::barrier, blocks run one after another. Compares their CIGARs and
// offsets with the CPU backend (sw_align_one) on seeded random pairs under
// every strategy and GATK preset. Used by tests/test_sw.py where no GPU is.
//
//   g++ -std=c++20 -O2 -pthread -Inative/include -Inative tests/native/sw_cuda_emu.cc
//       native/cpu/sw_cpu.cc native/common/thread_pool.cc -o sw_cuda_emu
//   ./sw_cuda_emu [pairs] [threads-per-block] [seed]
#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/sw_cpu.h"

// ---- just enough CUDA for the kernels ----
#define __global__
#define __device__
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
EmuDim blockDim;
std::barrier<>* g_barrier = nullptr;
#define __syncthreads() g_barrier->arrive_and_wait()
std::vector<int32_t> g_smem;
#define SW_SHARED_STATE() int32_t* smem = g_smem.data()
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

std::string random_seq(std::mt19937_64& rng, int len) {
    static const char* b = "ACGT";
    std::string s(len, 'A');
    for (auto& c : s) c = b[rng() % 4];
    return s;
}

// Pairs like tests/swgen.py's, in miniature: edits, overhangs, repeats, N.
std::pair<std::string, std::string> make_pair(std::mt19937_64& rng, int kind, int max_len) {
    auto rnd = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
    std::string ref = random_seq(rng, rnd(1, max_len)), alt;
    switch (kind % 6) {
        case 0:  // SNPs in a window
            alt = ref.substr(rnd(0, ref.size() / 3));
            for (int k = rnd(0, 3); k-- > 0 && !alt.empty();) alt[rng() % alt.size()] = "ACGTN"[rng() % 5];
            break;
        case 1: {  // one indel
            alt = ref;
            size_t at = rng() % (alt.size() + 1);
            if (rng() % 2)
                alt.erase(at, rnd(1, 30));
            else
                alt.insert(at, random_seq(rng, rnd(1, 30)));
            break;
        }
        case 2:  // overhangs
            alt = random_seq(rng, rnd(0, 20)) + ref.substr(rng() % ref.size()) + random_seq(rng, rnd(0, 20));
            break;
        case 3: {  // tandem repeat
            std::string unit = random_seq(rng, rnd(1, 4));
            std::string l = random_seq(rng, rnd(0, 10)), r = random_seq(rng, rnd(0, 10));
            ref = l;
            alt = l;
            int c = rnd(2, 10);
            for (int k = 0; k < c; ++k) ref += unit;
            for (int k = c + rnd(-2, 3); k > 0; --k) alt += unit;
            ref += r;
            alt += r;
            break;
        }
        case 4:  // unrelated
            alt = random_seq(rng, rnd(1, max_len));
            break;
        default:  // exact substring
            alt = ref.substr(rng() % ref.size());
            alt = alt.substr(0, rnd(1, alt.size()));
    }
    if (alt.empty()) alt = "A";
    if (ref.empty()) ref = "C";
    return {ref, alt};
}

}  // namespace

int main(int argc, char** argv) {
    const int pairs = argc > 1 ? std::atoi(argv[1]) : 400;
    const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
    const unsigned seed = argc > 3 ? std::atoi(argv[3]) : 1;
    const pyphmm_sw_params presets[4] = {{3, -1, -4, -3}, {25, -50, -110, -6}, {200, -150, -260, -11},
                                         {10, -15, -30, -5}};
    const int strategies[4] = {PYPHMM_SW_SOFTCLIP, PYPHMM_SW_INDEL, PYPHMM_SW_LEADING_INDEL, PYPHMM_SW_IGNORE};
    std::mt19937_64 rng(seed);
    std::vector<std::pair<std::string, std::string>> data;
    for (int k = 0; k < pairs; ++k) data.push_back(make_pair(rng, k, k % 10 == 0 ? 900 : 60));
    // one long pair above the shared-memory limit and tiny ones
    data.push_back({random_seq(rng, 1000), ""});
    data.back().second = data.back().first.substr(100, 500) + "GG" + data.back().first.substr(600, 300);
    data.push_back({"A", "A"});
    data.push_back({"A", "C"});

    long checked = 0, failures = 0;
    for (int pi = 0; pi < 4; ++pi)
        for (int si = 0; si < 4; ++si) {
            // Lay out one chunk as the host code does.
            std::vector<PairDesc> descs;
            std::vector<uint8_t> seqs;
            int64_t bt = 0, edge = 0, scratch = 0, cig = 0;
            for (size_t i = 0; i < data.size(); ++i) {
                const auto& [r, a] = data[i];
                PairDesc d{};
                d.m = r.size();
                d.n = a.size();
                d.ref = seqs.size();
                seqs.insert(seqs.end(), r.begin(), r.end());
                d.alt = seqs.size();
                seqs.insert(seqs.end(), a.begin(), a.end());
                d.bt = bt;
                bt += int64_t(d.m) * d.n;
                d.edge = edge;
                edge += d.m + d.n + 2;
                d.scratch = scratch;
                if (d.m > kSmallRef) scratch += kStateArrays * (d.m + 1);
                d.cigar = cig;
                cig += 2 * (int64_t(d.m) + d.n) + 1;
                d.match = presets[pi].match;
                d.mismatch = presets[pi].mismatch;
                d.open = presets[pi].gap_open;
                d.extend = presets[pi].gap_extend;
                d.strategy = strategies[si];
                d.index = i;
                descs.push_back(d);
            }
            std::vector<short2> btm(std::max<int64_t>(bt, 1), short2{-999, -999});
            std::vector<int32_t> edges(edge, 12345), scr(std::max<int64_t>(scratch, 1), 777);
            std::vector<char> cigars(cig, '#');
            std::vector<int32_t> offsets(descs.size(), -77777);
            // stage 1: blocks one at a time, `threads` emulated threads each
            for (size_t b = 0; b < descs.size(); ++b) {
                const bool shared = descs[b].m <= kSmallRef;
                g_smem.assign(kStateArrays * (descs[b].m + 1) + 64, 31337);
                std::barrier<> bar(threads);
                g_barrier = &bar;
                blockDim.x = threads;
                std::vector<std::thread> ts;
                for (int t = 0; t < threads; ++t)
                    ts.emplace_back([&, t, b] {
                        threadIdx.x = t;
                        blockIdx.x = 0;
                        if (shared)
                            sw_fill_kernel<true>(descs.data() + b, seqs.data(), btm.data(), edges.data(), scr.data());
                        else
                            sw_fill_kernel<false>(descs.data() + b, seqs.data(), btm.data(), edges.data(),
                                                  scr.data());
                    });
                for (auto& t : ts) t.join();
            }
            // stage 2: one emulated thread per pair
            blockDim.x = 1;
            for (size_t k = 0; k < descs.size(); ++k) {
                blockIdx.x = k;
                threadIdx.x = 0;
                sw_traceback_kernel(descs.data(), descs.size(), btm.data(), edges.data(), cigars.data(),
                                    offsets.data());
            }
            for (size_t k = 0; k < descs.size(); ++k) {
                const auto& [r, a] = data[k];
                std::vector<char> want(2 * (r.size() + a.size()) + 1);
                int32_t off = sw_align_one(reinterpret_cast<const uint8_t*>(r.data()), r.size(),
                                           reinterpret_cast<const uint8_t*>(a.data()), a.size(), presets[pi],
                                           strategies[si], want.data());
                const char* got = cigars.data() + descs[k].cigar;
                // The GPU path leaves exact substrings (SOFTCLIP/IGNORE) to the host.
                const bool exact = (strategies[si] == PYPHMM_SW_SOFTCLIP || strategies[si] == PYPHMM_SW_IGNORE) &&
                                   r.find(a) != std::string::npos;
                if (exact) continue;
                ++checked;
                if (std::strcmp(got, want.data()) != 0 || off != offsets[k]) {
                    if (++failures <= 10)
                        std::printf("MISMATCH preset %d strategy %d ref %s alt %s: gpu %s %d cpu %s %d\n", pi,
                                    strategies[si], r.c_str(), a.c_str(), got, offsets[k], want.data(), off);
                }
            }
        }
    std::printf("checked %ld pairs, %ld mismatches\n", checked, failures);
    return failures ? 1 : 0;
}
