// Filling pyphmm_error: one helper so every message has the same shape.
#pragma once
#include <cstdarg>
#include <cstdio>

#include "pyphmm.h"

namespace pyphmm {

// Records code and a printf-style message in err (if non-NULL); returns code
// so callers can write `return set_error(err, PYPHMM_E_INVALID, ...)`.
inline int set_error(pyphmm_error* err, int code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

inline int set_error(pyphmm_error* err, int code, const char* fmt, ...) {
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return code;
}

inline void clear_error(pyphmm_error* err) {
    if (err) {
        err->code = PYPHMM_OK;
        err->message[0] = '\0';
    }
}

}  // namespace pyphmm
