// CUDA PairHMM backend: probe, memory pools, packing, launches.
//
// One call = one or more chunks. A chunk is packed on the host into one
// pinned buffer (header | pair descriptors sorted by read-length bin | packed
// read elements | haplotype base masks), sent with ONE H2D copy, computed by
// one launch per non-empty bin plus the double-precision pass, and returned
// with ONE D2H copy (header with the double-pass count | results by output
// index). Per-region calls are therefore one chunk, synchronous, with no
// allocation once the pools have grown. Whole-workload calls are cut into
// several chunks that alternate between two slots (stream + buffers) so the
// host packs chunk c+1 and unpacks chunk c-1 while the GPU computes chunk c.
//
// Precision (GKL's contract): every pair runs in float with 2^120; pairs
// whose float sum is < 1e-28 are appended to a device list by the float
// kernels and recomputed in double (2^1020) by a second kernel in the same
// stream, so no host round trip is needed. double_precision runs every pair
// in double.
//
// Threads: contexts (two slots each) live in a pool; each call borrows one,
// so concurrent callers never share streams or buffers. Buffers only grow.
// Every CUDA failure is returned as PYPHMM_E_INTERNAL / _E_NOMEM with the
// CUDA message; the dispatcher then recomputes the call on the CPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "../common/errors.h"
#include "../common/pack_elems.h"
#include "../common/tables.h"
#include "../common/thread_pool.h"
#include "cuda_backend.h"
#include "pairhmm_kernels.cuh"

namespace pyphmm {

using cudak::DevTables;
using cudak::KernelArgs;
using cudak::PairDesc;

namespace {

constexpr int kBlock = 128;
constexpr int kHapPad = 48;            // bytes readable past a haplotype's end (steps + prefetch)
constexpr int64_t kMaxChunkPairs = 1 << 20;
constexpr int64_t kMaxChunkReadElems = int64_t(1) << 27;
constexpr int64_t kMaxChunkHapBytes = int64_t(1) << 28;
constexpr int64_t kMinChunkCells = int64_t(1) << 30;   // below this a workload is one chunk

// ---------------------------------------------------------------- errors
struct CudaError {
    int code;
};

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            set_error(err, e_ == cudaErrorMemoryAllocation ? PYPHMM_E_NOMEM : PYPHMM_E_INTERNAL,  \
                      "CUDA error in %s: %s (%s)", #call, cudaGetErrorString(e_),                  \
                      cudaGetErrorName(e_));                                                       \
            cudaGetLastError();                                                                    \
            throw CudaError{err ? err->code : PYPHMM_E_INTERNAL};                                  \
        }                                                                                          \
    } while (0)

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
}

// Chunks of at most this many pairs get their results written by the
// kernels into mapped host memory (PYPHMM_CUDA_MAPPED_OUT=N overrides; 0
// turns it off). H100, 2,000 per-region calls: median latency 60.6 -> 56.7 us.
int64_t mapped_out_max_pairs() {
    static const int64_t v = [] {
        const char* e = std::getenv("PYPHMM_CUDA_MAPPED_OUT");
        return e && *e ? std::strtoll(e, nullptr, 10) : int64_t(4096);
    }();
    return v;
}

// PYPHMM_CUDA_ARITH=exact|fast (see pairhmm_kernels.cuh); default fast.
bool arith_is_fast() {
    const char* v = std::getenv("PYPHMM_CUDA_ARITH");
    if (!v || !*v || std::strcmp(v, "fast") == 0) return true;
    if (std::strcmp(v, "exact") == 0) return false;
    std::fprintf(stderr, "pyphmm: ignoring PYPHMM_CUDA_ARITH=%s (expected exact or fast); using fast\n", v);
    return true;
}

// ---------------------------------------------------------------- device tables
struct DeviceTables {
    DevTables<float> f;
    DevTables<double> d;
};
DeviceTables g_tables;
int g_num_sms = 1;

cudaError_t upload_tables() {
    const PairhmmTables<float>& tf = tables_float();
    const PairhmmTables<double>& td = tables_double();
    size_t fbytes = sizeof(tf.ph2pr) + sizeof(tf.match_to_match);
    size_t dbytes = sizeof(td.ph2pr) + sizeof(td.match_to_match);
    std::vector<char> host(fbytes + dbytes);
    std::memcpy(host.data(), tf.ph2pr, sizeof(tf.ph2pr));
    std::memcpy(host.data() + sizeof(tf.ph2pr), tf.match_to_match, sizeof(tf.match_to_match));
    std::memcpy(host.data() + fbytes, td.ph2pr, sizeof(td.ph2pr));
    std::memcpy(host.data() + fbytes + sizeof(td.ph2pr), td.match_to_match, sizeof(td.match_to_match));
    char* dev = nullptr;
    cudaError_t e = cudaMalloc(&dev, host.size());
    if (e != cudaSuccess) return e;
    e = cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return e;
    g_tables.f.ph2pr = reinterpret_cast<const float*>(dev);
    g_tables.f.mm = reinterpret_cast<const float*>(dev + sizeof(tf.ph2pr));
    g_tables.f.ic = tf.initial_constant;
    g_tables.f.log10_ic = tf.log10_initial_constant;
    g_tables.d.ph2pr = reinterpret_cast<const double*>(dev + fbytes);
    g_tables.d.mm = reinterpret_cast<const double*>(dev + fbytes + sizeof(td.ph2pr));
    g_tables.d.ic = td.initial_constant;
    g_tables.d.log10_ic = td.log10_initial_constant;
    return cudaSuccess;
}

