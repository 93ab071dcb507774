// The native side of tests/test_aarch64.py: cross-built for AArch64 with
// libpyphmm.so (scripts/build_aarch64.sh) and run under qemu-aarch64, it
// drives the library through its C ABI only and writes what it computed;
// the Python test compares that with GKL and with the x86-64 build.
//
//   aarch64_check info
//   aarch64_check pairhmm IN OUT DOUBLE(0|1) CALLS(each|all) THREADS
//   aarch64_check sw IN OUT THREADS
//   aarch64_check pdhmm IN OUT CALLS(each|all) THREADS
//   aarch64_check fpmode
//
// PairHMM input: a line with the region count, then per region "R H", R
// read lines (bases, quals, ins, dels, gcp, each as hex bytes) and H
// haplotype lines (hex). Output: "stats PAIRS DOUBLE_PAIRS", then every
// likelihood, one per line, region after region (%.17g round-trips).
// CALLS=each makes one pyphmm_pairhmm call per region (GATK's way: small
// regions run pair by pair on the stripe kernel), all one call for all.
//
// PDHMM input: as PairHMM's, but each haplotype line holds the bases and
// the PD bytes (hex), and "-" stands for an empty field (empty reads and
// haplotypes are valid PDHMM input). Output: "stats PAIRS", then every
// log10 likelihood (%.17g; -inf as "-inf").
//
// Smith-Waterman input: the pair count, then per pair "REF ALT MATCH
// MISMATCH OPEN EXTEND STRATEGY" (sequences hex). Output per pair: the
// batch call's CIGAR and offset, then pyphmm_sw_align_one's.
//
// fpmode: GKL's flush-to-zero queries through the JNI entry points (they
// ignore their JNIEnv), whether pyphmm_pairhmm restores the caller's mode,
// and whether pyphmm_pdhmm keeps denormals under a caller's FTZ (GKL's
// PDHMM computes with them) and restores the mode too.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "pyphmm.h"

