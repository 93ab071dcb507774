"""Helpers shared by the tests: the region generator, random regions, GKL runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import gen_regions  # noqa: E402,F401  (re-exported for the tests)
from gen_regions import generate  # noqa: E402,F401

from oracle.gkl import GklPairHmm  # noqa: E402
from pyphmm import HaplotypeBatch, ReadBatch  # noqa: E402

TOL = 1e-5


def build_native_check(tmp_path, name, *sources):
    """Compiles tests/native/NAME.cc with native/ SOURCES into an executable
    (skips the test where no C++ compiler is)."""
    cxx = os.environ.get("CXX", "g++")
    if not shutil.which(cxx):
        pytest.skip(f"{cxx} not found")
    exe = tmp_path / name
    subprocess.run([cxx, "-std=c++17", "-O2", "-pthread", f"-I{ROOT}/native/include", f"-I{ROOT}/native",
                    f"{ROOT}/tests/native/{name}.cc",
                    *(f"{ROOT}/native/{s}" for s in sources), "-o", str(exe)], check=True)
    return exe


def random_region(rng, num_reads, num_haps, *, read_len=(1, 160), hap_len=(1, 300),
                  alphabet=b"ACGT", base_q=(6, 60), gap_q=(10, 90), gcp_q=(5, 40)):
    """Reads and haplotypes of unrelated random sequence and independent
    per-base qualities drawn uniformly from the given ranges (inclusive)."""
    alpha = np.frombuffer(alphabet, np.uint8)

    def seq(lo_hi):
        return alpha[rng.integers(0, alpha.size, int(rng.integers(lo_hi[0], lo_hi[1] + 1)))]

    def q(n, lo_hi):
        return rng.integers(lo_hi[0], lo_hi[1] + 1, n).astype(np.uint8)

    reads = [seq(read_len) for _ in range(num_reads)]
    haps = [seq(hap_len) for _ in range(num_haps)]
    off = np.zeros(num_reads + 1, np.int64)
    np.cumsum([r.size for r in reads], out=off[1:])
    n = int(off[-1])
    cat = np.concatenate(reads) if reads else np.zeros(0, np.uint8)
    rb = ReadBatch(cat, q(n, base_q), q(n, gap_q), q(n, gap_q), q(n, gcp_q), off)
    hoff = np.zeros(num_haps + 1, np.int64)
    np.cumsum([h.size for h in haps], out=hoff[1:])
    hb = HaplotypeBatch(np.concatenate(haps) if haps else np.zeros(0, np.uint8), hoff)
    return rb, hb


def gkl_regions(regions, double=False):
    """GKL's IntelPairHmm on each region, one computeLikelihoods per region.

    GKL's precision flag is process-global native state, so the instance is
    (re)initialised right before use."""
    g = GklPairHmm(double=double, threads=1)
    return [g.compute(list(r), [h[i] for i in range(len(h))]) for r, h in regions]


def max_abs_diff(a_list, b_list) -> float:
    worst = 0.0
    for a, b in zip(a_list, b_list):
        assert a.shape == b.shape
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))))
    return worst
