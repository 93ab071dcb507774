// The fields of one line of a record file, and the words of the Python
// reader's messages (pyphmm/io.py), so both readers report a bad line alike.
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

// What a line holds, for the parser: fields, or why it cannot be parsed here.
enum class LineKind { kFields, kUnsupported, kInvalid };

// Python's repr() of a short printable-ASCII text (spaces and tabs allowed),
// cut to kQuoteChars characters with "..." after.
constexpr size_t kQuoteChars = 60;
std::string py_quote(const char* s, size_t len);

// Splits a line at runs of spaces/tabs (a trailing '\r' counts as space).
// Bytes the format never holds (non-ASCII, NUL) make the line kInvalid, err
// filled with the message pyphmm.io gives; other control bytes leave it to
// the Python reader, which treats some of them as separators (kUnsupported).
LineKind split_fields(const char* s, size_t len, Fields& out, const char* path, int64_t lineno, pyphmm_error* err);

// A record count: 1 and *v for plain digits (at most 9), 0 for text Python's
// int() may still take (a sign, '_' separators, more digits: the Python
// reader decides), -1 for anything else (not an integer).
int parse_count(const std::pair<const char*, size_t>& f, int32_t* v);

}  // namespace records
}  // namespace pyphmm
