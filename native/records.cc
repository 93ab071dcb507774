// Record files (docs/RECORD_FORMAT.md) in native code: the fast path of
// `pyphmm likelihoods`.
//
// The Python reader (pyphmm/io.py) defines the format and its error
// messages. This parser takes a strict subset of it: records separated by
// blank lines or none, fields separated by spaces or tabs, printable ASCII,
// unsigned decimal counts. What it returns:
// - PYPHMM_E_INVALID for a malformed file (wrong field counts, unequal
//   lengths, a truncated record, a count that is no integer, non-ASCII or
//   NUL bytes, a record whose results cannot fit in memory), with the
//   Python reader's message naming file and line: both paths report the
//   same error, and the CLI reports it without reading the file again;
// - PYPHMM_E_UNSUPPORTED for text outside the subset that Python's reader
//   may still take (other control bytes, signed or '_'-separated counts):
//   the CLI then runs the Python path;
// - PYPHMM_E_IO when reading the input or writing the output fails.
//
// The file is read in blocks and cut into chunks of records (up to
// chunk_cells cells or kMaxChunkBytes of text each) by a scanner that only
// finds where records end; a chunk's records are then parsed in parts on a
// few threads. A writer thread computes the chunks in file order, one call
// each, while another formats (on several threads) and writes the chunk
// before; the reader parses ahead meanwhile, up to kMaxQueuedBytes of
// parsed input. So a small file is parsed while the GPU starts, and a large
// one streams with parsing, computing and formatting overlapped.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "common/repr.h"
#include "common/thread_pool.h"
#include "dispatch/policy.h"
#include "pyphmm.h"
#include "records.h"

namespace pyphmm {

namespace {

// Lines of a file, read in blocks. A line stays valid until the next call
// to next() (parse_record copies what it keeps at once). The record scanner
// reads the unread text directly (data(), avail(), more()), has the records
// it found parsed there, and skip()s them.
class LineReader {
  public:
    explicit LineReader(FILE* f) : f_(f) {}

    // Next line without its '\n' (a trailing '\r' stays); false at EOF.
    bool next(const char** line, size_t* len) {
        for (;;) {
            const char* nl =
                pos_ < end_ ? static_cast<const char*>(std::memchr(buf_.get() + pos_, '\n', end_ - pos_)) : nullptr;
            if (nl || (eof_ && pos_ < end_)) {
                const size_t stop = nl ? static_cast<size_t>(nl - buf_.get()) : end_;
                *line = buf_.get() + pos_;
                *len = stop - pos_;
                pos_ = nl ? stop + 1 : end_;
                ++lineno_;
                return true;
            }
            if (eof_) return false;
            fill();
        }
    }
    int64_t lineno() const { return lineno_; }
    bool error() const { return std::ferror(f_) != 0; }
    int error_number() const { return read_errno_; }

    // The unread text; valid until more() or next().
    const char* data() const { return buf_.get() + pos_; }
    size_t avail() const { return end_ - pos_; }
    bool at_eof() const { return eof_; }
    // Reads another block after the unread text; false at EOF.
    bool more() {
        if (eof_) return false;
        fill();
        return true;
    }
    // Marks the next `bytes` unread bytes, `lines` lines, read.
    void skip(size_t bytes, int64_t lines) {
        pos_ += bytes;
        lineno_ += lines;
    }