namespace {

std::vector<uint8_t> unhex(const std::string& s) {
    if (s == "-") return {};
    if (s.size() % 2) {
        std::fprintf(stderr, "odd hex string\n");
        std::exit(2);
    }
    std::vector<uint8_t> out(s.size() / 2);
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<uint8_t>(std::stoi(s.substr(2 * k, 2), nullptr, 16));
    return out;
}

void append(std::vector<uint8_t>& to, const std::vector<uint8_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

void fail(const char* what, const pyphmm_error& e) {
    std::fprintf(stderr, "%s failed: %d %s\n", what, e.code, e.message);
    std::exit(1);
}

// One region's packed buffers.
struct Region {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, haps;
    std::vector<int64_t> read_off{0}, hap_off{0};
    pyphmm_region view() const {
        return pyphmm_region{static_cast<int32_t>(read_off.size() - 1),
                             static_cast<int32_t>(hap_off.size() - 1),
                             bases.data(),
                             quals.data(),
                             ins.data(),
                             dels.data(),
                             gcp.data(),
                             read_off.data(),
                             haps.data(),
                             hap_off.data()};
    }
    size_t results() const { return (read_off.size() - 1) * (hap_off.size() - 1); }
};

std::vector<Region> read_regions(const char* path) {
    std::ifstream in(path);
    int64_t count = 0;
    in >> count;
    std::vector<Region> regions(count);
    for (Region& g : regions) {
        int r = 0, h = 0;
        in >> r >> h;
        for (int k = 0; k < r; ++k) {
            std::string b, q, i, d, c;
            in >> b >> q >> i >> d >> c;
            append(g.bases, unhex(b));
            append(g.quals, unhex(q));
            append(g.ins, unhex(i));
            append(g.dels, unhex(d));
            append(g.gcp, unhex(c));
            g.read_off.push_back(static_cast<int64_t>(g.bases.size()));
        }
        for (int k = 0; k < h; ++k) {
            std::string s;
            in >> s;
            append(g.haps, unhex(s));
            g.hap_off.push_back(static_cast<int64_t>(g.haps.size()));
        }
    }
    if (!in) {
        std::fprintf(stderr, "%s: malformed input\n", path);
        std::exit(2);
    }
    return regions;
}

int cmd_pairhmm(const char* in_path, const char* out_path, bool dbl, bool each, int threads) {
    const std::vector<Region> regions = read_regions(in_path);
    std::vector<pyphmm_region> views;
    size_t total = 0;
    for (const Region& g : regions) {
        views.push_back(g.view());
        total += g.results();
    }
    std::vector<double> out(total);
    pyphmm_options opt{};
    opt.backend = PYPHMM_BACKEND_CPU;
    opt.threads = threads;
    opt.double_precision = dbl ? 1 : 0;
    pyphmm_error err{};
    int64_t pairs = 0, double_pairs = 0;
    if (each) {
        size_t at = 0;
        for (const pyphmm_region& v : views) {
            pyphmm_stats st{};
            if (pyphmm_pairhmm(&v, 1, out.data() + at, &opt, &st, &err) != PYPHMM_OK) fail("pyphmm_pairhmm", err);
            at += static_cast<size_t>(v.num_reads) * v.num_haps;
            pairs += st.pairs;
            double_pairs += st.double_pairs;
        }
    } else {
        pyphmm_stats st{};
        if (pyphmm_pairhmm(views.data(), static_cast<int64_t>(views.size()), out.data(), &opt, &st, &err) != PYPHMM_OK)
            fail("pyphmm_pairhmm", err);
        pairs = st.pairs;
        double_pairs = st.double_pairs;
    }
    FILE* f = std::fopen(out_path, "w");
    if (!f) return 2;
    std::fprintf(f, "stats %lld %lld\n", static_cast<long long>(pairs), static_cast<long long>(double_pairs));
    for (double v : out) std::fprintf(f, "%.17g\n", v);
    return std::fclose(f) == 0 ? 0 : 2;
}

// One PDHMM region's packed buffers.
struct PdRegion {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, haps, pd;
    std::vector<int64_t> read_off{0}, hap_off{0};
    pyphmm_pd_region view() const {
        return pyphmm_pd_region{static_cast<int32_t>(read_off.size() - 1),
                                static_cast<int32_t>(hap_off.size() - 1),
                                bases.data(),
                                quals.data(),
                                ins.data(),
                                dels.data(),
                                gcp.data(),
                                read_off.data(),
                                haps.data(),
                                pd.data(),
                                hap_off.data()};
    }
};

std::vector<PdRegion> read_pd_regions(const char* path) {
    std::ifstream in(path);
    int64_t count = 0;
    in >> count;
    std::vector<PdRegion> regions(count);
    for (PdRegion& g : regions) {
        int r = 0, h = 0;
        in >> r >> h;
        for (int k = 0; k < r; ++k) {
            std::string b, q, i, d, c;
            in >> b >> q >> i >> d >> c;
            append(g.bases, unhex(b));
            append(g.quals, unhex(q));
            append(g.ins, unhex(i));
            append(g.dels, unhex(d));
            append(g.gcp, unhex(c));
            g.read_off.push_back(static_cast<int64_t>(g.bases.size()));
        }
        for (int k = 0; k < h; ++k) {
            std::string b, p;
            in >> b >> p;
            append(g.haps, unhex(b));
            append(g.pd, unhex(p));
            g.hap_off.push_back(static_cast<int64_t>(g.haps.size()));
        }
        // (vectors that stay empty have no data(): give every buffer a byte)
        for (auto* v : {&g.bases, &g.quals, &g.ins, &g.dels, &g.gcp, &g.haps, &g.pd}) v->reserve(1);
    }
    if (!in) {
        std::fprintf(stderr, "%s: malformed input\n", path);
        std::exit(2);
    }
    return regions;
}

int cmd_pdhmm(const char* in_path, const char* out_path, bool each, int threads) {
    const std::vector<PdRegion> regions = read_pd_regions(in_path);
    std::vector<pyphmm_pd_region> views;
    size_t total = 0;
    for (const PdRegion& g : regions) {
        views.push_back(g.view());
        total += static_cast<size_t>(views.back().num_reads) * views.back().num_haps;
    }
    std::vector<double> out(total);
    pyphmm_options opt{};
    opt.backend = PYPHMM_BACKEND_CPU;
    opt.threads = threads;
    pyphmm_error err{};
    int64_t pairs = 0;
    size_t at = 0;
    for (size_t k = 0; k < views.size(); k += each ? 1 : views.size()) {
        const int64_t n = each ? 1 : static_cast<int64_t>(views.size());
        pyphmm_stats st{};
        if (pyphmm_pdhmm(&views[k], n, out.data() + at, &opt, &st, &err) != PYPHMM_OK) fail("pyphmm_pdhmm", err);
        at += static_cast<size_t>(st.pairs);
        pairs += st.pairs;
    }
    FILE* f = std::fopen(out_path, "w");
    if (!f) return 2;
    std::fprintf(f, "stats %lld\n", static_cast<long long>(pairs));
    for (double v : out) std::fprintf(f, "%.17g\n", v);
    return std::fclose(f) == 0 ? 0 : 2;
}

int cmd_sw(const char* in_path, const char* out_path, int threads) {
    std::ifstream in(in_path);
    int64_t n = 0;
    in >> n;
    std::vector<uint8_t> ref, alt;
    std::vector<int64_t> ref_off{0}, alt_off{0}, cigar_off{0};
    std::vector<pyphmm_sw_params> params(n);
    std::vector<int8_t> strategies(n);
    for (int64_t k = 0; k < n; ++k) {
        std::string r, a;
        int s = 0;
        in >> r >> a >> params[k].match >> params[k].mismatch >> params[k].gap_open >> params[k].gap_extend >> s;
        strategies[k] = static_cast<int8_t>(s);
        append(ref, unhex(r));
        append(alt, unhex(a));
        ref_off.push_back(static_cast<int64_t>(ref.size()));
        alt_off.push_back(static_cast<int64_t>(alt.size()));
        cigar_off.push_back(cigar_off.back() + 2 * static_cast<int64_t>(r.size() / 2 + a.size() / 2) + 1);
    }
    if (!in) {
        std::fprintf(stderr, "%s: malformed input\n", in_path);
        return 2;
    }
    std::vector<char> cigars(static_cast<size_t>(cigar_off.back()));
    std::vector<int32_t> offsets(n);
    pyphmm_sw_batch batch{n, ref.data(), ref_off.data(), alt.data(), alt_off.data(), params.data(), strategies.data(),
                          1};
    pyphmm_options opt{};
    opt.backend = PYPHMM_BACKEND_CPU;
    opt.threads = threads;
    pyphmm_error err{};
    if (pyphmm_sw_align(&batch, cigars.data(), cigar_off.data(), offsets.data(), &opt, nullptr, &err) != PYPHMM_OK)
        fail("pyphmm_sw_align", err);
    FILE* f = std::fopen(out_path, "w");
    if (!f) return 2;
    for (int64_t k = 0; k < n; ++k) {
        std::vector<char> one(static_cast<size_t>(cigar_off[k + 1] - cigar_off[k]));
        int32_t off1 = 0;
        if (pyphmm_sw_align_one(ref.data() + ref_off[k], ref_off[k + 1] - ref_off[k], alt.data() + alt_off[k],
                                alt_off[k + 1] - alt_off[k], &params[k], strategies[k], one.data(),
                                static_cast<int64_t>(one.size()), &off1, &err) != PYPHMM_OK)
            fail("pyphmm_sw_align_one", err);
        std::fprintf(f, "%s %d %s %d\n", cigars.data() + cigar_off[k], offsets[k], one.data(), off1);
    }
    // Once more on one thread, in order, for the count of cells resumed from
    // an earlier pair (prefix reuse), on standard output.
    opt.threads = 1;
    pyphmm_stats st{};
    if (pyphmm_sw_align(&batch, cigars.data(), cigar_off.data(), offsets.data(), &opt, &st, &err) != PYPHMM_OK)
        fail("pyphmm_sw_align", err);
    std::printf("reused_cells %lld\n", static_cast<long long>(st.reused_cells));
    return std::fclose(f) == 0 ? 0 : 2;
}

}  // namespace

// GKL's utility natives as libpyphmm.so exports them (JNIEnv and jobject are
// not used by these entry points; jboolean is an unsigned char).
extern "C" {
unsigned char Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(void*, void*);
void Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(void*, void*, unsigned char);
unsigned char Java_com_intel_gkl_IntelGKLUtils_isAvxSupportedNative(void*, void*);
unsigned char Java_com_intel_gkl_IntelGKLUtils_isAvx2SupportedNative(void*, void*);
unsigned char Java_com_intel_gkl_IntelGKLUtils_isAvx512SupportedNative(void*, void*);
int Java_com_intel_gkl_IntelGKLUtils_getAvailableOmpThreadsNative(void*, void*);
}

namespace {

uint64_t fpcr() {
#if defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

// A product whose exact value (1e-40) is a float denormal: 0 under FTZ.
float denormal_product() {
    volatile float a = 1e-30f, b = 1e-10f;
    return a * b;
}

// One small region through the CPU backend; returns its likelihood.
double one_likelihood() {
    const uint8_t read[] = "ACGTACGTAC", q[] = {30, 30, 30, 30, 30, 30, 30, 30, 30, 30},
                  ins[] = {45, 45, 45, 45, 45, 45, 45, 45, 45, 45}, gcp[] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10};
    const uint8_t hap[] = "ACGTTCGTACGG";
    const int64_t roff[] = {0, 10}, hoff[] = {0, 12};
    pyphmm_region g{1, 1, read, q, ins, ins, gcp, roff, hap, hoff};
    pyphmm_options opt{};
    opt.backend = PYPHMM_BACKEND_CPU;
    opt.threads = 1;
    double out = 0;
    pyphmm_error err{};
    if (pyphmm_pairhmm(&g, 1, &out, &opt, nullptr, &err) != PYPHMM_OK) fail("pyphmm_pairhmm", err);
    return out;
}

// A PDHMM pair whose last-row sum is a denormal (log10 likelihood near
// -617: an unrelated read with costly gaps): its bits depend on denormal
// arithmetic, which GKL's PDHMM keeps.
double pd_denormal_likelihood() {
    std::vector<uint8_t> read(400), hap(200), q(350, 40), gap(350, 30), pd(200, 0);
    uint32_t x = 12345;
    auto base = [&x] {
        x = x * 1103515245u + 12345u;
        return static_cast<uint8_t>("ACGT"[(x >> 16) & 3]);
    };
    for (auto& b : read) b = base();
    for (auto& b : hap) b = base();
    pd[50] = 6;  // a one-base span
    const int64_t roff[] = {0, 350}, hoff[] = {0, 200};
    pyphmm_pd_region g{1,          1,    read.data(), q.data(),  gap.data(), gap.data(),
                       gap.data(), roff, hap.data(),  pd.data(), hoff};
    pyphmm_options opt{};
    opt.backend = PYPHMM_BACKEND_CPU;
    opt.threads = 1;
    double out = 0;
    pyphmm_error err{};
    if (pyphmm_pdhmm(&g, 1, &out, &opt, nullptr, &err) != PYPHMM_OK) fail("pyphmm_pdhmm", err);
    return out;
}

int cmd_fpmode() {
    const bool initial = Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(nullptr, nullptr);
    std::printf("initial_ftz=%d fpcr_fz=%d\n", initial ? 1 : 0, static_cast<int>((fpcr() >> 24) & 1));
    std::printf("denormal_without_ftz=%d\n", denormal_product() != 0.0f ? 1 : 0);
    const double plain = one_likelihood();
    std::printf("ftz_after_call_without_ftz=%d\n",
                Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(nullptr, nullptr) ? 1 : 0);
    Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(nullptr, nullptr, 1);
    std::printf("ftz_after_set=%d fpcr_fz=%d\n",
                Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(nullptr, nullptr) ? 1 : 0,
                static_cast<int>((fpcr() >> 24) & 1));
    std::printf("denormal_with_ftz=%d\n", denormal_product() != 0.0f ? 1 : 0);
    const double under_ftz = one_likelihood();
    std::printf("ftz_after_call_with_ftz=%d\n",
                Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(nullptr, nullptr) ? 1 : 0);
    Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(nullptr, nullptr, 0);
    std::printf("ftz_after_clear=%d denormal_after_clear=%d\n",
                Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(nullptr, nullptr) ? 1 : 0,
                denormal_product() != 0.0f ? 1 : 0);
    std::printf("same_result_either_mode=%d likelihood=%.17g\n", plain == under_ftz ? 1 : 0, plain);
    const double pd_plain = pd_denormal_likelihood();
    Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(nullptr, nullptr, 1);
    const double pd_ftz = pd_denormal_likelihood();
    std::printf("pd_ftz_kept=%d\n", Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(nullptr, nullptr) ? 1 : 0);
    Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(nullptr, nullptr, 0);
    std::printf("pd_same_result_either_mode=%d pd_likelihood=%.17g\n", pd_plain == pd_ftz ? 1 : 0, pd_plain);
    std::printf("avx=%d avx2=%d avx512=%d omp_threads=%d\n",
                Java_com_intel_gkl_IntelGKLUtils_isAvxSupportedNative(nullptr, nullptr),
                Java_com_intel_gkl_IntelGKLUtils_isAvx2SupportedNative(nullptr, nullptr),
                Java_com_intel_gkl_IntelGKLUtils_isAvx512SupportedNative(nullptr, nullptr),
                Java_com_intel_gkl_IntelGKLUtils_getAvailableOmpThreadsNative(nullptr, nullptr));
    return 0;
}

int cmd_info() {
    pyphmm_info info{};
    pyphmm_get_info(&info);
    std::printf("version=%s cpu_kernel=%s jni=%d cuda=%d cpu_threads=%d\n", info.version, info.cpu_kernel,
                info.jni_compiled, info.cuda_compiled, info.cpu_threads);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "info") return cmd_info();
    if (cmd == "fpmode") return cmd_fpmode();
    if (cmd == "pairhmm" && argc == 7)
        return cmd_pairhmm(argv[2], argv[3], std::atoi(argv[4]) != 0, std::strcmp(argv[5], "each") == 0,
                           std::atoi(argv[6]));
    if (cmd == "sw" && argc == 5) return cmd_sw(argv[2], argv[3], std::atoi(argv[4]));
    if (cmd == "pdhmm" && argc == 6)
        return cmd_pdhmm(argv[2], argv[3], std::strcmp(argv[4], "each") == 0, std::atoi(argv[5]));
    std::fprintf(stderr,
                 "usage: aarch64_check info | fpmode | pairhmm IN OUT DOUBLE each|all THREADS | sw IN OUT THREADS | "
                 "pdhmm IN OUT each|all THREADS\n");
    return 2;
}
