// GKL's com.intel.gkl.IntelGKLUtils natives, so that `pyphmm gatk-libdir`
// can offer libgkl_utils.so next to pyphmm's libgkl_pairhmm*.so and GKL's
// own, unmodified classes load pyphmm via java.library.path.
//
// isAvx/isAvx2 gate whether GKL's Java loads its PairHMM and Smith-Waterman
// libraries at all; pyphmm needs neither instruction set (it has NEON and
// portable kernels and a GPU path), so they answer true on every
// architecture, AArch64 included. AVX-512 (only logged by GKL) is reported
// truthfully for this CPU (false off x86). Flush-to-zero, which GKL turns on
// in initialize(), is the calling thread's real mode: MXCSR's FTZ bit on
// x86, FPCR's FZ bit on AArch64 (cpu/cpu_arch.h).
#include <jni.h>

#include <cstdlib>
#include <thread>

#include "cpu/cpu_arch.h"

namespace {

int omp_threads() {
    const char* v = std::getenv("OMP_NUM_THREADS");
    if (v && *v) {
        int n = std::atoi(v);
        if (n > 0) return n;
    }
    unsigned n = std::thread::hardware_concurrency();
    return n ? static_cast<int>(n) : 1;
}

}  // namespace

extern "C" {

JNIEXPORT jboolean JNICALL Java_com_intel_gkl_IntelGKLUtils_getFlushToZeroNative(JNIEnv*, jobject) {
    return pyphmm::flush_to_zero() ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT void JNICALL Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(JNIEnv*, jobject, jboolean on) {
    pyphmm::set_flush_to_zero(on != JNI_FALSE);
}

JNIEXPORT jboolean JNICALL Java_com_intel_gkl_IntelGKLUtils_isAvxSupportedNative(JNIEnv*, jobject) { return JNI_TRUE; }

JNIEXPORT jboolean JNICALL Java_com_intel_gkl_IntelGKLUtils_isAvx2SupportedNative(JNIEnv*, jobject) { return JNI_TRUE; }

JNIEXPORT jboolean JNICALL Java_com_intel_gkl_IntelGKLUtils_isAvx512SupportedNative(JNIEnv*, jobject) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
              __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl");
    return ok ? JNI_TRUE : JNI_FALSE;
#else
    return JNI_FALSE;
#endif
}

JNIEXPORT jint JNICALL Java_com_intel_gkl_IntelGKLUtils_getAvailableOmpThreadsNative(JNIEnv*, jobject) {
    return omp_threads();
}

}  // extern "C"
