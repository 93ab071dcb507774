#!/usr/bin/env python3
"""PDHMM throughput: pyphmm against GKL 0.9's PDHMM on the same regions.

Data: seeded PD regions from devtools/pd_regions.py (``--shape gatk``:
issue 41's GATK-shaped regions; ``hc``: HaplotypeCaller's calls; ``mix``:
both, alternately) or a PD record file (``--input``). Rows printed:

  pyphmm <backend>, per region, T thr   one compute_pd_likelihoods call per region (GATK's way)
  pyphmm <backend>, batch, T thr        all regions in one compute_pd_regions call
  GKL 0.9 <impl>, 1 thr                 one batch call per region (computeLikelihoods' native
                                        entry point), serial / AVX2 / AVX-512 where the CPU has it
  GKL 0.9 <impl> OpenMP, T thr          the same with OpenMP on T threads (GKL's fastest code)

pyphmm runs with 1 thread and with ``--threads`` (default: all cores);
``--backend cuda`` (or auto) adds the GPU rows once the library has a GPU
PDHMM (until then they are reported unavailable). GKL runs only with
``--gkl DIR`` (an oracle build of GKL 0.9's PDHMM, devtools/oracle/gkl_pdhmm.py):
its ``pdhmm_oracle --mode time`` times each region's call (best of
``--repeats`` after a warm-up) and the seconds are summed over the regions.
pyphmm's seconds are the best of ``--repeats`` passes, wall time of the
calls only. GCUPS = sum(read_len * hap_len) / seconds / 1e9. The diff column
is max |x - GKL serial| (``--no-check`` skips computing GKL's serial
results); "others" is the share of the machine's CPU that other processes
used meanwhile (near 0% for comparable timings).

Run from the repository root with it on PYTHONPATH:

    PYTHONPATH=. python3 scripts/bench_pdhmm.py --gkl /path/to/oracle --regions 60 --shape gatk
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from bench_pairhmm import OtherLoad  # (this script's directory is on sys.path)

import pyphmm
from devtools.oracle.gkl_pdhmm import gkl_region, gkl_seconds, missing
from devtools.pd_regions import SHAPES, generate, pairs_and_cells
from pyphmm import io


def workload(a) -> tuple:
    if a.input:
        return list(io.read_pd_records(a.input)), a.input
    if a.shape == "mix":
        regions = []
        for k in range(a.regions):
            regions += generate(1, seed=a.seed * 1000 + k, shape=SHAPES[k % 2])
        return regions, f"gen_pd_regions mix of {a.regions} (seed {a.seed})"
    return generate(a.regions, seed=a.seed, shape=a.shape), f"gen_pd_regions --shape {a.shape} --regions {a.regions}"


def time_per_region(regions, backend, threads, repeats):
    for r, h in regions[:3]:  # warm-up: tables, thread pool, scratch
        pyphmm.compute_pd_likelihoods(r, h, backend=backend, threads=threads)
    best, out = None, None
    for _ in range(repeats):
        res, total = [], 0.0
        for r, h in regions:
            t = time.perf_counter()
            res.append(pyphmm.compute_pd_likelihoods(r, h, backend=backend, threads=threads))
            total += time.perf_counter() - t
        if best is None or total < best:
            best, out = total, res
    return best, out


def time_batch(regions, backend, threads, repeats):
    pyphmm.compute_pd_regions(regions[:3], backend=backend, threads=threads)
    best, out = None, None
    for _ in range(repeats):
        t = time.perf_counter()
        res = pyphmm.compute_pd_regions(regions, backend=backend, threads=threads)
        total = time.perf_counter() - t
        if best is None or total < best:
            best, out = total, res
    return best, out


def pyphmm_rows(a, regions, backend):
    rows = []
    for th in [1] if a.threads == 1 else [1, a.threads]:
        with OtherLoad() as load:
            s, res = time_per_region(regions, backend, th, a.repeats)
        rows.append((f"pyphmm {backend}, per region, {th} thr", s, res, load.share))
        with OtherLoad() as load:
            s, res = time_batch(regions, backend, th, a.repeats)
        rows.append((f"pyphmm {backend}, batch, {th} thr", s, res, load.share))
    return rows


def gpu_rows(a, regions):
    """The GPU's rows (--backend cuda or auto): one call per region and one
    batch, as for the CPU; reported unavailable while the library has no
    GPU PDHMM."""
    try:
        pyphmm.compute_pd_likelihoods(*regions[0], backend="cuda")
    except pyphmm.BackendUnavailableError as e:
        print(f"GPU rows: {e}")
        return []
    rows = []
    for name, fn in (("per region", time_per_region), ("batch", time_batch)):
        with OtherLoad() as load:
            s, res = fn(regions, "cuda", a.threads, a.repeats)
        rows.append((f"pyphmm cuda, {name}", s, res, load.share))
    return rows


def cpu_has(*flags) -> bool:
    try:
        have = open("/proc/cpuinfo").read().split()
    except OSError:
        return False
    return all(f in have for f in flags)


def gkl_rows(a, regions):
    """GKL's rows: each implementation on 1 thread, the fastest also with OpenMP on --threads."""
    impls = [("serial", True)] if a.gkl_serial else []
    impls.append(("avx2", cpu_has("avx2")))
    impls.append(("avx512", cpu_has("avx512f", "avx512bw", "avx512dq", "avx512vl")))
    impls = [i for i, ok in impls if ok]
    rows = []
    for impl in impls:
        omp = impl == impls[-1] and a.threads > 1
        with OtherLoad() as load:
            per = [gkl_seconds(a.gkl, r, h, impl, a.threads if omp else 1, a.repeats) for r, h in regions]
        rows.append((f"GKL 0.9 {impl}, 1 thr", sum(p[1] for p in per), None, load.share))
        if omp:
            rows.append((f"GKL 0.9 {impl} OpenMP, {a.threads} thr", sum(p[a.threads] for p in per), None, load.share))
    return rows