// ---------------------------------------------------------------- kernels
template <typename T, int P, int K, bool STRIPED, int AR, int TR = cudak::kRowTr>
struct Kern {
    static void* fn() {
        return reinterpret_cast<void*>(&cudak::pairhmm_kernel<T, P, K, STRIPED, AR, TR, kBlock>);
    }
    static int max_blocks_per_sm() {
        static const int v = [] {
            int b = 0;
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &b, cudak::pairhmm_kernel<T, P, K, STRIPED, AR, TR, kBlock>, kBlock, 0) != cudaSuccess ||
                b < 1) {
                cudaGetLastError();
                b = 1;
            }
            return b;
        }();
        return v;
    }
    // Groups a persistent launch uses (striped kernels need one scratch slot each).
    static int persistent_blocks() { return max_blocks_per_sm() * g_num_sms; }
    static int launch(const KernelArgs<T>& a, int blocks, cudaStream_t s) {
        cudak::pairhmm_kernel<T, P, K, STRIPED, AR, TR, kBlock><<<blocks, kBlock, 0, s>>>(a);
        return 0;
    }
};

// Read-length bins. Each maps reads up to max_rows to one instantiation.
struct BinSpec {
    int max_rows;      // INT32_MAX for the general (striped) bin
    int P, K;
};
constexpr int kFloatBins = 9;
constexpr BinSpec kFloatBinSpec[kFloatBins] = {{16, 4, 4},   {32, 4, 8},   {64, 8, 8},
                                               {96, 16, 6},  {128, 16, 8}, {160, 16, 10},
                                               {256, 32, 8}, {512, 32, 16}, {INT32_MAX, 32, 8}};
constexpr int kFusedBins = 7;  // bins 0..6 run in one fused launch (pairhmm_fused_kernel)
constexpr int kLatencyBins = 6;  // bins 0..5 have latency variants (cudak::kLatencyBin)
constexpr int kDoubleBins = 4;
constexpr BinSpec kDoubleBinSpec[kDoubleBins] = {{16, 4, 4}, {32, 8, 4}, {64, 16, 4}, {INT32_MAX, 32, 4}};
// Fast-arithmetic float pairs whose read has one insertion, deletion and gap
// quality for all rows (GATK's usual data) go to the UNIFORM kernels, which
// hold those constants as scalars (fewer registers, more warps per SM): bin
// b + kFloatBins for the non-striped float bins b.
constexpr int kUniformBins = kFloatBins - 1;
// Uniform pairs whose triple is the call's chosen one (GapChoice) go to the
// kConstTr fused kernel: bin b + kConstBin0 for the fused bins b.
constexpr int kConstBin0 = kFloatBins + kUniformBins;
constexpr int kNumBins = kConstBin0 + kFusedBins;

// The transition-quality triple of a call's kConstTr launch. Chosen once per
// call (all chunks alike): the triple of the call's first read if that read
// is uniform, else GATK's defaults (45, 45, 10); `on` is false where X' could
// overflow float (see cudak::GapConsts) or for the double and exact modes.
struct GapChoice {
    bool on = false;
    int ins = 0, del = 0, gcp = 0;
    cudak::GapConsts c{};
    bool matches(const pyphmm_region& g, int64_t ro) const {
        return on && (g.read_ins[ro] & 127) == ins && (g.read_dels[ro] & 127) == del && (g.read_gcp[ro] & 127) == gcp;
    }
};

int bin_of(int m, bool dbl, bool uniform, bool cst) {
    const BinSpec* spec = dbl ? kDoubleBinSpec : kFloatBinSpec;
    int nb = dbl ? kDoubleBins : kFloatBins;
    for (int b = 0; b < nb - 1; ++b)
        if (m <= spec[b].max_rows) return cst && b < kFusedBins ? b + kConstBin0 : uniform ? b + kFloatBins : b;
    return nb - 1;
}

// Whether every row of a read has the same insertion, deletion and gap
// continuation quality (no early exit: the loop vectorises).
bool uniform_transitions(const pyphmm_region& g, int64_t ro, int m) {
    const uint8_t *ins = g.read_ins + ro, *del = g.read_dels + ro, *gcp = g.read_gcp + ro;
    unsigned diff = 0;
    for (int i = 1; i < m; ++i) diff |= (ins[i] ^ ins[0]) | (del[i] ^ del[0]) | (gcp[i] ^ gcp[0]);
    return (diff & 127u) == 0;
}

// The constants of a triple, from the same float tables (and the same float
// operations) as the kernels' per-pair path.
GapChoice make_gap_choice(int ins, int del, int gcp) {
    const PairhmmTables<float>& t = tables_float();
    GapChoice g;
    g.ins = ins;
    g.del = del;
    g.gcp = gcp;
    cudak::GapConsts& c = g.c;
    c.mx = t.ph2pr[ins];
    c.my = t.ph2pr[del];
    c.cc = t.ph2pr[gcp];
    c.gm = 1.0f - c.cc;
    c.mm = t.match_to_match[mm_index(ins, del)];
    // (see cudak::GapConsts) X' <= IC * mx * cc^-(B-1) / gm must stay below 2^126.
    const double cc = c.cc, B = cudak::kConstBlock;
    if (!(c.gm > 0.0f) || !(cc > 0.0) || c.mx * std::pow(cc, -(B - 1)) / c.gm > 64.0) return g;
    c.mmg = c.mm / c.gm;
    for (int i = 0; i <= cudak::kConstBlock; ++i) {
        c.pw[i] = static_cast<float>(std::pow(cc, i));
        c.gpw[i] = static_cast<float>(static_cast<double>(c.gm) * std::pow(cc, i));
    }
    for (int i = 0; i < cudak::kConstBlock; ++i) c.xs[i] = static_cast<float>(c.mx * std::pow(cc, -i));
    g.on = true;
    return g;
}

