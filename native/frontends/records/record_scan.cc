// The record scanner (see record_scan.h).
#include "frontends/records/record_scan.h"

#include <cstring>

#include "frontends/records/record_file.h"

namespace pyphmm {
namespace records {
namespace {

inline bool blank_char(char c) { return c == ' ' || c == '\t'; }

// The line at p, of the n bytes left: its length without '\n' and the bytes
// it uses; false if it is not all there yet (no '\n', not at the end of the
// file). At the end of the file the last line needs no '\n'.
bool line_at(const char* p, size_t n, bool eof, size_t* len, size_t* used) {
    const char* nl = n ? static_cast<const char*>(std::memchr(p, '\n', n)) : nullptr;
    if (!nl && !eof) return false;
    *len = nl ? static_cast<size_t>(nl - p) : n;
    *used = nl ? *len + 1 : n;
    return true;
}

// The line's fields as parse_record splits them; false for a line that
// parse_record refuses or leaves to the Python reader.
bool scan_fields(const char* s, size_t len, Fields& f) {
    return split_fields(s, len, f, "", 0, nullptr) == LineKind::kFields;
}

}  // namespace

Scan scan_record(const char* p, size_t n, bool eof, Fields& f) {
    Scan s;
    size_t at = 0, len = 0, used = 0;
    for (;;) {  // blank lines
        if (at == n && eof) {
            s.kind = Scan::kEnd;
            s.bytes = at;
            return s;
        }
        if (!line_at(p + at, n - at, eof, &len, &used)) {
            s.kind = Scan::kMore;
            return s;
        }
        if (!scan_fields(p + at, len, f)) return Scan{};
        if (!f.empty()) break;
        at += used;
        ++s.lines;
    }
    int32_t counts[2];  // (counts parse_record takes without the Python reader)
    if (f.size() != 2 || parse_count(f[0], &counts[0]) != 1 || parse_count(f[1], &counts[1]) != 1) return Scan{};
    at += used;
    ++s.lines;
    s.reads = counts[0];
    s.haps = counts[1];
    const int64_t body = s.reads + s.haps;
    for (int64_t k = 0; k < body; ++k) {
        if (at > kMaxChunkBytes || (at == n && eof)) return Scan{};  // too large to hold as text; cut short
        if (!line_at(p + at, n - at, eof, &len, &used)) {
            s.kind = Scan::kMore;
            return s;
        }
        const char* line = p + at;
        if (k < counts[0]) {
            size_t e = 0;
            while (e < len && !blank_char(line[e])) ++e;
            s.read_bases += static_cast<int64_t>(e);
        } else {
            size_t e = len;
            while (e > 0 && (blank_char(line[e - 1]) || line[e - 1] == '\r')) --e;
            s.hap_bases += static_cast<int64_t>(e);
        }
        at += used;
        ++s.lines;
    }
    s.kind = Scan::kRecord;
    s.bytes = at;
    return s;
}

}  // namespace records
}  // namespace pyphmm
