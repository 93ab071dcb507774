// Runs the GPU PDHMM kernel (native/cuda/pdhmm_kernels.cuh) on the CPU, on
// the plans of the GPU backend's host code (native/cuda/pdhmm_plan: chunks,
// descriptor order, read rows, column codes, launch entries), and compares
// every pair's sum bit for bit with the CPU reference in the kernel's
// operation order (cpu::pd_sum_gpu_order), and every result (the log10 of
// a certified sum, or NaN, which the dispatcher recomputes with GKL's
// serial algorithm) with GKL's serial algorithm's (cpu::pd_sum_scalar):
// within 1e-10, -inf at the same pairs. With `finish` the kernel makes the
// results, as on the GPU (compared bit for bit with pd_checked_result of
// the reference's sums); without, it writes the sums and the host makes
// them. Used by tests/test_pdhmm_cuda.py where no GPU is.
//
// Emulation: a warp is 32 fibers (ucontext) run by one thread, each
// lane running the kernel's own code until it must wait. The kernel
// exchanges data between lanes only with __shfl_up_sync(.., 1, P) (lane t
// reads what lane t - 1 handed over at the same shuffle), so each lane
// feeds a queue that the next lane of its group drains: a lane waits only
// for an empty queue, and every lane sees exactly the values a warp would.
// __reduce_max_sync and __syncwarp wait for all 32 lanes. __any_sync (the
// warp votes for a block's general steps and for the capture and merging
// steps) is answered per lane: its own predicate, or-ed with a coin of
// probability `general` (a general block, a capture or a merging step must
// equal the plain one where a lane's columns have no flag, so a lane's
// result may not depend on the answer); a warp's lanes never disagree on
// it on the GPU. Shared memory is the block's array, NaN until written;
// the asynchronous copies of a striped warp's stage copy at once. One
// thread and no timing: the same run gives the same interleaving
// everywhere.
//
//   g++ -std=c++17 -O1 -pthread -Inative/include -Inative tests/native/pdhmm_cuda_emu.cc
//       native/cuda/pdhmm_plan.cc native/cpu/pdhmm_cpu_scalar.cc native/common/pd_tables.cc
//       native/common/thread_pool.cc native/common/config.cc -o pdhmm_cuda_emu
//   ./pdhmm_cuda_emu [seed] [regions] [general-coin percent] [long regions] [deep regions] [finish]
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cpu/pdhmm_cpu_kernel.h"
#include "pyphmm.h"

// ---- just enough CUDA for the kernel ----
struct uint2 {
    uint32_t x, y;
};
struct EmuDim {
    unsigned x;
};
EmuDim threadIdx;

// ---- fibers ----
constexpr int kLanes = 32;
constexpr size_t kStack = 1 << 18;

struct Warp {
    ucontext_t main{};
    ucontext_t lane[kLanes]{};
    std::vector<char> stack[kLanes];
    bool done[kLanes] = {};
    std::deque<uint64_t> queue[kLanes];  // queue[l]: lane l -> lane l + 1
    int arrived = 0, generation = 0;     // the barrier
    int reduce[kLanes] = {};
    std::mt19937 coin[kLanes];
    std::function<void()> body;
};
Warp* g_warp = nullptr;
int g_lane = 0;
int g_general_percent = 0;
long g_bad_calls = 0;  // operations the emulation does not model (a test failure)

// Back to the scheduler; the lane resumes here.
void wait_turn() { swapcontext(&g_warp->lane[g_lane], &g_warp->main); }

void barrier() {
    Warp& w = *g_warp;
    const int gen = w.generation;
    if (++w.arrived == kLanes) {
        w.arrived = 0;
        ++w.generation;
        return;
    }
    while (w.generation == gen) wait_turn();
}

