"""The field's PairHMM record format (SPEC section 2), streamed.

Input, one record per active region::

    R H                        # counts
    READ QUAL INS DEL GCP      # R lines; qualities are ASCII+33 text
    HAP                        # H lines

Output, per record: the header line ``R H`` then R lines of H
space-separated log10 likelihoods.

Files are read line by line, so inputs larger than memory stream through.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, Iterator, Tuple, Union

import numpy as np

from .pairhmm import HaplotypeBatch, ReadBatch

PathOrFile = Union[str, os.PathLike, IO[str]]


def _open(source: PathOrFile, mode: str):
    if hasattr(source, "read" if "r" in mode else "write"):
        return source, False
    return open(source, mode, encoding="ascii", newline="\n"), True


@contextlib.contextmanager
def atomic_output(path: str):
    """Yields a text file for PATH ("-": stdout) that appears only when
    complete: written as PATH.partial, renamed on success, removed on error,
    so a failed run never leaves a truncated file that looks finished."""
    if path == "-":
        yield sys.stdout
        return
    tmp = f"{path}.partial"
    f = open(tmp, "w", encoding="ascii", newline="\n")
    try:
        yield f
    except BaseException:
        f.close()
        os.unlink(tmp)
        raise
    f.close()
    os.replace(tmp, path)


class RecordError(ValueError):
    """A malformed record file; the message names the file and line."""


def read_records(source: PathOrFile) -> Iterator[Tuple[ReadBatch, HaplotypeBatch]]:
    """Yields ``(reads, haplotypes)`` for each record of a file.

    ``reads`` is a :class:`ReadBatch` and ``haplotypes`` a
    :class:`HaplotypeBatch`, ready for :func:`pyphmm.compute_likelihoods`.
    Raises :class:`RecordError` (a ValueError) naming the line for malformed
    headers, wrong field counts, unequal lengths, empty sequences, quality
    characters below ``!`` and truncated records.
    """
    f, owned = _open(source, "r")
    name = getattr(f, "name", "<stream>")
    lineno = 0
    try:
        def next_line(expect: str) -> str:
            nonlocal lineno
            line = f.readline()
            if not line:
                raise RecordError(f"{name}: truncated record: expected {expect} at line {lineno + 1}, "
                                  "found end of file")
            lineno += 1
            return line

        while True:
            line = f.readline()
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            header_line = lineno
            num_reads, num_haps = _parse_header(line, name, lineno)
            read_lines = [next_line(f"read {i + 1} of {num_reads}") for i in range(num_reads)]
            hap_lines = [next_line(f"haplotype {i + 1} of {num_haps}") for i in range(num_haps)]
            yield (_parse_reads(read_lines, name, header_line + 1),
                   _parse_haps(hap_lines, name, header_line + 1 + num_reads))
    finally:
        if owned:
            f.close()


def _parse_header(line: str, name: str, lineno: int) -> Tuple[int, int]:
    parts = line.split()
    if len(parts) != 2:
        raise RecordError(f"{name}:{lineno}: malformed record header {line.strip()!r} "
                          "(expected two counts 'R H')")
    counts = []
    for p in parts:
        try:
            v = int(p)
        except ValueError:
            raise RecordError(f"{name}:{lineno}: non-integer count {p!r} in record header") from None
        if v < 0:
            raise RecordError(f"{name}:{lineno}: negative count {v} in record header")
        counts.append(v)
    return counts[0], counts[1]


def _parse_reads(lines, name: str, first: int) -> ReadBatch:
    fields = [[] for _ in range(5)]
    for k, line in enumerate(lines):
        parts = line.split()
        if len(parts) != 5:
            raise RecordError(f"{name}:{first + k}: expected 5 fields (READ QUAL INS DEL GCP), "
                              f"found {len(parts)}")
        n = len(parts[0])
        for i, label in enumerate(("QUAL", "INS", "DEL", "GCP"), start=1):
            if len(parts[i]) != n:
                raise RecordError(f"{name}:{first + k}: read has {n} bases but {label} has "
                                  f"{len(parts[i])} characters")
        for i in range(5):
            fields[i].append(parts[i])
    for k, line in enumerate(lines):
        if not line.isascii():
            raise RecordError(f"{name}:{first + k}: non-ASCII character in a read")
    joined = [np.frombuffer("".join(col).encode("ascii"), dtype=np.uint8) for col in fields]
    offsets = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in fields[0]], out=offsets[1:])
    for i, label in enumerate(("QUAL", "INS", "DEL", "GCP"), start=1):
        if joined[i].size and joined[i].min() < 33:
            # name the line of the first offending read
            k = int(np.searchsorted(offsets, int(np.argmax(joined[i] < 33)), side="right")) - 1
            raise RecordError(f"{name}:{first + k}: {label} character below '!' in ASCII+33 qualities")
        joined[i] = joined[i] - 33
    return ReadBatch(*joined, offsets)


def _parse_haps(lines, name: str, first: int) -> HaplotypeBatch:
    haps = []
    for k, line in enumerate(lines):
        parts = line.split()
        if len(parts) != 1:
            raise RecordError(f"{name}:{first + k}: expected one haplotype, found {len(parts)} fields")
        haps.append(parts[0])
    for k, h in enumerate(haps):
        if not h.isascii():
            raise RecordError(f"{name}:{first + k}: non-ASCII character in a haplotype")
    bases = "".join(haps).encode("ascii")
    offsets = np.zeros(len(haps) + 1, dtype=np.int64)
    np.cumsum([len(h) for h in haps], out=offsets[1:])
    return HaplotypeBatch(np.frombuffer(bases, dtype=np.uint8), offsets)


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
            r, h = _parse_header(line, name, lineno)
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
