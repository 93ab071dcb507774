// Record files (SPEC §2) in native code: the fast path of `pyphmm likelihoods`.
//
// The Python reader (pyphmm/io.py) defines the format and its error
// messages. This parser accepts a strict subset of it: records separated by
// blank lines or none, fields separated by spaces or tabs, ASCII only,
// unsigned decimal counts. On anything else it stops with PYPHMM_E_INVALID
// and the CLI runs the Python path, which then computes the file or names
// the offending line in its own words. So both paths accept the same files
// and report the same errors.
//
// The file is read in blocks and computed in chunks of records (up to
// chunk_cells cells each): while one chunk is computed, formatted and
// written on a worker thread, the next is parsed.
#include <algorithm>
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
        end_ += got;
        if (got == 0) eof_ = true;
    }
    static constexpr size_t kBlock = size_t(16) << 20;
    FILE* f_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    bool eof_ = false;
    int64_t lineno_ = 0;
};

// Splits a line at runs of spaces/tabs (a trailing '\r' counts as space);
// false if it holds a byte this parser leaves to the Python reader (other
// control characters, non-ASCII).
bool split_fields(const char* s, size_t len, std::vector<std::pair<const char*, size_t>>& out) {
    out.clear();
    size_t i = 0;
    while (i < len) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == ' ' || c == '\t' || (c == '\r' && i + 1 == len)) {
            ++i;
            continue;
        }
        const size_t start = i;
        for (; i < len; ++i) {
            const unsigned char d = static_cast<unsigned char>(s[i]);
            if (d == ' ' || d == '\t' || (d == '\r' && i + 1 == len)) break;
            if (d < 33 || d > 126) return false;
        }
        out.emplace_back(s + start, i - start);
    }
    return true;
}

bool parse_count(const std::pair<const char*, size_t>& f, int32_t* v) {
    if (f.second == 0 || f.second > 9) return false;
    int64_t x = 0;
    for (size_t i = 0; i < f.second; ++i) {
        const char c = f.first[i];
        if (c < '0' || c > '9') return false;
        x = x * 10 + (c - '0');
    }
    *v = static_cast<int32_t>(x);
    return true;
}

// One chunk of records, in the layout pyphmm_region points into.
struct Chunk {
    std::vector<uint8_t> bases, quals, ins, dels, gcp, haps;
    std::vector<int64_t> read_offsets, hap_offsets;
    std::vector<int32_t> num_reads, num_haps;
    std::vector<size_t> read_first, hap_first;  // each record's first offset entry
    int64_t cells = 0, pairs = 0;
    size_t records() const { return num_reads.size(); }
};

// Parses the next record into c; 1 on success, 0 at EOF, -1 on input this
// parser does not take (err says where).
int parse_record(LineReader& lr, const char* path, Chunk& c, pyphmm_error* err) {
    const char* line;
    size_t len;
    std::vector<std::pair<const char*, size_t>> f;
    for (;;) {  // skip blank lines
        if (!lr.next(&line, &len)) return 0;
        if (!split_fields(line, len, f)) goto unsupported;
        if (!f.empty()) break;
    }
    {
        int32_t nr, nh;
        if (f.size() != 2 || !parse_count(f[0], &nr) || !parse_count(f[1], &nh)) goto unsupported;
        c.num_reads.push_back(nr);
        c.num_haps.push_back(nh);
        c.read_first.push_back(c.read_offsets.size());
        c.hap_first.push_back(c.hap_offsets.size());
        c.read_offsets.push_back(static_cast<int64_t>(c.bases.size()));
        c.hap_offsets.push_back(static_cast<int64_t>(c.haps.size()));
        int64_t read_len = 0, hap_len = 0;
        for (int32_t r = 0; r < nr; ++r) {
            if (!lr.next(&line, &len) || !split_fields(line, len, f) || f.size() != 5) goto unsupported;
            const size_t m = f[0].second;
            for (int k = 1; k < 5; ++k)
                if (f[k].second != m) goto unsupported;
            c.bases.insert(c.bases.end(), f[0].first, f[0].first + m);
            std::vector<uint8_t>* q[4] = {&c.quals, &c.ins, &c.dels, &c.gcp};
            for (int k = 0; k < 4; ++k) {  // ASCII+33 (split_fields let only 33..126 through)
                const size_t at = q[k]->size();
                q[k]->resize(at + m);
                for (size_t i = 0; i < m; ++i) (*q[k])[at + i] = static_cast<uint8_t>(f[k + 1].first[i] - 33);
            }
            c.read_offsets.push_back(static_cast<int64_t>(c.bases.size()));
            read_len += static_cast<int64_t>(m);
        }
        for (int32_t h = 0; h < nh; ++h) {
            if (!lr.next(&line, &len) || !split_fields(line, len, f) || f.size() != 1) goto unsupported;
            c.haps.insert(c.haps.end(), f[0].first, f[0].first + f[0].second);
            c.hap_offsets.push_back(static_cast<int64_t>(c.haps.size()));
            hap_len += static_cast<int64_t>(f[0].second);
        }
        c.cells += read_len * hap_len;
        c.pairs += static_cast<int64_t>(nr) * nh;
        return 1;
    }
unsupported:
    set_error(err, PYPHMM_E_INVALID, "%s:%lld: not handled by the native reader", path,
              static_cast<long long>(lr.lineno()));
    return -1;
}

// Totals of the chunks computed so far.
struct Totals {
    int64_t records = 0;
    pyphmm_stats st{};
    int64_t* progress = nullptr;  // the caller's records, pairs, cells (see pyphmm.h)
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
        return set_error(err, PYPHMM_E_INVALID, "writing the results failed");
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

int run_file(const char* in_path, const char* out_path, const pyphmm_options* options, int64_t chunk_cells,
             Totals& t, pyphmm_error* err) {
    std::unique_ptr<FILE, FileCloser> in(std::fopen(in_path, "rb"));
    if (!in) return set_error(err, PYPHMM_E_INVALID, "%s: cannot open for reading", in_path);
    std::unique_ptr<FILE, FileCloser> out(std::fopen(out_path, "wb"));
    if (!out) return set_error(err, PYPHMM_E_INVALID, "%s: cannot open for writing", out_path);
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
        int got = 1;
        while (c->cells < chunk_cells && (got = parse_record(lr, in_path, *c, err)) == 1) {
        }
        if (got < 0) {
            wait();
            return PYPHMM_E_INVALID;
        }
        if (lr.error()) {
            wait();
            return set_error(err, PYPHMM_E_INVALID, "%s: read error", in_path);
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
        if (got == 0) {
            rc = wait();
            if (rc != PYPHMM_OK) return rc;
            break;
        }
    }
    if (std::fflush(out.get()) != 0 || std::ferror(out.get()))
        return set_error(err, PYPHMM_E_INVALID, "%s: write error", out_path);
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
