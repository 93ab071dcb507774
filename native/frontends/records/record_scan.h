// Finding where the records of a text end, without parsing them, so that
// their text can be parsed on several threads.
#pragma once
#include <cstddef>
#include <cstdint>

#include "frontends/records/record_text.h"

namespace pyphmm {
namespace records {

// ---- finding records without parsing them ----------------------------------
// The scanner finds where records end, so that their text can be parsed on
// several threads. It takes blank lines and headers exactly as parse_record
// does (with parse_record's split_fields and parse_count); for anything
// else (a header parse_record refuses, a record cut short by the end of the
// file, a line over its limit or holding a byte no line holds, a record of
// more than kMaxChunkBytes) it answers kOther, and that record goes
// through parse_record on the file's reader, which reports what is wrong
// with it (or parses it after all).
struct Scan {
    enum Kind { kRecord, kEnd, kMore, kOther } kind = kOther;
    size_t bytes = 0;   // the record and the blank lines before it (kEnd: the blank lines)
    int64_t lines = 0;  // in those bytes
    // Estimated from the reads' first fields and the haplotype lines: the
    // record's bases, to reserve its part's buffers, and cells, to size chunks.
    int64_t read_bases = 0, hap_bases = 0, reads = 0, haps = 0;
    int64_t cells() const { return read_bases * hap_bases; }
};

// Where the record at p ends (n bytes there; eof: nothing follows them).
// f: scratch for the fields of blank lines and the header.
Scan scan_record(const char* p, size_t n, bool eof, Fields& f);

}  // namespace records
}  // namespace pyphmm
