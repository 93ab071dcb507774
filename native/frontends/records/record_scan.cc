// The record scanner (see record_scan.h).
#include "frontends/records/record_scan.h"

#include <cstring>

#include "frontends/records/record_file.h"

namespace pyphmm {
namespace records {
namespace {

inline bool blank_char(char c) { return c == ' ' || c == '\t'; }

// The line at p, of the n bytes left: kLine with its length without '\n'
// and the bytes it uses (at the end of the file the last line needs no
// '\n'); kMore if it is not all there yet; kRefuse for a line over `limit`
// bytes or one that already holds a byte no line holds (parse_record, on
// the file's reader, then reports it).
enum class LineAt { kLine, kMore, kRefuse };
LineAt line_at(const char* p, size_t n, bool eof, size_t limit, size_t* len, size_t* used) {
    const char* nl = n ? static_cast<const char*>(std::memchr(p, '\n', n)) : nullptr;
    if (!nl && !eof) return n > limit || has_stop_byte(p, n) ? LineAt::kRefuse : LineAt::kMore;
    *len = nl ? static_cast<size_t>(nl - p) : n;
    *used = nl ? *len + 1 : n;
    return *len > limit ? LineAt::kRefuse : LineAt::kLine;
}

Scan more(Scan s) {
    s.kind = Scan::kMore;
    return s;
}

// The line's fields as parse_record splits them; false for a line that
// parse_record refuses.
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
        const LineAt got = line_at(p + at, n - at, eof, kMaxHeaderLine, &len, &used);
        if (got != LineAt::kLine) return got == LineAt::kMore ? more(s) : Scan{};
        if (!scan_fields(p + at, len, f)) return Scan{};
        if (!f.empty()) break;
        at += used;
        ++s.lines;
    }
    int32_t counts[2];  // (counts parse_record takes without the Python reader)
    if (f.size() != 2 || parse_count(f[0], &counts[0]) != Count::kOk || parse_count(f[1], &counts[1]) != Count::kOk)
        return Scan{};
    at += used;
    ++s.lines;
    s.reads = counts[0];
    s.haps = counts[1];
    const int64_t body = s.reads + s.haps;
    for (int64_t k = 0; k < body; ++k) {
        if (at > kMaxChunkBytes || (at == n && eof)) return Scan{};  // too large to hold as text; cut short
        const LineAt got = line_at(p + at, n - at, eof, kMaxRecordLine, &len, &used);
        if (got != LineAt::kLine) return got == LineAt::kMore ? more(s) : Scan{};
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
