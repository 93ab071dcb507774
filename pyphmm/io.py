"""The field's PairHMM record format (docs/RECORD_FORMAT.md), streamed.

Input, one record per active region::

    R H                        # counts
    READ QUAL INS DEL GCP      # R lines; qualities are ASCII+33 text
    HAP                        # H lines

PDHMM records (``read_pd_records``) are the same but for the haplotype
lines, ``HAP PD``: the PD bytes as two hex digits per base.

Output, per record: the header line ``R H`` then R lines of H
space-separated log10 likelihoods.

Files are read line by line, so inputs larger than memory stream through.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Iterator, Tuple, Union

import numpy as np

from .pairhmm import HaplotypeBatch, ReadBatch
from .pdhmm import PDHaplotypeBatch

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


def quote(text: str) -> str:
    """repr() of at most QUOTE_CHARS characters of text, "..." after a cut."""
    return repr(text[:QUOTE_CHARS]) + ("..." if len(text) > QUOTE_CHARS else "")


def _physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PHYS_PAGES")) * float(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0.0


def decode_line(raw, name: str, lineno: int) -> str:
    """A line read from a file: str, or bytes checked for what a record file
    never holds (a byte-order mark, non-ASCII and NUL bytes)."""
    if isinstance(raw, bytes):
        if raw.startswith(b"\xef\xbb\xbf"):
            raise RecordError(f"{name}:{lineno}: UTF-8 byte-order mark: not ASCII text")
        try:
            line = raw.decode("ascii")
        except UnicodeDecodeError as e:
            nul = raw.find(b"\0", 0, e.start)
            if nul >= 0:
                raise RecordError(f"{name}:{lineno}: NUL byte at column {nul + 1}: not ASCII text") from None
            raise RecordError(f"{name}:{lineno}: non-ASCII byte at column {e.start + 1}: not ASCII text") from None
    else:
        line = raw
        if line.startswith("\ufeff"):
            raise RecordError(f"{name}:{lineno}: UTF-8 byte-order mark: not ASCII text")
        if not line.isascii():
            col = next(i for i, ch in enumerate(line) if ord(ch) > 127 or ch == "\0")
            if line[col] == "\0":
                raise RecordError(f"{name}:{lineno}: NUL byte at column {col + 1}: not ASCII text")
            raise RecordError(f"{name}:{lineno}: non-ASCII byte at column {col + 1}: not ASCII text")
    nul = line.find("\0")
    if nul >= 0:
        raise RecordError(f"{name}:{lineno}: NUL byte at column {nul + 1}: not ASCII text")
    return line


def _open_lines(source):
    """(file, owned, name) for reading lines: a path opens in binary (each
    line is decoded on its own, so errors name the right line), "-" is
    standard input, a file object is used as it is."""
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
    malformed headers, wrong field counts, unequal lengths, empty sequences,
    quality characters below ``!``, truncated records, bytes that are not
    ASCII text (a byte-order mark, non-ASCII, NUL) and records whose results
    would not fit in this machine's memory.
    """
    return _records(source, _parse_hap, _hap_batch)


def read_pd_records(source: PathOrFile) -> Iterator[Tuple[ReadBatch, PDHaplotypeBatch]]:
    """Yields ``(reads, haplotypes)`` for each record of a PDHMM record file
    (haplotype lines ``HAP PD``), ready for :func:`pyphmm.compute_pd_likelihoods`:
    ``haplotypes`` is a :class:`PDHaplotypeBatch`. Errors as
    :func:`read_records`, and for a PD field that is not two hex digits
    per base."""
    return _records(source, _parse_pd_hap, _pd_hap_batch)


def _records(source, parse_hap, hap_batch):
    f, owned, name = _open_lines(source)
    lineno = 0
    try:

        def next_line():
            nonlocal lineno
            raw = f.readline()
            if not raw:
                return None
            lineno += 1
            return decode_line(raw, name, lineno)

        def record_line(what: str, k: int, of: int) -> str:
            line = next_line()
            if line is None:
                raise RecordError(
                    f"{name}: truncated record: expected {what} {k + 1} of {of} at line {lineno + 1}, found end of file"
                )
            return line

        while True:
            line = next_line()
            if line is None:
                return
            if not line.strip():
                continue
            num_reads, num_haps = _parse_header(line, name, lineno)
            reads = _ReadColumns()
            for i in range(num_reads):
                reads.add(record_line("read", i, num_reads), name, lineno)
            haps = [parse_hap(record_line("haplotype", i, num_haps), name, lineno) for i in range(num_haps)]
            yield reads.batch(name), hap_batch(haps)
    finally:
        if owned:
            f.close()


