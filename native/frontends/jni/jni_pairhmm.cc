// GKL's JNI entry points for com.intel.gkl.pairhmm.IntelPairHmm (and its
// subclass IntelPairHmmOMP, which declares no natives of its own), backed by
// pyphmm_pairhmm. Behaviour follows GKL: initNative caches the holder field
// IDs and the precision/thread settings process-wide; computeLikelihoodsNative
// computes every read against every haplotype into out[r * nHaps + h].
// Unlike GKL, every array is checked before use: null arrays/holders throw
// NullPointerException, empty reads/haplotypes and quality arrays whose length
// differs from the read's throw IllegalArgumentException (GKL reads past them).
// initNative logs one line saying what will compute (jni_report.h), every
// call adds its stats to the process's totals, and doneNative logs them.
#include <jni.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "common/config.h"
#include "frontends/jni/jni_report.h"
#include "frontends/jni/jni_utils.h"
#include "pyphmm.h"

using namespace pyphmm::jni;

namespace {

struct HolderFields {
    jfieldID read_bases, read_quals, ins_gop, del_gop, gcp, hap_bases;
};

std::mutex g_fields_mutex;
std::atomic<const HolderFields*> g_fields{nullptr};
std::atomic<bool> g_double{false};
std::atomic<int> g_threads{1};

const char* const kReadFieldNames[5] = {"readBases", "readQuals", "insertionGOP", "deletionGOP", "overallGCP"};

// Looks the holder fields up on the given classes; publishes them once.
const HolderFields* lookup_fields(JNIEnv* env, jclass read_class, jclass hap_class) {
    HolderFields f;
    jfieldID* read_ids[5] = {&f.read_bases, &f.read_quals, &f.ins_gop, &f.del_gop, &f.gcp};
    for (int i = 0; i < 5; ++i) {
        *read_ids[i] = env->GetFieldID(read_class, kReadFieldNames[i], "[B");
        if (!*read_ids[i]) return nullptr;  // NoSuchFieldError pending
    }
    f.hap_bases = env->GetFieldID(hap_class, "haplotypeBases", "[B");
    if (!f.hap_bases) return nullptr;
    std::lock_guard<std::mutex> lock(g_fields_mutex);
    const HolderFields* cur = g_fields.load();
    if (cur && !std::memcmp(cur, &f, sizeof(f))) return cur;
    // Field IDs stay valid while the classes are loaded; an old table is
    // leaked (a few bytes) because another thread may still be reading it.
    const HolderFields* fresh = new HolderFields(f);
    g_fields.store(fresh);
    return fresh;
}

// Per-thread scratch: one packed buffer per call, reused across calls so a
// GATK thread does not pay an allocation per active region.
struct Scratch {
    std::vector<unsigned char> bytes;
    unsigned char* get(size_t n) {
        if (bytes.size() < n) {
            bytes.clear();
            bytes.shrink_to_fit();
            bytes.resize(n);
        }
        return bytes.data();
    }
    void trim() {
        if (bytes.size() > (64u << 20)) {
            bytes.clear();
            bytes.shrink_to_fit();
        }
    }
};
thread_local Scratch t_scratch;

// PYPHMM_DEV's jni_trace=2: time the JNI marshalling (what this layer adds on top
// of pyphmm_pairhmm), reported by doneNative. Used to pick the copy method.
int trace_level() { return static_cast<int>(pyphmm::config::get(pyphmm::config::Knob::kJniTrace)); }
std::atomic<int64_t> g_calls{0}, g_collect_ns{0}, g_copy_ns{0}, g_call_ns{0}, g_out_ns{0};
using Clock = std::chrono::steady_clock;
int64_t ns_since(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
}

// Local references for one call, released by PopLocalFrame on every path.
struct LocalFrame {
    JNIEnv* env;
    bool ok;
    LocalFrame(JNIEnv* e, jint n) : env(e), ok(e->PushLocalFrame(n) == 0) {}
    ~LocalFrame() {
        if (ok) env->PopLocalFrame(nullptr);
    }
};

// This thread's scratch buffer laid out for one region: n_results doubles
// (returned), then the sections bases, quals, ins, dels, gcp (read_total
// bytes each) and haplotypes (hap_total), contiguous. nullptr with an
// OutOfMemoryError pending when it cannot be allocated.
double* region_buffer(JNIEnv* env, int64_t n_results, int64_t read_total, int64_t hap_total, uint8_t* section[6]) {
    const size_t results_bytes = static_cast<size_t>(n_results) * sizeof(double);
    const size_t total = results_bytes + 5 * static_cast<size_t>(read_total) + static_cast<size_t>(hap_total);
    unsigned char* buf;
    try {
        buf = t_scratch.get(total);
    } catch (const std::bad_alloc&) {
        throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: cannot allocate %zu bytes for a region", total);
        return nullptr;
    }
    section[0] = buf + results_bytes;
    for (int k = 1; k < 6; ++k) section[k] = section[k - 1] + read_total;
    return reinterpret_cast<double*>(buf);
}

// Runs one region whose arrays are packed in the scratch buffer (sections:
// bases, quals, ins, dels, gcp, haplotypes) and copies its results to out.
void run_packed(JNIEnv* env, jint n_reads, jint n_haps, const int64_t* read_off, const int64_t* hap_off,
                uint8_t* const section[6], double* results, jdoubleArray out) {
    const bool timed = trace_level() >= 2;
    const int64_t n_results = static_cast<int64_t>(n_reads) * n_haps;
    pyphmm_region region;
    region.num_reads = n_reads;
    region.num_haps = n_haps;
    region.read_bases = section[0];
    region.read_quals = section[1];
    region.read_ins = section[2];
    region.read_dels = section[3];
    region.read_gcp = section[4];
    region.read_offsets = read_off;
    region.hap_bases = section[5];
    region.hap_offsets = hap_off;
    pyphmm_options opts = PYPHMM_OPTIONS_INIT;  // one region per call: never shared
    opts.threads = g_threads.load(std::memory_order_relaxed);
    opts.double_precision = g_double.load(std::memory_order_relaxed) ? 1 : 0;
    pyphmm_error err;
    pyphmm_stats stats;
    Clock::time_point t1 = Clock::now();
    int rc = pyphmm_pairhmm(&region, 1, results, &opts, &stats, &err);
    if (rc != PYPHMM_OK) {
        throw_status(env, rc, err);
        return;
    }
    Clock::time_point t2 = Clock::now();
    const int64_t call_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count();
    count_pairhmm(stats, call_ns, opts.double_precision != 0);
    if (timed) g_call_ns += call_ns;
    env->SetDoubleArrayRegion(out, 0, static_cast<jsize>(n_results), results);
    if (timed) {
        g_out_ns += ns_since(t2);
        ++g_calls;
    }
    t_scratch.trim();
}

void compute(JNIEnv* env, jobjectArray reads, jobjectArray haps, jdoubleArray out) {
    if (!reads || !haps || !out) {
        throw_java(env, "java/lang/NullPointerException", "Input is null");
        return;
    }
    const jsize n_reads = env->GetArrayLength(reads);
    const jsize n_haps = env->GetArrayLength(haps);
    const int64_t n_results = static_cast<int64_t>(n_reads) * n_haps;
    if (env->GetArrayLength(out) < n_results) {
        throw_java(env, "java/lang/IllegalArgumentException",
                   "output array holds %d values, %d reads x %d haplotypes need %lld", env->GetArrayLength(out),
                   n_reads, n_haps, (long long)n_results);
        return;
    }
    if (n_results == 0) return;

    const bool timed = trace_level() >= 2;
    Clock::time_point t0 = timed ? Clock::now() : Clock::time_point();
    LocalFrame frame(env, 5 * n_reads + n_haps + 16);
    if (!frame.ok) return;  // OutOfMemoryError pending

    const HolderFields* f = g_fields.load();
    if (!f) {  // computeLikelihoods before initialize: find the fields now
        jobject r0 = env->GetObjectArrayElement(reads, 0);
        jobject h0 = env->GetObjectArrayElement(haps, 0);
        if (!r0 || !h0) {
            throw_java(env, "java/lang/NullPointerException", "%s holder 0 is null", r0 ? "haplotype" : "read");
            return;
        }
        if (!(f = lookup_fields(env, env->GetObjectClass(r0), env->GetObjectClass(h0)))) return;
    }
    const jfieldID read_ids[5] = {f->read_bases, f->read_quals, f->ins_gop, f->del_gop, f->gcp};

    // Pass 1: collect and check every array, sum the lengths.
    std::vector<jbyteArray> arrays;
    std::vector<int64_t> offsets;
    try {
        arrays.resize(5 * static_cast<size_t>(n_reads) + n_haps);
        offsets.resize(static_cast<size_t>(n_reads) + n_haps + 2);
    } catch (const std::bad_alloc&) {
        throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: out of memory packing a region");
        return;
    }
    int64_t read_total = 0, hap_total = 0;
    int64_t* read_off = offsets.data();
    int64_t* hap_off = offsets.data() + n_reads + 1;
    for (jsize r = 0; r < n_reads; ++r) {
        jobject holder = env->GetObjectArrayElement(reads, r);
        if (!holder) {
            throw_java(env, "java/lang/NullPointerException", "read holder %d is null", r);
            return;
        }
        jsize len = 0;
        for (int k = 0; k < 5; ++k) {
            jbyteArray a = static_cast<jbyteArray>(env->GetObjectField(holder, read_ids[k]));
            if (!a) {
                throw_java(env, "java/lang/NullPointerException", "read %d: %s is null", r, kReadFieldNames[k]);
                return;
            }
            jsize n = env->GetArrayLength(a);
            if (k == 0) {
                if (n == 0) {
                    throw_java(env, "java/lang/IllegalArgumentException", "read %d is empty", r);
                    return;
                }
                len = n;
            } else if (n != len) {
                throw_java(env, "java/lang/IllegalArgumentException", "read %d: %s has %d values for %d bases", r,
                           kReadFieldNames[k], n, len);
                return;
            }
            arrays[5 * static_cast<size_t>(r) + k] = a;
        }
        env->DeleteLocalRef(holder);
        read_off[r] = read_total;
        read_total += len;
    }
    read_off[n_reads] = read_total;
    for (jsize h = 0; h < n_haps; ++h) {
        jobject holder = env->GetObjectArrayElement(haps, h);
        if (!holder) {
            throw_java(env, "java/lang/NullPointerException", "haplotype holder %d is null", h);
            return;
        }
        jbyteArray a = static_cast<jbyteArray>(env->GetObjectField(holder, f->hap_bases));
        if (!a) {
            throw_java(env, "java/lang/NullPointerException", "haplotype %d: haplotypeBases is null", h);
            return;
        }
        jsize n = env->GetArrayLength(a);
        if (n == 0) {
            throw_java(env, "java/lang/IllegalArgumentException", "haplotype %d is empty", h);
            return;
        }
        env->DeleteLocalRef(holder);
        arrays[5 * static_cast<size_t>(n_reads) + h] = a;
        hap_off[h] = hap_total;
        hap_total += n;
    }
    hap_off[n_haps] = hap_total;

    Clock::time_point t1 = timed ? Clock::now() : Clock::time_point();
    // Pass 2: copy every array into its section of the scratch buffer.
    uint8_t* section[6];
    double* results = region_buffer(env, n_results, read_total, hap_total, section);
    if (!results) return;
    for (jsize r = 0; r < n_reads; ++r) {
        jsize len = static_cast<jsize>(read_off[r + 1] - read_off[r]);
        for (int k = 0; k < 5; ++k)
            if (!copy_bytes(env, arrays[5 * static_cast<size_t>(r) + k], len, section[k] + read_off[r])) return;
    }
    for (jsize h = 0; h < n_haps; ++h) {
        jsize len = static_cast<jsize>(hap_off[h + 1] - hap_off[h]);
        if (!copy_bytes(env, arrays[5 * static_cast<size_t>(n_reads) + h], len, section[5] + hap_off[h])) return;
    }

    if (timed) {
        g_collect_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
        g_copy_ns += ns_since(t1);
    }
    run_packed(env, n_reads, n_haps, read_off, hap_off, section, results, out);
}

// The shim's fast path (IntelPairHmm.computeLikelihoods packs in Java):
// `packed` holds every read's bases, then every read's quals, ins, dels and
// gcp, then every haplotype; lengths[] the nReads read lengths, then the
// nHaps haplotype lengths. One JNI copy per call instead of about 17 JNI
// calls per read (measured ~0.5 us per read, 20-35 us per GATK region, as
// much as the GPU call itself). The Java side has checked nulls and lengths;
// they are checked again here so a bad call cannot read out of bounds.
void compute_packed(JNIEnv* env, jbyteArray packed, jintArray lengths, jint n_reads, jint n_haps, jdoubleArray out) {
    if (!packed || !lengths || !out) {
        throw_java(env, "java/lang/NullPointerException", "Input is null");
        return;
    }
    const int64_t n_results = static_cast<int64_t>(n_reads) * n_haps;
    if (n_reads < 0 || n_haps < 0 || env->GetArrayLength(lengths) < static_cast<int64_t>(n_reads) + n_haps ||
        env->GetArrayLength(out) < n_results) {
        throw_java(env, "java/lang/IllegalArgumentException", "inconsistent packed region (%d reads, %d haplotypes)",
                   n_reads, n_haps);
        return;
    }
    if (n_results == 0) return;
    const bool timed = trace_level() >= 2;
    Clock::time_point t0 = timed ? Clock::now() : Clock::time_point();
    std::vector<int64_t> offsets(static_cast<size_t>(n_reads) + n_haps + 2);
    std::vector<jint> lens(static_cast<size_t>(n_reads) + n_haps);
    env->GetIntArrayRegion(lengths, 0, n_reads + n_haps, lens.data());
    if (env->ExceptionCheck()) return;
    int64_t* read_off = offsets.data();
    int64_t* hap_off = offsets.data() + n_reads + 1;
    int64_t read_total = 0, hap_total = 0;
    for (jint i = 0; i < n_reads + n_haps; ++i) {
        if (lens[i] <= 0) {
            throw_java(env, "java/lang/IllegalArgumentException", "%s %d is empty", i < n_reads ? "read" : "haplotype",
                       i < n_reads ? i : i - n_reads);
            return;
        }
        if (i < n_reads) {
            read_off[i] = read_total;
            read_total += lens[i];
        } else {
            hap_off[i - n_reads] = hap_total;
            hap_total += lens[i];
        }
    }
    read_off[n_reads] = read_total;
    hap_off[n_haps] = hap_total;
    const int64_t in_bytes = 5 * read_total + hap_total;
    if (env->GetArrayLength(packed) < in_bytes) {
        throw_java(env, "java/lang/IllegalArgumentException", "packed region holds %d bytes, its lengths need %lld",
                   env->GetArrayLength(packed), (long long)in_bytes);
        return;
    }
    uint8_t* section[6];
    double* results = region_buffer(env, n_results, read_total, hap_total, section);
    if (!results) return;
    env->GetByteArrayRegion(packed, 0, static_cast<jsize>(in_bytes), reinterpret_cast<jbyte*>(section[0]));
    if (env->ExceptionCheck()) return;
    if (timed) g_copy_ns += ns_since(t0);
    run_packed(env, n_reads, n_haps, read_off, hap_off, section, results, out);
}

}  // namespace

