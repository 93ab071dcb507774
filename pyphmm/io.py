"""The field's PairHMM record format (docs/RECORD_FORMAT.md), streamed.

Input, one record per active region::

    R H                        # counts
    READ QUAL INS DEL GCP      # R lines; qualities are ASCII+33 text
    HAP                        # H lines

Output, per record: the header line ``R H`` then R lines of H
space-separated log10 likelihoods.

Files are read line by line, so inputs larger than memory stream through.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Iterator, Tuple, Union

import numpy as np

from ._convert import INT32_MAX, physical_memory
from .pairhmm import HaplotypeBatch, ReadBatch

PathOrFile = Union[str, os.PathLike, IO[str]]


def _open(source: PathOrFile, mode: str):
    if hasattr(source, "read" if "r" in mode else "write"):
        return source, False
    return open(source, mode, encoding="ascii", newline="\n"), True


class RecordError(ValueError):
    """A malformed record file; the message names the file and line."""


# How much of a bad line an error message quotes.
QUOTE_CHARS = 60
# Estimated bytes of one record's results while they are computed and
# written: a double and its text per pair (native/frontends/records/ uses the same).
RESULT_BYTES_PER_PAIR = 32
# The longest line, in bytes without its '\n': a header line (and a blank
# line before one), and a read or haplotype line (a read of 13 million
# bases). A longer line is an error once its first LIMIT + 1 bytes are read,
# so that a file that is no record file (/dev/zero, a binary) fails at once
# instead of being buffered whole. native/frontends/records/ uses the same.
MAX_HEADER_LINE = 1 << 20
MAX_RECORD_LINE = 64 << 20
# A long line is read in pieces of this size, each checked as it arrives.
_PIECE = 1 << 20
# Bytes no line holds, wherever they stand (a '\r' is allowed at its end).
_NEVER = re.compile(rb"[^\t\r\x20-\x7e]")
_LINE_BYTES = b"\t" + bytes(range(0x20, 0x7F))
_BAD_BYTES = re.compile(rb"[^\t\x20-\x7e]")
_BAD_CHARS = re.compile(r"[^\t\x20-\x7e]")
_NEVER_CHARS = re.compile(r"[^\t\r\x20-\x7e]")


def quote(text: str) -> str:
    """repr() of at most QUOTE_CHARS characters of text, "..." after a cut."""
    return repr(text[:QUOTE_CHARS]) + ("..." if len(text) > QUOTE_CHARS else "")


def _physical_memory() -> float:
    return physical_memory()


def decode_line(raw, name: str, lineno: int) -> str:
    """A line read from a file (bytes or str, with its newline), checked for
    what a record file never holds: a byte-order mark, a NUL, non-ASCII or
    control byte (a tab aside), a carriage return other than the line's last
    byte. The messages are the native reader's (record_text.cc)."""
    text = isinstance(raw, bytes)
    if text:  # the usual line, in one fast pass: what is left once tabs and printable ASCII go
        rest = raw.translate(None, _LINE_BYTES)
        if not rest or (rest in (b"\n", b"\r\n", b"\r") and raw.endswith(rest)):
            return raw.decode("ascii")
    end = len(raw) - raw.endswith(b"\n" if text else "\n")  # (searched in place: no copy)
    end -= raw.endswith(b"\r" if text else "\r", 0, end)
    m = (_BAD_BYTES if text else _BAD_CHARS).search(raw, 0, end)
    if m is None:
        return raw.decode("ascii") if text else raw
    if raw.startswith(b"\xef\xbb\xbf" if text else "\ufeff"):
        raise RecordError(f"{name}:{lineno}: UTF-8 byte-order mark: not ASCII text")
    col, c = m.start() + 1, ord(m.group())
    if c == 0:
        what = "NUL byte at column {}: not ASCII text"
    elif c > 127:
        what = "non-ASCII byte at column {}: not ASCII text"
    elif c == 13:
        what = "carriage return at column {}: a line ends with LF or CR LF"
    else:
        what = f"control character 0x{c:02x} at column {{}}: not printable text"
    raise RecordError(f"{name}:{lineno}: {what.format(col)}")


def read_line(f, limit: int, name: str, lineno: int, what: str):
    """The next line of f (with its newline; None at the end of the file),
    checked by decode_line. A line longer than a piece is read in pieces,
    each checked for bytes no line holds as it arrives; a line of more than
    `limit` (>= a piece) bytes is an error after its first limit + 1 bytes
    (`what` names the kind of line)."""
    raw = f.readline(_PIECE)
    if type(raw) is bytes and raw[-1:] == b"\n":  # the usual line: whole in one piece
        return decode_line(raw, name, lineno)
    if not raw:
        return None
    nl = b"\n" if isinstance(raw, bytes) else "\n"
    never = _NEVER if isinstance(raw, bytes) else _NEVER_CHARS
    pieces, size, piece = [raw], len(raw), raw
    while size <= limit and not piece.endswith(nl) and not never.search(piece):
        piece = f.readline(min(_PIECE, limit + 1 - size))
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    raw = raw[:0].join(pieces)
    line = decode_line(raw, name, lineno)
    if len(raw) - raw.endswith(nl) > limit:
        raise RecordError(f"{name}:{lineno}: line longer than {limit} bytes, the limit of a {what} line")
    return line