def _parse_header(line: str, name: str, lineno: int, check_size: bool = True) -> Tuple[int, int]:
    parts = line.split()
    if len(parts) != 2:
        raise RecordError(f"{name}:{lineno}: malformed record header {quote(line.strip())} (expected two counts 'R H')")
    counts = []
    for p in parts:
        try:
            v = int(p)
        except ValueError:
            raise RecordError(f"{name}:{lineno}: non-integer count {quote(p)} in record header") from None
        if v < 0:
            raise RecordError(f"{name}:{lineno}: negative count {v} in record header")
        counts.append(v)
    need, have = counts[0] * counts[1] * RESULT_BYTES_PER_PAIR, _physical_memory()
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
        for i, label in enumerate(self.LABELS, start=1):
            if joined[i].size and joined[i].min() < 33:
                # name the line of the first offending read
                k = int(np.searchsorted(offsets, int(np.argmax(joined[i] < 33)), side="right")) - 1
                raise RecordError(f"{name}:{self.lines[k]}: {label} character below '!' in ASCII+33 qualities")
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


def _parse_pd_hap(line: str, name: str, lineno: int) -> Tuple[str, bytes]:
    parts = line.split()
    if len(parts) != 2:
        raise RecordError(f"{name}:{lineno}: expected a haplotype and its PD bytes (HAP PD), found {len(parts)} fields")
    hap, pd = parts
    if len(pd) != 2 * len(hap):
        raise RecordError(
            f"{name}:{lineno}: haplotype has {len(hap)} bases but PD has {len(pd)} characters (two hex digits per base)"
        )
    try:
        return hap, bytes.fromhex(pd)
    except ValueError:
        raise RecordError(f"{name}:{lineno}: PD {quote(pd)} is not hex digits") from None


def _pd_hap_batch(haps) -> PDHaplotypeBatch:
    offsets = np.zeros(len(haps) + 1, dtype=np.int64)
    np.cumsum([len(h) for h, _ in haps], out=offsets[1:])
    bases = np.frombuffer("".join(h for h, _ in haps).encode("ascii"), dtype=np.uint8)
    return PDHaplotypeBatch(bases, np.frombuffer(b"".join(p for _, p in haps), dtype=np.uint8), offsets)


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


def _read_lines(reads: ReadBatch) -> list:
    """A record's read lines; raw qualities must lie within 0..93 (ASCII+33
    ends at ``~``)."""
    quals = []
    for name in ("quals", "ins", "dels", "gcp"):
        arr = getattr(reads, name)
        if arr.size and arr.max() > 93:
            raise ValueError(f"read {name}: value {int(arr.max())} does not fit ASCII+33 text (max 93)")
        quals.append((arr + 33).astype(np.uint8).tobytes().decode("ascii"))
    bases = reads.bases.tobytes().decode("ascii")
    lines = []
    for s, e in zip(reads.offsets[:-1].tolist(), reads.offsets[1:].tolist()):
        lines.append(" ".join([bases[s:e]] + [q[s:e] for q in quals]))
    return lines


def format_input_record(reads: ReadBatch, haplotypes: HaplotypeBatch) -> str:
    """One input record (header, read lines, haplotype lines) as text.

    Qualities are written as ASCII+33, so raw values must lie within 0..93
    (``~`` is the last printable character).
    """
    lines = [f"{len(reads)} {len(haplotypes)}"] + _read_lines(reads)
    hap = haplotypes.bases.tobytes().decode("ascii")
    for s, e in zip(haplotypes.offsets[:-1].tolist(), haplotypes.offsets[1:].tolist()):
        lines.append(hap[s:e])
    return "\n".join(lines) + "\n"


def format_pd_input_record(reads: ReadBatch, haplotypes: PDHaplotypeBatch) -> str:
    """One PDHMM input record: as :func:`format_input_record`, with each
    haplotype line followed by its PD bytes in hex."""
    lines = [f"{len(reads)} {len(haplotypes)}"] + _read_lines(reads)
    hap = haplotypes.bases.tobytes().decode("ascii")
    for s, e in zip(haplotypes.offsets[:-1].tolist(), haplotypes.offsets[1:].tolist()):
        lines.append(f"{hap[s:e]} {haplotypes.pd[s:e].tobytes().hex()}")
    return "\n".join(lines) + "\n"


def write_input_records(target: PathOrFile, regions) -> None:
    """Writes an iterable of ``(ReadBatch, HaplotypeBatch)`` as a record file
    that :func:`read_records` reads back to the same arrays."""
    _write_inputs(target, regions, format_input_record)


def write_pd_input_records(target: PathOrFile, regions) -> None:
    """Writes an iterable of ``(ReadBatch, PDHaplotypeBatch)`` as a PDHMM
    record file that :func:`read_pd_records` reads back to the same arrays."""
    _write_inputs(target, regions, format_pd_input_record)


def _write_inputs(target, regions, fmt) -> None:
    f, owned = _open(target, "w")
    try:
        for reads, haps in regions:
            f.write(fmt(reads, haps))
    finally:
        if owned:
            f.close()