GapChoice choose_gaps(const pyphmm_region* regions, int64_t num_regions) {
    static const bool off = std::getenv("PYPHMM_CUDA_CONST_GAPS") && !env_flag("PYPHMM_CUDA_CONST_GAPS");
    if (off) return GapChoice{};
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        if (!g.num_reads || !g.num_haps) continue;
        const int64_t ro = g.read_offsets[0];
        const int m = static_cast<int>(g.read_offsets[1] - ro);
        if (m > 0 && uniform_transitions(g, ro, m)) {
            GapChoice c = make_gap_choice(g.read_ins[ro] & 127, g.read_dels[ro] & 127, g.read_gcp[ro] & 127);
            if (c.on) return c;
        }
        break;
    }
    return make_gap_choice(45, 45, 10);
}

int groups_grid(int64_t count, int P) { return static_cast<int>((count + (kBlock / P) - 1) / (kBlock / P)); }

// Float pass of one kind (TR: per-row, uniform or constant transitions):
// bins 0..6 in one fused launch, the long-read bins (not kConstTr) on their
// own. `bin_start`/`bin_count` point at that kind's bins.
template <bool FAST, int TR>
void launch_float(KernelArgs<float> a, const int64_t* bin_start, const int64_t* bin_count, cudaStream_t s,
                  pyphmm_error* err) {
    static_assert(TR != cudak::kConstTr || FAST, "constant transitions: fast arithmetic only");
    if constexpr (TR == cudak::kRowTr) {
        if (bin_count[8]) {
            typedef Kern<float, 32, 8, true, FAST ? cudak::kFma : cudak::kExact> G;
            a.first = static_cast<int>(bin_start[8]);
            a.count = static_cast<int>(bin_count[8]);
            G::launch(a, std::min(groups_grid(a.count, 32), G::persistent_blocks()), s);
            CK(cudaGetLastError());
        }
    }
    if constexpr (TR != cudak::kConstTr) {
        if (bin_count[7]) {
            a.first = static_cast<int>(bin_start[7]);
            a.count = static_cast<int>(bin_count[7]);
            Kern<float, 32, 16, false, FAST ? cudak::kFma : cudak::kExact, TR>::launch(a, groups_grid(a.count, 32),
                                                                                       s);
            CK(cudaGetLastError());
        }
    }
    // A call small enough to run every pair as a whole warp within one wave
    // (512 resident threads per SM at these kernels' 128 registers; GATK's
    // per-region calls mostly) is latency-bound: its time is one pair's
    // steps x rows per lane. Bins 0..5 then run their latency variants, one
    // warp per pair (P = 32, K = rows / 32): less serial work per lane.
    int64_t pairs = 0;
    for (int b = 0; b < kFusedBins; ++b) pairs += bin_count[b];
    const bool latency = pairs * 32 <= static_cast<int64_t>(g_num_sms) * 512;
    cudak::FusedPlan plan{};
    int blocks = 0;
    for (int b = kFusedBins - 1; b >= 0; --b) {  // longest reads first
        if (!bin_count[b]) continue;
        const bool lat = latency && b < kLatencyBins;
        int i = plan.nb++;
        plan.bin[i] = lat ? cudak::kLatencyBin + b : b;
        plan.first[i] = static_cast<int>(bin_start[b]);
        plan.count[i] = static_cast<int>(bin_count[b]);
        plan.block_start[i] = blocks;
        blocks += groups_grid(bin_count[b], lat ? 32 : kFloatBinSpec[b].P);
    }
    plan.block_start[plan.nb] = blocks;
    if (plan.nb) {
        cudak::pairhmm_fused_kernel<FAST, TR, kBlock><<<blocks, kBlock, 0, s>>>(a, plan);
        CK(cudaGetLastError());
    }
}

typedef Kern<double, 32, 4, true, false> DoubleGeneral;

void launch_double_bin(int b, KernelArgs<double> a, int blocks_cap, cudaStream_t s) {
    auto grid = [&](int P) { return static_cast<int>((a.count + (kBlock / P) - 1) / (kBlock / P)); };
    switch (b) {
        case 0: Kern<double, 4, 4, false, false>::launch(a, grid(4), s); break;
        case 1: Kern<double, 8, 4, false, false>::launch(a, grid(8), s); break;
        case 2: Kern<double, 16, 4, false, false>::launch(a, grid(16), s); break;
        default: DoubleGeneral::launch(a, std::min(grid(32), blocks_cap), s);
    }
}

int float_general_blocks(bool fast) {
    return fast ? Kern<float, 32, 8, true, cudak::kFma>::persistent_blocks()
                : Kern<float, 32, 8, true, cudak::kExact>::persistent_blocks();
}

// ---------------------------------------------------------------- pools
struct DevBuf {
    void* p = nullptr;
    size_t cap = 0;
    void ensure(size_t bytes, pyphmm_error* err) {
        if (bytes <= cap) return;
        size_t want = std::max(bytes, cap + cap / 2);
        if (p) cudaFree(p);
        p = nullptr;
        cap = 0;
        cudaError_t e = cudaMalloc(&p, want);
        if (e != cudaSuccess) {
            cudaGetLastError();
            p = nullptr;
            e = cudaMalloc(&p, bytes);  // retry without headroom
            want = bytes;
        }
        CK(e);
        cap = want;
    }
};

