// Parsing one record of a record file (docs/RECORD_FORMAT.md) into the
// packed layout pyphmm_region points into.
#pragma once
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/errors.h"
#include "frontends/records/record_text.h"
#include "pyphmm.h"

namespace pyphmm {
namespace records {

// Estimated bytes of one record's results while they are computed and
// written: a double and its text per pair (pyphmm.io uses the same figure).
constexpr double kResultBytesPerPair = 32.0;
// This machine's memory, bytes (0 if unknown).
inline double physical_memory_bytes() {
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
    std::vector<int64_t> header_line;           // each record's header line
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
        header_line.reserve(static_cast<size_t>(records));
    }
    size_t bytes() const {  // of input held
        return bases.size() * 5 + haps.size() + (read_offsets.size() + hap_offsets.size()) * sizeof(int64_t);
    }
};

// The fields of the line lr.next() gave (limit: its kind's, what: its kind
// in words), or PYPHMM_E_INVALID with err filled.
template <typename Lines>
int line_fields(const Lines& lr, const char* line, size_t len, size_t limit, const char* what, const char* path,
                Fields& f, pyphmm_error* err) {
    if (split_fields(line, len, f, path, lr.lineno(), err) != LineKind::kFields) return PYPHMM_E_INVALID;
    if (lr.cut())
        return set_error(err, PYPHMM_E_INVALID, "%s:%lld: line longer than %zu bytes, the limit of a %s line", path,
                         static_cast<long long>(lr.lineno()), limit, what);
    return PYPHMM_OK;
}

// Reads the line a record needs; on EOF or a bad line fills err and
// returns PYPHMM_E_INVALID.
template <typename Lines>
int record_line(Lines& lr, const char* path, const char* what, int32_t k, int32_t of, Fields& f, pyphmm_error* err) {
    const char* line;
    size_t len;
    if (!lr.next(&line, &len, kMaxRecordLine))
        return set_error(err, PYPHMM_E_INVALID,
                         "%s: truncated record: expected %s %d of %d at line %lld, found end of file", path, what,
                         k + 1, of, static_cast<long long>(lr.lineno() + 1));
    return line_fields(lr, line, len, kMaxRecordLine, what, path, f, err);
}

// The messages of a count parse_count refuses (pyphmm.io's).
inline int count_error(Count c, const std::pair<const char*, size_t>& f, const char* path, long long line,
                       pyphmm_error* err) {
    const std::string q = py_quote(f.first, f.second);
    if (c == Count::kTooLarge)
        return set_error(err, PYPHMM_E_INVALID, "%s:%lld: count %s in record header is too large (at most %d)", path,
                         line, q.c_str(), INT32_MAX);
    if (c == Count::kNegative)
        return set_error(err, PYPHMM_E_INVALID, "%s:%lld: negative count %s in record header", path, line, q.c_str());
    return set_error(err, PYPHMM_E_INVALID, "%s:%lld: malformed count %s in record header (expected digits 0-9)", path,
                     line, q.c_str());
}

// Parses the next record into c (*got: false at EOF); PYPHMM_OK, or
// PYPHMM_E_INVALID for a malformed file, err filled in pyphmm.io's words.
template <typename Lines>
int parse_record(Lines& lr, const char* path, Part& c, bool* got, pyphmm_error* err) {
    *got = false;
    const char* line;
    size_t len;
    Fields f;
    for (;;) {  // skip blank lines
        if (!lr.next(&line, &len, kMaxHeaderLine)) return PYPHMM_OK;
        if (int rc = line_fields(lr, line, len, kMaxHeaderLine, "header", path, f, err)) return rc;
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
        const Count got = parse_count(f[k], &counts[k]);
        if (got != Count::kOk) return count_error(got, f[k], path, header, err);
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
    c.header_line.push_back(header);
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

}  // namespace records
}  // namespace pyphmm
