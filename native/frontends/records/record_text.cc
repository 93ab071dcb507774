// Splitting a record file's lines into fields (see record_text.h).
#include "frontends/records/record_text.h"

#include <cstdint>
#include <cstring>

#include "common/errors.h"

namespace pyphmm {
namespace records {

std::string py_quote(const char* s, size_t len) {
    const bool cut = len > kQuoteChars;
    if (cut) len = kQuoteChars;
    const bool has_single = std::memchr(s, '\'', len) != nullptr;
    const char q = has_single && !std::memchr(s, '"', len) ? '"' : '\'';
    std::string out(1, q);
    for (size_t i = 0; i < len; ++i) {
        const char c = s[i];
        if (c == '\\' || c == q) out += '\\';
        if (c == '\t') {
            out += "\\t";
            continue;
        }
        out += c;
    }
    out += q;
    if (cut) out += "...";
    return out;
}

// Whether a line holds only ' '..'~' (fields of printable ASCII separated
// by spaces): one branch-free pass the compiler vectorises. Nearly every
// line of a record file is such a line; the others take the general checks.
namespace {
bool plain_line(const char* s, size_t len) {
    bool bad = false;
    for (size_t i = 0; i < len; ++i) bad |= static_cast<unsigned char>(s[i] - ' ') > '~' - ' ';
    return !bad;
}
}  // namespace

LineKind split_fields(const char* s, size_t len, Fields& out, const char* path, int64_t lineno, pyphmm_error* err) {
    out.clear();
    if (plain_line(s, len)) {
        for (size_t i = 0; i < len;) {
            if (s[i] == ' ') {
                ++i;
                continue;
            }
            const char* space = static_cast<const char*>(std::memchr(s + i, ' ', len - i));
            const size_t end = space ? static_cast<size_t>(space - s) : len;
            out.emplace_back(s + i, end - i);
            i = end;
        }
        return LineKind::kFields;
    }
    if (len >= 3 && std::memcmp(s, "\xef\xbb\xbf", 3) == 0) {
        set_error(err, PYPHMM_E_INVALID, "%s:%lld: UTF-8 byte-order mark: not ASCII text", path,
                  static_cast<long long>(lineno));
        return LineKind::kInvalid;
    }
    for (size_t i = 0; i < len; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if ((c >= 32 && c < 127) || c == '\t' || (c == '\r' && i + 1 == len)) continue;
        const long long line = static_cast<long long>(lineno);
        if (c == 0 || c >= 128)
            set_error(err, PYPHMM_E_INVALID, "%s:%lld: %s at column %zu: not ASCII text", path, line,
                      c == 0 ? "NUL byte" : "non-ASCII byte", i + 1);
        else if (c == '\r')
            set_error(err, PYPHMM_E_INVALID, "%s:%lld: carriage return at column %zu: a line ends with LF or CR LF",
                      path, line, i + 1);
        else
            set_error(err, PYPHMM_E_INVALID, "%s:%lld: control character 0x%02x at column %zu: not printable text",
                      path, line, static_cast<unsigned>(c), i + 1);
        return LineKind::kInvalid;
    }
    size_t i = 0;
    while (i < len) {
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
            ++i;
            continue;
        }
        const size_t start = i;
        while (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '\r') ++i;
        out.emplace_back(s + start, i - start);
    }
    return LineKind::kFields;
}

Count parse_count(const std::pair<const char*, size_t>& f, int32_t* v) {
    const char* s = f.first;
    const size_t n = f.second;
    const bool sign = n > 0 && s[0] == '-';
    bool digits = n > (sign ? 1u : 0u);
    int64_t x = 0;
    for (size_t i = sign ? 1 : 0; i < n && digits; ++i) {
        digits = s[i] >= '0' && s[i] <= '9';
        if (x <= INT32_MAX) x = x * 10 + (s[i] - '0');  // (stops growing once too large)
    }
    if (!digits) return Count::kMalformed;
    if (sign) return Count::kNegative;
    if (x > INT32_MAX) return Count::kTooLarge;
    *v = static_cast<int32_t>(x);
    return Count::kOk;
}

}  // namespace records
}  // namespace pyphmm
