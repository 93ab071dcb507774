// Record files (docs/RECORD_FORMAT.md) in native code: the fast path of
// `pyphmm likelihoods`.
//
// This reader and the Python reader (pyphmm/io.py) accept one language and
// report a bad line in the same words. What it returns:
// - PYPHMM_E_INVALID for a malformed file (wrong field counts, unequal
//   lengths, a truncated record, a count that is not decimal digits,
//   bytes that are not printable ASCII, a line over its limit, a record
//   whose results cannot fit in memory), with the message naming file and
//   line;
// - PYPHMM_E_IO when reading the input or writing the output fails;
// - PYPHMM_E_NOMEM when memory runs out, naming the line of the first
//   record that was being read or computed.
//
// The file is read in blocks and cut into chunks of records (up to
// chunk_cells cells or kMaxChunkBytes of text each) by a scanner that only
// finds where records end; a chunk's records are then parsed in parts on a
// few threads. A writer thread computes the chunks in file order, one call
// each, while another formats (on several threads) and writes the chunk
// before; the reader parses ahead meanwhile, up to kMaxQueuedBytes of
// parsed input. So a small file is parsed while the GPU starts, and a large
// one streams with parsing, computing and formatting overlapped.
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

#include "common/config.h"
#include "common/errors.h"
#include "common/repr.h"
#include "common/thread_pool.h"
#include "dispatch/policy.h"
#include "frontends/records/record_file.h"
#include "frontends/records/record_lines.h"
#include "frontends/records/record_parse.h"
#include "frontends/records/record_scan.h"
#include "pyphmm.h"

namespace pyphmm {
namespace records {
namespace {

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
            rc[i] = set_error(&errs[i], PYPHMM_E_NOMEM, "%s:%lld: out of memory reading the records from this line on",
                              path, static_cast<long long>(found[a].line + 1));
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
    Fields fields;  // scan_record's scratch
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
    const char* in_path = "";                                   // for messages
    const char* out_path = "";
};

// A chunk that ran out of memory (`doing`: "computing", "formatting"): the
// message names the line of its first record.
int out_of_memory(const Chunk& c, const char* doing, const char* in_path, pyphmm_error* err) {
    int64_t records = 0, cells = 0, line = 0;
    for (const Part& p : c.parts) {
        if (!line && !p.header_line.empty()) line = p.header_line.front();
        records += static_cast<int64_t>(p.records());
        cells += p.cells;
    }
    const std::string why = err ? err->message : "";
    return set_error(err, PYPHMM_E_NOMEM, "%s:%lld: out of memory %s %lld record(s) from this line on (%lld cells): %s",
                     in_path, static_cast<long long>(line), doing, static_cast<long long>(records),
                     static_cast<long long>(cells), why.c_str());
}

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
    try {
        res.resize(static_cast<size_t>(pairs));
    } catch (const std::bad_alloc&) {
        return set_error(err, PYPHMM_E_NOMEM, "out of host memory for %lld results", static_cast<long long>(pairs));
    }
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
    if (no_memory) return set_error(err, PYPHMM_E_NOMEM, "out of host memory for the results' text");
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
        if (rc == PYPHMM_E_NOMEM) rc = out_of_memory(*chunks[i], "computing", t.in_path, err);
        const int frc = formatted();  // an earlier chunk's failure comes first
        if (frc != PYPHMM_OK) return frc;
        if (rc != PYPHMM_OK) return rc;
        formatting = std::async(std::launch::async, [&, i] {
            int frc;
            try {
                frc = format_and_write(*chunks[i], res[i], out, default_threads(options), t, &ferr);
            } catch (const std::bad_alloc&) {
                frc = set_error(&ferr, PYPHMM_E_NOMEM, "out of host memory for the results' text");
            }
            return frc == PYPHMM_E_NOMEM ? out_of_memory(*chunks[i], "formatting", t.in_path, &ferr) : frc;
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
    try {
        for (bool end = false, first = true; !end && rc == PYPHMM_OK; first = false) {
            auto c = std::make_unique<Chunk>();
            const size_t max_bytes = first ? kFirstChunkBytes : kMaxChunkBytes;
            rc = read_chunk(lr, in_path, chunk_cells, max_bytes, parse_threads(options), *c, &end, err);
            if (rc == PYPHMM_OK && !c->parts.empty() && !writer.push(std::move(c))) break;
        }
    } catch (const std::bad_alloc&) {
        rc = set_error(err, PYPHMM_E_NOMEM, "%s:%lld: out of memory reading the records from this line on", in_path,
                       static_cast<long long>(lr.lineno() + 1));
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
}  // namespace records
}  // namespace pyphmm

extern "C" int pyphmm_pairhmm_file(const char* in_path, const char* out_path, const pyphmm_options* options,
                                   int64_t chunk_cells, int64_t* records, pyphmm_stats* stats, int64_t* progress,
                                   pyphmm_error* error) {
    using namespace pyphmm;
    using namespace pyphmm::records;
    clear_error(error);
    if (!in_path || !out_path) return set_error(error, PYPHMM_E_INVALID, "in_path and out_path must not be NULL");
    if (const int rc = config::check(error)) return rc;
    if (!config::on(config::Knob::kNativeReader))
        return set_error(error, PYPHMM_E_UNSUPPORTED, "the native record reader is off (PYPHMM_DEV's native_reader)");
    Totals t;
    t.progress = progress;
    t.in_path = in_path;
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