struct HostBuf {
    char* p = nullptr;
    char* dev = nullptr;  // the same memory as the GPU addresses it (mapped)
    size_t cap = 0;
    void ensure(size_t bytes, pyphmm_error* err) {
        if (bytes <= cap) return;
        size_t want = std::max(bytes, cap + cap / 2);
        if (p) cudaFreeHost(p);
        p = nullptr;
        cap = 0;
        CK(cudaHostAlloc(reinterpret_cast<void**>(&p), want, cudaHostAllocMapped));
        cap = want;
        CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), p, 0));
    }
};

struct Slot {
    cudaStream_t stream = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    DevBuf din, dout, dscratch;
    HostBuf hin, hout;
    // the chunk in flight
    bool pending = false;
    double* user_out = nullptr;
    int64_t npairs = 0;
    bool timed = false;
};

struct Context {
    Slot slot[2];
    cudaEvent_t first = nullptr;  // PYPHMM_CUDA_TIMING: before the call's first kernel
};

std::mutex g_pool_mutex;
std::vector<Context*> g_pool;

Context* acquire_context(pyphmm_error* err) {
    {
        std::lock_guard<std::mutex> lock(g_pool_mutex);
        if (!g_pool.empty()) {
            Context* c = g_pool.back();
            g_pool.pop_back();
            return c;
        }
    }
    Context* c = new Context();
    for (Slot& s : c->slot) {
        CK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
        CK(cudaEventCreate(&s.ev0));
        CK(cudaEventCreate(&s.ev1));
    }
    CK(cudaEventCreate(&c->first));
    return c;
}

void release_context(Context* c) {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    g_pool.push_back(c);
}

// PYPHMM_CUDA_TIMING=1 (or pyphmm_cuda_set_timing): CUDA events around
// the kernels and host-phase timers. Costs a few microseconds per call.
std::atomic<bool> g_timing{env_flag("PYPHMM_CUDA_TIMING")};

// GPU time of the last call on this thread (when timing).
thread_local double t_last_kernel_seconds = 0;

// Pairs of the last call on this thread that ran in the kConstTr kernels
// (tests check the dispatch with it).
thread_local int64_t t_last_const_pairs = 0;

// Host-side phases of the last call on this thread (PYPHMM_CUDA_TIMING=1):
// setup (plan, context), pack, enqueue (copies, launches), wait (stream
// sync), copy-out; seconds, summed over the call's chunks. For benchmarks.
enum Phase { kSetup, kPack, kEnqueue, kWait, kCopyOut, kPhases };
thread_local double t_last_phases[kPhases] = {};
using Clock = std::chrono::steady_clock;
inline void lap(bool on, Clock::time_point& t, Phase p) {
    if (!on) return;
    const Clock::time_point now = Clock::now();
    t_last_phases[p] += std::chrono::duration<double>(now - t).count();
    t = now;
}

// ---------------------------------------------------------------- packing
// A piece of a region: reads [r0, r1) against all its haplotypes.
struct Piece {
    int64_t region;
    int32_t r0, r1;
    int64_t out_first;   // global output index of (r0, 0)
};

struct Chunk {
    std::vector<Piece> pieces;
    int64_t pairs = 0, read_elems = 0, hap_bytes = 0, out_first = 0;
};

inline int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

int64_t hap_stride(int64_t n) { return round_up(n, 4) + kHapPad; }

struct Layout {
    size_t desc_off, read_off, hap_off, in_bytes, list_off, dev_in_bytes, out_bytes;
};

Layout layout_of(const Chunk& c) {
    Layout L;
    L.desc_off = 16;
    L.read_off = round_up(L.desc_off + c.pairs * sizeof(PairDesc), 16);
    L.hap_off = round_up(L.read_off + c.read_elems * 4, 16);
    L.in_bytes = round_up(L.hap_off + c.hap_bytes, 16);
    L.list_off = L.in_bytes;
    L.dev_in_bytes = L.list_off + c.pairs * sizeof(int);
    L.out_bytes = 16 + c.pairs * sizeof(double);
    return L;
}

// Where one piece's data goes in the chunk's buffer: its first read element,
// first haplotype byte and, per bin, its first descriptor.
struct PieceCursor {
    int64_t rpos = 0, hpos = 0;
    int64_t bin[kNumBins] = {};
};

