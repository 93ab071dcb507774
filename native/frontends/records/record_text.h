// The fields of one line of a record file, and the words of the Python
// reader's messages (pyphmm/io.py), so both readers accept one language and
// report a bad line alike.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pyphmm.h"

namespace pyphmm {
namespace records {

using Fields = std::vector<std::pair<const char*, size_t>>;

// What a line holds, for the parser: fields, or an error (err filled).
enum class LineKind { kFields, kInvalid };

// The longest line, in bytes without its '\n': a header line (and a blank
// line before one), and a read or haplotype line (a read of 13 million
// bases). A longer line is an error once its first limit + 1 bytes are read
// (pyphmm.io: MAX_HEADER_LINE, MAX_RECORD_LINE).
constexpr size_t kMaxHeaderLine = size_t(1) << 20;
constexpr size_t kMaxRecordLine = size_t(64) << 20;

// Python's repr() of a short printable-ASCII text (spaces and tabs allowed),
// cut to kQuoteChars characters with "..." after.
constexpr size_t kQuoteChars = 60;
std::string py_quote(const char* s, size_t len);

// A byte no line holds wherever it stands (NUL, non-ASCII, a control byte
// other than a tab or a carriage return, DEL): such a line is an error, so
// a reader stops reading it there.
inline bool stop_byte(unsigned char c) { return c >= 127 || (c < 32 && c != '\t' && c != '\r'); }
inline bool has_stop_byte(const char* s, size_t n) {
    bool any = false;
    for (size_t i = 0; i < n; ++i) any |= stop_byte(static_cast<unsigned char>(s[i]));
    return any;
}

// Splits a line at runs of spaces/tabs (a trailing '\r' counts as space).
// A line holds printable ASCII and tabs, a '\r' at its end aside: any other
// byte (a byte-order mark, NUL, non-ASCII, control bytes) makes it kInvalid,
// err filled with the message pyphmm.io gives.
LineKind split_fields(const char* s, size_t len, Fields& out, const char* path, int64_t lineno, pyphmm_error* err);

// A record count (docs/RECORD_FORMAT.md): decimal digits only, at most
// INT32_MAX; *v receives it when kOk.
enum class Count { kOk, kMalformed, kNegative, kTooLarge };
Count parse_count(const std::pair<const char*, size_t>& f, int32_t* v);

}  // namespace records
}  // namespace pyphmm
