// Python's repr() of a double in C++ (frontends/records/ writes results files with
// it, so they read the same as the Python writer's).
#include "repr.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pyphmm {

// (See repr.h.) std::to_chars gives the shortest digits; the layout is Python's.
int format_double_repr(double v, char* out) {
    if (v != v) return static_cast<int>(std::strlen(std::strcpy(out, "nan")));
    if (v == __builtin_inf()) return static_cast<int>(std::strlen(std::strcpy(out, "inf")));
    if (v == -__builtin_inf()) return static_cast<int>(std::strlen(std::strcpy(out, "-inf")));
    char sci[40];
    const auto r = std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific);
    *r.ptr = '\0';
    // sci is [-]d[.ddd]e(+|-)XX
    const char* p = sci;
    char* o = out;
    if (*p == '-') *o++ = *p++;
    char digits[32] = {};
    int n = 0;
    for (; *p != 'e'; ++p)
        if (*p != '.') digits[n++] = *p;
    const int exp10 = std::atoi(p + 1);  // v = d.ddd x 10^exp10
    if (exp10 >= -4 && exp10 < 16) {
        const int point = exp10 + 1;  // digits before the decimal point
        if (point <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -point; ++i) *o++ = '0';
            for (int i = 0; i < n; ++i) *o++ = digits[i];
        } else if (point >= n) {
            for (int i = 0; i < n; ++i) *o++ = digits[i];
            for (int i = n; i < point; ++i) *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        } else {
            for (int i = 0; i < n; ++i) {
                if (i == point) *o++ = '.';
                *o++ = digits[i];
            }
        }
    } else {
        *o++ = digits[0];
        if (n > 1) {
            *o++ = '.';
            for (int i = 1; i < n; ++i) *o++ = digits[i];
        }
        o += std::snprintf(o, 8, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
    *o = '\0';
    return static_cast<int>(o - out);
}

}  // namespace pyphmm
