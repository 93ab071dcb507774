// Record files in native code (records.cc): the CLI's fast path.
#pragma once
#include <cstdint>

namespace pyphmm {

// Cells per chunk of records computed at once (the reader parses the next
// chunk meanwhile); bounds the memory a large file needs.
constexpr int64_t kDefaultFileChunkCells = 2'000'000'000;

}  // namespace pyphmm
