// GPU PairHMM entry point: a call's chunks through a borrowed context.
//
// One call = one or more chunks (pairhmm_plan.h). A chunk is packed on the
// host into one pinned buffer, sent with ONE host-to-device copy, computed
// by one launch per float pass plus the double pass (pairhmm_launch.h), and
// returned with ONE device-to-host copy (small chunks: written by the
// kernels straight into mapped host memory). Per-region calls are one
// chunk, synchronous, with no allocation once the buffers have grown.
// Whole-workload calls alternate their chunks between two slots (stream +
// buffers), so the host packs chunk c+1 and unpacks chunk c-1 while the GPU
// computes chunk c.
//
// Precision (GKL's contract): every pair runs in float with 2^120; pairs
// whose float sum is < 1e-28 are listed by the float kernels and recomputed
// in double (2^1020) by a second kernel in the same stream, with no host
// round trip. double_precision runs every pair in double.
//
// Threads: contexts (two slots each) live in a per-device pool; each call
// borrows one, so concurrent callers never share streams or buffers.
#include <cuda_runtime.h>
#include <time.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "cuda/pairhmm_launch.h"
#include "cuda/pairhmm_plan.h"

namespace pyphmm {

using cudak::Chunk;
using cudak::Layout;

namespace {

using Clock = std::chrono::steady_clock;

// Host phases of a call (PYPHMM_FLAG_TIMING), pyphmm_stats.phase_seconds.
enum Phase { kSetup, kPack, kEnqueue, kWait, kCopyOut, kPhases };

struct Slot {
    cudaStream_t stream = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    cuda::DeviceBuffer din, dout, dscratch;
    cuda::PinnedBuffer hin, hout;
    // the chunk in flight
    bool pending = false;
    double* user_out = nullptr;
    int64_t npairs = 0;
    bool timed = false;
    int device = 0;
    cudak::ChunkBuffers bufs;  // (watched: for the deferred double pass)
    int max_hap_len = 1;       // (watched: the size of its wait, see NapModel)
};

struct Context {
    Slot slot[2];
    cudaEvent_t first = nullptr;  // timing: before the call's first kernel
    cudaError_t create() {
        for (Slot& s : slot) {
            PYPHMM_CUDA_TRY(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
            PYPHMM_CUDA_TRY(cudaEventCreate(&s.ev0));
            PYPHMM_CUDA_TRY(cudaEventCreate(&s.ev1));
        }
        return cudaEventCreate(&first);
    }
    // After a failure: nothing of this call may still be running when the
    // context goes back to the pool.
    void drain() {
        for (Slot& s : slot) {
            cudaStreamSynchronize(s.stream);
            s.pending = false;
        }
        cudaGetLastError();
    }
};

cuda::Pool<Context> g_contexts;

struct CallState {
    int device;
    bool dbl;
    bool fast;
    bool timing;            // host phases (and, with events, kernel intervals) into the stats
    bool events;            // timing with CUDA events around the kernels (PYPHMM_DEV's cuda_timing_events)
    bool uniform;           // fast float: reads with one quality triple use the kUniform/kConst passes
    cudak::GapChoice gaps;  // fast float: the kConst passes' triple
    int nap_percent;        // of a watched chunk's expected wait
    int64_t double_pairs = 0;
    int64_t const_pairs = 0;
    cudaEvent_t first = nullptr;
    bool first_recorded = false;
    double phases[kPhases] = {};
    std::vector<std::pair<double, double>> busy;  // kernel intervals of the chunks (events)

    void lap(Clock::time_point& t, Phase p) {
        if (!timing) return;
        const Clock::time_point now = Clock::now();
        phases[p] += std::chrono::duration<double>(now - t).count();
        t = now;
    }

