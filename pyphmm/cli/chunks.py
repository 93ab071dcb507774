"""How much of an input the CLI computes at once: big enough to keep a GPU
busy, small enough that a 10 GB input never sits in memory. The one place
these sizes are set (the native reader gets its size from here too)."""

# Record files, native path: cells per chunk; the reader parses ahead while
# chunks compute, holding at most ~400 MB of input (native/frontends/records/).
NATIVE_CHUNK_CELLS = 2_000_000_000
# Record files, Python path: a chunk ends at this many cells or records.
PYTHON_CHUNK_CELLS = 400_000_000
PYTHON_CHUNK_RECORDS = 20_000
# Smith-Waterman pairs per align_batch call.
ALIGN_CHUNK_PAIRS = 100_000


def record_chunks(records):
    """Groups (header line, reads, haplotypes) records per the sizes above:
    yields (the first record's header line, [(reads, haplotypes)...], cells)."""
    chunk, cells, first = [], 0, 0
    for line, reads, haps in records:
        first = first or line
        chunk.append((reads, haps))
        cells += int(reads.lengths.sum()) * int(haps.lengths.sum())
        if cells >= PYTHON_CHUNK_CELLS or len(chunk) >= PYTHON_CHUNK_RECORDS:
            yield first, chunk, cells
            chunk, cells, first = [], 0, 0
    if chunk:
        yield first, chunk, cells