  private:
    // Drops the lines already returned: a line is valid until the next call.
    void compact() {
        if (pos_ > 0) {
            std::memmove(buf_.get(), buf_.get() + pos_, end_ - pos_);
            end_ -= pos_;
            pos_ = 0;
        }
    }
    // Reads a block after the unread text: 1 MiB the first time (the first
    // chunk is small, see kFirstChunkBytes), then up to kBlock.
    void fill() {
        compact();
        const size_t block = cap_ == 0 ? kFirstBlock : kBlock;
        if (cap_ - end_ < block) {
            const size_t cap = std::max(cap_ * 2, end_ + block);
            std::unique_ptr<char[]> bigger(new char[cap]);  // (not zeroed: fread fills what is used)
            if (end_) std::memcpy(bigger.get(), buf_.get(), end_);
            buf_ = std::move(bigger);
            cap_ = cap;
        }
        const size_t got = std::fread(buf_.get() + end_, 1, std::min(block, cap_ - end_), f_);
        if (got == 0 && std::ferror(f_)) read_errno_ = errno;
        end_ += got;
        if (got == 0) eof_ = true;
    }
    static constexpr size_t kFirstBlock = size_t(1) << 20;
    static constexpr size_t kBlock = size_t(16) << 20;
    FILE* f_;
    std::unique_ptr<char[]> buf_;
    size_t cap_ = 0, pos_ = 0, end_ = 0;
    bool eof_ = false;
    int64_t lineno_ = 0;
    int read_errno_ = 0;
};

// The lines of text already in memory (a piece of a chunk's text), numbered
// from first_line + 1: what LineReader::next gives for the same bytes.
class TextLines {
  public:
    TextLines(const char* p, size_t n, int64_t first_line) : p_(p), end_(p + n), lineno_(first_line) {}
    bool next(const char** line, size_t* len) {
        if (p_ == end_) return false;
        const char* nl = static_cast<const char*>(std::memchr(p_, '\n', end_ - p_));
        const char* stop = nl ? nl : end_;
        *line = p_;
        *len = static_cast<size_t>(stop - p_);
        p_ = nl ? nl + 1 : end_;
        ++lineno_;
        return true;
    }
    int64_t lineno() const { return lineno_; }

