#include "frontends/jni/jni_report.h"

#include "common/config.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pyphmm {
namespace jni {

namespace {

std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

void print_line(const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
}

// ---- the banner ------------------------------------------------------------
// A banner is "pyphmm VERSION WHAT: " followed by "key value" fields joined
// by "; ". To report something new (a field added to pyphmm_info), append
// one Field in pairhmm_fields or sw_fields.
struct Field {
    const char* key;
    std::string value;
};

std::string banner(const pyphmm_info& info, const char* what, const std::vector<Field>& fields) {
    std::string line = std::string("pyphmm ") + info.version + " " + what + ":";
    const char* sep = " ";
    for (const Field& f : fields) {
        line += sep;
        line += f.key;
        line += " ";
        line += f.value;
        sep = "; ";
    }
    return line;
}

const char* threshold_source(int source) {
    return source == PYPHMM_THRESHOLD_CALIBRATED ? "calibrated"
           : source == PYPHMM_THRESHOLD_ENV      ? "PYPHMM_GPU_MIN_CELLS"
                                                 : "default";
}

// Which side computes a PairHMM call, as this caller meets the library.
std::string pairhmm_backend(const pyphmm_info& i) {
    if (i.backend == PYPHMM_BACKEND_CPU) return "CPU (PYPHMM_BACKEND=cpu)";
    if (!i.cuda_usable) {
        // (device_count: the fake GPUs a CPU-only build's tests stand in with)
        const bool gpu_possible = i.cuda_compiled || i.device_count > 0;
        std::string why = gpu_possible ? std::string("no GPU: ") + i.cuda_status : "built without CUDA";
        if (i.backend == PYPHMM_BACKEND_CUDA) return "GPU demanded by PYPHMM_BACKEND=cuda but unusable (" + why + ")";
        return "CPU (" + why + ")";
    }
    if (i.backend == PYPHMM_BACKEND_CUDA) return "GPU for every call (PYPHMM_BACKEND=cuda)";
    return printf_string("GPU for regions of >= %lld cells (%s), CPU below", (long long)i.gpu_min_cells,
                         threshold_source(i.gpu_min_cells_source));
}

bool gpu_in_use(const pyphmm_info& i) { return i.cuda_usable && i.backend != PYPHMM_BACKEND_CPU; }

// Several GPUs, other processes, MPS: what the GPU is shared with.
std::string gpu_sharing(const pyphmm_info& i) {
    std::string s = i.usable_devices > 1 && !i.device_pinned
                        ? printf_string("calls spread over %d GPUs", i.usable_devices)
                        : std::string("one GPU");
    if (i.mps)
        s += "; MPS serves this process";
    else if (i.gpu_other_processes > 0)
        s += printf_string("; no MPS, %d other process%s on the GPU at start", i.gpu_other_processes,
                           i.gpu_other_processes == 1 ? "" : "es");
    else
        s += "; no MPS";
    if (i.cuda_nap_percent > 0) s += printf_string("; waits nap %d%%", i.cuda_nap_percent);
    return s;
}

// The file this code was loaded from: on the library-directory path a
// GKL-named link, which proves which library answered GKL's classes.
std::string library_path() {
    Dl_info where;
    if (dladdr(reinterpret_cast<void*>(&library_path), &where) && where.dli_fname) return where.dli_fname;
    return "?";
}

std::vector<Field> pairhmm_fields(const pyphmm_info& i, bool double_precision) {
    std::vector<Field> f;
    f.push_back({"backend", pairhmm_backend(i)});
    if (gpu_in_use(i)) {
        f.push_back({"GPU", printf_string("%s (device %d, %s)", i.device_name, i.device, i.device_choice)});
        f.push_back({"GPU sharing", gpu_sharing(i)});
    }
    f.push_back(
        {"CPU", printf_string("kernel %s, %d thread%s", i.cpu_kernel, i.cpu_threads, i.cpu_threads == 1 ? "" : "s")});
    f.push_back({"precision", double_precision ? "double" : "float, double where float underflows"});
    f.push_back({"library", library_path()});
    return f;
}

std::vector<Field> sw_fields(const pyphmm_info&) {
    // GKL's entry point aligns one pair per call: latency-bound, on the CPU.
    return {{"backend", "CPU, one pair per call"}, {"library", library_path()}};
}

// Which side computes a PDHMM call. The GPU/CPU choice per region is the
// dispatch layer's; the banner says what this caller may get.
std::string pdhmm_backend(const pyphmm_info& i) {
    if (i.backend == PYPHMM_BACKEND_CPU) return "CPU (PYPHMM_BACKEND=cpu)";
    if (!i.cuda_usable) {
        std::string why = i.cuda_compiled ? std::string("no GPU: ") + i.cuda_status : "built without CUDA";
        if (i.backend == PYPHMM_BACKEND_CUDA) return "GPU demanded by PYPHMM_BACKEND=cuda but unusable (" + why + ")";
        return "CPU (" + why + ")";
    }
    if (i.backend == PYPHMM_BACKEND_CUDA) return "GPU for every call (PYPHMM_BACKEND=cuda)";
    return "GPU or CPU per region, as pyphmm's dispatch decides";
}

std::vector<Field> pdhmm_fields(const pyphmm_info& i, const std::string& requested) {
    std::vector<Field> f;
    f.push_back({"backend", pdhmm_backend(i)});
    if (gpu_in_use(i)) {
        f.push_back({"GPU", printf_string("%s (device %d, %s)", i.device_name, i.device, i.device_choice)});
        f.push_back({"GPU sharing", gpu_sharing(i)});
    }
    f.push_back({"CPU", printf_string("%d thread%s", i.cpu_threads, i.cpu_threads == 1 ? "" : "s")});
    f.push_back({"precision", "double"});
    f.push_back({"GKL arguments", requested});
    f.push_back({"library", library_path()});
    return f;
}

pyphmm_info info_for_threads(int threads) {
    pyphmm_options opts = PYPHMM_OPTIONS_INIT;
    opts.threads = threads;
    pyphmm_info info;
    pyphmm_get_info_for(&opts, &info);
    return info;
}

// ---- process-wide totals ---------------------------------------------------
// One per PairHMM kind (PairHMM, PDHMM): every binding of that kind in the
// process adds to it, whichever thread calls.
struct HmmTotals {
    std::atomic<int64_t> calls{0}, pairs{0}, cells{0}, redone_double{0}, gpu_cells{0}, cpu_cells{0}, fallbacks{0},
        nanoseconds{0};
    std::atomic<int> threads{0};
};
struct SwTotals {
    std::atomic<int64_t> calls{0}, cells{0}, nanoseconds{0};
    std::atomic<int> threads{0};
};
HmmTotals g_pairhmm, g_pdhmm;
SwTotals g_sw;
thread_local bool t_counted_pairhmm = false, t_counted_pdhmm = false, t_counted_sw = false;

void count_hmm(HmmTotals& t, bool& thread_counted, const pyphmm_stats& st, int64_t nanoseconds, int64_t redone) {
    constexpr auto r = std::memory_order_relaxed;
    t.calls.fetch_add(1, r);
    t.pairs.fetch_add(st.pairs, r);
    t.cells.fetch_add(st.cells, r);
    t.redone_double.fetch_add(redone, r);
    int64_t gpu = st.gpu_cells, cpu = st.cpu_cells;
    if (gpu + cpu == 0) (st.backend_used == PYPHMM_BACKEND_CUDA ? gpu : cpu) = st.cells;  // sides not reported
    t.gpu_cells.fetch_add(gpu, r);
    t.cpu_cells.fetch_add(cpu, r);
    if (st.fell_back) t.fallbacks.fetch_add(1, r);
    t.nanoseconds.fetch_add(nanoseconds, r);
    if (!thread_counted) {
        thread_counted = true;
        t.threads.fetch_add(1, r);
    }
}

// " over 1 calling thread (12.3 GCUPS)" or " summed over 8 calling threads".
std::string time_note(int threads, int64_t cells, double seconds) {
    if (threads <= 1)
        return printf_string(" on 1 calling thread (%.2f GCUPS)", seconds > 0 ? cells / seconds / 1e9 : 0.0);
    return printf_string(" summed over %d calling threads", threads);
}

// "pyphmm V KIND summary: ..." of one kind's totals; nothing before its first call.
void print_hmm_summary(const HmmTotals& t, const char* kind, bool float_first) {
    const int64_t calls = t.calls.load(), cells = t.cells.load();
    if (quiet() || calls == 0) return;
    const double seconds = t.nanoseconds.load() / 1e9;
    const int64_t sided = t.gpu_cells.load() + t.cpu_cells.load();
    const double gpu_pct = sided > 0 ? 100.0 * t.gpu_cells.load() / sided : 0.0;
    pyphmm_info info;
    pyphmm_get_info(&info);
    std::string line =
        printf_string("pyphmm %s %s summary: %lld calls, %lld pairs, %lld cells, %.3f s inside pyphmm", info.version,
                      kind, (long long)calls, (long long)t.pairs.load(), (long long)cells, seconds) +
        time_note(t.threads.load(), cells, seconds) +
        printf_string("; cells on GPU %.1f%%, CPU %.1f%%", gpu_pct, sided > 0 ? 100.0 - gpu_pct : 0.0);
    if (float_first) line += printf_string("; %lld pairs redone in double", (long long)t.redone_double.load());
    print_line(line + printf_string("; %lld GPU fallbacks", (long long)t.fallbacks.load()));
}

}  // namespace

bool quiet() { return config::quiet(); }

void announce_pairhmm(int threads, bool double_precision) {
    static std::atomic<bool> said{false};
    if (quiet() || said.exchange(true)) return;
    pyphmm_info info = info_for_threads(threads);
    print_line(banner(info, "PairHMM", pairhmm_fields(info, double_precision)));
}

void announce_pdhmm(int threads, const std::string& requested) {
    // Once per distinct configuration: GATK initialises one binding per
    // engine, and instances configured differently each say what they got.
    static std::mutex mutex;
    static std::set<std::pair<int, std::string>> said;
    if (quiet()) return;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (!said.insert({threads, requested}).second) return;
    }
    pyphmm_info info = info_for_threads(threads);
    print_line(banner(info, "PDHMM", pdhmm_fields(info, requested)));
}