def _open_lines(source):
    """(file, owned, name) for reading lines: a path opens in binary (each
    line is checked on its own, so errors name the right line), "-" is
    standard input, a file object (whose readline takes a size) is used as
    it is."""
    if hasattr(source, "readline"):
        return source, False, getattr(source, "name", "<stream>")
    if source == "-":
        return sys.stdin.buffer, False, "<stdin>"
    return open(source, "rb"), True, os.fspath(source)


def read_records(source: PathOrFile) -> Iterator[Tuple[ReadBatch, HaplotypeBatch]]:
    """Yields ``(reads, haplotypes)`` for each record of a file.

    ``source`` is a path, ``"-"`` (standard input) or a file object.
    ``reads`` is a :class:`ReadBatch` and ``haplotypes`` a
    :class:`HaplotypeBatch`, ready for :func:`pyphmm.compute_likelihoods`.
    Raises :class:`RecordError` (a ValueError) naming the file and line for
    malformed headers and counts, wrong field counts, unequal lengths, empty
    sequences, truncated records, lines that are not printable ASCII text (a
    byte-order mark, NUL, non-ASCII and control bytes), lines over the
    length limits and records whose results would not fit in this machine's
    memory (docs/RECORD_FORMAT.md).
    """
    for _, reads, haps in read_records_at(source):
        yield reads, haps


def read_records_at(source: PathOrFile) -> Iterator[Tuple[int, ReadBatch, HaplotypeBatch]]:
    """read_records, each record with the line number of its header."""
    f, owned, name = _open_lines(source)
    lineno = 0
    try:

        def next_line(limit, what):
            nonlocal lineno
            line = read_line(f, limit, name, lineno + 1, what)
            if line is not None:
                lineno += 1
            return line

        def record_line(what: str, k: int, of: int) -> str:
            line = next_line(MAX_RECORD_LINE, what)
            if line is None:
                raise RecordError(
                    f"{name}: truncated record: expected {what} {k + 1} of {of} at line {lineno + 1}, found end of file"
                )
            return line

        while True:
            line = next_line(MAX_HEADER_LINE, "header")
            if line is None:
                return
            if not line.strip():
                continue
            header = lineno
            num_reads, num_haps = _parse_header(line, name, lineno)
            try:
                reads = _ReadColumns()
                for i in range(num_reads):
                    reads.add(record_line("read", i, num_reads), name, lineno)
                haps = [_parse_hap(record_line("haplotype", i, num_haps), name, lineno) for i in range(num_haps)]
                batches = reads.batch(name), _hap_batch(haps)
            except MemoryError:
                raise MemoryError(
                    f"{name}:{header}: out of memory reading a record of {num_reads} reads x {num_haps} haplotypes"
                ) from None
            yield (header, *batches)
    finally:
        if owned:
            f.close()


def _parse_count(text: str, name: str, lineno: int) -> int:
    """A count: decimal digits, at most INT32_MAX (record_text.cc's rule)."""
    if text.isascii() and text.isdigit():
        if len(text.lstrip("0")) > len(str(INT32_MAX)) or int(text) > INT32_MAX:  # (int() of a huge text is slow)
            raise RecordError(
                f"{name}:{lineno}: count {quote(text)} in record header is too large (at most {INT32_MAX})"
            )
        return int(text)
    if text[:1] == "-" and text[1:].isascii() and text[1:].isdigit():
        raise RecordError(f"{name}:{lineno}: negative count {quote(text)} in record header")
    raise RecordError(f"{name}:{lineno}: malformed count {quote(text)} in record header (expected digits 0-9)")


def _parse_header(line: str, name: str, lineno: int, check_size: bool = True) -> Tuple[int, int]:
    parts = line.split()
    if len(parts) != 2:
        raise RecordError(f"{name}:{lineno}: malformed record header {quote(line.strip())} (expected two counts 'R H')")
    counts = [_parse_count(p, name, lineno) for p in parts]
    need, have = counts[0] * counts[1] * RESULT_BYTES_PER_PAIR, physical_memory()
    if check_size and have > 0 and need > have:
        raise RecordError(
            f"{name}:{lineno}: a record of {counts[0]} reads x {counts[1]} haplotypes needs about "
            f"{need / 1e9:.1f} GB for its results, more than this machine's memory ({have / 1e9:.1f} GB)"
        )
    return counts[0], counts[1]


