// GPU PDHMM entry point: a call's chunks through a borrowed context.
//
// One call = one or more chunks (pdhmm_plan.h). A chunk is packed on the
// host into one pinned buffer, sent with ONE host-to-device copy, computed
// by ONE launch (every bin of the chunk, pdhmm_kernels.cuh) and returned as
// one result per pair, finished by the kernel (log10, or NaN where the sum
// is not certified): chunks of up to kMappedOutPairs pairs (per-region
// calls) have the kernel write them straight into mapped host memory,
// which the calling thread watches and copies out as they arrive; larger
// ones come back with ONE device-to-host copy. Whole-workload calls
// alternate their chunks between two slots (stream + buffers), so the host
// cuts, checks and packs chunk c+1 and copies out chunk c-1 while the GPU
// computes chunk c. Packing screens every read byte it packs; where the
// call defers its input checks (GpuCallOptions::check_pd), a chunk with a
// byte GKL may refuse gets them in full before its launch. The results are
// checked as they are copied out.
// Buffers only grow and live in a per-device pool of contexts, so a call
// allocates nothing once they have grown, and concurrent callers never
// share a stream.
#include <cuda_runtime.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/errors.h"
#include "common/pd_tables.h"
#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "cuda/pdhmm_kernels.cuh"
#include "cuda/pdhmm_plan.h"