void announce_sw() {
    static std::atomic<bool> said{false};
    if (quiet() || said.exchange(true)) return;
    pyphmm_info info = info_for_threads(1);
    print_line(banner(info, "Smith-Waterman", sw_fields(info)));
}

void count_pairhmm(const pyphmm_stats& st, int64_t nanoseconds, bool all_double) {
    count_hmm(g_pairhmm, t_counted_pairhmm, st, nanoseconds, all_double ? 0 : st.double_pairs);
}

void count_pdhmm(const pyphmm_stats& st, int64_t nanoseconds) {
    count_hmm(g_pdhmm, t_counted_pdhmm, st, nanoseconds, 0);
}

void count_sw(int64_t cells, int64_t nanoseconds) {
    constexpr auto r = std::memory_order_relaxed;
    g_sw.calls.fetch_add(1, r);
    g_sw.cells.fetch_add(cells, r);
    g_sw.nanoseconds.fetch_add(nanoseconds, r);
    if (!t_counted_sw) {
        t_counted_sw = true;
        g_sw.threads.fetch_add(1, r);
    }
}

void print_pairhmm_summary() { print_hmm_summary(g_pairhmm, "PairHMM", true); }

void print_pdhmm_summary() { print_hmm_summary(g_pdhmm, "PDHMM", false); }

void print_sw_summary() {
    const SwTotals& t = g_sw;
    const int64_t calls = t.calls.load(), cells = t.cells.load();
    if (quiet() || calls == 0) return;
    const double seconds = t.nanoseconds.load() / 1e9;
    pyphmm_info info;
    pyphmm_get_info(&info);
    print_line(printf_string("pyphmm %s Smith-Waterman summary: %lld alignments, %lld cells, %.3f s inside pyphmm",
                             info.version, (long long)calls, (long long)cells, seconds) +
               time_note(t.threads.load(), cells, seconds));
}

}  // namespace jni
}  // namespace pyphmm
