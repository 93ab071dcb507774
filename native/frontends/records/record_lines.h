// Lines of a record file: read in blocks from a FILE (LineReader) or cut
// from text already in memory (TextLines). Both number lines from 1 and
// hand out a line without its '\n', so the parser takes either.
#pragma once
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "frontends/records/record_text.h"

namespace pyphmm {
namespace records {

// Lines of a file, read in blocks. A line stays valid until the next call
// to next() (parse_record copies what it keeps at once). The record scanner
// reads the unread text directly (data(), avail(), more()), has the records
// it found parsed there, and skip()s them.
class LineReader {
  public:
    explicit LineReader(FILE* f) : f_(f) {}

    // Next line without its '\n' (a trailing '\r' stays); false at EOF. A
    // line of more than `limit` bytes comes back cut to limit + 1 bytes, and
    // a line whose bytes so far hold one that no line holds (stop_byte) comes
    // back as far as it was read, both with cut() true: the parser reports
    // either, so a file that is no record file (/dev/zero) is refused at its
    // first bytes, never buffered whole.
    bool next(const char** line, size_t* len, size_t limit) {
        cut_ = false;
        size_t checked = 0;  // bytes of this line seen without a '\n' or a stop byte
        for (;;) {
            const char* s = buf_.get() + pos_;
            const size_t have = end_ - pos_;
            const size_t look = std::min(have, limit + 1);
            const char* nl = look ? static_cast<const char*>(std::memchr(s, '\n', look)) : nullptr;
            size_t n = have;
            if (nl) {
                n = static_cast<size_t>(nl - s);
            } else if (have > limit) {
                n = limit + 1;
                cut_ = true;
            } else if (has_stop_byte(s + checked, have - checked)) {
                cut_ = true;
            } else if (!eof_) {
                checked = have;
                fill();
                continue;
            } else if (have == 0) {
                return false;
            }
            *line = s;
            *len = n;
            pos_ += nl ? n + 1 : n;
            ++lineno_;
            return true;
        }
    }
    // The last line next() gave was cut short (see next()).
    bool cut() const { return cut_; }
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
    bool eof_ = false, cut_ = false;
    int64_t lineno_ = 0;
    int read_errno_ = 0;
};

// The lines of text already in memory (a piece of a chunk's text), numbered
// from first_line + 1: what LineReader::next gives for the same bytes.
class TextLines {
  public:
    TextLines(const char* p, size_t n, int64_t first_line) : p_(p), end_(p + n), lineno_(first_line) {}
    // (The scanner hands over only lines within their limits; a longer one
    // is still cut as LineReader cuts it.)
    bool next(const char** line, size_t* len, size_t limit) {
        if (p_ == end_) return false;
        const char* nl = static_cast<const char*>(std::memchr(p_, '\n', end_ - p_));
        const char* stop = nl ? nl : end_;
        *line = p_;
        *len = static_cast<size_t>(stop - p_);
        cut_ = *len > limit;
        if (cut_) *len = limit + 1;
        p_ = nl ? nl + 1 : end_;
        ++lineno_;
        return true;
    }
    bool cut() const { return cut_; }
    int64_t lineno() const { return lineno_; }

  private:
    const char* p_;
    const char* end_;
    int64_t lineno_;
    bool cut_ = false;
};

}  // namespace records
}  // namespace pyphmm