template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width) {
    static_assert(sizeof(T) <= 8, "64-bit shuffles at most");
    if (mask != 0xffffffffu || delta != 1 || width < 1 || 32 % width) ++g_bad_calls;
    uint64_t w = 0;
    std::memcpy(&w, &v, sizeof(T));
    const int t = g_lane % width;
    if (t + 1 < width) g_warp->queue[g_lane].push_back(w);
    if (t == 0) return v;  // no lane above in the segment: a warp returns the caller's own value
    std::deque<uint64_t>& q = g_warp->queue[g_lane - 1];
    while (q.empty()) wait_turn();
    w = q.front();
    q.pop_front();
    T r;
    std::memcpy(&r, &w, sizeof(T));
    return r;
}
bool __any_sync(unsigned mask, bool p) {
    if (mask != 0xffffffffu) ++g_bad_calls;
    return p || static_cast<int>(g_warp->coin[g_lane]() % 100) < g_general_percent;
}
int __reduce_max_sync(unsigned mask, int v) {
    if (mask != 0xffffffffu) ++g_bad_calls;
    g_warp->reduce[g_lane] = v;
    barrier();
    int m = g_warp->reduce[0];
    for (int l = 1; l < kLanes; ++l) m = std::max(m, g_warp->reduce[l]);
    barrier();
    return m;
}
void __syncwarp() { barrier(); }

void lane_entry() {
    g_warp->body();
    g_warp->done[g_lane] = true;
    wait_turn();  // (never resumed)
}

// Runs body() on the 32 lanes of a warp (threadIdx.x = first_thread + lane).
void run_lanes(int first_thread, uint64_t seed, std::function<void()> body) {
    Warp w;
    w.body = std::move(body);
    g_warp = &w;
    for (int l = 0; l < kLanes; ++l) {
        w.stack[l].resize(kStack);
        w.coin[l].seed(static_cast<uint32_t>(seed * 131 + l));
        getcontext(&w.lane[l]);
        w.lane[l].uc_stack.ss_sp = w.stack[l].data();
        w.lane[l].uc_stack.ss_size = kStack;
        w.lane[l].uc_link = nullptr;
        makecontext(&w.lane[l], lane_entry, 0);
    }
    for (int left = kLanes; left > 0;) {
        left = 0;
        for (int l = 0; l < kLanes; ++l) {
            if (w.done[l]) continue;
            g_lane = l;
            threadIdx.x = static_cast<unsigned>(first_thread + l);
            swapcontext(&w.main, &w.lane[l]);
            left += !w.done[l];
        }
    }
    g_warp = nullptr;
}

#include "common/pd_tables.h"
#include "cuda/pdhmm_kernels.cuh"
#include "cuda/pdhmm_plan.h"

using namespace pyphmm;
using namespace pyphmm::pdk;

namespace {

// ---- regions ----
struct Region {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, hap, pd;
    std::vector<int64_t> read_offsets{0}, hap_offsets{0};
    pyphmm_pd_region view() const {
        return {static_cast<int32_t>(read_offsets.size() - 1),
                static_cast<int32_t>(hap_offsets.size() - 1),
                bases.data(),
                quals.data(),
                ins.data(),
                dels.data(),
                gcp.data(),
                read_offsets.data(),
                hap.data(),
                pd.data(),
                hap_offsets.data()};
    }
};

struct Gen {
    std::mt19937_64 rng;
    explicit Gen(uint64_t seed) : rng(seed) {}
    int rnd(int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); }
    bool chance(int percent) { return rnd(0, 99) < percent; }
    uint8_t base() { return "ACGT"[rng() % 4]; }

    // A PD haplotype: GATK's shape (SNP positions naming other bases, closed
    // deletion spans), or random PD bytes (unclosed DEL_STARTs, spans inside
    // spans, DEL_END alone), with N and lowercase bases now and then.
    void hap(Region& g, int n, bool random_pd) {
        const size_t at = g.hap.size();
        for (int j = 0; j < n; ++j) {
            uint8_t b = base();
            if (chance(2)) b = 'N';
            if (chance(1)) b = "acgtX"[rng() % 5];
            g.hap.push_back(b);
            g.pd.push_back(0);
        }
        uint8_t* pd = g.pd.data() + at;
        if (random_pd) {
            for (int j = 0; j < n; ++j)
                if (chance(15)) pd[j] = static_cast<uint8_t>(rng() & 0x7F);
        } else {
            for (int e = rnd(0, 1 + n / 30); e > 0 && n > 0; --e) {
                const int j = rnd(0, n - 1);
                if (chance(60)) {
                    pd[j] |= kPdBitSnp | static_cast<uint8_t>(8u << (rng() % 4));
                    if (chance(20)) pd[j] |= static_cast<uint8_t>(8u << (rng() % 4));
                } else {
                    const int len = std::min(rnd(1, 12), n - j);
                    pd[j] |= kPdBitDelStart;
                    pd[j + len - 1] |= kPdBitDelEnd;
                }
            }
        }
        g.hap_offsets.push_back(static_cast<int64_t>(g.hap.size()));
    }