class _ReadColumns:
    """A record's read lines, parsed as they are read."""

    LABELS = ("QUAL", "INS", "DEL", "GCP")

    def __init__(self):
        self.fields = [[] for _ in range(5)]
        self.lines = []

    def add(self, line: str, name: str, lineno: int) -> None:
        parts = line.split()
        if len(parts) != 5:
            raise RecordError(f"{name}:{lineno}: expected 5 fields (READ QUAL INS DEL GCP), found {len(parts)}")
        n = len(parts[0])
        for i, label in enumerate(self.LABELS, start=1):
            if len(parts[i]) != n:
                raise RecordError(f"{name}:{lineno}: read has {n} bases but {label} has {len(parts[i])} characters")
        for i in range(5):
            self.fields[i].append(parts[i])
        self.lines.append(lineno)

    def batch(self, name: str) -> ReadBatch:
        joined = [np.frombuffer("".join(col).encode("ascii"), dtype=np.uint8) for col in self.fields]
        offsets = np.zeros(len(self.lines) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in self.fields[0]], out=offsets[1:])
        for i in range(1, 5):  # ASCII+33 (decode_line let only '!'..'~' into fields)
            joined[i] = joined[i] - 33
        return ReadBatch(*joined, offsets)


def _parse_hap(line: str, name: str, lineno: int) -> str:
    parts = line.split()
    if len(parts) != 1:
        raise RecordError(f"{name}:{lineno}: expected one haplotype, found {len(parts)} fields")
    return parts[0]


def _hap_batch(haps) -> HaplotypeBatch:
    offsets = np.zeros(len(haps) + 1, dtype=np.int64)
    np.cumsum([len(h) for h in haps], out=offsets[1:])
    return HaplotypeBatch(np.frombuffer("".join(haps).encode("ascii"), dtype=np.uint8), offsets)


def format_record(likelihoods: np.ndarray) -> str:
    """One record of results: header line, then one line per read.

    Values are written in Python's shortest round-trip form, so reading the
    file back gives exactly the computed doubles.
    """
    likelihoods = np.asarray(likelihoods, dtype=np.float64)
    if likelihoods.ndim != 2:
        raise ValueError("likelihoods must be a 2-D array (reads x haplotypes)")
    r, h = likelihoods.shape
    lines = [f"{r} {h}"]
    lines += [" ".join(map(repr, row)) for row in likelihoods.tolist()]
    return "\n".join(lines) + "\n"


def write_records(target: PathOrFile, results) -> None:
    """Writes an iterable of (R, H) arrays in the results format."""
    f, owned = _open(target, "w")
    try:
        for res in results:
            f.write(format_record(res))
    finally:
        if owned:
            f.close()


def read_results(source: PathOrFile) -> Iterator[np.ndarray]:
    """Reads a results file back, one (R, H) array per record."""
    f, owned = _open(source, "r")
    name = getattr(f, "name", "<stream>")
    try:
        lineno = 0
        while True:
            line = f.readline()
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            r, h = _parse_header(line, name, lineno, check_size=False)
            rows = []
            for _ in range(r):
                row = f.readline()
                lineno += 1
                values = row.split()
                if len(values) != h:
                    raise RecordError(f"{name}:{lineno}: expected {h} values, found {len(values)}")
                rows.append([float(v) for v in values])
            yield np.array(rows, dtype=np.float64).reshape(r, h)
    finally:
        if owned:
            f.close()


def format_input_record(reads: ReadBatch, haplotypes: HaplotypeBatch) -> str:
    """One input record (header, read lines, haplotype lines) as text.

    Qualities are written as ASCII+33, so raw values must lie within 0..93
    (``~`` is the last printable character).
    """
    lines = [f"{len(reads)} {len(haplotypes)}"]
    quals = []
    for name in ("quals", "ins", "dels", "gcp"):
        arr = getattr(reads, name)
        if arr.size and arr.max() > 93:
            raise ValueError(f"read {name}: value {int(arr.max())} does not fit ASCII+33 text (max 93)")
        quals.append((arr + 33).astype(np.uint8).tobytes().decode("ascii"))
    bases = reads.bases.tobytes().decode("ascii")
    for s, e in zip(reads.offsets[:-1].tolist(), reads.offsets[1:].tolist()):
        lines.append(" ".join([bases[s:e]] + [q[s:e] for q in quals]))
    hap = haplotypes.bases.tobytes().decode("ascii")
    for s, e in zip(haplotypes.offsets[:-1].tolist(), haplotypes.offsets[1:].tolist()):
        lines.append(hap[s:e])
    return "\n".join(lines) + "\n"


def write_input_records(target: PathOrFile, regions) -> None:
    """Writes an iterable of ``(ReadBatch, HaplotypeBatch)`` as a record file
    that :func:`read_records` reads back to the same arrays."""
    f, owned = _open(target, "w")
    try:
        for reads, haps in regions:
            f.write(format_input_record(reads, haps))
    finally:
        if owned:
            f.close()
