// Record files in native code (record_file.cc): the CLI's fast path.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pyphmm {

// Cells per chunk of records computed at once (the reader parses the next
// chunks meanwhile, see record_file.cc).
constexpr int64_t kDefaultFileChunkCells = 2'000'000'000;
// A chunk also ends at this much text: records of few, short haplotypes
// hold many bytes per cell.
constexpr size_t kMaxChunkBytes = size_t(64) << 20;

}  // namespace pyphmm
