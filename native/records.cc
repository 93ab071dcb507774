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
// The file is read in blocks and computed in chunks of records (up to
// chunk_cells cells or kMaxChunkBytes of input each): while one chunk is
// computed, formatted and written on a worker thread, the next is parsed.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "common/errors.h"
#include "common/repr.h"
#include "pyphmm.h"
#include "records.h"

namespace pyphmm {

namespace {

// Lines of a file, read in blocks. A line stays valid until the next call
// to next() (parse_record copies what it keeps at once).
class LineReader {
  public:
    explicit LineReader(FILE* f) : f_(f) {}

    // Next line without its '\n' (a trailing '\r' stays); false at EOF.
    bool next(const char** line, size_t* len) {
        for (;;) {
            const char* nl = static_cast<const char*>(std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
            if (nl || (eof_ && pos_ < end_)) {
                const size_t stop = nl ? static_cast<size_t>(nl - buf_.data()) : end_;
                *line = buf_.data() + pos_;
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

  private:
    // Drops the lines already returned: a line is valid until the next call.
    void compact() {
        if (pos_ > 0) {
            std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
            end_ -= pos_;
            pos_ = 0;
        }
    }
    void fill() {
        compact();
        if (buf_.size() - end_ < kBlock) buf_.resize(std::max(buf_.size() * 2, end_ + kBlock));
        const size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, f_);
        if (got == 0 && std::ferror(f_)) read_errno_ = errno;
        end_ += got;
        if (got == 0) eof_ = true;
    }
    static constexpr size_t kBlock = size_t(16) << 20;
    FILE* f_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    bool eof_ = false;
    int64_t lineno_ = 0;
    int read_errno_ = 0;
};

int unsupported(const LineReader& lr, const char* path, pyphmm_error* err) {
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

// One chunk of records, in the layout pyphmm_region points into.
struct Chunk {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, haps;
    std::vector<int64_t> read_offsets, hap_offsets;
    std::vector<int32_t> num_reads, num_haps;
    std::vector<size_t> read_first, hap_first;  // each record's first offset entry
    int64_t cells = 0, pairs = 0;
    size_t records() const { return num_reads.size(); }
    size_t bytes() const {  // of input held
        return bases.size() * 5 + haps.size() + (read_offsets.size() + hap_offsets.size()) * sizeof(int64_t);
    }
};

// Reads the line a record needs; on EOF or an unparsable line fills err
// and returns the status (PYPHMM_E_INVALID or PYPHMM_E_UNSUPPORTED).
int record_line(LineReader& lr, const char* path, const char* what, int32_t k, int32_t of,
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
int parse_record(LineReader& lr, const char* path, Chunk& c, bool* got, pyphmm_error* err) {
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

// Totals of the chunks computed so far.
struct Totals {
    int64_t records = 0;
    pyphmm_stats st{};
    int64_t* progress = nullptr;  // the caller's records, pairs, cells (see pyphmm.h)
    const char* out_path = "";    // for messages
};

// Computes a chunk and appends its results to out. Runs on a worker thread.
int compute_and_write(const Chunk& c, FILE* out, const pyphmm_options* options, Totals& t, pyphmm_error* err) {
    const size_t n = c.records();
    std::vector<pyphmm_region> regions(n);
    for (size_t k = 0; k < n; ++k) {
        pyphmm_region& g = regions[k];
        g.num_reads = c.num_reads[k];
        g.num_haps = c.num_haps[k];
        g.read_bases = c.bases.data();
        g.read_quals = c.quals.data();
        g.read_ins = c.ins.data();
        g.read_dels = c.dels.data();
        g.read_gcp = c.gcp.data();
        g.read_offsets = c.read_offsets.data() + c.read_first[k];
        g.hap_bases = c.haps.data();
        g.hap_offsets = c.hap_offsets.data() + c.hap_first[k];
    }
    std::vector<double> res(static_cast<size_t>(c.pairs));
    pyphmm_stats st{};
    int rc = pyphmm_pairhmm(regions.data(), static_cast<int64_t>(n), res.data(), options, &st, err);
    if (rc != PYPHMM_OK) return rc;
    std::string text;
    text.reserve(static_cast<size_t>(c.pairs) * 20 + n * 16);
    char num[48];
    size_t at = 0;
    for (size_t k = 0; k < n; ++k) {
        text += std::to_string(c.num_reads[k]);
        text += ' ';
        text += std::to_string(c.num_haps[k]);
        text += '\n';
        for (int32_t r = 0; r < c.num_reads[k]; ++r) {
            for (int32_t h = 0; h < c.num_haps[k]; ++h) {
                if (h) text += ' ';
                text.append(num, format_double_repr(res[at++], num));
            }
            text += '\n';
        }
    }
    if (std::fwrite(text.data(), 1, text.size(), out) != text.size())
        return set_error(err, PYPHMM_E_IO, "%s: write failed: %s", t.out_path, std::strerror(errno));
    t.records += static_cast<int64_t>(n);
    if (t.progress) {
        __atomic_store_n(&t.progress[0], t.records, __ATOMIC_RELAXED);
        __atomic_store_n(&t.progress[1], t.st.pairs + st.pairs, __ATOMIC_RELAXED);
        __atomic_store_n(&t.progress[2], t.st.cells + st.cells, __ATOMIC_RELAXED);
    }
    t.st.pairs += st.pairs;
    t.st.cells += st.cells;
    t.st.double_pairs += st.double_pairs;
    t.st.seconds += st.seconds;
    t.st.gpu_regions += st.gpu_regions;
    t.st.gpu_cells += st.gpu_cells;
    t.st.cpu_regions += st.cpu_regions;
    t.st.cpu_cells += st.cpu_cells;
    t.st.fell_back |= st.fell_back;
    t.st.hybrid |= st.hybrid;
    if (st.gpu_cells > 0 || t.st.backend_used == 0) t.st.backend_used = st.backend_used;
    return PYPHMM_OK;
}

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
    std::future<int> pending;
    std::unique_ptr<Chunk> busy;  // the chunk `pending` computes
    pyphmm_error werr;
    clear_error(&werr);
    auto wait = [&]() {
        int rc = pending.valid() ? pending.get() : PYPHMM_OK;
        busy.reset();
        if (rc != PYPHMM_OK && err) *err = werr;
        return rc;
    };
    for (;;) {
        auto c = std::make_unique<Chunk>();
        bool got = true;
        int prc = PYPHMM_OK;
        while (c->cells < chunk_cells && c->bytes() < kMaxChunkBytes &&
               (prc = parse_record(lr, in_path, *c, &got, err)) == PYPHMM_OK && got) {}
        if (lr.error()) {
            wait();
            return set_error(err, PYPHMM_E_IO, "%s: read failed: %s", in_path, std::strerror(lr.error_number()));
        }
        if (prc != PYPHMM_OK) {
            wait();
            return prc;
        }
        int rc = wait();
        if (rc != PYPHMM_OK) return rc;
        if (c->records() == 0) break;
        busy = std::move(c);
        FILE* o = out.get();
        const Chunk* b = busy.get();
        pending = std::async(std::launch::async, [=, &t, &werr] {
            try {
                return compute_and_write(*b, o, options, t, &werr);
            } catch (const std::bad_alloc&) {
                return set_error(&werr, PYPHMM_E_NOMEM, "out of memory formatting results");
            }
        });
        if (!got) {  // end of file
            rc = wait();
            if (rc != PYPHMM_OK) return rc;
            break;
        }
    }
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
