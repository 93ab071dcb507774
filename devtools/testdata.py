"""Published test vectors kept in tests/data/ (see tests/data/README.md).

- ``pairhmm-testdata.txt``: GKL's and GATK's PairHMM cases, one per line:
  ``hap read qual ins del gcp expected`` with ASCII+33 qualities; the base
  quality is floored at 6 after removing the offset, the others are only
  offset.
- ``sw-gatk-cases.tsv``: GATK's Smith-Waterman unit-test vectors.
"""

from __future__ import annotations

import os

import numpy as np

from . import ROOT

DATA = os.path.join(ROOT, "tests", "data")


def data_path(name: str) -> str:
    return os.path.join(DATA, name)


def _rows(path: str):
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                yield line.rstrip("\n")


def pairhmm_cases():
    """[(hap, read_bases, quals, ins, dels, gcp, expected)] with raw phred
    uint8 arrays (the base quality floored at 6)."""
    cases = []
    for line in _rows(data_path("pairhmm-testdata.txt")):
        hap, bases, qual, ins, dels, gcp, expected = line.split()
        raw = [np.frombuffer(s.encode(), np.uint8).astype(np.int64) - 33 for s in (qual, ins, dels, gcp)]
        raw[0] = np.maximum(raw[0], 6)
        cases.append((hap, bases, *(r.astype(np.uint8) for r in raw), float(expected)))
    return cases


def sw_cases():
    """[(ref, alt, (match, mismatch, open, extend), strategy, (cigar, offset))]."""
    rows = []
    for line in _rows(data_path("sw-gatk-cases.tsv")):
        ref, alt, params, strategy, offset, cigar = line.split("\t")
        rows.append((ref, alt, tuple(int(x) for x in params.split(",")), strategy, (cigar, int(offset))))
    return rows
