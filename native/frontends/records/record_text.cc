// Splitting a record file's lines into fields (see record_text.h).
#include "frontends/records/record_text.h"

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
    LineKind kind = LineKind::kFields;
    for (size_t i = 0; i < len; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 128 || c == 0) {
            set_error(err, PYPHMM_E_INVALID, "%s:%lld: %s at column %zu: not ASCII text", path,
                      static_cast<long long>(lineno), c == 0 ? "NUL byte" : "non-ASCII byte", i + 1);
            return LineKind::kInvalid;
        }
        if (c < 32 && c != '\t' && !(c == '\r' && i + 1 == len)) kind = LineKind::kUnsupported;
        if (c == 127) kind = LineKind::kUnsupported;
    }
    if (kind != LineKind::kFields) return kind;
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

int parse_count(const std::pair<const char*, size_t>& f, int32_t* v) {
    const char* s = f.first;
    const size_t n = f.second;
    bool digits = n > 0;
    for (size_t i = 0; i < n && digits; ++i) digits = s[i] >= '0' && s[i] <= '9';
    if (digits && n <= 9) {
        int64_t x = 0;
        for (size_t i = 0; i < n; ++i) x = x * 10 + (s[i] - '0');
        *v = static_cast<int32_t>(x);
        return 1;
    }
    size_t i = (n > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    bool ok = i < n;
    for (bool prev_digit = false; i < n && ok; ++i) {
        const bool d = s[i] >= '0' && s[i] <= '9';
        ok = d || (s[i] == '_' && prev_digit && i + 1 < n);
        prev_digit = d;
    }
    return ok ? 0 : -1;
}

}  // namespace records
}  // namespace pyphmm