// Packs one piece: its haplotypes (base planes A=0 C=1 G=2 T=3 N=4, zero-padded), its reads and
// one descriptor per (read, haplotype) into its bins. Returns the longest
// haplotype.
int pack_piece(const pyphmm_region& g, const Piece& p, int64_t out, PieceCursor cur, const uint8_t* read_bin,
               PairDesc* desc, uint32_t* relem, uint8_t* hbytes) {
    int mn = 1;
    std::vector<uint32_t> hoff(g.num_haps), hlen(g.num_haps);
    for (int32_t h = 0; h < g.num_haps; ++h) {
        const uint8_t* src = g.hap_bases + g.hap_offsets[h];
        const int64_t n = g.hap_offsets[h + 1] - g.hap_offsets[h];
        hoff[h] = static_cast<uint32_t>(cur.hpos);
        hlen[h] = static_cast<uint32_t>(n);
        uint8_t* dst = hbytes + cur.hpos;
        pack_base_planes(src, n, dst);
        std::memset(dst + n, 0, hap_stride(n) - n);
        cur.hpos += hap_stride(n);
        mn = std::max<int>(mn, static_cast<int>(n));
    }
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int64_t ro = g.read_offsets[r];
        const int m = static_cast<int>(g.read_offsets[r + 1] - ro);
        pack_read_elems(g.read_bases + ro, g.read_quals + ro, g.read_ins + ro, g.read_dels + ro, g.read_gcp + ro, m,
                        relem + cur.rpos);
        int64_t& slot = cur.bin[read_bin[r - p.r0]];
        for (int32_t h = 0; h < g.num_haps; ++h) {
            PairDesc& d = desc[slot++];
            d.roff = static_cast<uint32_t>(cur.rpos);
            d.hoff = hoff[h];
            d.m = m;
            d.n = static_cast<int32_t>(hlen[h]);
            d.out = static_cast<int32_t>(out++);
        }
        cur.rpos += m;
    }
    return mn;
}

// Pass 1 for one piece: the bin of each of its reads, and its sizes (read
// elements, haplotype bytes, pairs per bin) as a cursor relative to 0.
PieceCursor size_piece(const pyphmm_region& g, const Piece& p, bool dbl, bool uni, const GapChoice& gaps,
                       uint8_t* read_bin) {
    PieceCursor sz;
    for (int32_t h = 0; h < g.num_haps; ++h) sz.hpos += hap_stride(g.hap_offsets[h + 1] - g.hap_offsets[h]);
    for (int32_t r = p.r0; r < p.r1; ++r) {
        const int64_t ro = g.read_offsets[r];
        const int m = static_cast<int>(g.read_offsets[r + 1] - ro);
        const bool u = uni && uniform_transitions(g, ro, m);
        const int b = bin_of(m, dbl, u, u && gaps.matches(g, ro));
        read_bin[r - p.r0] = static_cast<uint8_t>(b);
        sz.rpos += m;
        sz.bin[b] += g.num_haps;
    }
    return sz;
}

// Fills the pinned input buffer; returns per-bin [start, count) and the
// longest haplotype. Pass 1 sizes every piece, pass 2 packs them, each in
// parallel over pieces (whole workloads have thousands); in between, prefix
// sums tell each piece where its data goes.
void pack_chunk(const pyphmm_region* regions, const Chunk& c, const Layout& L, bool dbl, bool uni,
                const GapChoice& gaps, char* buf, int64_t bin_start[kNumBins], int64_t bin_count[kNumBins],
                int* max_n) {
    std::memset(buf, 0, 16);
    PairDesc* desc = reinterpret_cast<PairDesc*>(buf + L.desc_off);
    uint32_t* relem = reinterpret_cast<uint32_t*>(buf + L.read_off);
    uint8_t* hbytes = reinterpret_cast<uint8_t*>(buf + L.hap_off);
    const int64_t np = static_cast<int64_t>(c.pieces.size());
    std::vector<int64_t> read_first(np + 1, 0);  // the pieces' reads in read_bin
    for (int64_t k = 0; k < np; ++k) read_first[k + 1] = read_first[k] + c.pieces[k].r1 - c.pieces[k].r0;
    std::vector<uint8_t> read_bin(read_first[np]);
    std::vector<PieceCursor> cur(np);
    std::vector<int> longest(np, 1);
    std::atomic<bool> no_memory{false};
    auto each_piece = [&](auto&& fn) {  // parallel_for's fn must not throw
        auto guarded = [&](int64_t k) {
            try {
                fn(k);
            } catch (const std::bad_alloc&) {
                no_memory = true;
            }
        };
        if (np > 1 && c.pairs >= 4096)  // per-region calls (one piece) stay on the calling thread
            parallel_for(np, 0, guarded);
        else
            for (int64_t k = 0; k < np; ++k) guarded(k);
        if (no_memory) throw std::bad_alloc();
    };
    each_piece([&](int64_t k) {
        cur[k] = size_piece(regions[c.pieces[k].region], c.pieces[k], dbl, uni, gaps, read_bin.data() + read_first[k]);
    });
    PieceCursor total;
    for (PieceCursor& pc : cur) {  // sizes -> starts (per bin: relative to the bin's start)
        PieceCursor sz = pc;
        pc = total;
        total.rpos += sz.rpos;
        total.hpos += sz.hpos;
        for (int b = 0; b < kNumBins; ++b) total.bin[b] += sz.bin[b];
    }
    int64_t acc = 0;
    for (int b = 0; b < kNumBins; ++b) {
        bin_start[b] = acc;
        bin_count[b] = total.bin[b];
        acc += total.bin[b];
    }
    for (PieceCursor& pc : cur)
        for (int b = 0; b < kNumBins; ++b) pc.bin[b] += bin_start[b];
    each_piece([&](int64_t k) {
        const Piece& p = c.pieces[k];
        longest[k] = pack_piece(regions[p.region], p, p.out_first - c.out_first, cur[k],
                                read_bin.data() + read_first[k], desc, relem, hbytes);
    });
    *max_n = *std::max_element(longest.begin(), longest.end());
}

