"""PDHMM peer data kept in tests/data/ (see tests/data/README.md), and a
raw call of the C ABI for inputs pyphmm's Python classes refuse.

- ``gkl-pdhmm/pdhmm_syn_*.txt``: GKL 0.9's own PDHMM test files (``gkl_cases``).
- ``gkl-pdhmm-tables.txt.gz``: GKL 0.9's probability tables as it builds them
  (``gkl_tables``).
- ``pdhmm-edge-cases.txt``: the regions of ``devtools.pd_edges`` with GKL's
  results (``read_edge_file`` / ``write_edge_file``).
- ``pdhmm-{gatk,hc}-regions.pd.gz`` and ``.gkl.gz``: generated regions (a PD
  record file) and GKL's results for them (the results format)
  (``stored_regions``).
"""

from __future__ import annotations

import gzip
import os
from itertools import accumulate

import numpy as np

from . import ROOT

DATA = os.path.join(ROOT, "tests", "data")
GKL_FILES = ("pdhmm_syn_199_68_51.txt", "pdhmm_syn_1412_129_223.txt", "pdhmm_syn_990_1_2.txt")
EDGE_FILE = "pdhmm-edge-cases.txt"
STORED_SHAPES = ("gatk", "hc")


def data_path(name: str) -> str:
    return os.path.join(DATA, name)


# ---- GKL's test files ---------------------------------------------------------


def _phred33(text: str) -> bytes:
    return bytes(ord(c) - 33 for c in text)


def gkl_cases(name: str) -> list:
    """[(read tuple, hap tuple, expected)] of one of GKL's files: read
    (bases, quals, ins, dels, gcp) and hap (bases, pd) as bytes (PD bytes as
    GKL's Java bytes, & 0xFF), expected the printed log10 likelihood."""
    cases = []
    with open(data_path(os.path.join("gkl-pdhmm", name)), encoding="latin-1") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            t = line.rstrip("\r\n").split("\t")
            pd = bytes(int(v) & 0xFF for v in t[1].strip("[]").split(",") if v.strip())
            read = (t[2].encode("latin-1"),) + tuple(_phred33(s) for s in t[3:7])
            cases.append((read, (t[0].encode("latin-1"), pd), float(t[7])))
    return cases


def gkl_tables() -> dict:
    """GKL's tables as IEEE-754 bit patterns: {"qe": {q: bits},
    "mm": {(max, min): bits}, "ic": (ic bits, log10 bits)}."""
    out = {"qe": {}, "mm": {}}
    with gzip.open(data_path("gkl-pdhmm-tables.txt.gz"), "rt", encoding="ascii") as f:
        for line in f:
            t = line.split()
            if not t or t[0].startswith("#"):
                continue
            if t[0] == "qe":
                out["qe"][int(t[1])] = int(t[2], 16)
            elif t[0] == "mm":
                out["mm"][(int(t[1]), int(t[2]))] = int(t[3], 16)
            elif t[0] == "ic":
                out["ic"] = (int(t[1], 16), int(t[2], 16))
    return out


# ---- edge cases ---------------------------------------------------------------


def _hex(b: bytes) -> str:
    return b.hex() if b else "-"


def _unhex(s: str) -> bytes:
    return b"" if s == "-" else bytes.fromhex(s)


def write_edge_file(path: str, regions, values) -> None:
    """Regions (name, reads, haps) with their (R, H) values: per region a
    line ``region NAME``, ``R H``, R read lines (bases, quals, ins, dels,
    gcp as hex, ``-`` when empty), H haplotype lines (bases, PD), then R
    lines of H values (``%.17g``, ``-inf``)."""
    with open(path, "w") as f:
        f.write("# PDHMM edge cases (devtools/pd_edges.py) with GKL 0.9's serial results\n")
        for (name, reads, haps), vals in zip(regions, values):
            f.write(f"region {name}\n{len(reads)} {len(haps)}\n")
            for r in reads:
                f.write(" ".join(_hex(x) for x in r) + "\n")
            for h in haps:
                f.write(" ".join(_hex(x) for x in h) + "\n")
            for row in np.asarray(vals).reshape(len(reads), len(haps)):
                f.write(" ".join("%.17g" % v for v in row) + "\n")