    // A read: a window of the first haplotype with mutations, or random.
    void read(Region& g, int m, bool uniform_gaps) {
        const int n0 = static_cast<int>(g.hap_offsets[1] - g.hap_offsets[0]);
        const int start = n0 > m ? rnd(0, n0 - m) : 0;
        const uint8_t gi = static_cast<uint8_t>(rnd(0, 60)), gd = static_cast<uint8_t>(rnd(0, 60)),
                      gc = static_cast<uint8_t>(rnd(0, 40));
        for (int i = 0; i < m; ++i) {
            uint8_t b = start + i < n0 && !chance(5) ? g.hap[start + i] : base();
            if (b != 'A' && b != 'C' && b != 'G' && b != 'T') b = base();  // (SNP positions take ACGTN only)
            if (chance(2)) b = 'N';
            if (chance(2)) b = static_cast<uint8_t>(b == 'N' ? 'N' : b + 32);
            g.bases.push_back(b);
            g.quals.push_back(static_cast<uint8_t>(chance(3) ? rnd(0, 254) : rnd(2, 41)));
            const bool flat = uniform_gaps || !chance(30);
            g.ins.push_back(flat ? (uniform_gaps ? 45 : gi) : static_cast<uint8_t>(rnd(0, 127)));
            g.dels.push_back(flat ? (uniform_gaps ? 45 : gd) : static_cast<uint8_t>(rnd(0, 127)));
            g.gcp.push_back(flat ? (uniform_gaps ? 10 : gc) : static_cast<uint8_t>(rnd(0, 127)));
        }
        g.read_offsets.push_back(static_cast<int64_t>(g.bases.size()));
    }

    // Random reads of 590-650 bases against random haplotypes of 100-200:
    // results around -590 to -630 and -inf, across the certified floor
    // and where GKL's sums are subnormal.
    Region deep_region(int reads, int haps) {
        Region g;
        for (int h = 0; h < haps; ++h) hap(g, rnd(100, 200), false);
        for (int r = 0; r < reads; ++r) {
            const int m = rnd(590, 650);
            const uint8_t q = 30;
            for (int i = 0; i < m; ++i) {
                g.bases.push_back(base());
                g.quals.push_back(q);
                g.ins.push_back(45);
                g.dels.push_back(45);
                g.gcp.push_back(10);
            }
            g.read_offsets.push_back(static_cast<int64_t>(g.bases.size()));
        }
        return g;
    }

    Region region(int reads, int haps, int read_lo, int read_hi, int hap_lo, int hap_hi) {
        Region g;
        const bool random_pd = chance(25), uniform = chance(50);
        for (int h = 0; h < haps; ++h) hap(g, chance(3) ? 0 : rnd(hap_lo, hap_hi), random_pd);
        if (g.hap_offsets[1] == 0) {  // (reads copy the first haplotype: give it bases)
            g = Region();
            for (int h = 0; h < haps; ++h) hap(g, rnd(std::max(1, hap_lo), hap_hi), random_pd);
        }
        for (int r = 0; r < reads; ++r) read(g, chance(3) ? 0 : rnd(read_lo, read_hi), uniform);
        return g;
    }
};

// ---- the emulated launch ----
// The block's shared memory (branch values, stages), NaN until written: a
// read of a value nothing wrote shows as a mismatch.
void run_warp(int block, int warp, int nblocks, const PdArgs& a, int bin, int first, int count, uint64_t seed) {
    static std::vector<double> smem;
    smem.assign(kPdSharedDoubles, std::nan(""));
    run_lanes(warp * 32, seed, [&] { pd_run_any(bin, a, first, count, block, nblocks, smem.data()); });
}

// Every block of a plan maps to its entry (pd_entry, the kernel's lookup).
long check_entries(const PdLaunchPlan& plan, int blocks) {
    long bad = 0;
    for (int b = 0; b < blocks; ++b) {
        const PdEntry e = pd_entry(plan, b);
        int i = 0;
        while (i + 1 < plan.nb && b >= plan.block_start[i + 1]) ++i;
        const int nblocks = plan.block_start[i + 1] - plan.block_start[i];
        bad += e.bin != plan.bin[i] || e.first != plan.first[i] || e.count != plan.count[i] ||
               e.block != b - plan.block_start[i] || e.nblocks != nblocks;
    }
    return bad;
}

