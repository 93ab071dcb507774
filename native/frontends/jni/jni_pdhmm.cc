// GKL 0.9's JNI entry points for com.intel.gkl.pdhmm.IntelPDHMM, backed by
// pyphmm_pdhmm (GATK's partially determined PairHMM, --use-pdhmm).
//
// Two callers reach this file:
// - GKL 0.9's own IntelPDHMM class (`pyphmm gatk-libdir`): its four natives,
//   whose configuration is process-wide as in GKL (the last initNative
//   wins), read atomically so that concurrent calls are safe;
// - pyphmm's shim class (java_shim/): GKL's natives plus shim-only ones that
//   take the instance's thread count, so that instances configured
//   differently do not disturb each other, and a packed fast path
//   (computePackedNative: the holders checked and packed in Java, one JNI
//   copy per call).
// Unlike GKL, every array is checked before use: null arrays, holders and
// fields throw NullPointerException, quality or PD arrays shorter than their
// bases IllegalArgumentException (GKL reads past them; longer ones are
// accepted and their extra bytes ignored, as GKL does). Empty reads and
// haplotypes are valid (their likelihoods are -inf, as in GKL); a region
// without reads or haplotypes is not.
#include <jni.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "common/config.h"
#include "frontends/jni/jni_report.h"
#include "frontends/jni/jni_utils.h"
#include "pyphmm.h"

using namespace pyphmm::jni;

namespace {

constexpr const char* kNpe = "java/lang/NullPointerException";
constexpr const char* kIae = "java/lang/IllegalArgumentException";
using Clock = std::chrono::steady_clock;

// PYPHMM_DEV's jni_trace=2: the time of this layer's compute entry points
// and of pyphmm_pdhmm within them, per call, reported by doneNative. The
// difference is what the layer adds; a caller's time less the entry is
// what Java adds (scripts/bench_pdhmm_jni.py --jni-trace).
struct PdTrace {
    std::atomic<int64_t> calls{0}, entry_ns{0}, pdhmm_ns{0};
};
PdTrace g_trace;
bool tracing() { return pyphmm::config::get(pyphmm::config::Knob::kJniTrace) >= 2; }

// Times one entry point's call into g_trace when tracing.
class EntryTimer {
  public:
    EntryTimer() : on_(tracing()), t0_(on_ ? Clock::now() : Clock::time_point()) {}
    ~EntryTimer() {
        if (!on_) return;
        g_trace.entry_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count();
        ++g_trace.calls;
    }
    EntryTimer(const EntryTimer&) = delete;
    EntryTimer& operator=(const EntryTimer&) = delete;

