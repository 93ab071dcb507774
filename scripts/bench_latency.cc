// Per-call latency of pyphmm_pairhmm, one region per call as GATK calls it,
// from 1..T threads of one process, through the public C ABI only (no
// Python, no JNI). Reads a record file (README's format, e.g. from
// scripts/gen_regions.py).
//
//   g++ -O2 -std=c++17 -pthread -Inative/include scripts/bench_latency.cc -Lpyphmm -lpyphmm \
//       -Wl,-rpath,$PWD/pyphmm -o /tmp/bench_latency
//   /tmp/bench_latency FILE [--threads 1,4,16] [--passes 3] [--backend cuda|cpu|auto] [--phases]
//       [--group G] [--variant NAME=VALUE ...]
//
// For each thread count the threads take interleaved shares of the regions
// and call synchronously, after a common start; it prints per-call median
// and p99 latency, the aggregate GCUPS (all cells / span from the start to
// the last finish) and the CPU cores the process kept busy meanwhile (its
// user + system time / the span), best pass of --passes. --phases adds, for
// each thread count, the library's own split of a call (PYPHMM_FLAG_TIMING),
// once with CUDA events (kernel time) and once without (the phases of an
// untimed call): host setup/pack/enqueue/wait/copy-out medians. --group G
// passes G consecutive regions of a thread's share per call (what a caller
// with G regions in flight would see; latency is then per call). Each
// --variant sets an environment variable and reloads the library's
// configuration before the next series (A/B of knobs in one process).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "pyphmm.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Region {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, haps;
    std::vector<int64_t> read_off{0}, hap_off{0};
    pyphmm_region c{};
    int64_t cells = 0, pairs = 0;
};

std::vector<uint8_t> phred(const std::string& s) {
    std::vector<uint8_t> v(s.size());
    for (size_t i = 0; i < s.size(); ++i) v[i] = static_cast<uint8_t>(s[i] - 33);
    return v;
}

template <typename T>
void append(std::vector<T>& dst, const std::vector<T>& src) {
    dst.insert(dst.end(), src.begin(), src.end());
}

bool read_records(const char* path, std::vector<Region>& out) {
    std::ifstream f(path);
    if (!f) return false;
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream head(line);
        int nr = 0, nh = 0;
        if (!(head >> nr >> nh)) continue;
        Region g;
        for (int r = 0; r < nr && std::getline(f, line); ++r) {
            std::istringstream in(line);
            std::string b, q, i, d, c;
            in >> b >> q >> i >> d >> c;
            g.bases.insert(g.bases.end(), b.begin(), b.end());
            append(g.quals, phred(q));
            append(g.ins, phred(i));
            append(g.dels, phred(d));
            append(g.gcp, phred(c));
            g.read_off.push_back(static_cast<int64_t>(g.bases.size()));
        }
        for (int h = 0; h < nh && std::getline(f, line); ++h) {
            std::istringstream in(line);
            std::string hap;
            in >> hap;
            g.haps.insert(g.haps.end(), hap.begin(), hap.end());
            g.hap_off.push_back(static_cast<int64_t>(g.haps.size()));
        }
        g.c = {nr,
               nh,
               g.bases.data(),
               g.quals.data(),
               g.ins.data(),
               g.dels.data(),
               g.gcp.data(),
               g.read_off.data(),
               g.haps.data(),
               g.hap_off.data()};
        g.cells = static_cast<int64_t>(g.bases.size()) * static_cast<int64_t>(g.haps.size());
        g.pairs = int64_t(nr) * nh;
        out.push_back(std::move(g));
    }
    return !out.empty();
}

// The process's CPU time so far (user + system), seconds.
double cpu_seconds() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

struct Series {
    double gcups = 0, median_us = 0, p99_us = 0;
    double cpu_cores = 0;  // the process's CPU time (user + system) over the span
    // PYPHMM_FLAG_TIMING passes: per call, the kernels' time and the host phases (us)
    std::vector<double> kernel_us, phase_us[5];
};

// One pass: `threads` threads, interleaved shares, a common start.
Series run_pass(const std::vector<Region>& regions, int threads, int group, const pyphmm_options& opts) {
    const bool timed = opts.flags & PYPHMM_FLAG_TIMING;
    std::vector<std::vector<double>> lat(threads);
    std::vector<std::vector<pyphmm_stats>> stats(threads);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<Clock::time_point> done(threads);
    std::vector<std::thread> pool;
    int64_t cells = 0;
    for (const Region& g : regions) cells += g.cells;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            std::vector<double> out;
            std::vector<pyphmm_region> call;
            pyphmm_error err;
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            for (size_t k = size_t(t) * group; k < regions.size(); k += size_t(threads) * group) {
                call.clear();
                int64_t pairs = 0;
                for (size_t i = k; i < std::min(regions.size(), k + group); ++i) {
                    call.push_back(regions[i].c);
                    pairs += regions[i].pairs;
                }
                out.resize(pairs);
                const Clock::time_point a = Clock::now();
                pyphmm_stats st;
                if (pyphmm_pairhmm(call.data(), static_cast<int64_t>(call.size()), out.data(), &opts,
                                   timed ? &st : nullptr, &err) != PYPHMM_OK) {
                    std::fprintf(stderr, "pyphmm_pairhmm: %s\n", err.message);
                    std::exit(1);
                }
                lat[t].push_back(std::chrono::duration<double>(Clock::now() - a).count() * 1e6);
                if (timed) stats[t].push_back(st);
            }
            done[t] = Clock::now();
        });
    while (ready.load() < threads) std::this_thread::yield();
    const double cpu0 = cpu_seconds();
    const Clock::time_point start = Clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    const Clock::time_point end = *std::max_element(done.begin(), done.end());
    const double cpu1 = cpu_seconds();
    std::vector<double> all;
    for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
    Series s;
    const double span = std::chrono::duration<double>(end - start).count();
    s.gcups = cells / span / 1e9;
    s.cpu_cores = (cpu1 - cpu0) / span;
    s.median_us = pct(all, 0.5);
    s.p99_us = pct(all, 0.99);
    for (const auto& v : stats)
        for (const pyphmm_stats& st : v) {
            s.kernel_us.push_back(st.kernel_seconds * 1e6);
            for (int i = 0; i < 5; ++i) s.phase_us[i].push_back(st.phase_seconds[i] * 1e6);
        }
    return s;
}

