// The knob table and its parser (see config.h).
#include "common/config.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace pyphmm {
namespace config {

namespace {

enum class Type { kBool, kInt, kEnum, kString };

struct Spec {
    Knob knob;
    const char* name;
    Type type;
    int64_t def;          // bool / int / enum index
    int64_t lo, hi;       // int range
    const char* choices;  // enum: "a|b|c"
    const char* when;     // when a change takes effect
    const char* doc;
};

constexpr int64_t kBig = INT64_MAX;

// The only list of the native library's environment variables.
const Spec kSpecs[] = {
    {Knob::kBackend, "PYPHMM_BACKEND", Type::kEnum, kAuto, 0, 0, "auto|cpu|cuda", "reload",
     "backend of calls that ask for auto"},
    {Knob::kDevice, "PYPHMM_DEVICE", Type::kInt, -1, -1, 1023, nullptr, "first use",
     "pin every call to this CUDA device ordinal (after CUDA_VISIBLE_DEVICES); unset: spread over the GPUs"},
    {Knob::kGpuMinCells, "PYPHMM_GPU_MIN_CELLS", Type::kInt, -1, 0, kBig, nullptr, "first use",
     "cells from which an auto PairHMM call goes to the GPU (unset: calibrated at first use)"},
    {Knob::kGpuRetryMs, "PYPHMM_GPU_RETRY_MS", Type::kInt, 5000, 0, kBig, nullptr, "reload",
     "a process whose GPU had no room for it (an MPS server at its client limit, an exclusive-process GPU in "
     "use) computes on the CPU and tries the GPU again this often, ms (0: never)"},
    {Knob::kHybrid, "PYPHMM_HYBRID", Type::kBool, 0, 0, 1, nullptr, "reload",
     "let GPU and CPU threads share whole-workload calls when the CPU's predicted share pays"},
    {Knob::kHybridMinCpuShare, "PYPHMM_HYBRID_MIN_CPU_SHARE", Type::kInt, 5, 0, 100, nullptr, "reload",
     "percent of the work the CPU must be predicted to take before hybrid calls share"},
    {Knob::kHybridGpuThreads, "PYPHMM_HYBRID_GPU_THREADS", Type::kInt, 2, 1, 64, nullptr, "reload",
     "threads that drive the GPU in a shared hybrid call"},
    {Knob::kDebugDispatch, "PYPHMM_DEBUG_DISPATCH", Type::kBool, 0, 0, 1, nullptr, "reload",
     "one stderr line per PairHMM call saying where its regions ran"},
    {Knob::kQuiet, "PYPHMM_QUIET", Type::kBool, 0, 0, 1, nullptr, "reload",
     "no informational lines (GATK log banner, summary, hints); warnings still print"},
    {Knob::kCpuKernel, "PYPHMM_CPU_KERNEL", Type::kString, 0, 0, 0, nullptr, "first use",
     "force a CPU PairHMM kernel (avx512, avx2, neon, portable)"},
    {Knob::kSwIsa, "PYPHMM_SW_ISA", Type::kString, 0, 0, 0, nullptr, "first use",
     "force a CPU Smith-Waterman fill (sse, avx2, avx512, neon)"},
    {Knob::kPackScalar, "PYPHMM_PACK_SCALAR", Type::kBool, 0, 0, 1, nullptr, "first use",
     "pack GPU PairHMM input with scalar code instead of AVX2"},
    {Knob::kCudaArith, "PYPHMM_CUDA_ARITH", Type::kEnum, kFast, 0, 0, "fast|exact", "first use",
     "GPU PairHMM float arithmetic: fused/factored (fast) or GKL's operation order (exact)"},
    {Knob::kCudaConstGaps, "PYPHMM_CUDA_CONST_GAPS", Type::kBool, 1, 0, 1, nullptr, "first use",
     "GPU kernels with the call's common gap-quality triple as launch constants"},
    {Knob::kCudaMappedOut, "PYPHMM_CUDA_MAPPED_OUT", Type::kInt, 4096, 0, kBig, nullptr, "first use",
     "GPU chunks of at most this many pairs write results straight to host memory"},
    {Knob::kCudaNotify, "PYPHMM_CUDA_NOTIFY", Type::kBool, 1, 0, 1, nullptr, "reload",
     "small GPU calls: the waiting thread watches the results arrive in host memory instead of synchronising "
     "the stream, and launches the double pass only when a pair underflowed"},
    {Knob::kCudaNap, "PYPHMM_CUDA_NAP", Type::kInt, -1, 0, 90, nullptr, "reload",
     "small GPU calls: percent of the wait a thread expects (learned from its earlier calls) that it sleeps "
     "before it watches the results, so that its core serves other threads meanwhile (0: spin throughout; "
     "unset: 60 in a process that an MPS server serves, else 0)"},
    {Knob::kCudaSync, "PYPHMM_CUDA_SYNC", Type::kEnum, kSyncSpin, 0, 0, "spin|yield|block", "first use",
     "how a thread waits for the GPU: spin (the fastest, also for many processes under MPS), yield the CPU "
     "while spinning, or sleep"},
    {Knob::kCudaTiming, "PYPHMM_CUDA_TIMING", Type::kBool, 0, 0, 1, nullptr, "reload",
     "time GPU kernels and host phases into pyphmm_stats (costs a few us per call)"},
    {Knob::kCudaTimingEvents, "PYPHMM_CUDA_TIMING_EVENTS", Type::kBool, 1, 0, 1, nullptr, "reload",
     "timed GPU calls record CUDA events around their kernels (kernel_seconds); 0: host phases only, and a "
     "small call keeps watching its results, so its phases are those of an untimed call (with many threads "
     "of one process, the events slow down the calls they time)"},
    {Knob::kSwGpuBudgetMb, "PYPHMM_SW_GPU_BUDGET_MB", Type::kInt, 0, 0, kBig, nullptr, "reload",
     "cap on the device memory of a GPU Smith-Waterman call, MiB (0: 60% of free memory)"},
    {Knob::kJniTrace, "PYPHMM_JNI_TRACE", Type::kInt, 0, 0, 2, nullptr, "first use",
     "JNI layer timing (2: time the marshalling, reported at done())"},
    {Knob::kJniCopy, "PYPHMM_JNI_COPY", Type::kEnum, kRegion, 0, 0, "region|critical", "first use",
     "how the JNI layer copies Java arrays"},
    {Knob::kTestFakeGpu, "PYPHMM_TEST_FAKE_GPU", Type::kInt, 0, 0, 16, nullptr, "first use",
     "tests: N > 0 stands N single-threaded CPU 'devices' in for the GPU"},
    {Knob::kTestGpuFailure, "PYPHMM_TEST_GPU_FAILURE", Type::kEnum, kNever, 0, 0, "never|always|alternate", "first use",
     "tests: make GPU calls fail (alternate: the 2nd, 4th, ... call)"},
    {Knob::kTestGpuLoad, "PYPHMM_TEST_GPU_LOAD", Type::kString, 0, 0, 0, nullptr, "first use",
     "tests: other processes on each fake device, comma-separated (e.g. 3,0)"},
    {Knob::kTestGpuFull, "PYPHMM_TEST_GPU_FULL", Type::kString, 0, 0, 0, nullptr, "first use",
     "tests: how many starts of each fake device fail for want of room, comma-separated (e.g. 2,0)"},
};
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == static_cast<size_t>(Knob::kCount), "one spec per knob");

const Spec& spec(Knob k) { return kSpecs[static_cast<int>(k)]; }

struct Value {
    std::atomic<bool> loaded{false};
    std::atomic<bool> set{false};
    std::atomic<int64_t> v{0};
};

// The parsed values. A function-local static: knobs are read during other
// files' static initialisation (the CPU kernel choice).
struct State {
    Value values[static_cast<int>(Knob::kCount)];
    std::mutex mutex;  // parsing and the string values
    std::string strings[static_cast<int>(Knob::kCount)];
};
State& state() {
    static State s;
    return s;
}

int choice_index(const char* choices, const char* s) {
    const size_t len = std::strlen(s);
    int i = 0;
    for (const char* p = choices;; ++i) {
        const char* bar = std::strchr(p, '|');
        const size_t n = bar ? static_cast<size_t>(bar - p) : std::strlen(p);
        if (n == len && !std::strncmp(p, s, n)) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

bool parse_bool(const char* s, int64_t* out) {
    static const char* const kTrue[] = {"1", "true", "yes", "on"};
    static const char* const kFalse[] = {"0", "false", "no", "off"};
    for (const char* t : kTrue)
        if (!strcasecmp(s, t)) return *out = 1, true;
    for (const char* f : kFalse)
        if (!strcasecmp(s, f)) return *out = 0, true;
    return false;
}

bool parse_int(const char* s, int64_t lo, int64_t hi, int64_t* out) {
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || x < lo || x > hi) return false;
    *out = x;
    return true;
}

void expectation(const Spec& s, char* buf, size_t cap) {
    switch (s.type) {
        case Type::kBool: std::snprintf(buf, cap, "0 or 1"); break;
        case Type::kEnum: std::snprintf(buf, cap, "one of %s", s.choices); break;
        case Type::kInt:
            if (s.hi == kBig)
                std::snprintf(buf, cap, "an integer >= %lld", (long long)s.lo);
            else
                std::snprintf(buf, cap, "an integer in %lld..%lld", (long long)s.lo, (long long)s.hi);
            break;
        case Type::kString: buf[0] = '\0'; break;
    }
}

// Parses one knob from the environment (caller holds the state's mutex).
void load(Knob k) {
    const Spec& s = spec(k);
    Value& val = state().values[static_cast<int>(k)];
    std::string& str = state().strings[static_cast<int>(k)];
    int64_t v = s.def;
    bool set = false;
    const char* e = std::getenv(s.name);
    if (e && *e) {
        bool ok = true;
        switch (s.type) {
            case Type::kBool: ok = parse_bool(e, &v); break;
            case Type::kInt: ok = parse_int(e, s.lo, s.hi, &v); break;
            case Type::kEnum: {
                const int i = choice_index(s.choices, e);
                ok = i >= 0;
                if (ok) v = i;
                break;
            }
            case Type::kString: str = e; break;
        }
        if (ok) {
            set = true;
        } else {
            char want[96];
            expectation(s, want, sizeof(want));
            v = s.def;
            std::fprintf(stderr, "pyphmm: warning: ignoring %s=%.64s (expected %s)\n", s.name, e, want);
        }
    } else if (s.type == Type::kString) {
        str.clear();
    }
    val.v.store(v, std::memory_order_relaxed);
    val.set.store(set, std::memory_order_relaxed);
    val.loaded.store(true, std::memory_order_release);
}

Value& loaded(Knob k) {
    Value& val = state().values[static_cast<int>(k)];
    if (!val.loaded.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(state().mutex);
        if (!val.loaded.load(std::memory_order_relaxed)) load(k);
    }
    return val;
}

}  // namespace

int64_t get(Knob k) { return loaded(k).v.load(std::memory_order_relaxed); }

bool is_set(Knob k) { return loaded(k).set.load(std::memory_order_relaxed); }

std::string get_string(Knob k) {
    loaded(k);
    std::lock_guard<std::mutex> lock(state().mutex);
    return state().strings[static_cast<int>(k)];
}

void reload() {
    std::lock_guard<std::mutex> lock(state().mutex);
    for (int i = 0; i < static_cast<int>(Knob::kCount); ++i) load(static_cast<Knob>(i));
}

std::string describe() {
    std::string out;
    for (const Spec& s : kSpecs) {
        const Knob k = s.knob;
        char value[160];
        const int64_t v = get(k);
        switch (s.type) {
            case Type::kString: {
                const std::string str = get_string(k);
                std::snprintf(value, sizeof(value), "%s", str.empty() ? "(unset)" : str.c_str());
                break;
            }
            case Type::kEnum: {
                const char* p = s.choices;
                for (int64_t i = 0; i < v && p; ++i) p = std::strchr(p, '|') ? std::strchr(p, '|') + 1 : nullptr;
                const char* bar = p ? std::strchr(p, '|') : nullptr;
                const int n = p ? (bar ? static_cast<int>(bar - p) : static_cast<int>(std::strlen(p))) : 0;
                std::snprintf(value, sizeof(value), "%.*s", n, p ? p : "");
                break;
            }
            default: std::snprintf(value, sizeof(value), "%lld", (long long)v);
        }
        char line[512];
        std::snprintf(line, sizeof(line), "%-28s %-10s %-8s %s (%s)\n", s.name, value, is_set(k) ? "env" : "default",
                      s.doc, s.when);
        out += line;
    }
    return out;
}

}  // namespace config
}  // namespace pyphmm