// Cuts the work into chunks: region pieces, bounded by pair count, bytes and cells.
std::vector<Chunk> plan_chunks(const pyphmm_region* regions, int64_t num_regions, int64_t total_cells) {
    const int64_t cell_target = std::max(kMinChunkCells, total_cells / 6 + 1);
    std::vector<Chunk> chunks(1);
    int64_t out = 0, cells = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        if (g.num_reads == 0 || g.num_haps == 0) continue;
        int64_t hap_bytes = 0, hap_bases = 0;
        for (int32_t h = 0; h < g.num_haps; ++h) {
            int64_t n = g.hap_offsets[h + 1] - g.hap_offsets[h];
            hap_bytes += hap_stride(n);
            hap_bases += n;
        }
        int32_t r = 0;
        bool full = false;  // the previous piece of this region stopped at a limit
        while (r < g.num_reads) {
            Chunk* c = &chunks.back();
            int64_t m0 = g.read_offsets[r + 1] - g.read_offsets[r];
            if (c->pairs > 0 && (full || c->hap_bytes + hap_bytes > kMaxChunkHapBytes || cells >= cell_target ||
                                 c->pairs + g.num_haps > kMaxChunkPairs ||
                                 c->read_elems + m0 > kMaxChunkReadElems)) {
                chunks.emplace_back();
                chunks.back().out_first = out;
                cells = 0;
                c = &chunks.back();
            }
            Piece p{k, r, r, out};
            c->hap_bytes += hap_bytes;
            while (r < g.num_reads) {
                int64_t m = g.read_offsets[r + 1] - g.read_offsets[r];
                if (p.r1 > p.r0 && (c->pairs + g.num_haps > kMaxChunkPairs ||
                                    c->read_elems + m > kMaxChunkReadElems || cells >= cell_target))
                    break;
                c->pairs += g.num_haps;
                c->read_elems += m;
                cells += m * hap_bases;
                out += g.num_haps;
                ++r;
                ++p.r1;
            }
            c->pieces.push_back(p);
            full = r < g.num_reads;
        }
    }
    return chunks;
}

// ---------------------------------------------------------------- execution
struct CallState {
    bool dbl;
    bool fast;
    bool timing;
    GapChoice gaps;  // fast float calls: the kConstTr launch's triple
    int64_t double_pairs = 0;
    int64_t const_pairs = 0;
    cudaEvent_t first = nullptr;
    bool first_recorded = false;
    std::vector<std::pair<double, double>> busy;  // kernel intervals of the chunks (timing)

    // Time the GPU spent in kernels: the union of the chunks' intervals
    // (the two streams overlap, so a plain sum would count twice).
    double busy_seconds() {
        std::sort(busy.begin(), busy.end());
        double total = 0, lo = 0, hi = -1;
        for (auto& iv : busy) {
            if (iv.first > hi) {
                if (hi > lo) total += hi - lo;
                lo = iv.first;
                hi = iv.second;
            } else {
                hi = std::max(hi, iv.second);
            }
        }
        if (hi > lo) total += hi - lo;
        return total;
    }
};

// Waits for a slot's chunk and copies its results out.
void finish_slot(Slot& s, CallState& st, pyphmm_error* err) {
    if (!s.pending) return;
    s.pending = false;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    CK(cudaStreamSynchronize(s.stream));
    lap(st.timing, t, kWait);
    int32_t count = 0;
    std::memcpy(&count, s.hout.p, sizeof(count));
    st.double_pairs += st.dbl ? s.npairs : count;
    std::memcpy(s.user_out, s.hout.p + 16, s.npairs * sizeof(double));
    lap(st.timing, t, kCopyOut);
    if (s.timed) {  // this chunk's kernels as an interval since the call's first kernel
        float a = 0, b = 0;
        CK(cudaEventElapsedTime(&a, st.first, s.ev0));
        CK(cudaEventElapsedTime(&b, st.first, s.ev1));
        st.busy.emplace_back(a * 1e-3, b * 1e-3);
    }
}