// Sets (value) or unsets (nullptr) an environment variable of the library
// and reloads its configuration.
void set_knob(const char* name, const char* value) {
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    pyphmm_config_reload();
}

// Two more passes of `threads` threads with the library's timers on: with
// CUDA events around the kernels (the kernels' time; the events also change
// the calls: they wait in CUDA instead of watching their results, and with many
// threads the event records queue in the driver) and without
// (PYPHMM_DEV=cuda_timing_events=0: the host phases of an untimed call).
// Prints the medians per call.
void phases(const std::vector<Region>& regions, int threads, int group, pyphmm_options opts) {
    opts.flags |= PYPHMM_FLAG_TIMING;
    const char* knob = "PYPHMM_DEV";
    const char* old = std::getenv(knob);
    const std::string saved = old ? old : "";  // (setenv may free the string getenv returned)
    for (const char* events : {"1", "0"}) {
        set_knob(knob, events[0] == '1' ? "cuda_timing_events=1" : "cuda_timing_events=0");
        const Series s = run_pass(regions, threads, group, opts);
        std::printf("  threads %2d, timing on, %s: median call %.1f us", threads,
                    events[0] == '1' ? "events   " : "no events", s.median_us);
        if (events[0] == '1') std::printf("; kernels %.1f", pct(s.kernel_us, 0.5));
        std::printf(" | setup %.1f pack %.1f enqueue %.1f wait %.1f copy-out %.1f (median us)\n",
                    pct(s.phase_us[0], 0.5), pct(s.phase_us[1], 0.5), pct(s.phase_us[2], 0.5), pct(s.phase_us[3], 0.5),
                    pct(s.phase_us[4], 0.5));
    }
    set_knob(knob, old ? saved.c_str() : nullptr);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: %s FILE [--threads 1,4,16] [--passes N] [--backend B] [--phases] [--group G] "
                     "[--variant NAME=VALUE ...]\n",
                     argv[0]);
        return 2;
    }
    std::vector<int> threads{1};
    std::vector<std::string> variants{""};
    int passes = 3, group = 1;
    bool with_phases = false;
    pyphmm_options opts = PYPHMM_OPTIONS_INIT;
    opts.backend = PYPHMM_BACKEND_CUDA;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--threads" && i + 1 < argc) {
            threads.clear();
            std::stringstream ss(argv[++i]);
            for (std::string t; std::getline(ss, t, ',');) threads.push_back(std::atoi(t.c_str()));
        } else if (a == "--passes" && i + 1 < argc) {
            passes = std::atoi(argv[++i]);
        } else if (a == "--backend" && i + 1 < argc) {
            const std::string b = argv[++i];
            opts.backend = b == "cpu" ? PYPHMM_BACKEND_CPU : b == "auto" ? PYPHMM_BACKEND_AUTO : PYPHMM_BACKEND_CUDA;
        } else if (a == "--group" && i + 1 < argc) {
            group = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--phases") {
            with_phases = true;
        } else if (a == "--variant" && i + 1 < argc) {
            variants.push_back(argv[++i]);
        } else {
            std::fprintf(stderr, "unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    std::vector<Region> regions;
    if (!read_records(argv[1], regions)) {
        std::fprintf(stderr, "cannot read records from %s\n", argv[1]);
        return 2;
    }
    int64_t cells = 0, pairs = 0;
    for (const Region& g : regions) {
        cells += g.cells;
        pairs += g.pairs;
    }
    pyphmm_info info;
    pyphmm_get_info(&info);
    std::printf("%s: %zu regions, %lld pairs, %.2f G cells; %s\n", argv[1], regions.size(), (long long)pairs,
                cells / 1e9, info.cuda_usable ? info.device_name : "no GPU");
    for (const std::string& v : variants) {
        if (!v.empty()) {
            const size_t eq = v.find('=');
            set_knob(v.substr(0, eq).c_str(), v.substr(eq + 1).c_str());
        }
        std::printf("variant %s\n", v.empty() ? "(defaults)" : v.c_str());
        run_pass(regions, 1, group, opts);  // warm-up: pools and pinned buffers grow
        for (int t : threads) {
            Series best;
            best.median_us = 1e30;
            for (int p = 0; p < passes; ++p) {
                const Series s = run_pass(regions, t, group, opts);
                if (s.gcups > best.gcups) best = s;
            }
            if (group > 1) std::printf("  %d regions per call:", group);
            std::printf("  threads %2d: aggregate %.1f GCUPS, per call median %.1f us, p99 %.1f us; CPU %.1f cores\n",
                        t, best.gcups, best.median_us, best.p99_us, best.cpu_cores);
        }
        if (with_phases)
            for (int t : threads) phases(regions, t, group, opts);
    }
    return 0;
}