namespace pyphmm {

namespace {

using Clock = std::chrono::steady_clock;
using namespace pdk;

// Host phases of a call (PYPHMM_FLAG_TIMING), pyphmm_stats.phase_seconds.
enum Phase { kSetup, kPack, kEnqueue, kWait, kCopyOut, kPhases };

// Chunks of at most this many pairs have their results written straight
// into mapped host memory.
constexpr int64_t kMappedOutPairs = 65536;
// A watched slot holds this NaN until the kernel writes the pair's result
// (no result is a NaN with this payload: kPdUncertifiedBits is another).
constexpr uint64_t kPending = 0x7ff8000000000001ull;
// Warps of the striped bin per SM (its grid is capped: each warp has a
// scratch): as many as an SM holds.
constexpr int kStripedWarpsPerSm = kPdMinBlocksPerSm * kPdBlock / 32;

// ---------------------------------------------------------------- tables
struct DevTables {
    std::once_flag once;
    cudaError_t result = cudaErrorNotReady;
    const double *err = nullptr, *third = nullptr, *m2m = nullptr, *ratio = nullptr;
    const uint32_t* read_code = nullptr;
};
DevTables g_tables[kMaxCudaDevices];

// The kernel's tables (pd_kernel_tables) on device d, in one allocation.
cudaError_t upload_tables(DevTables& t) {
    const PdKernelTables& h = pd_kernel_tables();
    const std::vector<double>* parts[] = {&h.err, &h.third, &h.m2m, &h.ratio};
    size_t doubles = 0;
    for (const auto* p : parts) doubles += p->size();
    const size_t bytes = doubles * sizeof(double) + h.read_code.size() * sizeof(uint32_t);
    char* dev = nullptr;
    PYPHMM_CUDA_TRY(cudaMalloc(&dev, bytes));
    const double* at[4];
    size_t off = 0;
    for (int i = 0; i < 4; ++i) {
        PYPHMM_CUDA_TRY(
            cudaMemcpy(dev + off, parts[i]->data(), parts[i]->size() * sizeof(double), cudaMemcpyHostToDevice));
        at[i] = reinterpret_cast<const double*>(dev + off);
        off += parts[i]->size() * sizeof(double);
    }
    PYPHMM_CUDA_TRY(
        cudaMemcpy(dev + off, h.read_code.data(), h.read_code.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
    t.err = at[0];
    t.third = at[1];
    t.m2m = at[2];
    t.ratio = at[3];
    t.read_code = reinterpret_cast<const uint32_t*>(dev + off);
    return cudaSuccess;
}

cudaError_t setup_device(int d) {
    DevTables& t = g_tables[d];
    std::call_once(t.once, [&] { t.result = upload_tables(t); });
    return t.result;
}

// ---------------------------------------------------------------- contexts
struct Slot {
    cudaStream_t stream = nullptr;
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    cuda::DeviceBuffer din, dout, dscratch;
    cuda::PinnedBuffer hin, hout;
    // the chunk in flight
    bool pending = false, watched = false, timed = false;
    PdChunk chunk;
    int64_t steps = 1;  // its longest haplotype times its bins' rows a lane (the size of its wait)
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
    int device = 0;
    const pyphmm_pd_region* regions = nullptr;
    double* out = nullptr;
    int64_t marked = 0;                                         // results left NaN for the CPU (pd_checked_result)
    int64_t above_zero = 0;                                     // results above 0 (GKL's check fails them)
    std::function<int(int64_t, int64_t, pyphmm_error*)> check;  // the regions' input checks
    int input_rc = PYPHMM_OK;                                   // a check's failure (its message in err)
    pyphmm_error* err = nullptr;
    bool timing = false;  // host phases (and, with events, kernel intervals) into the stats
    bool events = false;  // timing with CUDA events around the kernels (PYPHMM_DEV's cuda_timing_events)
    int nap_percent = 0;
    cudaEvent_t first = nullptr;
    bool first_recorded = false;
    double phases[kPhases] = {};
    std::vector<std::pair<double, double>> busy;  // kernel intervals of the chunks, from the first's start

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
        return hi > lo ? total + hi - lo : total;
    }
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// ---------------------------------------------------------------- waiting
// A thread that watches a small chunk's sums may first sleep through
// nap_percent of the wait it expects (GpuCallOptions::nap_percent: under
// MPS, where its spinning would take a core other processes need). The
// expectation is learned per thread in microseconds per step of the
// chunk's longest pair.
struct NapModel {
    double us_per_step = 0;  // 0 until this thread has waited once
};
thread_local NapModel t_nap;
constexpr double kNapMinUs = 8;     // a shorter nap frees less than its two context switches cost
constexpr double kNapMaxUs = 2000;  // (a stall learned from one long wait costs at most this once)

bool nap(const Slot& s, int percent) {
    if (percent <= 0 || t_nap.us_per_step <= 0) return false;
    const double us = std::min(percent / 100.0 * t_nap.us_per_step * s.steps, kNapMaxUs);
    if (us < kNapMinUs) return false;
    const timespec ts{0, static_cast<long>(us * 1e3)};
    nanosleep(&ts, nullptr);  // (a signal ends it early: the spin does the rest)
    return true;
}

void learn_wait(const Slot& s, double us, bool done_on_waking) {
    const double observed = us / static_cast<double>(s.steps);
    double& est = t_nap.us_per_step;
    if (est <= 0)
        est = observed;
    else if (done_on_waking)
        est = std::min(est, observed);
    else
        est += (observed - est) / 8;
}

// Spins until no slot of a watched chunk is pending, asking the stream now
// and then so that a failed launch ends the wait; copies each pair's
// result out as soon as its slot is filled, in whatever order the kernel's
// warps finish (the early ones overlap the kernel's end).
cudaError_t wait_watched(Slot& s, int nap_percent, double* out, int64_t* marked, int64_t* above_zero) {
    const Clock::time_point t0 = Clock::now();
    const bool napped = nap(s, nap_percent);
    const volatile uint64_t* slot = reinterpret_cast<const volatile uint64_t*>(s.hout.p);  // (the GPU writes them)
    double* dst = out + s.chunk.out_first;
    thread_local std::vector<int32_t> pending;
    pending.resize(static_cast<size_t>(s.chunk.pairs));
    for (int32_t i = 0; i < static_cast<int32_t>(pending.size()); ++i) pending[i] = i;
    unsigned spins = 0, passes = 0;
    while (!pending.empty()) {
        ++passes;
        size_t left = 0;
        for (const int32_t i : pending) {
            const uint64_t bits = slot[i];
            if (bits == kPending) {
                pending[left++] = i;
                continue;
            }
            double result;
            std::memcpy(&result, &bits, sizeof(result));
            dst[i] = result;
            *marked += std::isnan(result);
            *above_zero += result > 0.0;
        }
        if (left == pending.size()) {
            cpu_relax();
            if (++spins % 4096 == 0) {
                const cudaError_t e = cudaStreamQuery(s.stream);
                // (a finished kernel's writes are visible: idle with a slot pending is a failure)
                if (e == cudaSuccess && slot[pending[0]] == kPending) return cudaErrorLaunchFailure;
                if (e != cudaSuccess && e != cudaErrorNotReady) return e;
            }
        }
        pending.resize(left);
    }
    learn_wait(s, std::chrono::duration<double, std::micro>(Clock::now() - t0).count(), napped && passes == 1);
    return cudaSuccess;
}

// Waits for a slot's chunk and writes its results.
cudaError_t finish_slot(Slot& s, CallState& st) {
    if (!s.pending) return cudaSuccess;
    s.pending = false;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    if (s.watched) {
        PYPHMM_CUDA_TRY(wait_watched(s, st.nap_percent, st.out, &st.marked, &st.above_zero));
        st.lap(t, kWait);
    } else {
        PYPHMM_CUDA_TRY(cudaStreamSynchronize(s.stream));
        st.lap(t, kWait);
        st.marked += pd_copy_results(s.chunk, reinterpret_cast<const double*>(s.hout.p), st.out, &st.above_zero);
        st.lap(t, kCopyOut);
    }
    if (s.timed) {
        float a = 0, b = 0;
        PYPHMM_CUDA_TRY(cudaEventElapsedTime(&a, st.first, s.ev0));
        PYPHMM_CUDA_TRY(cudaEventElapsedTime(&b, st.first, s.ev1));
        st.busy.emplace_back(a * 1e-3, b * 1e-3);
    }
    return cudaSuccess;
}

// ---------------------------------------------------------------- chunks
// The input checks of a packed chunk, where the call defers them to the
// GPU path: packing screens every read byte it packs (PdPacked::suspect),
// so only a chunk with a suspect byte runs the full checks, on every
// region it holds a piece of (earlier chunks' bytes passed the screen, so
// an error still names the first region with refused bytes). False if one
// fails; no kernel has seen the chunk then.
bool check_chunk(const Slot& s, const PdPacked& packed, CallState& st) {
    if (!st.check || !packed.suspect || s.chunk.pieces.empty()) return true;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    st.input_rc = st.check(s.chunk.pieces.front().region, s.chunk.pieces.back().region + 1, st.err);
    st.lap(t, kPack);
    return st.input_rc == PYPHMM_OK;
}

// Packs the slot's chunk and enqueues its copy, launch and copy back.
cudaError_t run_chunk(Slot& s, CallState& st) {
    const PdChunk& c = s.chunk;
    const PdLayout L = pd_layout_of(c);
    PYPHMM_CUDA_TRY(s.hin.reserve(std::max<size_t>(L.in_bytes, 16)));
    PYPHMM_CUDA_TRY(s.hout.reserve(std::max<size_t>(L.out_bytes, 16)));
    PYPHMM_CUDA_TRY(s.din.reserve(std::max<size_t>(L.in_bytes, 16)));
    const bool mapped = c.pairs <= kMappedOutPairs;
    Clock::time_point t = st.timing ? Clock::now() : Clock::time_point();
    uint64_t* slots = reinterpret_cast<uint64_t*>(s.hout.p);
    const PdPacked packed = pd_pack_chunk(st.regions, c, L, s.hin.p, mapped ? slots : nullptr, kPending);
    st.lap(t, kPack);
    if (!check_chunk(s, packed, st)) return cudaErrorNotReady;
    if (!mapped) PYPHMM_CUDA_TRY(s.dout.reserve(L.out_bytes));
    PdLaunchPlan plan;
    const int blocks = pd_launch_plan(packed, kStripedWarpsPerSm * cuda::sm_count(st.device), &plan);
    const int stride = pd_scratch_stride(packed.max_hap_len);
    const int striped_warps = pd_striped_warps(plan);
    if (striped_warps) PYPHMM_CUDA_TRY(s.dscratch.reserve(size_t(striped_warps) * 2 * stride * sizeof(double)));

    char* din = static_cast<char*>(s.din.p);
    const DevTables& tab = g_tables[st.device];
    PdArgs a{};
    a.pairs = reinterpret_cast<const PdPairDesc*>(din + L.desc_off);
    a.rows = reinterpret_cast<const PdRowElem*>(din + L.row_off);
    a.codes = reinterpret_cast<const uint32_t*>(din + L.code_off);
    a.err = tab.err;
    a.third = tab.third;
    a.m2m = tab.m2m;
    a.ratio = tab.ratio;
    a.read_code = tab.read_code;
    a.ic = pd_tables().initial_condition;
    a.cert = pd_certify(packed);
    a.log10_ic = pd_tables().log10_initial_condition;
    a.finish = true;
    a.out = reinterpret_cast<double*>(mapped ? s.hout.dev : static_cast<char*>(s.dout.p));
    a.scratch = s.dscratch.as<double>();
    a.scratch_stride = stride;
    // Calls timed with events wait on the stream: the events make a watched
    // chunk's wait end in CUDA anyway.
    s.watched = mapped && !st.events;

    PYPHMM_CUDA_TRY(cudaMemcpyAsync(din, s.hin.p, L.in_bytes, cudaMemcpyHostToDevice, s.stream));
    if (!mapped)  // (empty pairs: all ones, a NaN)
        PYPHMM_CUDA_TRY(cudaMemsetAsync(s.dout.p, 0xFF, L.out_bytes, s.stream));
    if (st.events) {
        if (!st.first_recorded) PYPHMM_CUDA_TRY(cudaEventRecord(st.first, s.stream));
        st.first_recorded = true;
        PYPHMM_CUDA_TRY(cudaEventRecord(s.ev0, s.stream));
    }
    if (blocks > 0) {
        pdhmm_kernel<<<blocks, kPdBlock, 0, s.stream>>>(a, plan);
        PYPHMM_CUDA_TRY(cudaGetLastError());
    }
    if (st.events) PYPHMM_CUDA_TRY(cudaEventRecord(s.ev1, s.stream));
    if (!mapped) PYPHMM_CUDA_TRY(cudaMemcpyAsync(s.hout.p, s.dout.p, L.out_bytes, cudaMemcpyDeviceToHost, s.stream));
    st.lap(t, kEnqueue);
    int most_k = 1;
    for (int e = 0; e < plan.nb; ++e) most_k = std::max(most_k, kPdBins[plan.bin[e]].K);
    s.pending = true;
    s.steps = static_cast<int64_t>(packed.max_hap_len + 32) * most_k;
    s.timed = st.events;
    return cudaSuccess;
}

// Chunk c goes to slot c % 2 once that slot's chunk c - 2 is finished.
// A failed input check ends the call (cudaErrorNotReady; st.input_rc).
cudaError_t run_chunks(PdChunker& chunker, Context& ctx, CallState& st) {
    st.first = ctx.first;
    for (int64_t c = 0;; ++c) {
        Slot& s = ctx.slot[c & 1];
        PYPHMM_CUDA_TRY(finish_slot(s, st));
        if (!chunker.next(&s.chunk)) break;
        PYPHMM_CUDA_TRY(run_chunk(s, st));
    }
    PYPHMM_CUDA_TRY(finish_slot(ctx.slot[0], st));
    return finish_slot(ctx.slot[1], st);
}

}  // namespace

int cuda_pdhmm(int device, const pyphmm_pd_region* regions, int64_t num_regions, double* out, PdGpuResults* results,
               const GpuCallOptions& call, pyphmm_stats* stats, pyphmm_error* err) {
    const Clock::time_point start = Clock::now();
    CallState st;
    st.device = device;
    st.regions = regions;
    st.out = out;
    st.timing = call.timing;
    st.events = call.timing && config::on(config::Knob::kCudaTimingEvents);
    st.nap_percent = call.nap_percent;
    st.check = call.check_pd;
    st.err = err;
    int64_t total_pairs = 0, total_cells = 0;
    for (int64_t k = 0; k < num_regions; ++k) {
        const pyphmm_pd_region& g = regions[k];
        total_pairs += static_cast<int64_t>(g.num_reads) * g.num_haps;
        if (g.num_reads > 0 && g.num_haps > 0)
            total_cells +=
                (g.read_offsets[g.num_reads] - g.read_offsets[0]) * (g.hap_offsets[g.num_haps] - g.hap_offsets[0]);
    }
    if (total_pairs > 0) {
        Clock::time_point t = Clock::now();
        cudaError_t e = cuda::use_device(device);
        if (e == cudaSuccess) e = setup_device(device);
        if (e != cudaSuccess) return cuda::cuda_status(err, e, "CUDA PDHMM: device setup");
        cuda::Pool<Context>::Lease lease(g_contexts, device);
        if ((e = lease.acquire()) != cudaSuccess) return cuda::cuda_status(err, e, "CUDA PDHMM: streams");
        try {
            PdChunker chunker(regions, num_regions, total_cells);
            st.lap(t, kSetup);
            e = run_chunks(chunker, lease.item(), st);
        } catch (const std::bad_alloc&) {
            lease.item().drain();
            return set_error(err, PYPHMM_E_NOMEM, "out of host memory in the CUDA PDHMM backend");
        }
        if (e != cudaSuccess) {
            lease.item().drain();
            if (st.input_rc != PYPHMM_OK) return st.input_rc;
            return cuda::cuda_status(err, e, "CUDA PDHMM");
        }
    }
    results->marked = st.marked;
    results->above_zero = st.above_zero;
    if (stats) {
        stats->pairs = total_pairs;
        stats->cells = total_cells;
        stats->backend_used = PYPHMM_BACKEND_CUDA;
        stats->device = device;
        stats->kernel_seconds = st.busy_seconds();
        for (int p = 0; p < kPhases; ++p) stats->phase_seconds[p] = st.phases[p];
        stats->seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    return PYPHMM_OK;
}

}  // namespace pyphmm