void run_chunk(const pyphmm_region* regions, const Chunk& c, Slot& s, double* out, CallState& st,
               pyphmm_error* err) {
    const Layout L = layout_of(c);
    s.hin.ensure(L.in_bytes, err);
    s.hout.ensure(L.out_bytes, err);
    s.din.ensure(L.dev_in_bytes, err);
    s.dout.ensure(L.out_bytes, err);
    int64_t bin_start[kNumBins], bin_count[kNumBins];
    int max_n = 1;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    pack_chunk(regions, c, L, st.dbl, !st.dbl && st.fast, st.gaps, s.hin.p, bin_start, bin_count, &max_n);
    lap(st.timing, t, kPack);
    for (int b = kConstBin0; b < kNumBins; ++b) st.const_pairs += bin_count[b];

    char* din = static_cast<char*>(s.din.p);
    // Small chunks (per-region calls) have the kernels write their results
    // straight into the pinned host buffer: one copy fewer to wait for.
    const bool mapped = c.pairs <= mapped_out_max_pairs();
    char* dout = mapped ? s.hout.dev : static_cast<char*>(s.dout.p);
    const PairDesc* pairs = reinterpret_cast<const PairDesc*>(din + L.desc_off);
    const uint32_t* reads = reinterpret_cast<const uint32_t*>(din + L.read_off);
    const uint8_t* haps = reinterpret_cast<const uint8_t*>(din + L.hap_off);
    int* counter = reinterpret_cast<int*>(din);
    int* list = reinterpret_cast<int*>(din + L.list_off);
    int* header = reinterpret_cast<int*>(dout);
    double* results = reinterpret_cast<double*>(dout + 16);

    // Scratch for the striped kernels: one slot of 3 rows per resident group.
    const int stride = static_cast<int>(round_up(max_n + 2, 32));
    const int dbl_blocks = DoubleGeneral::persistent_blocks();
    const int float_blocks = float_general_blocks(st.fast);
    size_t scratch_bytes = std::max(static_cast<size_t>(dbl_blocks) * (kBlock / 32) * 3 * stride * sizeof(double),
                                    static_cast<size_t>(float_blocks) * (kBlock / 32) * 3 * stride * sizeof(float));
    s.dscratch.ensure(scratch_bytes, err);

    CK(cudaMemcpyAsync(din, s.hin.p, L.in_bytes, cudaMemcpyHostToDevice, s.stream));
    if (st.timing) {
        if (!st.first_recorded) CK(cudaEventRecord(st.first, s.stream));
        st.first_recorded = true;
        CK(cudaEventRecord(s.ev0, s.stream));
    }
    if (!st.dbl) {
        KernelArgs<float> a{};
        a.pairs = pairs;
        a.reads = reads;
        a.haps = haps;
        a.tab = g_tables.f;
        a.out = results;
        a.under_list = list;
        a.under_count = counter;
        a.scratch = static_cast<float*>(s.dscratch.p);
        a.scratch_stride = stride;
        a.gc = st.gaps.c;
        if (st.fast) {
            launch_float<true, cudak::kRowTr>(a, bin_start, bin_count, s.stream, err);
            launch_float<true, cudak::kUniformTr>(a, bin_start + kFloatBins, bin_count + kFloatBins, s.stream, err);
            launch_float<true, cudak::kConstTr>(a, bin_start + kConstBin0, bin_count + kConstBin0, s.stream, err);
        } else {
            launch_float<false, cudak::kRowTr>(a, bin_start, bin_count, s.stream, err);
        }
        KernelArgs<double> d{};
        d.pairs = pairs;
        d.count_ptr = counter;
        d.index = list;
        d.reads = reads;
        d.haps = haps;
        d.tab = g_tables.d;
        d.out = results;
        d.header_count = header;
        d.scratch = static_cast<double*>(s.dscratch.p);
        d.scratch_stride = stride;
        d.count = static_cast<int>(c.pairs);  // upper bound, only for the grid size
        launch_double_bin(kDoubleBins - 1, d, dbl_blocks, s.stream);
        CK(cudaGetLastError());
    } else {
        KernelArgs<double> d{};
        d.pairs = pairs;
        d.reads = reads;
        d.haps = haps;
        d.tab = g_tables.d;
        d.out = results;
        d.scratch = static_cast<double*>(s.dscratch.p);
        d.scratch_stride = stride;
        for (int b = kDoubleBins - 1; b >= 0; --b) {
            if (!bin_count[b]) continue;
            d.first = static_cast<int>(bin_start[b]);
            d.count = static_cast<int>(bin_count[b]);
            launch_double_bin(b, d, dbl_blocks, s.stream);
            CK(cudaGetLastError());
        }
    }
    if (st.timing) CK(cudaEventRecord(s.ev1, s.stream));
    if (!mapped) CK(cudaMemcpyAsync(s.hout.p, dout, L.out_bytes, cudaMemcpyDeviceToHost, s.stream));
    lap(st.timing, t, kEnqueue);
    s.pending = true;
    s.user_out = out + c.out_first;
    s.npairs = c.pairs;
    s.timed = st.timing;
}

}  // namespace

