#include "frontends/jni/jni_utils.h"

#include "common/config.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

bool settings_ok(JNIEnv* env) {
    pyphmm_error err;
    const int rc = pyphmm_config_check(&err);
    if (rc != PYPHMM_OK) throw_status(env, rc, err);
    return rc == PYPHMM_OK;
}

CopyMode copy_mode() {
    return config::get(config::Knob::kJniCopy) == config::kCritical ? CopyMode::kCritical : CopyMode::kRegion;
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

}  // namespace jni
}  // namespace pyphmm
