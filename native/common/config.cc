// The settings table and its parser (see config.h).
#include "common/config.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/errors.h"

namespace pyphmm {
namespace config {

namespace {

enum class Type { kBool, kInt, kEnum, kString };
// Where a setting is read: its own variable, or a key of PYPHMM_DEV or
// PYPHMM_TEST.
enum class Scope { kUser, kDev, kTest };

struct Spec {
    Knob knob;
    Scope scope;
    const char* name;  // kUser: the variable; else the key
    Type type;
    int64_t def;          // bool / int / enum index
    int64_t lo, hi;       // int range
    const char* choices;  // enum: "a|b|c"
    const char* when;     // when a change takes effect
    const char* doc;
};

constexpr int64_t kBig = INT64_MAX;
constexpr const char* kDevVar = "PYPHMM_DEV";
constexpr const char* kTestVar = "PYPHMM_TEST";

// The only list of the native library's settings (the README's table lists
// the user settings, docs/DEVELOPING.md the developer settings).
const Spec kSpecs[] = {
    {Knob::kBackend, Scope::kUser, "PYPHMM_BACKEND", Type::kEnum, kAuto, 0, 0, "auto|cpu|cuda", "reload",
     "backend of calls that ask for auto"},
    {Knob::kDevice, Scope::kUser, "PYPHMM_DEVICE", Type::kInt, -1, -1, 1023, nullptr, "first use",
     "pin every call to this CUDA device ordinal (after CUDA_VISIBLE_DEVICES); unset: spread over the GPUs"},
    {Knob::kGpuMinCells, Scope::kUser, "PYPHMM_GPU_MIN_CELLS", Type::kInt, -1, 0, kBig, nullptr, "first use",
     "cells from which an auto call goes to the GPU (unset: calibrated at first use)"},
    {Knob::kHybrid, Scope::kUser, "PYPHMM_HYBRID", Type::kBool, 0, 0, 1, nullptr, "reload",
     "let GPU and CPU threads share whole-workload calls when the CPU's predicted share pays"},
    {Knob::kCudaNap, Scope::kUser, "PYPHMM_CUDA_NAP", Type::kInt, -1, 0, 90, nullptr, "reload",
     "percent of the expected wait for a small GPU call that its thread sleeps before it watches for the "
     "results (0: spin; unset: 60 in a process that an MPS server serves, else 0)"},
    {Knob::kLog, Scope::kUser, "PYPHMM_LOG", Type::kEnum, kLogInfo, 0, 0, "info|quiet|debug", "reload",
     "info: GATK log lines and hints; quiet: warnings only; debug: also a line per call on where it ran"},

    {Knob::kGpuRetryMs, Scope::kDev, "gpu_retry_ms", Type::kInt, 5000, 0, kBig, nullptr, "reload",
     "a process whose GPU had no room for it (an MPS server at its client limit) tries again this often (0: never)"},
    {Knob::kHybridMinCpuShare, Scope::kDev, "hybrid_min_cpu_share", Type::kInt, 5, 0, 100, nullptr, "reload",
     "percent of the work the CPU must be predicted to take before hybrid calls share"},
    {Knob::kHybridGpuThreads, Scope::kDev, "hybrid_gpu_threads", Type::kInt, 2, 1, 64, nullptr, "reload",
     "threads that drive the GPU in a shared hybrid call"},
    {Knob::kCpuKernel, Scope::kDev, "cpu_kernel", Type::kString, 0, 0, 0, nullptr, "first use",
     "force a CPU PairHMM and PDHMM kernel (avx512, avx2, neon, portable; PDHMM also scalar)"},
    {Knob::kSwIsa, Scope::kDev, "sw_isa", Type::kString, 0, 0, 0, nullptr, "first use",
     "force a CPU Smith-Waterman fill (sse, avx2, avx512, avx512vbmi, neon)"},
    {Knob::kSwReuse, Scope::kDev, "sw_reuse", Type::kBool, 1, 0, 1, nullptr, "reload",
     "resume a CPU Smith-Waterman fill from an earlier call's columns when ref and an alt prefix repeat"},
    {Knob::kSwNearExact, Scope::kDev, "sw_near_exact", Type::kBool, 1, 0, 1, nullptr, "reload",
     "align a SOFTCLIP or IGNORE pair on one diagonal, without a matrix, where no gapped alignment can score more"},
    {Knob::kPackScalar, Scope::kDev, "pack_scalar", Type::kBool, 0, 0, 1, nullptr, "first use",
     "pack GPU PairHMM input with scalar code instead of AVX2"},
    {Knob::kCudaArith, Scope::kDev, "cuda_arith", Type::kEnum, kFast, 0, 0, "fast|exact", "first use",
     "GPU PairHMM float arithmetic: fused/factored (fast) or GKL's operation order (exact)"},
    {Knob::kCudaConstGaps, Scope::kDev, "cuda_const_gaps", Type::kBool, 1, 0, 1, nullptr, "first use",
     "GPU kernels with the call's common gap-quality triple as launch constants"},
    {Knob::kCudaTiming, Scope::kDev, "cuda_timing", Type::kBool, 0, 0, 1, nullptr, "reload",
     "time GPU kernels and host phases into pyphmm_stats for every call"},
    {Knob::kCudaTimingEvents, Scope::kDev, "cuda_timing_events", Type::kBool, 1, 0, 1, nullptr, "reload",
     "timed GPU calls record CUDA events around their kernels (0: host phases only, as an untimed call waits)"},
    {Knob::kSwGpuBudgetMb, Scope::kDev, "sw_gpu_budget_mb", Type::kInt, 0, 0, kBig, nullptr, "reload",
     "cap on the device memory of a GPU Smith-Waterman call, MiB (0: 60% of free memory)"},
    {Knob::kJniTrace, Scope::kDev, "jni_trace", Type::kInt, 0, 0, 2, nullptr, "first use",
     "JNI layer timing (2: time the marshalling, reported at done())"},
    {Knob::kJniCopy, Scope::kDev, "jni_copy", Type::kEnum, kRegion, 0, 0, "region|critical", "first use",
     "how the JNI layer copies Java arrays"},
    {Knob::kNativeReader, Scope::kDev, "native_reader", Type::kBool, 1, 0, 1, nullptr, "reload",
     "record files in native code (0: the native record reader declines, and the CLI runs the Python reader)"},

    {Knob::kTestFakeGpu, Scope::kTest, "fake_gpu", Type::kInt, 0, 0, 16, nullptr, "first use",
     "N > 0 stands N single-threaded CPU 'devices' in for the GPU"},
    {Knob::kTestGpuFailure, Scope::kTest, "gpu_failure", Type::kEnum, kNever, 0, 0, "never|always|alternate",
     "first use", "make GPU calls fail (alternate: the 2nd, 4th, ... call)"},
    {Knob::kTestGpuLoad, Scope::kTest, "gpu_load", Type::kString, 0, 0, 0, nullptr, "first use",
     "other processes on each fake device, ':'-separated (e.g. 3:0)"},
    {Knob::kTestGpuFull, Scope::kTest, "gpu_full", Type::kString, 0, 0, 0, nullptr, "first use",
     "how many starts of each fake device fail for want of room, ':'-separated (e.g. 2:0)"},
    {Knob::kTestPoolThrow, Scope::kTest, "pool_throw", Type::kBool, 0, 0, 1, nullptr, "reload",
     "the CPU thread pool's workers (not the calling thread) throw std::bad_alloc on every item they take"},
    {Knob::kTestCores, Scope::kTest, "cores", Type::kInt, 0, 0, 1024, nullptr, "first use",
     "N > 0 stands for the cores the process may use (a 16-core host's thread pool on a small machine)"},
};
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == static_cast<size_t>(Knob::kCount), "one spec per knob");

const char* variable_of(Scope s) { return s == Scope::kDev ? kDevVar : kTestVar; }

// The parsed environment. Immutable once published: reload() builds a new
// one and swaps the pointer, so readers need no lock (the old ones are kept,
// a few hundred bytes per reload).
struct Values {
    int64_t v[static_cast<int>(Knob::kCount)];
    bool set[static_cast<int>(Knob::kCount)];
    std::string strings[static_cast<int>(Knob::kCount)];
    std::string problem;  // the first bad setting, "" if none
};

int choice_index(const char* choices, const std::string& s) {
    int i = 0;
    for (const char* p = choices;; ++i) {
        const char* bar = std::strchr(p, '|');
        const size_t n = bar ? static_cast<size_t>(bar - p) : std::strlen(p);
        if (n == s.size() && !std::strncmp(p, s.c_str(), n)) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

bool parse_bool(const std::string& s, int64_t* out) {
    static const char* const kTrue[] = {"1", "true", "yes", "on"};
    static const char* const kFalse[] = {"0", "false", "no", "off"};
    for (const char* t : kTrue)
        if (!strcasecmp(s.c_str(), t)) return *out = 1, true;
    for (const char* f : kFalse)
        if (!strcasecmp(s.c_str(), f)) return *out = 0, true;
    return false;
}

bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(s.c_str(), &end, 10);
    if (errno || end == s.c_str() || *end != '\0' || x < lo || x > hi) return false;
    *out = x;
    return true;
}

std::string expectation(const Spec& s) {
    char buf[96];
    switch (s.type) {
        case Type::kBool: return "0 or 1";
        case Type::kEnum: return std::string("one of ") + s.choices;
        case Type::kInt:
            if (s.hi == kBig)
                std::snprintf(buf, sizeof(buf), "an integer >= %lld", (long long)s.lo);
            else
                std::snprintf(buf, sizeof(buf), "an integer in %lld..%lld", (long long)s.lo, (long long)s.hi);
            return buf;
        case Type::kString: return "text";
    }
    return "";
}

// The setting's label in messages: PYPHMM_BACKEND, or PYPHMM_DEV's cuda_arith.
std::string label(const Spec& s) {
    return s.scope == Scope::kUser ? std::string(s.name) : std::string(variable_of(s.scope)) + "'s " + s.name;
}

// Parses one value into vals; false (vals->problem says why) if it does not.
bool assign(const Spec& s, const std::string& text, Values* vals) {
    const int i = static_cast<int>(s.knob);
    int64_t v = s.def;
    bool ok = true;
    switch (s.type) {
        case Type::kBool: ok = parse_bool(text, &v); break;
        case Type::kInt: ok = parse_int(text, s.lo, s.hi, &v); break;
        case Type::kEnum: {
            const int c = choice_index(s.choices, text);
            ok = c >= 0;
            if (ok) v = c;
            break;
        }
        case Type::kString: vals->strings[i] = text; break;
    }
    if (!ok) {
        if (vals->problem.empty())
            vals->problem = label(s) + "=" + text.substr(0, 64) + " is not valid: expected " + expectation(s);
        return false;
    }
    vals->v[i] = v;
    vals->set[i] = true;
    return true;
}

// The keys of PYPHMM_DEV or PYPHMM_TEST: "key=value" items separated by
// commas (list values use ':' between their items).
void parse_keys(Scope scope, Values* vals) {
    const char* var = variable_of(scope);
    const char* env = std::getenv(var);
    if (!env) return;
    const std::string all(env);
    size_t at = 0;
    while (at <= all.size()) {
        size_t comma = all.find(',', at);
        if (comma == std::string::npos) comma = all.size();
        const std::string item = all.substr(at, comma - at);
        at = comma + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        const std::string key = item.substr(0, eq);
        const Spec* found = nullptr;
        for (const Spec& s : kSpecs)
            if (s.scope == scope && key == s.name) found = &s;
        if (!found || eq == std::string::npos) {
            if (vals->problem.empty())
                vals->problem = std::string(var) + ": " +
                                (found ? "'" + key + "' needs a value (key=value)"
                                       : "unknown setting '" + key.substr(0, 64) + "'") +
                                "; see docs/DEVELOPING.md";
            continue;
        }
        assign(*found, item.substr(eq + 1), vals);
    }
}

Values* parse_environment() {
    Values* vals = new Values();
    for (const Spec& s : kSpecs) {
        const int i = static_cast<int>(s.knob);
        vals->v[i] = s.def;
        vals->set[i] = false;
        if (s.scope != Scope::kUser) continue;
        const char* e = std::getenv(s.name);
        if (e && *e) assign(s, e, vals);
    }
    parse_keys(Scope::kDev, vals);
    parse_keys(Scope::kTest, vals);
    return vals;
}

std::mutex g_mutex;                     // (serialises parsing)
std::atomic<const Values*> g_values{};  // never freed: readers may hold one

const Values& values() {
    const Values* v = g_values.load(std::memory_order_acquire);
    if (v) return *v;
    std::lock_guard<std::mutex> lock(g_mutex);
    v = g_values.load(std::memory_order_relaxed);
    if (!v) {
        v = parse_environment();
        g_values.store(v, std::memory_order_release);
    }
    return *v;
}

std::string value_text(const Values& vals, const Spec& s) {
    const int i = static_cast<int>(s.knob);
    switch (s.type) {
        case Type::kString: return vals.strings[i].empty() ? "(unset)" : vals.strings[i];
        case Type::kEnum: {
            const char* p = s.choices;
            for (int64_t k = 0; k < vals.v[i] && p; ++k) p = std::strchr(p, '|') ? std::strchr(p, '|') + 1 : nullptr;
            const char* bar = p ? std::strchr(p, '|') : nullptr;
            return p ? std::string(p, bar ? static_cast<size_t>(bar - p) : std::strlen(p)) : "";
        }
        default: return std::to_string(vals.v[i]);
    }
}

}  // namespace

int64_t get(Knob k) { return values().v[static_cast<int>(k)]; }

bool is_set(Knob k) { return values().set[static_cast<int>(k)]; }

std::string get_string(Knob k) { return values().strings[static_cast<int>(k)]; }

void reload() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_values.store(parse_environment(), std::memory_order_release);
}

int check(pyphmm_error* error) {
    const Values& vals = values();
    if (vals.problem.empty()) return PYPHMM_OK;
    return set_error(error, PYPHMM_E_INVALID, "%s", vals.problem.c_str());
}

std::string describe() {
    const Values& vals = values();
    std::string out;
    char line[640];
    for (const Spec& s : kSpecs) {
        if (s.scope != Scope::kUser) continue;
        const int i = static_cast<int>(s.knob);
        std::snprintf(line, sizeof(line), "%-22s %-10s %-8s %s (%s)\n", s.name, value_text(vals, s).c_str(),
                      vals.set[i] ? "env" : "default", s.doc, s.when);
        out += line;
    }
    for (Scope scope : {Scope::kDev, Scope::kTest}) {
        const char* env = std::getenv(variable_of(scope));
        if (scope == Scope::kTest && !(env && *env)) continue;  // seams: only when the tests set them
        std::snprintf(line, sizeof(line), "%-22s %s\n", variable_of(scope), env && *env ? env : "(unset)");
        out += line;
        for (const Spec& s : kSpecs) {
            if (s.scope != scope) continue;
            std::snprintf(line, sizeof(line), "  %-20s %-10s %-8s %s (%s)\n", s.name, value_text(vals, s).c_str(),
                          vals.set[static_cast<int>(s.knob)] ? "set" : "default", s.doc, s.when);
            out += line;
        }
    }
    if (!vals.problem.empty()) out += "error: " + vals.problem + "\n";
    return out;
}

}  // namespace config
}  // namespace pyphmm