    // Time the GPU spent in kernels: the union of the chunks' intervals
    // (the two streams overlap, so a plain sum would count twice).
    double busy_seconds() {
        std::sort(busy.begin(), busy.end());
        double total = 0, lo = 0, hi = -1;
        for (const auto& iv : busy) {
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

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// A chunk's results in the pinned buffer, after its header; a watched
// chunk's are slots that the GPU fills (see kPendingMark).
uint64_t* result_slots(const Slot& s) { return reinterpret_cast<uint64_t*>(s.hout.p + cudak::kHeaderBytes); }

// Spins until no result slot of the chunk is pending, asking the stream now
// and then so that a failed launch ends the wait; counts the pairs left to
// the double pass. *spun: whether any slot was still pending.
cudaError_t wait_results(const Slot& s, int* redo, bool* spun) {
    const volatile uint64_t* slot = result_slots(s);  // (the GPU writes them)
    *redo = 0;
    unsigned spins = 0;
    for (int64_t i = 0; i < s.npairs; ++i) {
        while (slot[i] == cudak::kPendingMark) {
            cpu_relax();
            if (++spins % 4096 == 0) {
                const cudaError_t e = cudaStreamQuery(s.stream);
                // (a finished kernel's writes are visible: idle with a slot pending is a failure)
                if (e == cudaSuccess && slot[i] == cudak::kPendingMark) return cudaErrorLaunchFailure;
                if (e != cudaSuccess && e != cudaErrorNotReady) return e;
            }
        }
        *redo += slot[i] == cudak::kRedoMark;
    }
    *spun = spins > 0;
    std::atomic_thread_fence(std::memory_order_acquire);
    return cudaSuccess;
}

// Napping (GpuCallOptions::nap_percent). A thread that watches a small chunk's results
// would spin on its core for the whole GPU time. With many GATK threads or
// processes per core, that spinning takes the cores that their other work
// and the JVMs' own threads need, so the thread first sleeps through part of
// the wait it expects and spins only for the rest. The expectation is
// learned per thread, in microseconds per unit of work: a unit is a step of
// the latency kernels (a chunk's longest haplotype sets their step count),
// and kNapFixedUnits stand for the launch and a pair's setup.
struct NapModel {
    double us_per_unit = 0;  // 0 until this thread has waited once
    bool slack_set = false;
};
thread_local NapModel t_nap;
constexpr int kNapFixedUnits = 64;
constexpr double kNapMarginUs = 4;  // woken this long before the expected end
constexpr double kNapMinUs = 8;     // a shorter nap frees less than its two context switches cost
constexpr double kNapMaxUs = 2000;  // (a stall learned from one long wait costs at most this once)

double nap_units(const Slot& s) { return s.max_hap_len + kNapFixedUnits; }

// Sleeps for `percent` of the expected wait; true if it slept.
bool nap(const Slot& s, int percent) {
    if (percent <= 0 || t_nap.us_per_unit <= 0) return false;
    const double us = std::min(percent / 100.0 * t_nap.us_per_unit * nap_units(s) - kNapMarginUs, kNapMaxUs);
    if (us < kNapMinUs) return false;
#if defined(__linux__)
    if (!t_nap.slack_set) {  // the default timer slack (50 us) would oversleep every nap
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
        t_nap.slack_set = true;
    }
#endif
    const timespec ts{0, static_cast<long>(us * 1e3)};
    nanosleep(&ts, nullptr);  // (a signal ends it early: the spin does the rest)
    return true;
}

// Learns from a wait of `us` microseconds. When the results were all there
// on waking, the wait was at most that long: the estimate drops to it at
// once (an oversleeping thread would otherwise learn its own naps);
// otherwise it moves an eighth of the way.
void learn_wait(const Slot& s, double us, bool done_on_waking) {
    const double observed = us / nap_units(s);
    double& est = t_nap.us_per_unit;
    if (est <= 0)
        est = observed;
    else if (done_on_waking)
        est = std::min(est, observed);
    else
        est += (observed - est) / 8;
}

// Waits for a watched chunk; recomputes its underflowed pairs in double
// when there are any (a second, rare round trip).
cudaError_t wait_watched(Slot& s, int nap_percent) {
    const Clock::time_point t0 = Clock::now();
    const bool napped = nap(s, nap_percent);
    int redo = 0;
    bool spun = false;
    PYPHMM_CUDA_TRY(wait_results(s, &redo, &spun));
    learn_wait(s, std::chrono::duration<double, std::micro>(Clock::now() - t0).count(), napped && !spun);
    if (redo == 0) return cudaSuccess;
    PYPHMM_CUDA_TRY(cudak::launch_pairhmm_underflow(s.device, s.bufs, redo, s.stream));
    return cudaStreamSynchronize(s.stream);
}

// Waits for a slot's chunk and copies its results out.
cudaError_t finish_slot(Slot& s, CallState& st) {
    if (!s.pending) return cudaSuccess;
    s.pending = false;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    PYPHMM_CUDA_TRY(s.bufs.watched ? wait_watched(s, st.nap_percent) : cudaStreamSynchronize(s.stream));
    st.lap(t, kWait);
    int32_t count = 0;
    std::memcpy(&count, s.hout.p, sizeof(count));
    st.double_pairs += st.dbl ? s.npairs : count;
    std::memcpy(s.user_out, result_slots(s), s.npairs * sizeof(double));
    st.lap(t, kCopyOut);
    if (s.timed) {  // this chunk's kernels as an interval since the call's first kernel
        float a = 0, b = 0;
        PYPHMM_CUDA_TRY(cudaEventElapsedTime(&a, st.first, s.ev0));
        PYPHMM_CUDA_TRY(cudaEventElapsedTime(&b, st.first, s.ev1));
        st.busy.emplace_back(a * 1e-3, b * 1e-3);
    }
    return cudaSuccess;
}

// Chunks of at most this many pairs have their results written straight
// into mapped host memory.
constexpr int64_t kMappedOutPairs = 4096;

// Packs a chunk into its slot and enqueues its copies and kernels.
cudaError_t run_chunk(const pyphmm_region* regions, const Chunk& c, Slot& s, double* out, CallState& st) {
    const Layout L = cudak::layout_of(c);
    PYPHMM_CUDA_TRY(s.hin.reserve(L.in_bytes));
    PYPHMM_CUDA_TRY(s.hout.reserve(L.out_bytes));
    PYPHMM_CUDA_TRY(s.din.reserve(L.dev_in_bytes));
    // Small chunks (per-region calls) have the kernels write their results
    // straight into the pinned host buffer: one copy fewer to wait for. Their
    // uniform reads join the per-row ones (one launch fewer).
    const bool mapped = c.pairs <= kMappedOutPairs;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    const cudak::Packed packed = cudak::pack_chunk(regions, c, L, st.dbl, st.uniform, mapped, st.gaps, s.hin.p);
    st.lap(t, kPack);
    st.const_pairs += packed.const_pairs;

    if (!mapped) PYPHMM_CUDA_TRY(s.dout.reserve(L.out_bytes));
    char* din = static_cast<char*>(s.din.p);
    char* dout = mapped ? s.hout.dev : static_cast<char*>(s.dout.p);
    const int stride = cudak::pairhmm_scratch_stride(packed.max_hap_len);
    PYPHMM_CUDA_TRY(s.dscratch.reserve(cudak::pairhmm_scratch_bytes(st.device, stride, st.fast)));
    cudak::ChunkBuffers b;
    b.pairs = reinterpret_cast<const cudak::PairDesc*>(din + L.desc_off);
    b.reads = reinterpret_cast<const uint32_t*>(din + L.read_off);
    b.haps = reinterpret_cast<const uint8_t*>(din + L.hap_off);
    b.results = reinterpret_cast<double*>(dout + cudak::kHeaderBytes);
    b.header = reinterpret_cast<int*>(dout);
    b.counter = reinterpret_cast<int*>(din);
    b.list = reinterpret_cast<int*>(din + L.list_off);
    b.scratch = s.dscratch.p;
    b.scratch_stride = stride;
    b.num_pairs = c.pairs;
    b.longest_rows = cudak::longest_float_rows(packed.bins);
    // The spinning thread watches a small float chunk's results (the events
    // of a timed call wait in CUDA).
    b.watched = mapped && !st.dbl && !st.events;
    if (b.watched) {
        std::memset(s.hout.p, 0, cudak::kHeaderBytes);  // the double pass's count, if none runs
        uint64_t* slot = result_slots(s);
        std::fill(slot, slot + c.pairs, cudak::kPendingMark);  // (stored before the launch call)
    }

    PYPHMM_CUDA_TRY(cudaMemcpyAsync(din, s.hin.p, L.in_bytes, cudaMemcpyHostToDevice, s.stream));
    if (st.events) {
        if (!st.first_recorded) PYPHMM_CUDA_TRY(cudaEventRecord(st.first, s.stream));
        st.first_recorded = true;
        PYPHMM_CUDA_TRY(cudaEventRecord(s.ev0, s.stream));
    }
    PYPHMM_CUDA_TRY(cudak::launch_pairhmm_chunk(st.device, b, packed.bins, st.dbl, st.fast, st.gaps.c, s.stream));
    if (st.events) PYPHMM_CUDA_TRY(cudaEventRecord(s.ev1, s.stream));
    if (!mapped) PYPHMM_CUDA_TRY(cudaMemcpyAsync(s.hout.p, dout, L.out_bytes, cudaMemcpyDeviceToHost, s.stream));
    st.lap(t, kEnqueue);
    s.pending = true;
    s.device = st.device;
    s.bufs = b;
    s.user_out = out + c.out_first;
    s.npairs = c.pairs;
    s.max_hap_len = packed.max_hap_len;
    s.timed = st.events;
    return cudaSuccess;
}

// Every chunk of the call on the context's two slots.
cudaError_t run_chunks(const pyphmm_region* regions, const std::vector<Chunk>& chunks, Context& ctx, double* out,
                       CallState& st) {
    st.first = ctx.first;
    for (size_t c = 0; c < chunks.size(); ++c) {
        Slot& s = ctx.slot[c & 1];
        PYPHMM_CUDA_TRY(finish_slot(s, st));
        PYPHMM_CUDA_TRY(run_chunk(regions, chunks[c], s, out, st));
    }
    PYPHMM_CUDA_TRY(finish_slot(ctx.slot[chunks.size() & 1], st));
    return finish_slot(ctx.slot[(chunks.size() + 1) & 1], st);
}

}  // namespace

namespace {

bool fast_arith() { return config::get(config::Knob::kCudaArith) == config::kFast; }

// The triple of a call's kConst launches (all chunks alike), if it has any.
cudak::GapChoice call_gaps(const pyphmm_region* regions, int64_t num_regions, bool dbl) {
    if (dbl || !fast_arith() || !config::on(config::Knob::kCudaConstGaps)) return cudak::GapChoice{};
    return cudak::choose_gaps(regions, num_regions);
}

}  // namespace

int cuda_pairhmm(int device, const pyphmm_region* regions, int64_t num_regions, double* out, const GpuCallOptions& call,
                 pyphmm_stats* stats, pyphmm_error* err) {
    const Clock::time_point start = Clock::now();
    CallState st;
    st.device = device;
    st.dbl = call.double_precision;
    st.fast = fast_arith();
    st.timing = call.timing;
    st.nap_percent = call.nap_percent;
    st.events = call.timing && config::on(config::Knob::kCudaTimingEvents);
    st.uniform = !st.dbl && st.fast;
    int64_t total_pairs = 0, total_cells = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_region& g = regions[k];
        total_pairs += static_cast<int64_t>(g.num_reads) * g.num_haps;
        if (g.num_reads && g.num_haps)
            total_cells +=
                (g.read_offsets[g.num_reads] - g.read_offsets[0]) * (g.hap_offsets[g.num_haps] - g.hap_offsets[0]);
    }
    if (total_pairs > 0) st.gaps = call_gaps(regions, num_regions, st.dbl);
    double kernel_seconds = 0;
    if (total_pairs > 0) {
        Clock::time_point t = Clock::now();
        cudaError_t e = cuda::use_device(device);
        if (e == cudaSuccess) e = cudak::pairhmm_setup_device(device);
        if (e != cudaSuccess) return cuda::cuda_status(err, e, "CUDA PairHMM: device setup");
        cuda::Pool<Context>::Lease lease(g_contexts, device);
        if ((e = lease.acquire()) != cudaSuccess) return cuda::cuda_status(err, e, "CUDA PairHMM: streams");
        try {
            const std::vector<Chunk> chunks = cudak::plan_chunks(regions, num_regions, total_cells);
            st.lap(t, kSetup);
            e = run_chunks(regions, chunks, lease.item(), out, st);
        } catch (const std::bad_alloc&) {
            lease.item().drain();
            return set_error(err, PYPHMM_E_NOMEM, "out of host memory in the CUDA backend");
        }
        if (e != cudaSuccess) {
            lease.item().drain();
            return cuda::cuda_status(err, e, "CUDA PairHMM");
        }
        kernel_seconds = st.busy_seconds();
    }
    if (stats) {
        stats->pairs = total_pairs;
        stats->cells = total_cells;
        stats->double_pairs = st.double_pairs;
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = device;
        stats->const_pairs = st.const_pairs;
        stats->kernel_seconds = kernel_seconds;
        for (int p = 0; p < kPhases; ++p) stats->phase_seconds[p] = st.phases[p];
        stats->seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