  private:
    bool on_;
    Clock::time_point t0_;
};

void print_trace() {
    const int64_t calls = g_trace.calls.exchange(0);
    const int64_t entry = g_trace.entry_ns.exchange(0), pdhmm = g_trace.pdhmm_ns.exchange(0);
    if (calls <= 0) return;
    std::fprintf(stderr, "pyphmm PDHMM JNI: %lld calls; per call: entry %.2f us, of which pyphmm_pdhmm %.2f us\n",
                 static_cast<long long>(calls), entry / 1e3 / calls, pdhmm / 1e3 / calls);
    std::fflush(stderr);
}

// ---- configuration (initNative) --------------------------------------------
// Ordinals of gatk-native-bindings 1.1.0's PDHMMNativeArguments enums.
enum OpenMPSetting : jint { kOmpFastest = 0, kOmpEnable = 1, kOmpDisable = 2 };
const char* const kAvxNames[] = {"FASTEST_AVAILABLE", "SCALAR", "AVX2", "AVX512"};
const char* const kOmpNames[] = {"FASTEST_AVAILABLE", "ENABLE", "DISABLE"};

// The holder classes initNative was given (global references) and their
// fields. A holder of another class (the same name from another class
// loader) would make the field IDs read the wrong object: it is refused.
struct PdFields {
    jclass read_class, hap_class;
    jfieldID read[5];  // kReadFieldNames' order
    jfieldID hap_bases, hap_pd;
};
const char* const kReadFieldNames[5] = {"readBases", "readQuals", "insertionGOP", "deletionGOP", "overallGCP"};

std::mutex g_fields_mutex;
std::atomic<const PdFields*> g_fields{nullptr};
// GKL's class: threads of the last initNative (GKL: 1 before any).
std::atomic<int> g_threads{1};

// One field ID; nullptr with an IllegalArgumentException naming it pending
// (GKL's type for a holder class without the field).
jfieldID field_id(JNIEnv* env, jclass cls, const char* name) {
    jfieldID id = env->GetFieldID(cls, name, "[B");
    if (!id) {
        env->ExceptionClear();
        throw_java(env, kIae, "holder class has no byte[] field %s", name);
    }
    return id;
}

// The holder fields of these classes; published once, reused while equal.
const PdFields* lookup_fields(JNIEnv* env, jclass read_class, jclass hap_class) {
    PdFields f;
    for (int k = 0; k < 5; ++k)
        if (!(f.read[k] = field_id(env, read_class, kReadFieldNames[k]))) return nullptr;
    if (!(f.hap_bases = field_id(env, hap_class, "haplotypeBases"))) return nullptr;
    if (!(f.hap_pd = field_id(env, hap_class, "haplotypePDBases"))) return nullptr;
    std::lock_guard<std::mutex> lock(g_fields_mutex);
    const PdFields* cur = g_fields.load();
    if (cur && env->IsSameObject(cur->read_class, read_class) && env->IsSameObject(cur->hap_class, hap_class))
        return cur;
    f.read_class = static_cast<jclass>(env->NewGlobalRef(read_class));
    f.hap_class = static_cast<jclass>(env->NewGlobalRef(hap_class));
    if (!f.read_class || !f.hap_class)
        return throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: no global ref"), nullptr;
    // A replaced table (and its references) is leaked, a few bytes, because
    // another thread may still be reading it.
    const PdFields* fresh = new PdFields(f);
    g_fields.store(fresh);
    return fresh;
}

// holder, checked to be an instance of cls; false with an exception pending.
bool holder_of(JNIEnv* env, jobject holder, jclass cls, const char* what, jsize index) {
    if (!holder) return throw_java(env, kNpe, "%s holder %d is null", what, index);
    if (!env->IsInstanceOf(holder, cls))
        return throw_java(env, kIae, "%s holder %d is not of the holder class initialize() was given", what, index);
    return true;
}

bool cpu_has(jint avx) {
#if defined(__x86_64__) || defined(__i386__)
    if (avx == 2) return __builtin_cpu_supports("avx2");
    if (avx == 3) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    return true;
#else
    return avx < 2;
#endif
}

// GKL's thread rule: OpenMP threads only when enabled (FASTEST_AVAILABLE:
// when more than one is asked for), at most the CPU threads there are.
int threads_for(jint omp, jint max_threads, int cpu_threads) {
    if (omp != kOmpFastest && omp != kOmpEnable) return 1;  // DISABLE, or an unknown ordinal as GKL reads it
    if (omp == kOmpFastest && max_threads <= 1) return 1;
    return std::max(1, std::min<int>(max_threads, cpu_threads));
}

// Validates GKL's initialize arguments, caches the holder fields and logs
// the banner. Returns the CPU threads the binding's calls use, or 0 with a
// Java exception pending. The AVX level is accepted whatever the CPU has:
// pyphmm picks its kernel itself and every kernel gives the same results,
// so a level GKL would refuse (IllegalStateException) is noted, not fatal.
int configure(JNIEnv* env, jclass read_class, jclass hap_class, jint omp, jint max_threads, jint avx, jint memory_mb) {
    if (!read_class || !hap_class) return throw_java(env, kNpe, "holder class is null"), 0;
    if (!settings_ok(env)) return 0;
    if (avx < 0 || avx > 3) return throw_java(env, kIae, "unknown AVX level (ordinal %d)", avx), 0;
    if (memory_mb <= 0) return throw_java(env, kIae, "maxMemoryInMB must be greater than 0, got %d", memory_mb), 0;
    if (!lookup_fields(env, read_class, hap_class)) return 0;
    pyphmm_info info;
    pyphmm_get_info(&info);
    const int threads = threads_for(omp, max_threads, info.cpu_threads);
    std::string avx_note = kAvxNames[avx];
    if (avx != 0)
        avx_note += cpu_has(avx) ? " (pyphmm chooses its kernel)" : " (absent on this CPU; pyphmm chooses its kernel)";
    char requested[256];
    std::snprintf(requested, sizeof(requested), "threads %d, AVX level %s, OpenMP %s, memory limit %d MB", max_threads,
                  avx_note.c_str(), omp >= 0 && omp <= 2 ? kOmpNames[omp] : "DISABLE", memory_mb);
    announce_pdhmm(threads, requested);
    return threads;
}

// ---- one region -----------------------------------------------------------
// This thread's scratch laid out for a region: n_results doubles (returned),
// then the read sections bases, quals, ins, dels, gcp (read_total bytes
// each) and the haplotype sections bases, PD (hap_total each). nullptr
// with an OutOfMemoryError pending when it cannot be had.
double* region_buffer(JNIEnv* env, int64_t n_results, int64_t read_total, int64_t hap_total, uint8_t* section[7]) {
    const size_t results_bytes = static_cast<size_t>(n_results) * sizeof(double);
    const size_t total = results_bytes + 5 * static_cast<size_t>(read_total) + 2 * static_cast<size_t>(hap_total);
    unsigned char* buf;
    try {
        buf = thread_scratch().get(total);
    } catch (const std::bad_alloc&) {
        throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: cannot allocate %zu bytes for a PDHMM region", total);
        return nullptr;
    }
    section[0] = buf + results_bytes;
    for (int k = 1; k < 7; ++k) section[k] = section[k - 1] + (k <= 5 ? read_total : hap_total);
    return reinterpret_cast<double*>(buf);
}

// GKL's validity rule: a result above 0 or NaN is a failure
// (RuntimeException), -inf is a valid zero likelihood. per_read: the
// region's haplotype count (results read-major), 0 for a batch of pairs.
bool results_valid(JNIEnv* env, const double* v, int64_t n, int64_t per_read) {
    for (int64_t i = 0; i < n; ++i) {
        if (v[i] <= 0.0) continue;
        if (per_read > 0)
            throw_java(env, "java/lang/RuntimeException",
                       "pyphmm: PDHMM result %g (read %lld, haplotype %lld) is not a log10 probability", v[i],
                       (long long)(i / per_read), (long long)(i % per_read));
        else
            throw_java(env, "java/lang/RuntimeException",
                       "pyphmm: PDHMM result %g (pair %lld) is not a log10 probability", v[i], (long long)i);
        return false;
    }
    return true;
}

// Runs `n_regions` regions whose arrays lie in `section` and whose offsets
// are in place, into results; false with a Java exception pending.
bool run_regions(JNIEnv* env, pyphmm_pd_region* regions, int64_t n_regions, uint8_t* const section[7], double* results,
                 int64_t n_results, int64_t per_read, int threads) {
    for (int64_t k = 0; k < n_regions; ++k) {
        pyphmm_pd_region& g = regions[k];
        g.read_bases = section[0];
        g.read_quals = section[1];
        g.read_ins = section[2];
        g.read_dels = section[3];
        g.read_gcp = section[4];
        g.hap_bases = section[5];
        g.hap_pd = section[6];
    }
    pyphmm_options opts = PYPHMM_OPTIONS_INIT;
    opts.threads = threads;
    opts.double_precision = 1;
    pyphmm_error err;
    pyphmm_stats stats;
    const auto t0 = Clock::now();
    const int rc = pyphmm_pdhmm(regions, n_regions, results, &opts, &stats, &err);
    if (rc != PYPHMM_OK) return throw_status(env, rc, err), false;
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    count_pdhmm(stats, ns);
    if (tracing()) g_trace.pdhmm_ns += ns;
    return results_valid(env, results, n_results, per_read);
}

// One region of n_reads x n_haps packed in the scratch (offsets given):
// computes it and copies the results into out.
void run_region(JNIEnv* env, jint n_reads, jint n_haps, const int64_t* read_off, const int64_t* hap_off,
                uint8_t* const section[7], double* results, jdoubleArray out, int threads) {
    pyphmm_pd_region region;
    region.num_reads = n_reads;
    region.num_haps = n_haps;
    region.read_offsets = read_off;
    region.hap_offsets = hap_off;
    const int64_t n_results = static_cast<int64_t>(n_reads) * n_haps;
    if (run_regions(env, &region, 1, section, results, n_results, n_haps, threads))
        env->SetDoubleArrayRegion(out, 0, static_cast<jsize>(n_results), results);
    thread_scratch().trim();
}

// The checks shared by both region entry points: out holds reads x haps
// values (GKL's Java checks equality; at least that many is all the native
// side needs), and neither count is zero (GKL: "input arrays are empty").
bool region_shape_ok(JNIEnv* env, jint n_reads, jint n_haps, jdoubleArray out) {
    if (n_reads <= 0 || n_haps <= 0)
        return throw_java(env, kIae, "Input arrays are empty: %d reads, %d haplotypes", n_reads, n_haps);
    const int64_t need = static_cast<int64_t>(n_reads) * n_haps;
    if (env->GetArrayLength(out) < need)
        return throw_java(env, kIae, "likelihood array holds %d values, %d reads x %d haplotypes need %lld",
                          env->GetArrayLength(out), n_reads, n_haps, (long long)need);
    return true;
}

// One byte[] field of a holder, checked: nullptr with a pending exception
// when it is null or has fewer than `min_len` bytes (min_len < 0: any).
jbyteArray holder_bytes(JNIEnv* env, jobject holder, jfieldID id, const char* what, jsize index, const char* name,
                        jsize min_len) {
    jbyteArray a = static_cast<jbyteArray>(env->GetObjectField(holder, id));
    if (!a) return throw_java(env, kNpe, "%s %d: %s is null", what, index, name), nullptr;
    if (min_len >= 0 && env->GetArrayLength(a) < min_len) {
        throw_java(env, kIae, "%s %d: %s has %d values for %d bases", what, index, name, env->GetArrayLength(a),
                   min_len);
        return nullptr;
    }
    return a;
}

// GKL's computeLikelihoodsNative: the holders read field by field.
void compute_holders(JNIEnv* env, jobjectArray reads, jobjectArray haps, jdoubleArray out, int threads) {
    if (!reads || !haps || !out) return (void)throw_java(env, kNpe, "Input is null");
    const jsize n_reads = env->GetArrayLength(reads), n_haps = env->GetArrayLength(haps);
    if (!region_shape_ok(env, n_reads, n_haps, out)) return;
    // One local reference per array kept (holders are released as read);
    // the count is a capacity hint, bounded so that it cannot overflow.
    LocalFrame frame(
        env, static_cast<jint>(std::min<int64_t>(5 * int64_t{n_reads} + 2 * int64_t{n_haps} + 16, int64_t{1} << 30)));
    if (!frame.ok) return;
    const PdFields* f = g_fields.load();
    if (!f) {  // computeLikelihoods before initialize (GKL crashes): find the fields now
        jobject r0 = env->GetObjectArrayElement(reads, 0), h0 = env->GetObjectArrayElement(haps, 0);
        if (!r0 || !h0) return (void)throw_java(env, kNpe, "%s holder 0 is null", r0 ? "haplotype" : "read");
        if (!(f = lookup_fields(env, env->GetObjectClass(r0), env->GetObjectClass(h0)))) return;
    }
    // Pass 1: every array, checked; the offsets.
    std::vector<jbyteArray> arrays(5 * static_cast<size_t>(n_reads) + 2 * static_cast<size_t>(n_haps));
    std::vector<int64_t> offsets(static_cast<size_t>(n_reads) + n_haps + 2);
    int64_t* read_off = offsets.data();
    int64_t* hap_off = offsets.data() + n_reads + 1;
    int64_t read_total = 0, hap_total = 0;
    for (jsize r = 0; r < n_reads; ++r) {
        jobject holder = env->GetObjectArrayElement(reads, r);
        if (!holder_of(env, holder, f->read_class, "read", r)) return;
        jbyteArray* a = &arrays[5 * static_cast<size_t>(r)];
        if (!(a[0] = holder_bytes(env, holder, f->read[0], "read", r, kReadFieldNames[0], -1))) return;
        const jsize len = env->GetArrayLength(a[0]);
        for (int k = 1; k < 5; ++k)
            if (!(a[k] = holder_bytes(env, holder, f->read[k], "read", r, kReadFieldNames[k], len))) return;
        env->DeleteLocalRef(holder);
        read_off[r] = read_total;
        read_total += len;
    }
    read_off[n_reads] = read_total;
    jbyteArray* hap_arrays = &arrays[5 * static_cast<size_t>(n_reads)];
    for (jsize h = 0; h < n_haps; ++h) {
        jobject holder = env->GetObjectArrayElement(haps, h);
        if (!holder_of(env, holder, f->hap_class, "haplotype", h)) return;
        jbyteArray bases = holder_bytes(env, holder, f->hap_bases, "haplotype", h, "haplotypeBases", -1);
        if (!bases) return;
        const jsize len = env->GetArrayLength(bases);
        jbyteArray pd = holder_bytes(env, holder, f->hap_pd, "haplotype", h, "haplotypePDBases", len);
        if (!pd) return;
        env->DeleteLocalRef(holder);
        hap_arrays[2 * static_cast<size_t>(h)] = bases;
        hap_arrays[2 * static_cast<size_t>(h) + 1] = pd;
        hap_off[h] = hap_total;
        hap_total += len;
    }
    hap_off[n_haps] = hap_total;
    // Pass 2: copy the first `len` bytes of each array into its section.
    uint8_t* section[7];
    double* results = region_buffer(env, static_cast<int64_t>(n_reads) * n_haps, read_total, hap_total, section);
    if (!results) return;
    for (jsize r = 0; r < n_reads; ++r) {
        const jsize len = static_cast<jsize>(read_off[r + 1] - read_off[r]);
        for (int k = 0; k < 5; ++k)
            if (!copy_bytes(env, arrays[5 * static_cast<size_t>(r) + k], len, section[k] + read_off[r])) return;
    }
    for (jsize h = 0; h < n_haps; ++h) {
        const jsize len = static_cast<jsize>(hap_off[h + 1] - hap_off[h]);
        for (int k = 0; k < 2; ++k)
            if (!copy_bytes(env, hap_arrays[2 * static_cast<size_t>(h) + k], len, section[5 + k] + hap_off[h])) return;
    }
    run_region(env, n_reads, n_haps, read_off, hap_off, section, results, out, threads);
}

// The shim's packed region: `packed` holds every read's bases, then every
// read's quals, ins, dels and gcp, then every haplotype's bases, then every
// haplotype's PD bytes; lengths[] the read lengths, then the haplotype
// lengths. The shim checked the holders; sizes are checked again here so a
// bad call cannot read out of bounds.
void compute_packed(JNIEnv* env, jbyteArray packed, jintArray lengths, jint n_reads, jint n_haps, jdoubleArray out,
                    int threads) {
    if (!packed || !lengths || !out) return (void)throw_java(env, kNpe, "Input is null");
    if (!region_shape_ok(env, n_reads, n_haps, out)) return;
    if (env->GetArrayLength(lengths) < static_cast<int64_t>(n_reads) + n_haps)
        return (void)throw_java(env, kIae, "lengths holds %d values for %d reads and %d haplotypes",
                                env->GetArrayLength(lengths), n_reads, n_haps);
    std::vector<jint> lens(static_cast<size_t>(n_reads) + n_haps);
    std::vector<int64_t> offsets(static_cast<size_t>(n_reads) + n_haps + 2);
    env->GetIntArrayRegion(lengths, 0, n_reads + n_haps, lens.data());
    if (env->ExceptionCheck()) return;
    int64_t* read_off = offsets.data();
    int64_t* hap_off = offsets.data() + n_reads + 1;
    int64_t totals[2] = {0, 0};
    for (jint i = 0; i < n_reads + n_haps; ++i) {
        const bool is_read = i < n_reads;
        if (lens[i] < 0)
            return (void)throw_java(env, kIae, "%s %d has length %d", is_read ? "read" : "haplotype",
                                    is_read ? i : i - n_reads, lens[i]);
        (is_read ? read_off[i] : hap_off[i - n_reads]) = totals[is_read ? 0 : 1];
        totals[is_read ? 0 : 1] += lens[i];
    }
    read_off[n_reads] = totals[0];
    hap_off[n_haps] = totals[1];
    const int64_t in_bytes = 5 * totals[0] + 2 * totals[1];
    if (env->GetArrayLength(packed) < in_bytes)
        return (void)throw_java(env, kIae, "packed region holds %d bytes, its lengths need %lld",
                                env->GetArrayLength(packed), (long long)in_bytes);
    uint8_t* section[7];
    double* results = region_buffer(env, static_cast<int64_t>(n_reads) * n_haps, totals[0], totals[1], section);
    if (!results) return;
    env->GetByteArrayRegion(packed, 0, static_cast<jsize>(in_bytes), reinterpret_cast<jbyte*>(section[0]));
    if (env->ExceptionCheck()) return;
    run_region(env, n_reads, n_haps, read_off, hap_off, section, results, out, threads);
}

// GKL's legacy batch (computePDHMM): pair i is read i against haplotype i,
// each in a slot of max_read (max_hap) bytes of its arrays, lengths in
// read_lengths / hap_lengths. GKL reads past a slot when a length exceeds
// it; here that is an IllegalArgumentException.
struct BatchArrays {
    jbyteArray hap[2];   // bases, PD bytes
    jbyteArray read[5];  // bases, quals, ins, dels, gcp
};
const char* const kBatchHapNames[2] = {"hap_bases", "hap_pdbases"};
const char* const kBatchReadNames[5] = {"read_bases", "read_qual", "read_ins_qual", "read_del_qual", "gcp"};

// The checks of GKL's Java method, for GKL's own class (whose Java side
// makes them first) and the shim alike: non-null arrays of exactly
// batch * slot bytes, positive sizes, lengths within their slots.
bool batch_ok(JNIEnv* env, const BatchArrays& a, jlongArray hap_lengths, jlongArray read_lengths, jint batch,
              jint max_hap, jint max_read, std::vector<jlong>& lengths) {
    for (int k = 0; k < 2; ++k)
        if (!a.hap[k]) return throw_java(env, kNpe, "%s is null", kBatchHapNames[k]);
    for (int k = 0; k < 5; ++k)
        if (!a.read[k]) return throw_java(env, kNpe, "%s is null", kBatchReadNames[k]);
    if (!hap_lengths || !read_lengths)
        return throw_java(env, kNpe, "%s is null", hap_lengths ? "read_lengths" : "hap_lengths");
    if (batch <= 0 || max_hap <= 0 || max_read <= 0)
        return throw_java(env, kIae, "batchSize %d, maxHapLength %d and maxReadLength %d must be greater than 0", batch,
                          max_hap, max_read);
    const int64_t hap_size = static_cast<int64_t>(max_hap) * batch, read_size = static_cast<int64_t>(max_read) * batch;
    for (int k = 0; k < 7; ++k) {
        const jsize n = env->GetArrayLength(k < 2 ? a.hap[k] : a.read[k - 2]);
        const int64_t want = k < 2 ? hap_size : read_size;
        if (n != want)
            return throw_java(env, kIae, "%s has %d bytes, batchSize x slot length is %lld",
                              k < 2 ? kBatchHapNames[k] : kBatchReadNames[k - 2], n, (long long)want);
    }
    if (env->GetArrayLength(hap_lengths) != batch || env->GetArrayLength(read_lengths) != batch)
        return throw_java(env, kIae, "hap_lengths and read_lengths must hold batchSize (%d) values", batch);
    lengths.resize(2 * static_cast<size_t>(batch));
    env->GetLongArrayRegion(hap_lengths, 0, batch, lengths.data());
    env->GetLongArrayRegion(read_lengths, 0, batch, lengths.data() + batch);
    if (env->ExceptionCheck()) return false;
    for (jint i = 0; i < batch; ++i) {
        const jlong h = lengths[i], r = lengths[static_cast<size_t>(batch) + i];
        if (h < 0 || h > max_hap || r < 0 || r > max_read)
            return throw_java(env, kIae, "pair %d: haplotype length %lld, read length %lld outside 0..%d, 0..%d", i,
                              (long long)h, (long long)r, max_hap, max_read);
    }
    return true;
}

jdoubleArray compute_batch(JNIEnv* env, const BatchArrays& a, jlongArray hap_lengths, jlongArray read_lengths,
                           jint batch, jint max_hap, jint max_read, int threads) {
    std::vector<jlong> lengths;
    if (!batch_ok(env, a, hap_lengths, read_lengths, batch, max_hap, max_read, lengths)) return nullptr;
    const int64_t hap_size = static_cast<int64_t>(max_hap) * batch, read_size = static_cast<int64_t>(max_read) * batch;
    uint8_t* section[7];
    double* results = region_buffer(env, batch, read_size, hap_size, section);
    if (!results) return nullptr;
    for (int k = 0; k < 5; ++k)
        if (!copy_bytes(env, a.read[k], static_cast<jsize>(read_size), section[k])) return nullptr;
    for (int k = 0; k < 2; ++k)
        if (!copy_bytes(env, a.hap[k], static_cast<jsize>(hap_size), section[5 + k])) return nullptr;
    // One 1 x 1 region per pair, its offsets pointing into the pair's slots.
    std::vector<pyphmm_pd_region> regions(static_cast<size_t>(batch));
    std::vector<int64_t> offsets(4 * static_cast<size_t>(batch));
    for (jint i = 0; i < batch; ++i) {
        int64_t* read_off = &offsets[2 * static_cast<size_t>(i)];
        int64_t* hap_off = &offsets[2 * (static_cast<size_t>(batch) + i)];
        read_off[0] = static_cast<int64_t>(i) * max_read;
        read_off[1] = read_off[0] + lengths[static_cast<size_t>(batch) + i];
        hap_off[0] = static_cast<int64_t>(i) * max_hap;
        hap_off[1] = hap_off[0] + lengths[i];
        regions[i].num_reads = 1;
        regions[i].num_haps = 1;
        regions[i].read_offsets = read_off;
        regions[i].hap_offsets = hap_off;
    }
    jdoubleArray out = nullptr;
    if (run_regions(env, regions.data(), batch, section, results, batch, 0, threads)) {
        out = env->NewDoubleArray(batch);
        if (out) env->SetDoubleArrayRegion(out, 0, batch, results);
    }
    thread_scratch().trim();
    return out;
}

}  // namespace

