// Record files in native code (records.cc): the CLI's fast path.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pyphmm {

// Cells per chunk of records computed at once (the reader parses the next
// chunk meanwhile); bounds the memory a large file needs.
constexpr int64_t kDefaultFileChunkCells = 2'000'000'000;
// A chunk also ends at this much input: records of few, short haplotypes
// hold many bytes per cell (two chunks are in memory at once).
constexpr size_t kMaxChunkBytes = size_t(64) << 20;

}  // namespace pyphmm