def max_diff(a, b):
    worst = 0.0
    for x, y in zip(a, b):
        both = np.isfinite(x) & np.isfinite(y)
        if (np.isneginf(x) != np.isneginf(y)).any() or np.isnan(x).any():
            return float("inf")
        if both.any():
            worst = max(worst, float(np.abs(x[both] - y[both]).max()))
    return worst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="pyphmm vs GKL 0.9 PDHMM throughput")
    ap.add_argument("--regions", type=int, default=60, help="generated regions (default 60)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shape", choices=SHAPES + ("mix",), default="gatk")
    ap.add_argument("--input", help="PD record file to use instead of generated regions")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads of the multi-threaded rows")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"], help="cuda/auto: also the GPU rows")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per row; the best is kept")
    ap.add_argument("--gkl", metavar="DIR", help="oracle build of GKL 0.9's PDHMM: its rows too")
    ap.add_argument("--gkl-serial", action="store_true", help="also time GKL's serial code")
    ap.add_argument("--no-check", action="store_true", help="skip GKL's serial results (the diff column)")
    a = ap.parse_args(argv)
    if a.gkl and missing(a.gkl):
        ap.error(missing(a.gkl))
    t = time.perf_counter()
    regions, source = workload(a)
    pairs, cells = pairs_and_cells(regions)
    print(
        f"data: {source}: {len(regions)} regions, {pairs} pairs, {cells / 1e9:.3f} G cells "
        f"(prepared in {time.perf_counter() - t:.1f} s)"
    )
    inf = pyphmm.info()
    dev = os.environ.get("PYPHMM_DEV", "")
    print(f"pyphmm {inf['version']} from {os.path.dirname(pyphmm.__file__)}; {os.cpu_count()} cores; PYPHMM_DEV={dev}")

    rows = pyphmm_rows(a, regions, "cpu")
    if a.backend != "cpu":
        rows += gpu_rows(a, regions)
    reference = None
    if a.gkl:
        if not a.no_check:
            reference = [gkl_region(a.gkl, r, h, "serial") for r, h in regions]
        rows += gkl_rows(a, regions)

    print()
    print(f"| {'system':<36} | {'seconds':>8} | {'GCUPS':>7} | {'max |x - GKL|':>13} | {'others':>6} |")
    print(f"| {'-' * 36} | {'-' * 8} | {'-' * 7} | {'-' * 13} | {'-' * 6} |")
    for name, s, res, share in rows:
        diff = max_diff(res, reference) if res is not None and reference is not None else float("nan")
        print(f"| {name:<36} | {s:8.3f} | {cells / s / 1e9:7.3f} | {diff:13.2e} | {share:6.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