// Runs the kernel on every chunk of the regions: each launch entry with
// `warp_blocks` blocks (of kPdBlock / 32 warps), so the warps' loops over
// pairs are exercised. Returns what the kernel wrote by output (sums, or
// with `finish` results); the results into *results, and each pair's
// certification into *certs.
std::vector<double> emulate(const std::vector<pyphmm_pd_region>& regions, int warp_blocks, uint64_t seed, bool finish,
                            long* bad_entries, int64_t* pairs_out, std::vector<double>* results,
                            std::vector<PdCertify>* certs) {
    const PdKernelTables& tab = pd_kernel_tables();
    int64_t cells = 0, outputs = 0;
    for (const pyphmm_pd_region& g : regions) {
        cells += (g.read_offsets[g.num_reads] - g.read_offsets[0]) * (g.hap_offsets[g.num_haps] - g.hap_offsets[0]);
        outputs += int64_t(g.num_reads) * g.num_haps;
    }
    std::vector<double> sums(outputs, -1.0);
    results->assign(outputs, -1.0);
    certs->assign(outputs, PdCertify{});
    const double log10_ic = pd_tables().log10_initial_condition;
    for (const PdChunk& c : pd_plan_chunks(regions.data(), static_cast<int64_t>(regions.size()), cells)) {
        const PdLayout L = pd_layout_of(c);
        std::vector<uint64_t> buf((L.in_bytes + 7) / 8 + 2);
        std::vector<uint64_t> slots(c.pairs, 0);
        const uint64_t kPending = 0x7ff8000000000001ull;
        const PdPacked p =
            pd_pack_chunk(regions.data(), c, L, reinterpret_cast<char*>(buf.data()), slots.data(), kPending);
        PdLaunchPlan plan;
        const int blocks = pd_launch_plan(p, 8, &plan);
        *bad_entries += check_entries(plan, blocks);
        const char* base = reinterpret_cast<const char*>(buf.data());
        std::vector<double> scratch(static_cast<size_t>(warp_blocks) * (kPdBlock / 32) * 2 *
                                    pd_scratch_stride(p.max_hap_len));
        PdArgs a{};
        a.pairs = reinterpret_cast<const PdPairDesc*>(base + L.desc_off);
        a.rows = reinterpret_cast<const PdRowElem*>(base + L.row_off);
        a.codes = reinterpret_cast<const uint32_t*>(base + L.code_off);
        a.err = tab.err.data();
        a.third = tab.third.data();
        a.m2m = tab.m2m.data();
        a.ratio = tab.ratio.data();
        a.read_code = tab.read_code.data();
        a.ic = pd_tables().initial_condition;
        a.cert = pd_certify(p);
        a.log10_ic = log10_ic;
        a.finish = finish;
        a.out = reinterpret_cast<double*>(slots.data());
        a.scratch = scratch.data();
        a.scratch_stride = pd_scratch_stride(p.max_hap_len);
        for (int e = 0; e < plan.nb; ++e)
            for (int b = 0; b < warp_blocks; ++b)
                for (int w = 0; w < kPdBlock / 32; ++w)
                    run_warp(b, w, warp_blocks, a, plan.bin[e], plan.first[e], plan.count[e], seed + e * 7 + b);
        std::vector<double> made(c.pairs);  // the results, as the GPU backend copies them out
        for (int64_t i = 0; i < c.pairs; ++i) {
            double& v = sums[c.out_first + i];
            std::memcpy(&v, &slots[i], 8);
            (*certs)[c.out_first + i] = a.cert;
            made[i] = finish ? v : pd_checked_result(a.cert, v, log10_ic);  // (an empty pair's NaN stays)
        }
        int64_t above_zero = 0;  // (the results are compared with the references)
        pd_copy_results(c, made.data(), results->data(), &above_zero);
        *pairs_out += p.descs;
    }
    return sums;
}

