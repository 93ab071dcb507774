#include "jni/jni_utils.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>


namespace pyphmm {
namespace jni {

bool throw_java(JNIEnv* env, const char* cls, const char* fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (env->ExceptionCheck()) return false;  // keep the first exception
    jclass c = env->FindClass(cls);
    if (c) {
        env->ThrowNew(c, msg);
        env->DeleteLocalRef(c);
    }
    return false;
}

void throw_status(JNIEnv* env, int code, const pyphmm_error& err) {
    const char* cls = "java/lang/RuntimeException";
    switch (code) {
        case PYPHMM_E_INVALID: cls = "java/lang/IllegalArgumentException"; break;
        case PYPHMM_E_NOMEM: cls = "java/lang/OutOfMemoryError"; break;
        case PYPHMM_E_UNAVAILABLE: cls = "java/lang/UnsupportedOperationException"; break;
        default: break;
    }
    throw_java(env, cls, "pyphmm: %s", err.message[0] ? err.message : "error");
}

CopyMode copy_mode() {
    static const CopyMode mode = [] {
        const char* v = std::getenv("PYPHMM_JNI_COPY");
        return (v && !std::strcmp(v, "critical")) ? CopyMode::kCritical : CopyMode::kRegion;
    }();
    return mode;
}

bool copy_bytes(JNIEnv* env, jbyteArray arr, jsize len, uint8_t* dst) {
    if (len == 0) return true;
    if (copy_mode() == CopyMode::kRegion) {
        env->GetByteArrayRegion(arr, 0, len, reinterpret_cast<jbyte*>(dst));
        return !env->ExceptionCheck();
    }
    void* p = env->GetPrimitiveArrayCritical(arr, nullptr);
    if (!p) {
        if (!env->ExceptionCheck()) throw_java(env, "java/lang/OutOfMemoryError", "pyphmm: cannot pin array");
        return false;
    }
    std::memcpy(dst, p, static_cast<size_t>(len));
    env->ReleasePrimitiveArrayCritical(arr, p, JNI_ABORT);
    return true;
}

// "calibrated", "PYPHMM_GPU_MIN_CELLS" or "default": where a threshold came from.
const char* threshold_source(int source) {
    return source == PYPHMM_THRESHOLD_CALIBRATED ? "calibrated"
           : source == PYPHMM_THRESHOLD_ENV     ? "PYPHMM_GPU_MIN_CELLS"
                                                : "default";
}

jstring info_line(JNIEnv* env, const char* what, int threads) {
    pyphmm_info info;
    pyphmm_get_info(&info);
    char line[768];
    // GKL's Smith-Waterman entry points align one pair per call, on the CPU.
    bool cpu_only = !info.cuda_usable || info.backend_env == PYPHMM_BACKEND_CPU || std::strcmp(what, "PairHMM");
    int cpu_threads = threads > 0 ? threads : info.cpu_threads;
    if (!cpu_only) {
        // The threshold of the calls this caller will make, at its thread count.
        int32_t source = PYPHMM_THRESHOLD_DEFAULT;
        long long min_cells = (long long)pyphmm_gpu_min_cells(cpu_threads, &source);
        std::snprintf(line, sizeof(line),
                      "pyphmm %s: %s on CUDA (%s), CPU (%d thread%s, kernel %s) for regions under %lld cells (%s)",
                      info.version, what, info.device_name, cpu_threads, cpu_threads == 1 ? "" : "s",
                      info.cpu_kernel, min_cells, threshold_source(source));
    } else {
        std::snprintf(line, sizeof(line), "pyphmm %s: %s on CPU (%d thread%s, kernel %s)%s%s", info.version, what,
                      cpu_threads, cpu_threads == 1 ? "" : "s", info.cpu_kernel,
                      info.cuda_compiled && !info.cuda_usable ? "; no GPU: " : "",
                      info.cuda_compiled && !info.cuda_usable ? info.cuda_status : "");
    }
    return env->NewStringUTF(line);
}

}  // namespace jni
}  // namespace pyphmm
