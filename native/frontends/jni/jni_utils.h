// Shared helpers for the JNI entry points that impersonate GKL's natives.
// The JNI layer is thin: it copies Java arrays into the C ABI's packed form,
// calls pyphmm.h, copies results back and turns status codes into Java
// exceptions. Nothing here knows an algorithm.
#pragma once
#include <jni.h>

#include <cstdint>

#include "pyphmm.h"

namespace pyphmm {
namespace jni {

// Throws `cls` (e.g. "java/lang/IllegalArgumentException") with a message;
// returns false so callers can write `return throw_java(...)`-style code.
bool throw_java(JNIEnv* env, const char* cls, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// Maps a non-OK pyphmm status to the Java exception GKL's callers expect:
// INVALID -> IllegalArgumentException, NOMEM -> OutOfMemoryError,
// UNAVAILABLE -> UnsupportedOperationException, INTERNAL -> RuntimeException.
void throw_status(JNIEnv* env, int code, const pyphmm_error& err);

// False, with an IllegalArgumentException naming the setting pending, when a
// PYPHMM_* setting in the environment does not parse: a binding refuses to
// start rather than run with a setting the user did not get.
bool settings_ok(JNIEnv* env);

// How Java byte arrays are copied into packed buffers: GetByteArrayRegion
// (default, measured faster for GATK-sized regions) or
// GetPrimitiveArrayCritical + memcpy. PYPHMM_DEV's jni_copy=critical|region
// selects one at first use (kept for re-measuring).
enum class CopyMode { kRegion, kCritical };
CopyMode copy_mode();

// Copies `len` bytes of `arr` to dst with the selected method. Returns false
// with a pending Java exception on failure.
bool copy_bytes(JNIEnv* env, jbyteArray arr, jsize len, uint8_t* dst);

}  // namespace jni
}  // namespace pyphmm