// A reference for every pair, read-major: GKL's serial algorithm
// (cpu::pd_sum_scalar) or the kernel's operation order; `empty` for a pair
// with an empty read or haplotype.
std::vector<double> reference(const std::vector<pyphmm_pd_region>& regions, double (*sum)(const cpu::PdPair&),
                              double empty) {
    std::vector<double> out;
    for (const pyphmm_pd_region& g : regions)
        for (int32_t r = 0; r < g.num_reads; ++r)
            for (int32_t h = 0; h < g.num_haps; ++h) {
                const int64_t ro = g.read_offsets[r], ho = g.hap_offsets[h];
                cpu::PdPair p{g.read_bases + ro,
                              g.read_quals + ro,
                              g.read_ins + ro,
                              g.read_dels + ro,
                              g.read_gcp + ro,
                              g.hap_bases + ho,
                              g.hap_pd + ho,
                              0,
                              0,
                              0};
                p.m = static_cast<int32_t>(g.read_offsets[r + 1] - ro);
                p.n = static_cast<int32_t>(g.hap_offsets[h + 1] - ho);
                out.push_back(p.m && p.n ? sum(p) : empty);
            }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
    const int nregions = argc > 2 ? std::atoi(argv[2]) : 40;
    g_general_percent = argc > 3 ? std::atoi(argv[3]) : 0;
    const int nlong = argc > 4 ? std::atoi(argv[4]) : 2;
    const int ndeep = argc > 5 ? std::atoi(argv[5]) : 0;
    const bool finish = argc > 6 && std::atoi(argv[6]) != 0;
    Gen gen(seed);
    std::vector<Region> owned;
    for (int k = 0; k < nregions; ++k) {
        switch (k % 4) {
            case 0: owned.push_back(gen.region(gen.rnd(1, 12), gen.rnd(1, 4), 1, 40, 1, 80)); break;
            case 1: owned.push_back(gen.region(gen.rnd(1, 10), gen.rnd(1, 3), 30, 170, 40, 250)); break;
            case 2: owned.push_back(gen.region(gen.rnd(2, 8), gen.rnd(2, 3), 60, 80, 100, 170)); break;
            default: owned.push_back(gen.region(gen.rnd(1, 6), gen.rnd(1, 3), 1, 160, 1, 40)); break;
        }
    }
    for (int k = 0; k < nlong; ++k) owned.push_back(gen.region(gen.rnd(1, 3), gen.rnd(1, 2), 161, 700, 50, 400));
    for (int k = 0; k < ndeep; ++k) owned.push_back(gen.deep_region(8, 3));
    std::vector<pyphmm_pd_region> regions;
    for (const Region& g : owned) regions.push_back(g.view());

    long bad_entries = 0;
    int64_t computed = 0;
    std::vector<double> want = reference(regions, cpu::pd_sum_gpu_order, pd_uncertified());
    const std::vector<double> gkl = reference(regions, cpu::pd_sum_scalar, 0.0);
    std::vector<double> results;
    std::vector<PdCertify> certs;
    const std::vector<double> got = emulate(regions, 4, seed, finish, &bad_entries, &computed, &results, &certs);
    const double log10_ic = pd_tables().log10_initial_condition;
    if (finish)  // (what the kernel should have written)
        for (size_t i = 0; i < want.size(); ++i) want[i] = pd_checked_result(certs[i], want[i], log10_ic);
    int64_t mismatches = 0, special = 0, far = 0, recomputed = 0;
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double g = pd_result(gkl[i], log10_ic);
        if (std::isnan(results[i])) {  // (the dispatcher's part)
            results[i] = g;
            ++recomputed;
        }
        const double d = std::fabs(results[i] - g);
        if (std::isinf(g) != std::isinf(results[i]) || std::isnan(results[i]) || (std::isfinite(g) && d > 1e-10)) {
            if (++far <= 10) std::printf("pair %zu: GKL's log10 %.17g, the host's %.17g\n", i, g, results[i]);
        } else if (std::isfinite(g)) {
            worst = std::max(worst, d);
        }
        if (std::memcmp(&want[i], &got[i], 8) == 0) continue;
        if (++mismatches <= 10) std::printf("pair %zu: reference %.17g, kernel %.17g\n", i, want[i], got[i]);
    }
    for (const Region& g : owned)
        for (uint8_t p : g.pd) special += (p & (kPdBitDelStart | kPdBitDelEnd)) != 0;
    std::printf(
        "%zu pairs (%lld through the kernel, %lld deletion marks), %ld bad entries, %ld unmodelled calls, "
        "%lld mismatches, %lld results off GKL's (max |diff| %.2g), %lld recomputed\n",
        want.size(), (long long)computed, (long long)special, bad_entries, g_bad_calls, (long long)mismatches,
        (long long)far, worst, (long long)recomputed);
    return mismatches || far || bad_entries || g_bad_calls ? 1 : 0;
}
