// GKL's JNI entry points for com.intel.gkl.smithwaterman.IntelSmithWaterman,
// backed by pyphmm_sw_align_one (GATK calls one pair at a time). alignNative returns the
// alignment offset and writes the CIGAR into cigarOut followed by one NUL
// where it fits, as GKL's native code does: GKL's class passes a new, zeroed
// array and trims it, pyphmm's shim reads up to the first NUL. Bad input
// throws instead of crashing.
#include <jni.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "frontends/jni/jni_report.h"
#include "frontends/jni/jni_utils.h"
#include "pyphmm.h"

using namespace pyphmm::jni;

namespace {

thread_local std::vector<unsigned char> t_buf;

jint align(JNIEnv* env, jbyteArray ref, jbyteArray alt, jbyteArray cigar_out, jint match, jint mismatch, jint open,
           jint extend, jbyte strategy) {
    if (!ref || !alt || !cigar_out) {
        throw_java(env, "java/lang/NullPointerException", "%s is null",
                   !ref ? "reference" : (!alt ? "alternate" : "CIGAR output array"));
        return -1;
    }
    const jsize lr = env->GetArrayLength(ref), la = env->GetArrayLength(alt), lc = env->GetArrayLength(cigar_out);
    if (lr <= 0 || la <= 0) {
        throw_java(env, "java/lang/IllegalArgumentException", "Cannot align empty sequences");
        return -1;
    }
    if (lr > PYPHMM_SW_MAX_LENGTH || la > PYPHMM_SW_MAX_LENGTH) {
        throw_java(env, "java/lang/IllegalArgumentException", "Sequences exceed maximum length of %d bytes",
                   PYPHMM_SW_MAX_LENGTH);
        return -1;
    }
    if (strategy < PYPHMM_SW_SOFTCLIP || strategy > PYPHMM_SW_IGNORE) {
        throw_java(env, "java/lang/IllegalArgumentException", "Strategy %d is invalid", (int)strategy);
        return -1;
    }
    if (lc <= 0) {
        throw_java(env, "java/lang/IllegalArgumentException", "CIGAR output array is empty");
        return -1;
    }
    // One packed buffer: ref | alt | CIGAR (ABI bound, at least lc bytes).
    const size_t cigar_cap = std::max<size_t>(2 * (static_cast<size_t>(lr) + la) + 1, static_cast<size_t>(lc));
    const size_t total = static_cast<size_t>(lr) + la + cigar_cap;
    if (t_buf.size() < total) t_buf.resize(total);
    uint8_t* r = t_buf.data();
    uint8_t* a = r + lr;
    char* cigar = reinterpret_cast<char*>(a + la);
    if (!copy_bytes(env, ref, lr, r) || !copy_bytes(env, alt, la, a)) return -1;

    const pyphmm_sw_params params = {match, mismatch, open, extend};
    int32_t offset = 0;
    pyphmm_error err;
    cigar[0] = '\0';
    const auto t0 = std::chrono::steady_clock::now();
    int rc =
        pyphmm_sw_align_one(r, lr, a, la, &params, strategy, cigar, static_cast<int64_t>(cigar_cap), &offset, &err);
    if (rc != PYPHMM_OK) {
        throw_status(env, rc, err);
        return -1;
    }
    count_sw(static_cast<int64_t>(lr) * la,
             std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    size_t n = strnlen(cigar, cigar_cap);
    if (n > static_cast<size_t>(lc)) {
        throw_java(env, "java/lang/IllegalArgumentException", "CIGAR of %zu characters does not fit in %d bytes", n,
                   lc);
        return -1;
    }
    const jsize written = static_cast<jsize>(std::min(n + 1, static_cast<size_t>(lc)));  // the NUL where it fits
    env->SetByteArrayRegion(cigar_out, 0, written, reinterpret_cast<const jbyte*>(cigar));
    if (t_buf.size() > (16u << 20)) {
        t_buf.clear();
        t_buf.shrink_to_fit();
    }
    return offset;
}

}  // namespace

extern "C" {

JNIEXPORT void JNICALL Java_com_intel_gkl_smithwaterman_IntelSmithWaterman_initNative(JNIEnv* env, jclass) {
    if (settings_ok(env)) announce_sw();
}

JNIEXPORT jint JNICALL Java_com_intel_gkl_smithwaterman_IntelSmithWaterman_alignNative(JNIEnv* env, jclass,
                                                                                       jbyteArray ref, jbyteArray alt,
                                                                                       jbyteArray cigar_out, jint match,
                                                                                       jint mismatch, jint open,
                                                                                       jint extend, jbyte strategy) {
    try {
        return align(env, ref, alt, cigar_out, match, mismatch, open, extend, strategy);
    } catch (const std::bad_alloc&) {
        throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: out of memory");
    } catch (...) {
        throw_java(env, "java/lang/RuntimeException", "pyphmm: internal error in align");
    }
    return -1;
}

JNIEXPORT void JNICALL Java_com_intel_gkl_smithwaterman_IntelSmithWaterman_doneNative(JNIEnv*, jclass) {
    print_sw_summary();
}

// Shim-only: whether this build's Smith-Waterman backend answers at all
// (null when it does, else the reason), so load() can return false and GATK
// falls back to its Java aligner.
JNIEXPORT jstring JNICALL Java_com_intel_gkl_smithwaterman_IntelSmithWaterman_pyphmmSwStatusNative(JNIEnv* env,
                                                                                                   jclass) {
    const uint8_t seq[1] = {'A'};
    const int64_t off[2] = {0, 1}, cigar_off[2] = {0, 8};
    const pyphmm_sw_params params = {3, -1, -4, -3};
    const int8_t strat = PYPHMM_SW_SOFTCLIP;
    pyphmm_sw_batch batch = {1, seq, off, seq, off, &params, &strat, 0};
    char cigar[8];
    int32_t offset = 0;
    pyphmm_options opts = {PYPHMM_BACKEND_CPU, 1, 0, PYPHMM_DEVICE_AUTO, PYPHMM_HYBRID_DEFAULT, 0};
    pyphmm_error err;
    int rc = pyphmm_sw_align(&batch, cigar, cigar_off, &offset, &opts, nullptr, &err);
    if (rc == PYPHMM_OK) return nullptr;
    return env->NewStringUTF(err.message[0] ? err.message : "Smith-Waterman unavailable");
}

}  // extern "C"
