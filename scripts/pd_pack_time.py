#!/usr/bin/env python3
"""The host's packing of a per-region GPU PDHMM call, timed alone: a call
per region waits for it before its kernel starts (docs/PERFORMANCE.md).

Writes seeded regions (devtools.pd_regions, HaplotypeCaller's shape by
default), compiles scripts/pd_pack_time.cc with the library's host flags
against native/cuda/pdhmm_plan.cc (no CUDA needed) and runs it --rounds
times, printing the microseconds a region takes to pack: "hot" (each region
packed --reps times in a row, the last one timed: its bytes in cache, as a
Java call has them) and "cold" (the regions in turn).

  PYTHONPATH=. python3 scripts/pd_pack_time.py [--regions 200] [--shape hc] [--reps 10] [--rounds 3]
        [--exe-dir DIR]

--exe-dir keeps the program and the region file there (to run them on
another machine: DIR/pd_pack_time DIR/regions.bin REPS).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np

from buildtools.native import compile_check_program
from devtools import ROOT
from devtools.pd_regions import SHAPES, generate

SOURCES = ("cuda/pdhmm_plan.cc", "common/pd_tables.cc", "common/thread_pool.cc", "common/config.cc")


def write_regions(regions, path):
    """The layout pd_pack_time.cc reads (its header comment)."""
    with open(path, "wb") as f:
        for reads, haps in regions:
            np.array([len(reads), len(haps), reads.bases.size, haps.bases.size], np.int64).tofile(f)
            (reads.offsets - reads.offsets[0]).astype(np.int64).tofile(f)
            for a in (reads.bases, reads.quals, reads.ins, reads.dels, reads.gcp):
                np.ascontiguousarray(a, np.uint8).tofile(f)
            (haps.offsets - haps.offsets[0]).astype(np.int64).tofile(f)
            np.ascontiguousarray(haps.bases, np.uint8).tofile(f)
            np.ascontiguousarray(haps.pd, np.uint8).tofile(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regions", type=int, default=200)
    ap.add_argument("--shape", choices=SHAPES, default="hc")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reps", type=int, default=10, help="packings of a region in a row (hot); passes (cold)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of the program")
    ap.add_argument("--exe-dir", help="keep the program and the regions here")
    a = ap.parse_args(argv)
    if a.regions < 1 or a.reps < 1 or a.rounds < 1:
        ap.error("--regions, --reps and --rounds must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        where = a.exe_dir or tmp
        os.makedirs(where, exist_ok=True)
        data = os.path.join(where, "regions.bin")
        write_regions(generate(a.regions, seed=a.seed, shape=a.shape), data)
        exe = compile_check_program(
            os.path.join(where, "pd_pack_time"), os.path.join(ROOT, "scripts", "pd_pack_time.cc"), SOURCES, ("-O3",)
        )
        print(f"{a.regions} {a.shape} regions, {a.reps} reps; us a region:")
        for _ in range(a.rounds):
            out = subprocess.run([exe, data, str(a.reps)], capture_output=True, text=True, check=True).stdout
            print("  " + out.strip().replace("\n", " | "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