  private:
    const char* p_;
    const char* end_;
    int64_t lineno_;
};

template <typename Lines>
int unsupported(const Lines& lr, const char* path, pyphmm_error* err) {
    return set_error(err, PYPHMM_E_UNSUPPORTED, "%s:%lld: outside the native reader's subset of the format", path,
                     static_cast<long long>(lr.lineno()));
}

// What a line holds, for the parser: fields, or why it cannot be parsed here.
enum class LineKind { kFields, kUnsupported, kInvalid };

// Python's repr() of a short printable-ASCII text (spaces and tabs allowed),
// cut to kQuoteChars characters with "..." after: what pyphmm.io quotes in
// its messages, so both readers report a bad line in the same words.
constexpr size_t kQuoteChars = 60;
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
bool plain_line(const char* s, size_t len) {
    bool bad = false;
    for (size_t i = 0; i < len; ++i) bad |= static_cast<unsigned char>(s[i] - ' ') > '~' - ' ';
    return !bad;
}

// Splits a line at runs of spaces/tabs (a trailing '\r' counts as space).
// Bytes the format never holds (non-ASCII, NUL) make the line invalid, with
// the message pyphmm.io gives; other control bytes leave it to the Python
// reader, which treats some of them as separators (kUnsupported).
LineKind split_fields(const char* s, size_t len, std::vector<std::pair<const char*, size_t>>& out, const char* path,
                      int64_t lineno, pyphmm_error* err) {
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

// A record count: 1 and *v for plain digits (at most 9), 0 for text Python's
// int() may still take (a sign, '_' separators, more digits: the Python
// reader decides), -1 for anything else (not an integer).
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

// Estimated bytes of one record's results while they are computed and
// written: a double and its text per pair (pyphmm.io uses the same figure).
constexpr double kResultBytesPerPair = 32.0;

double physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

// Parsed records (a piece of a chunk), in the layout pyphmm_region points
// into.
struct Part {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, haps;
    std::vector<int64_t> read_offsets, hap_offsets;
    std::vector<int32_t> num_reads, num_haps;
    std::vector<size_t> read_first, hap_first;  // each record's first offset entry
    int64_t cells = 0, pairs = 0;
    size_t records() const { return num_reads.size(); }
    // Room for `records` records of these sizes in all (the scanner's
    // estimates), so that the buffers are allocated once.
    void reserve(int64_t records, int64_t reads, int64_t haplotypes, int64_t read_bases, int64_t hap_bases) {
        for (auto* v : {&bases, &quals, &ins, &dels, &gcp}) v->reserve(static_cast<size_t>(read_bases));
        haps.reserve(static_cast<size_t>(hap_bases));
        read_offsets.reserve(static_cast<size_t>(records + reads));
        hap_offsets.reserve(static_cast<size_t>(records + haplotypes));
        for (auto* v : {&num_reads, &num_haps}) v->reserve(static_cast<size_t>(records));
        for (auto* v : {&read_first, &hap_first}) v->reserve(static_cast<size_t>(records));
    }
    size_t bytes() const {  // of input held
        return bases.size() * 5 + haps.size() + (read_offsets.size() + hap_offsets.size()) * sizeof(int64_t);
    }
};

// Reads the line a record needs; on EOF or an unparsable line fills err
// and returns the status (PYPHMM_E_INVALID or PYPHMM_E_UNSUPPORTED).
template <typename Lines>
int record_line(Lines& lr, const char* path, const char* what, int32_t k, int32_t of,
                std::vector<std::pair<const char*, size_t>>& f, pyphmm_error* err) {
    const char* line;
    size_t len;
    if (!lr.next(&line, &len))
        return set_error(err, PYPHMM_E_INVALID,
                         "%s: truncated record: expected %s %d of %d at line %lld, found end of file", path, what,
                         k + 1, of, static_cast<long long>(lr.lineno() + 1));
    switch (split_fields(line, len, f, path, lr.lineno(), err)) {
        case LineKind::kInvalid: return PYPHMM_E_INVALID;
        case LineKind::kUnsupported: return unsupported(lr, path, err);
        case LineKind::kFields: return PYPHMM_OK;
    }
    return PYPHMM_OK;
}

// Parses the next record into c (*got: false at EOF); PYPHMM_OK, or
// (err says where) PYPHMM_E_INVALID for a malformed file, in pyphmm.io's
// words, PYPHMM_E_UNSUPPORTED for text outside this parser's subset.
template <typename Lines>
int parse_record(Lines& lr, const char* path, Part& c, bool* got, pyphmm_error* err) {
    *got = false;
    const char* line;
    size_t len;
    std::vector<std::pair<const char*, size_t>> f;
    for (;;) {  // skip blank lines
        if (!lr.next(&line, &len)) return PYPHMM_OK;
        switch (split_fields(line, len, f, path, lr.lineno(), err)) {
            case LineKind::kInvalid: return PYPHMM_E_INVALID;
            case LineKind::kUnsupported: return unsupported(lr, path, err);
            case LineKind::kFields: break;
        }
        if (!f.empty()) break;
    }
    const long long header = lr.lineno();
    if (f.size() != 2) {
        size_t a = 0, b = len;  // the line without surrounding whitespace, as Python's strip()
        while (a < b && (line[a] == ' ' || line[a] == '\t')) ++a;
        while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t' || line[b - 1] == '\r')) --b;
        return set_error(err, PYPHMM_E_INVALID, "%s:%lld: malformed record header %s (expected two counts 'R H')", path,
                         header, py_quote(line + a, b - a).c_str());
    }
    int32_t counts[2];
    for (int k = 0; k < 2; ++k) {
        const int got = parse_count(f[k], &counts[k]);
        if (got == 0) return unsupported(lr, path, err);
        if (got < 0)
            return set_error(err, PYPHMM_E_INVALID, "%s:%lld: non-integer count %s in record header", path, header,
                             py_quote(f[k].first, f[k].second).c_str());
    }
    const int32_t nr = counts[0], nh = counts[1];
    const double need = static_cast<double>(nr) * nh * kResultBytesPerPair, have = physical_memory_bytes();
    if (have > 0 && need > have)
        return set_error(err, PYPHMM_E_INVALID,
                         "%s:%lld: a record of %d reads x %d haplotypes needs about %.1f GB for its results, "
                         "more than this machine's memory (%.1f GB)",
                         path, header, nr, nh, need / 1e9, have / 1e9);
    c.num_reads.push_back(nr);
    c.num_haps.push_back(nh);
    c.read_first.push_back(c.read_offsets.size());
    c.hap_first.push_back(c.hap_offsets.size());
    c.read_offsets.push_back(static_cast<int64_t>(c.bases.size()));
    c.hap_offsets.push_back(static_cast<int64_t>(c.haps.size()));
    int64_t read_len = 0, hap_len = 0;
    static const char* const kLabels[4] = {"QUAL", "INS", "DEL", "GCP"};
    for (int32_t r = 0; r < nr; ++r) {
        int rc = record_line(lr, path, "read", r, nr, f, err);
        if (rc != PYPHMM_OK) return rc;
        if (f.size() != 5)
            return set_error(err, PYPHMM_E_INVALID, "%s:%lld: expected 5 fields (READ QUAL INS DEL GCP), found %zu",
                             path, static_cast<long long>(lr.lineno()), f.size());
        const size_t m = f[0].second;
        for (int k = 1; k < 5; ++k)
            if (f[k].second != m)
                return set_error(err, PYPHMM_E_INVALID, "%s:%lld: read has %zu bases but %s has %zu characters", path,
                                 static_cast<long long>(lr.lineno()), m, kLabels[k - 1], f[k].second);
        c.bases.insert(c.bases.end(), f[0].first, f[0].first + m);
        std::vector<uint8_t>* q[4] = {&c.quals, &c.ins, &c.dels, &c.gcp};
        for (int k = 0; k < 4; ++k) {  // ASCII+33 (split_fields let only 33..126 into fields)
            const size_t at = q[k]->size();
            q[k]->resize(at + m);
            for (size_t i = 0; i < m; ++i) (*q[k])[at + i] = static_cast<uint8_t>(f[k + 1].first[i] - 33);
        }
        c.read_offsets.push_back(static_cast<int64_t>(c.bases.size()));
        read_len += static_cast<int64_t>(m);
    }
    for (int32_t h = 0; h < nh; ++h) {
        int rc = record_line(lr, path, "haplotype", h, nh, f, err);
        if (rc != PYPHMM_OK) return rc;
        if (f.size() != 1)
            return set_error(err, PYPHMM_E_INVALID, "%s:%lld: expected one haplotype, found %zu fields", path,
                             static_cast<long long>(lr.lineno()), f.size());
        c.haps.insert(c.haps.end(), f[0].first, f[0].first + f[0].second);
        c.hap_offsets.push_back(static_cast<int64_t>(c.haps.size()));
        hap_len += static_cast<int64_t>(f[0].second);
    }
    c.cells += read_len * hap_len;
    c.pairs += static_cast<int64_t>(nr) * nh;
    *got = true;
    return PYPHMM_OK;
}

// ---- finding records without parsing them ----------------------------------
// The scanner finds where records end, so that their text can be parsed on
// several threads. It takes blank lines and headers exactly as parse_record
// does (with parse_record's split_fields and parse_count); for anything
// else (a header parse_record refuses or leaves to the Python reader, a
// record cut short by the end of the file, a record of more than
// kMaxChunkBytes) it answers kOther, and that record goes through
// parse_record on the file's reader, which reports what is wrong with it (or
// parses it after all).
struct Scan {
    enum Kind { kRecord, kEnd, kMore, kOther } kind = kOther;
    size_t bytes = 0;   // the record and the blank lines before it (kEnd: the blank lines)
    int64_t lines = 0;  // in those bytes
    // Estimated from the reads' first fields and the haplotype lines: the
    // record's bases, to reserve its part's buffers, and cells, to size chunks.
    int64_t read_bases = 0, hap_bases = 0, reads = 0, haps = 0;
    int64_t cells() const { return read_bases * hap_bases; }
};

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
bool scan_fields(const char* s, size_t len, std::vector<std::pair<const char*, size_t>>& f) {
    return split_fields(s, len, f, "", 0, nullptr) == LineKind::kFields;
}

// Where the record at p ends (n bytes there; eof: nothing follows them).
// f: scratch for the fields of blank lines and the header.
Scan scan_record(const char* p, size_t n, bool eof, std::vector<std::pair<const char*, size_t>>& f) {
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

// ---- chunks: read, parsed on several threads, computed, written in order ----
// Text of one part to parse: ~kPartBytes, whole records.
constexpr size_t kPartBytes = size_t(1) << 20;
// The first chunk is small, so that the writer's first call, which starts
// the GPU, comes early.
constexpr size_t kFirstChunkBytes = size_t(1) << 20;
// Parsed input waiting for the writer (at least one chunk always may):
// room for a file of ~100 MB to be parsed while the GPU starts. With the
// writer's batch and the chunk being read, a slow writer (the CPU backend)
// holds at most ~400 MB of input.
constexpr size_t kMaxQueuedBytes = size_t(128) << 20;

struct Chunk {
    std::vector<Part> parts;  // in file order
    size_t bytes() const {
        size_t b = 0;
        for (const Part& p : parts) b += p.bytes();
        return b;
    }
};

// Threads that parse. A few keep ahead of the GPU; more would take cores
// from what runs meanwhile: the GPU driver's start (which the first chunks'
// parsing overlaps) and the CUDA backend's packing (docs/PERFORMANCE.md).
constexpr int kParseThreads = 4;
int parse_threads(const pyphmm_options* options) { return std::min(default_threads(options), kParseThreads); }

// A record the scanner found in a chunk's text: where it starts, the lines
// before it, its sizes.
struct Found {
    size_t start;
    int64_t line;
    Scan scan;
};

// Parses text, whole records found by the scanner, into parts of about
// kPartBytes on several threads. A failure is the first one in the file.
int parse_text(const char* text, size_t size, const std::vector<Found>& found, const char* path, int threads, Chunk& c,
               pyphmm_error* err) {
    std::vector<size_t> first{0};  // each part's first record
    for (size_t k = 1; k < found.size(); ++k)
        if (found[k].start - found[first.back()].start >= kPartBytes) first.push_back(k);
    const size_t np = first.size();
    first.push_back(found.size());
    c.parts.resize(np);
    std::vector<int> rc(np, PYPHMM_OK);
    std::vector<pyphmm_error> errs(np);
    parallel_for(static_cast<int64_t>(np), threads, [&](int64_t i) {
        const size_t a = first[i], b = first[i + 1];
        const size_t end = b < found.size() ? found[b].start : size;
        TextLines tl(text + found[a].start, end - found[a].start, found[a].line);
        Part& part = c.parts[i];
        try {
            int64_t reads = 0, haps = 0, read_bases = 0, hap_bases = 0;
            for (size_t k = a; k < b; ++k) {
                reads += found[k].scan.reads;
                haps += found[k].scan.haps;
                read_bases += found[k].scan.read_bases;
                hap_bases += found[k].scan.hap_bases;
            }
            part.reserve(static_cast<int64_t>(b - a), reads, haps, read_bases, hap_bases);
            for (size_t k = a; k < b && rc[i] == PYPHMM_OK; ++k) {
                bool got = false;
                rc[i] = parse_record(tl, path, part, &got, &errs[i]);
                if (rc[i] == PYPHMM_OK && !got)
                    rc[i] = set_error(&errs[i], PYPHMM_E_INTERNAL, "%s:%lld: record scan and parse disagree", path,
                                      static_cast<long long>(tl.lineno()));
            }
        } catch (const std::bad_alloc&) {
            rc[i] = set_error(&errs[i], PYPHMM_E_NOMEM, "out of memory reading %s", path);
        }
    });
    for (size_t i = 0; i < np; ++i)
        if (rc[i] != PYPHMM_OK) {
            if (err) *err = errs[i];
            return rc[i];
        }
    return PYPHMM_OK;
}

int read_failed(const LineReader& lr, const char* path, pyphmm_error* err) {
    return set_error(err, PYPHMM_E_IO, "%s: read failed: %s", path, std::strerror(lr.error_number()));
}

// Reads the next chunk (records up to chunk_cells cells or max_bytes of
// text) into c; *end: the file has no more records.
int read_chunk(LineReader& lr, const char* path, int64_t chunk_cells, size_t max_bytes, int threads, Chunk& c,
               bool* end, pyphmm_error* err) {
    std::vector<Found> found;
    std::vector<std::pair<const char*, size_t>> fields;  // scan_record's scratch
    size_t at = 0;
    int64_t nlines = 0, cells = 0;
    bool other = false;
    *end = false;
    while (cells < chunk_cells && at < max_bytes) {
        const Scan s = scan_record(lr.data() + at, lr.avail() - at, lr.at_eof(), fields);
        if (s.kind == Scan::kMore) {
            lr.more();
            continue;
        }
        if (s.kind == Scan::kOther) {
            other = true;
            break;
        }
        if (s.kind == Scan::kRecord) {
            found.push_back(Found{at, lr.lineno() + nlines, s});
            cells += s.cells();
        }
        at += s.bytes;
        nlines += s.lines;
        if (s.kind == Scan::kEnd) {
            *end = true;
            break;
        }
    }
    if (lr.error()) return read_failed(lr, path, err);
    if (!found.empty())
        if (int rc = parse_text(lr.data(), at, found, path, threads, c, err)) return rc;
    lr.skip(at, nlines);
    if (other) {  // the next record, from the reader
        Part p;
        bool got = false;
        if (int rc = parse_record(lr, path, p, &got, err)) return rc;
        if (lr.error()) return read_failed(lr, path, err);
        if (got)
            c.parts.push_back(std::move(p));
        else
            *end = true;
    }
    return PYPHMM_OK;
}

// Totals of the chunks written so far.
struct Totals {
    int64_t records = 0, pairs_written = 0, cells_written = 0;  // (by the formatting thread)
    pyphmm_stats st{};                                          // the calls' (by the writer)
    int64_t* progress = nullptr;                                // the caller's records, pairs, cells (see pyphmm.h)
    const char* out_path = "";                                  // for messages
};

// Records [first, last) of a part, whose results start at res.
struct FormatTask {
    const Part* part;
    size_t first, last;
    const double* res;
    int64_t pairs;
};

// A chunk's records in tasks of about kFormatPairs results (parts are
// parsed as ~1 MB of text each, too few to keep every thread formatting).
constexpr int64_t kFormatPairs = 4096;
std::vector<FormatTask> format_tasks(const Chunk& c, const double* res) {
    std::vector<FormatTask> tasks;
    for (const Part& p : c.parts) {
        FormatTask t{&p, 0, 0, res, 0};
        for (size_t k = 0; k < p.records(); ++k) {
            const int64_t n = static_cast<int64_t>(p.num_reads[k]) * p.num_haps[k];
            t.last = k + 1;
            t.pairs += n;
            res += n;
            if (t.pairs >= kFormatPairs || t.last == p.records()) {
                tasks.push_back(t);
                t = FormatTask{&p, t.last, t.last, res, 0};
            }
        }
    }
    return tasks;
}

// A task's records and results in the results format.
void format_records(const FormatTask& task, std::string& text) {
    const Part& p = *task.part;
    const double* res = task.res;
    text.clear();
    text.reserve(static_cast<size_t>(task.pairs) * 20 + (task.last - task.first) * 16);
    char num[48];
    for (size_t k = task.first; k < task.last; ++k) {
        text += std::to_string(p.num_reads[k]);
        text += ' ';
        text += std::to_string(p.num_haps[k]);
        text += '\n';
        for (int32_t r = 0; r < p.num_reads[k]; ++r) {
            for (int32_t h = 0; h < p.num_haps[k]; ++h) {
                if (h) text += ' ';
                text.append(num, format_double_repr(*res++, num));
            }
            text += '\n';
        }
    }
}

// Computes chunk c in one call into res (its parts' results in order) and
// adds the call's statistics to sum.
int compute_chunk(const Chunk& c, const pyphmm_options* options, std::vector<double>& res, pyphmm_stats& sum,
                  pyphmm_error* err) {
    std::vector<pyphmm_region> regions;
    int64_t pairs = 0;
    for (const Part& p : c.parts) {
        for (size_t k = 0; k < p.records(); ++k) {
            pyphmm_region g;
            g.num_reads = p.num_reads[k];
            g.num_haps = p.num_haps[k];
            g.read_bases = p.bases.data();
            g.read_quals = p.quals.data();
            g.read_ins = p.ins.data();
            g.read_dels = p.dels.data();
            g.read_gcp = p.gcp.data();
            g.read_offsets = p.read_offsets.data() + p.read_first[k];
            g.hap_bases = p.haps.data();
            g.hap_offsets = p.hap_offsets.data() + p.hap_first[k];
            regions.push_back(g);
        }
        pairs += p.pairs;
    }
    res.resize(static_cast<size_t>(pairs));
    pyphmm_stats st{};
    int rc = pyphmm_pairhmm(regions.data(), static_cast<int64_t>(regions.size()), res.data(), options, &st, err);
    if (rc != PYPHMM_OK) return rc;
    sum.pairs += st.pairs;
    sum.cells += st.cells;
    sum.double_pairs += st.double_pairs;
    sum.seconds += st.seconds;
    sum.gpu_regions += st.gpu_regions;
    sum.gpu_cells += st.gpu_cells;
    sum.cpu_regions += st.cpu_regions;
    sum.cpu_cells += st.cpu_cells;
    sum.fell_back |= st.fell_back;
    sum.hybrid |= st.hybrid;
    if (st.gpu_cells > 0 || sum.backend_used == 0) sum.backend_used = st.backend_used;
    return PYPHMM_OK;
}

// Formats a computed chunk's results on several threads and appends them
// to out.
int format_and_write(const Chunk& c, const std::vector<double>& res, FILE* out, int threads, Totals& t,
                     pyphmm_error* err) {
    const std::vector<FormatTask> tasks = format_tasks(c, res.data());
    std::vector<std::string> text(tasks.size());
    std::atomic<bool> no_memory{false};
    parallel_for(static_cast<int64_t>(tasks.size()), threads, [&](int64_t i) {
        try {
            format_records(tasks[i], text[i]);
        } catch (const std::bad_alloc&) {
            no_memory = true;
        }
    });
    if (no_memory) return set_error(err, PYPHMM_E_NOMEM, "out of memory formatting results");
    for (const std::string& x : text)
        if (std::fwrite(x.data(), 1, x.size(), out) != x.size())
            return set_error(err, PYPHMM_E_IO, "%s: write failed: %s", t.out_path, std::strerror(errno));
    for (const Part& p : c.parts) {
        t.records += static_cast<int64_t>(p.records());
        t.pairs_written += p.pairs;
        t.cells_written += p.cells;
    }
    if (t.progress) {
        __atomic_store_n(&t.progress[0], t.records, __ATOMIC_RELAXED);
        __atomic_store_n(&t.progress[1], t.pairs_written, __ATOMIC_RELAXED);
        __atomic_store_n(&t.progress[2], t.cells_written, __ATOMIC_RELAXED);
    }
    return PYPHMM_OK;
}

// Computes the chunks, one call each (a call the size of several would
// make the CUDA backend grow its pinned buffers: slower than the calls),
// while another thread formats and writes the chunk computed before.
int compute_and_write(const std::vector<std::unique_ptr<Chunk>>& chunks, FILE* out, const pyphmm_options* options,
                      Totals& t, pyphmm_error* err) {
    std::vector<std::vector<double>> res(chunks.size());
    pyphmm_error ferr;
    clear_error(&ferr);
    std::future<int> formatting;  // chunk i - 1 (its future's destructor waits)
    auto formatted = [&]() {
        const int rc = formatting.valid() ? formatting.get() : PYPHMM_OK;
        if (rc != PYPHMM_OK && err) *err = ferr;
        return rc;
    };
    for (size_t i = 0; i < chunks.size(); ++i) {
        int rc = compute_chunk(*chunks[i], options, res[i], t.st, err);
        const int frc = formatted();  // an earlier chunk's failure comes first
        if (frc != PYPHMM_OK) return frc;
        if (rc != PYPHMM_OK) return rc;
        formatting = std::async(std::launch::async, [&, i] {
            try {
                return format_and_write(*chunks[i], res[i], out, default_threads(options), t, &ferr);
            } catch (const std::bad_alloc&) {
                return set_error(&ferr, PYPHMM_E_NOMEM, "out of memory formatting results");
            }
        });
    }
    return formatted();
}

// The writer: a thread that computes, formats and writes the parsed chunks
// in file order, every chunk waiting at once. While its first call starts
// the GPU the reader parses ahead. It stops at its first failure,
// or when the reader cancels.
class Writer {
  public:
    Writer(FILE* out, const pyphmm_options* options, Totals& t)
        : out_(out), options_(options), t_(t), thread_([this] { run(); }) {}
    ~Writer() { finish(true); }

    // Queues a chunk, waiting while kMaxQueuedBytes are queued; false if
    // the writer has failed.
    bool push(std::unique_ptr<Chunk> c) {
        std::unique_lock<std::mutex> lock(mu_);
        const size_t b = c->bytes();
        room_.wait(lock, [&] { return failed_ || queue_.empty() || queued_ + b <= kMaxQueuedBytes; });
        if (failed_) return false;
        queued_ += b;
        queue_.push_back(std::move(c));
        ready_.notify_one();
        return true;
    }
    // No more chunks (cancel: drop those not started); waits for the writer.
    // Its status, with err filled on failure.
    int finish(bool cancel, pyphmm_error* err = nullptr) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            closed_ = true;
            if (cancel) queue_.clear();
            ready_.notify_one();
        }
        if (thread_.joinable()) thread_.join();
        if (rc_ != PYPHMM_OK && err) *err = err_;
        return rc_;
    }

  private:
    void run() {
        for (;;) {
            std::vector<std::unique_ptr<Chunk>> batch;
            {
                std::unique_lock<std::mutex> lock(mu_);
                ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
                if (queue_.empty()) return;
                for (auto& c : queue_) batch.push_back(std::move(c));
                queue_.clear();
                queued_ = 0;
                room_.notify_one();
            }
            int rc;
            try {
                rc = compute_and_write(batch, out_, options_, t_, &err_);
            } catch (const std::bad_alloc&) {
                rc = set_error(&err_, PYPHMM_E_NOMEM, "out of memory formatting results");
            } catch (const std::system_error& e) {
                rc = set_error(&err_, PYPHMM_E_INTERNAL, "thread start failed: %s", e.what());
            }
            if (rc != PYPHMM_OK) {
                std::lock_guard<std::mutex> lock(mu_);
                rc_ = rc;
                failed_ = true;
                queue_.clear();
                room_.notify_one();
                return;
            }
        }
    }

    FILE* out_;
    const pyphmm_options* options_;
    Totals& t_;
    std::mutex mu_;
    std::condition_variable ready_, room_;
    std::deque<std::unique_ptr<Chunk>> queue_;
    size_t queued_ = 0;
    bool closed_ = false, failed_ = false;
    int rc_ = PYPHMM_OK;
    pyphmm_error err_{};
    std::thread thread_;  // last: starts once the members above exist
};

struct FileCloser {
    void operator()(FILE* f) const {
        if (f) std::fclose(f);
    }
};

int run_file(const char* in_path, const char* out_path, const pyphmm_options* options, int64_t chunk_cells, Totals& t,
             pyphmm_error* err) {
    std::unique_ptr<FILE, FileCloser> in(std::fopen(in_path, "rb"));
    if (!in) return set_error(err, PYPHMM_E_IO, "%s: cannot open for reading: %s", in_path, std::strerror(errno));
    std::unique_ptr<FILE, FileCloser> out(std::fopen(out_path, "wb"));
    if (!out) return set_error(err, PYPHMM_E_IO, "%s: cannot open for writing: %s", out_path, std::strerror(errno));
    LineReader lr(in.get());
    Writer writer(out.get(), options, t);
    int rc = PYPHMM_OK;
    for (bool end = false, first = true; !end && rc == PYPHMM_OK; first = false) {
        auto c = std::make_unique<Chunk>();
        const size_t max_bytes = first ? kFirstChunkBytes : kMaxChunkBytes;
        rc = read_chunk(lr, in_path, chunk_cells, max_bytes, parse_threads(options), *c, &end, err);
        if (rc == PYPHMM_OK && !c->parts.empty() && !writer.push(std::move(c))) break;
    }
    // A failure of the writer comes first: it is in an earlier chunk.
    pyphmm_error werr;
    clear_error(&werr);
    if (int wrc = writer.finish(rc != PYPHMM_OK, &werr)) {
        if (err) *err = werr;
        return wrc;
    }
    if (rc != PYPHMM_OK) return rc;
    if (std::fflush(out.get()) != 0 || std::ferror(out.get()))
        return set_error(err, PYPHMM_E_IO, "%s: write failed: %s", out_path, std::strerror(errno));
    if (std::fclose(out.release()) != 0)
        return set_error(err, PYPHMM_E_IO, "%s: write failed: %s", out_path, std::strerror(errno));
    return PYPHMM_OK;
}

}  // namespace
}  // namespace pyphmm

extern "C" int pyphmm_pairhmm_file(const char* in_path, const char* out_path, const pyphmm_options* options,
                                   int64_t chunk_cells, int64_t* records, pyphmm_stats* stats, int64_t* progress,
                                   pyphmm_error* error) {
    using namespace pyphmm;
    clear_error(error);
    if (!in_path || !out_path) return set_error(error, PYPHMM_E_INVALID, "in_path and out_path must not be NULL");
    Totals t;
    t.progress = progress;
    t.out_path = out_path;
    int rc;
    try {
        rc = run_file(in_path, out_path, options, chunk_cells > 0 ? chunk_cells : kDefaultFileChunkCells, t, error);
    } catch (const std::bad_alloc&) {
        rc = set_error(error, PYPHMM_E_NOMEM, "out of memory reading %s", in_path);
    } catch (const std::system_error& e) {
        rc = set_error(error, PYPHMM_E_INTERNAL, "thread start failed: %s", e.what());
    }
    if (rc == PYPHMM_OK) {
        if (records) *records = t.records;
        if (stats) *stats = t.st;
    }
    return rc;
}