def read_edge_file(path: str | None = None) -> list:
    """[(name, reads, haps, expected (R, H) array)] of an edge-case file."""
    with open(path or data_path(EDGE_FILE)) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    out, k = [], 0
    while k < len(lines):
        name = lines[k].split(" ", 1)[1]
        nr, nh = (int(v) for v in lines[k + 1].split())
        k += 2
        reads = [tuple(_unhex(x) for x in lines[k + i].split()) for i in range(nr)]
        haps = [tuple(_unhex(x) for x in lines[k + nr + i].split()) for i in range(nh)]
        k += nr + nh
        vals = np.array([[float(v) for v in lines[k + i].split()] for i in range(nr)], np.float64).reshape(nr, nh)
        k += nr
        out.append((name, reads, haps, vals))
    return out


# ---- generated regions ----------------------------------------------------------


def stored_regions(shape: str):
    """(regions, GKL's results) stored for a shape: regions as
    (ReadBatch, PDHaplotypeBatch), results one (R, H) array each."""
    from pyphmm.io import read_pd_records, read_results

    with gzip.open(data_path(f"pdhmm-{shape}-regions.pd.gz"), "rt", encoding="ascii") as f:
        regions = list(read_pd_records(f))
    with gzip.open(data_path(f"pdhmm-{shape}-regions.gkl.gz"), "rt", encoding="ascii") as f:
        results = list(read_results(f))
    return regions, results


# ---- the C ABI without the Python classes' checks ----------------------------


def raw_pdhmm(regions, backend: str = "cpu", threads: int | None = None, stats: dict | None = None) -> list:
    """pyphmm_pdhmm on regions given as (reads, haps) tuples of bytes
    (empty reads and haplotypes included); one (R, H) array per region.
    Raises what the library reports, as pyphmm's API does."""
    from pyphmm._pyphmm import ffi, lib

    from pyphmm import _native

    keep, shapes = [], []
    c_regions = ffi.new("pyphmm_pd_region[]", max(1, len(regions)))
    for k, (reads, haps) in enumerate(regions):
        cols = [b"".join(r[i] for r in reads) for i in range(5)] + [b"".join(h[i] for h in haps) for i in range(2)]
        bufs = [ffi.new("uint8_t[]", max(1, len(c))) for c in cols]
        for b, c in zip(bufs, cols):
            ffi.memmove(b, c, len(c))
        ro = ffi.new("int64_t[]", list(accumulate((len(r[0]) for r in reads), initial=0)))
        ho = ffi.new("int64_t[]", list(accumulate((len(h[0]) for h in haps), initial=0)))
        keep += bufs + [ro, ho]
        c = c_regions[k]
        c.num_reads, c.num_haps = len(reads), len(haps)
        c.read_bases, c.read_quals, c.read_ins, c.read_dels, c.read_gcp = bufs[:5]
        c.hap_bases, c.hap_pd = bufs[5:]
        c.read_offsets, c.hap_offsets = ro, ho
        shapes.append((len(reads), len(haps)))
    total = sum(a * b for a, b in shapes)
    out = np.empty(max(1, total), np.float64)
    err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
    opts = _native.make_options(backend, threads)
    rc = lib.pyphmm_pdhmm(c_regions, len(regions), ffi.from_buffer("double[]", out), opts, st, err)
    _native.raise_for_status(rc, err)
    if stats is not None:
        stats.update(_native.stats_dict(st))
    res, start = [], 0
    for a, b in shapes:
        res.append(out[start : start + a * b].reshape(a, b).copy())
        start += a * b
    return res