extern "C" {

JNIEXPORT void JNICALL Java_com_intel_gkl_pairhmm_IntelPairHmm_initNative(JNIEnv* env, jclass, jclass read_class,
                                                                          jclass hap_class, jboolean use_double,
                                                                          jint max_threads) {
    if (!read_class || !hap_class) {
        throw_java(env, "java/lang/NullPointerException", "holder class is null");
        return;
    }
    if (!settings_ok(env) || !lookup_fields(env, read_class, hap_class)) return;
    g_double.store(use_double == JNI_TRUE);
    g_threads.store(max_threads > 0 ? max_threads : 1);
    announce_pairhmm(g_threads.load(), use_double == JNI_TRUE);
}

JNIEXPORT void JNICALL Java_com_intel_gkl_pairhmm_IntelPairHmm_computeLikelihoodsNative(JNIEnv* env, jobject,
                                                                                        jobjectArray reads,
                                                                                        jobjectArray haps,
                                                                                        jdoubleArray out) {
    try {
        compute(env, reads, haps, out);
    } catch (const std::bad_alloc&) {
        throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: out of memory");
    } catch (...) {
        throw_java(env, "java/lang/RuntimeException", "pyphmm: internal error in computeLikelihoods");
    }
}

// Shim-only: the packed fast path (see compute_packed).
JNIEXPORT void JNICALL Java_com_intel_gkl_pairhmm_IntelPairHmm_computePackedNative(JNIEnv* env, jobject,
                                                                                   jbyteArray packed, jintArray lengths,
                                                                                   jint n_reads, jint n_haps,
                                                                                   jdoubleArray out) {
    try {
        compute_packed(env, packed, lengths, n_reads, n_haps, out);
    } catch (const std::bad_alloc&) {
        throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: out of memory");
    } catch (...) {
        throw_java(env, "java/lang/RuntimeException", "pyphmm: internal error in computeLikelihoods");
    }
}

JNIEXPORT void JNICALL Java_com_intel_gkl_pairhmm_IntelPairHmm_doneNative(JNIEnv*, jobject) {
    if (trace_level() >= 2 && g_calls.load() > 0) {
        double n = static_cast<double>(g_calls.load());
        std::fprintf(stderr,
                     "pyphmm JNI: %lld calls; per call: collect+check %.2f us, copy in (%s) %.2f us, "
                     "pyphmm_pairhmm %.2f us, results out %.2f us\n",
                     (long long)g_calls.load(), g_collect_ns.load() / n / 1e3,
                     copy_mode() == CopyMode::kCritical ? "critical" : "region", g_copy_ns.load() / n / 1e3,
                     g_call_ns.load() / n / 1e3, g_out_ns.load() / n / 1e3);
        std::fflush(stderr);
        for (auto* c : {&g_calls, &g_collect_ns, &g_copy_ns, &g_call_ns, &g_out_ns}) c->store(0);
    }
    // Nothing process-wide to free (GKL frees its tables here; pyphmm's live
    // for the process). Release this thread's scratch buffer.
    t_scratch.bytes.clear();
    t_scratch.bytes.shrink_to_fit();
    print_pairhmm_summary();
}

}  // extern "C"