// ---------------------------------------------------------------- probe
const CudaProbe& cuda_probe() {
    static const CudaProbe probe = [] {
        CudaProbe p;
        p.compiled = true;
        auto fail = [&p](const char* fmt, const char* a, int x, int y) {
            std::snprintf(p.status, sizeof(p.status), fmt, a, x, y);
            p.usable = false;
            cudaGetLastError();
        };
        try {
            int want = 0;
            const char* env = std::getenv("PYPHMM_DEVICE");
            if (env && *env) {
                char* end = nullptr;
                long v = std::strtol(env, &end, 10);
                if (*end != '\0' || v < 0 || v > 1024) {
                    fail("PYPHMM_DEVICE=%s is not a device ordinal%.0d%.0d", env, 0, 0);
                    return p;
                }
                want = static_cast<int>(v);
            }
            int count = 0;
            cudaError_t e = cudaGetDeviceCount(&count);
            if (e != cudaSuccess) {
                fail("no usable CUDA driver or device: %s%.0d%.0d", cudaGetErrorString(e), 0, 0);
                return p;
            }
            p.device_count = count;
            if (count <= 0) {
                fail("no CUDA device%s%.0d%.0d", "", 0, 0);
                return p;
            }
            if (want >= count) {
                fail("PYPHMM_DEVICE=%s but this machine has %d CUDA device(s)%.0d", env, count, 0);
                return p;
            }
            cudaDeviceProp prop;
            e = cudaGetDeviceProperties(&prop, want);
            if (e != cudaSuccess) {
                fail("cannot query CUDA device: %s%.0d%.0d", cudaGetErrorString(e), 0, 0);
                return p;
            }
            std::snprintf(p.name, sizeof(p.name), "%s", prop.name);
            if (prop.major < 8) {
                fail("%s has compute capability %d.%d; pyphmm's kernels need 8.0 or newer", prop.name,
                     prop.major, prop.minor);
                return p;
            }
            if ((e = cudaSetDevice(want)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess) {
                fail("cannot initialise CUDA device: %s%.0d%.0d", cudaGetErrorString(e), 0, 0);
                return p;
            }
            cudaFuncAttributes attr;
            e = cudaFuncGetAttributes(&attr, Kern<float, 16, 8, false, false>::fn());
            if (e != cudaSuccess) {
                fail("no kernel image for this GPU: %s%.0d%.0d", cudaGetErrorString(e), 0, 0);
                return p;
            }
            if ((e = upload_tables()) != cudaSuccess) {
                fail("cannot upload PairHMM tables: %s%.0d%.0d", cudaGetErrorString(e), 0, 0);
                return p;
            }
            g_num_sms = std::max(1, prop.multiProcessorCount);
            p.usable = true;
            p.device = want;
            std::snprintf(p.status, sizeof(p.status), "CUDA device %d: %s (compute %d.%d, %d SMs, %zu MiB)", want,
                          prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                          static_cast<size_t>(prop.totalGlobalMem >> 20));
        } catch (...) {
            p.usable = false;
            std::snprintf(p.status, sizeof(p.status), "CUDA probe failed with an exception");
        }
        return p;
    }();
    return probe;
}

// ---------------------------------------------------------------- entry
int cuda_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, bool double_precision,
                 pyphmm_stats* stats, pyphmm_error* err) {
    const auto start = std::chrono::steady_clock::now();
    const CudaProbe& probe = cuda_probe();
    if (!probe.usable) return set_error(err, PYPHMM_E_UNAVAILABLE, "CUDA backend: %s", probe.status);
    static const bool inject = env_flag("PYPHMM_CUDA_INJECT_FAILURE");
    if (inject) return set_error(err, PYPHMM_E_INTERNAL, "injected failure (PYPHMM_CUDA_INJECT_FAILURE)");
    static const bool fast = arith_is_fast();
    const bool timing = g_timing.load(std::memory_order_relaxed);

    int64_t total_pairs = 0, total_cells = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        total_pairs += static_cast<int64_t>(g.num_reads) * g.num_haps;
        if (g.num_reads && g.num_haps)
            total_cells += (g.read_offsets[g.num_reads] - g.read_offsets[0]) *
                           (g.hap_offsets[g.num_haps] - g.hap_offsets[0]);
    }
    CallState st{double_precision, fast, timing};
    if (fast && !double_precision && total_pairs > 0) st.gaps = choose_gaps(regions, num_regions);
    if (timing) std::fill(t_last_phases, t_last_phases + kPhases, 0.0);
    Clock::time_point t_setup = Clock::now();
    if (total_pairs > 0) {
        Context* ctx = nullptr;
        try {
            cudaError_t e = cudaSetDevice(probe.device);
            if (e != cudaSuccess)
                return set_error(err, PYPHMM_E_INTERNAL, "cudaSetDevice: %s", cudaGetErrorString(e));
            ctx = acquire_context(err);
            st.first = ctx->first;
            std::vector<Chunk> chunks = plan_chunks(regions, num_regions, total_cells);
            lap(timing, t_setup, kSetup);
            for (size_t c = 0; c < chunks.size(); ++c) {
                Slot& s = ctx->slot[c & 1];
                finish_slot(s, st, err);
                run_chunk(regions, chunks[c], s, out, st, err);
            }
            finish_slot(ctx->slot[chunks.size() & 1], st, err);
            finish_slot(ctx->slot[(chunks.size() + 1) & 1], st, err);
            release_context(ctx);
        } catch (const CudaError& ce) {
            if (ctx) {
                for (Slot& s : ctx->slot) {
                    cudaStreamSynchronize(s.stream);
                    s.pending = false;
                }
                cudaGetLastError();
                release_context(ctx);
            }
            return ce.code;
        } catch (const std::bad_alloc&) {
            if (ctx) {
                for (Slot& s : ctx->slot) {
                    cudaStreamSynchronize(s.stream);
                    s.pending = false;
                }
                release_context(ctx);
            }
            return set_error(err, PYPHMM_E_NOMEM, "out of host memory in the CUDA backend");
        }
    }
    t_last_kernel_seconds = st.busy_seconds();
    t_last_const_pairs = st.const_pairs;
    if (stats) {
        stats->pairs = total_pairs;
        stats->cells = total_cells;
        stats->double_pairs = st.double_pairs;
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm

// GPU time of the last cuda_pairhmm call on this thread: the time at least
// one of its kernels was running (union over chunks and both streams;
// needs PYPHMM_CUDA_TIMING=1). For benchmarks;
// not part of the ABI (load it with ctypes).
extern "C" __attribute__((visibility("default"))) double pyphmm_cuda_last_kernel_seconds(void) {
    return pyphmm::t_last_kernel_seconds;
}

extern "C" __attribute__((visibility("default"))) int64_t pyphmm_cuda_last_const_pairs(void) {
    return pyphmm::t_last_const_pairs;
}

// Host-side phases of the last call on this thread (see t_last_phases):
// writes 5 values (setup, pack, enqueue, wait, copy-out seconds). For
// benchmarks; not part of the ABI.
extern "C" __attribute__((visibility("default"))) void pyphmm_cuda_last_phases(double* out) {
    for (int i = 0; i < pyphmm::kPhases; ++i) out[i] = pyphmm::t_last_phases[i];
}

// Turns the timing above on or off for later calls (benchmarks measure
// kernel times with it, then the calls' own speed without it).
extern "C" __attribute__((visibility("default"))) void pyphmm_cuda_set_timing(int on) {
    pyphmm::g_timing.store(on != 0);
}
