// GKL's com.intel.gkl.IntelGKLUtils natives, so that `pyphmm gatk-libdir`
// can offer libgkl_utils.so next to pyphmm's libgkl_pairhmm*.so and GKL's
// own, unmodified classes load pyphmm via java.library.path.
//
// isAvx/isAvx2 gate whether GKL's Java loads its PairHMM and Smith-Waterman
// libraries at all; pyphmm needs neither instruction set (it has portable
// kernels and a GPU path), so they answer true. AVX-512 (only logged by
// GKL) and flush-to-zero are reported truthfully for this CPU.
#include <jni.h>

#include <cstdlib>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

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
#if defined(__x86_64__) || defined(__i386__)
    return (_mm_getcsr() & 0x8000) ? JNI_TRUE : JNI_FALSE;
#else
    return JNI_FALSE;
#endif
}

JNIEXPORT void JNICALL Java_com_intel_gkl_IntelGKLUtils_setFlushToZeroNative(JNIEnv*, jobject, jboolean on) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? (csr | 0x8000u) : (csr & ~0x8000u));
#else
    (void)on;
#endif
}

JNIEXPORT jboolean JNICALL Java_com_intel_gkl_IntelGKLUtils_isAvxSupportedNative(JNIEnv*, jobject) {
    return JNI_TRUE;
}

JNIEXPORT jboolean JNICALL Java_com_intel_gkl_IntelGKLUtils_isAvx2SupportedNative(JNIEnv*, jobject) {
    return JNI_TRUE;
}

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