extern "C" {

JNIEXPORT void JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_initNative(JNIEnv* env, jclass, jclass read_class,
                                                                      jclass hap_class, jint openmp, jint max_threads,
                                                                      jint avx_level, jint max_memory_mb) {
    const int threads = configure(env, read_class, hap_class, openmp, max_threads, avx_level, max_memory_mb);
    if (threads > 0) g_threads.store(threads);
}

JNIEXPORT void JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_computeLikelihoodsNative(JNIEnv* env, jobject,
                                                                                    jobjectArray reads,
                                                                                    jobjectArray haps,
                                                                                    jdoubleArray out) {
    const EntryTimer timer;
    guard_java(env, "computeLikelihoods", [&] { compute_holders(env, reads, haps, out, g_threads.load()); });
}

JNIEXPORT jdoubleArray JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_computePDHMMNative(
    JNIEnv* env, jobject, jbyteArray hap_bases, jbyteArray hap_pd, jbyteArray read_bases, jbyteArray read_quals,
    jbyteArray read_ins, jbyteArray read_dels, jbyteArray gcp, jlongArray hap_lengths, jlongArray read_lengths,
    jint batch, jint max_hap, jint max_read) {
    const EntryTimer timer;
    jdoubleArray result = nullptr;
    const BatchArrays a = {{hap_bases, hap_pd}, {read_bases, read_quals, read_ins, read_dels, gcp}};
    guard_java(env, "computePDHMM", [&] {
        result = compute_batch(env, a, hap_lengths, read_lengths, batch, max_hap, max_read, g_threads.load());
    });
    return result;
}

JNIEXPORT void JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_doneNative(JNIEnv*, jclass) {
    // Nothing process-wide to free (pyphmm's tables live for the process);
    // this thread's scratch goes back, and the summary says what ran.
    thread_scratch().release();
    if (tracing()) print_trace();
    print_pdhmm_summary();
}

// ---- the shim's own natives (per-instance thread count) -------------------
JNIEXPORT jint JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_configureNative(JNIEnv* env, jclass, jclass read_class,
                                                                           jclass hap_class, jint openmp,
                                                                           jint max_threads, jint avx_level,
                                                                           jint max_memory_mb) {
    return configure(env, read_class, hap_class, openmp, max_threads, avx_level, max_memory_mb);
}

JNIEXPORT void JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_computePackedNative(JNIEnv* env, jobject, jbyteArray packed,
                                                                               jintArray lengths, jint n_reads,
                                                                               jint n_haps, jdoubleArray out,
                                                                               jint threads) {
    const EntryTimer timer;
    guard_java(env, "computeLikelihoods",
               [&] { compute_packed(env, packed, lengths, n_reads, n_haps, out, std::max<jint>(1, threads)); });
}

JNIEXPORT jdoubleArray JNICALL Java_com_intel_gkl_pdhmm_IntelPDHMM_computeBatchNative(
    JNIEnv* env, jobject, jbyteArray hap_bases, jbyteArray hap_pd, jbyteArray read_bases, jbyteArray read_quals,
    jbyteArray read_ins, jbyteArray read_dels, jbyteArray gcp, jlongArray hap_lengths, jlongArray read_lengths,
    jint batch, jint max_hap, jint max_read, jint threads) {
    const EntryTimer timer;
    jdoubleArray result = nullptr;
    const BatchArrays a = {{hap_bases, hap_pd}, {read_bases, read_quals, read_ins, read_dels, gcp}};
    guard_java(env, "computePDHMM", [&] {
        result = compute_batch(env, a, hap_lengths, read_lengths, batch, max_hap, max_read, std::max<jint>(1, threads));
    });
    return result;
}

}  // extern "C"
