#!/usr/bin/env python3
"""Smith-Waterman benchmark: pyphmm GPU batch, pyphmm CPU (1 thread and all
threads) and GKL's native aligner (1 thread, through JNI/jpype), same pairs.

Workloads
  (a) haplotype vs reference: 10,000 pairs, 300-520 bp, NEW_SW_PARAMETERS
  (b) read vs best haplotype: 100,000 pairs, reads 40-151 bp vs 300 bp,
      ALIGNMENT_TO_BEST_HAPLOTYPE
plus single-pair latency (one call per pair, as HaplotypeCaller calls) for
both workloads: pyphmm.align from Python, pyphmm_sw_align_one from C
(scripts/sw_latency.c, compiled here; the cost the JNI layer sees) and GKL
through jpype (its JNI cost included). Every backend's results are
checked against the CPU's (GKL's only where it follows GATK, i.e. not IGNORE).

Run from the repository root with it on PYTHONPATH (devtools, this
checkout's pyphmm):

Usage: python3 scripts/bench_sw.py [--pairs-scale 0.05] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import _checkout  # noqa: F401  (the repository root importable)

import pyphmm
from devtools import ROOT
from devtools.sw_pairs import hap_vs_ref, read_vs_hap
from pyphmm import sw


def timed(fn, repeat=1):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def summary(us):
    us = sorted(us)
    return {"mean": sum(us) / len(us), "median": us[len(us) // 2], "p99": us[int((len(us) - 1) * 0.99)]}


def per_call_latency(fn, refs, alts, rounds):
    """Per-call microseconds of fn(ref, alt) over all pairs; the round with
    the lowest mean counts (the first warms caches and the JIT)."""
    best = None
    clock = time.perf_counter_ns
    for _ in range(rounds):
        us = []
        for r, a in zip(refs, alts):
            t0 = clock()
            fn(r, a)
            us.append((clock() - t0) / 1e3)
        if best is None or sum(us) < sum(best):
            best = us
    return summary(best)


def c_latency(refs, alts, params, overhang, rounds):
    """The same calls from C (scripts/sw_latency.c against this libpyphmm.so):
    the library's own latency, as the JNI layer sees it, without Python."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("  (no C compiler: C latency skipped)")
        return None
    libdir = os.path.dirname(os.path.abspath(pyphmm.__file__))
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "sw_latency")
        subprocess.run(
            [
                cc,
                "-O2",
                f"-I{os.path.join(ROOT, 'native', 'include')}",
                os.path.join(ROOT, "scripts", "sw_latency.c"),
                f"-L{libdir}",
                "-lpyphmm",
                f"-Wl,-rpath,{libdir}",
                "-o",
                exe,
            ],
            check=True,
        )
        pairs = os.path.join(tmp, "pairs.tsv")
        with open(pairs, "wb") as f:
            f.write(b"".join(r + b"\t" + a + b"\n" for r, a in zip(refs, alts)))
        code = int(sw.OverhangStrategy.parse(overhang))
        out = subprocess.run(
            [exe, pairs, *map(str, params), str(code), str(rounds)], check=True, capture_output=True, text=True
        ).stdout.split()
    vals = dict(zip(out[::2], out[1::2]))
    return {"mean": float(vals["mean_us"]), "median": float(vals["median_us"]), "p99": float(vals["p99_us"])}


def gkl_runner():
    try:
        from devtools.oracle.gkl_sw import GklSmithWaterman

        return GklSmithWaterman()
    except Exception as e:  # noqa: BLE001
        print(f"GKL unavailable: {e}", file=sys.stderr)
        return None


def bench_workload(name, refs, alts, params, overhang, gkl, latency_pairs, rounds, results):
    cells = sum(len(r) * len(a) for r, a in zip(refs, alts))
    n = len(refs)
    row = {"workload": name, "pairs": n, "cells": cells}
    print(f"\n== {name}: {n} pairs, {cells / 1e9:.3f} G cells, params {tuple(params)}, {overhang}")

    def report(label, seconds):
        row[label] = {"seconds": seconds, "pairs_per_s": n / seconds, "gcups": cells / seconds / 1e9}
        print(f"  {label:<22} {seconds:8.3f} s {n / seconds:12.0f} pairs/s {cells / seconds / 1e9:8.3f} GCUPS")

    t, (ref_cig, ref_off) = timed(
        lambda: sw.align_batch(refs, alts, params=params, overhang=overhang, backend="cpu", threads=1)
    )
    report("cpu 1 thread", t)
    t, (cig, off) = timed(lambda: sw.align_batch(refs, alts, params=params, overhang=overhang, backend="cpu"))
    report(f"cpu {pyphmm.info()['cpu_threads']} threads", t)
    assert cig == ref_cig and (off == ref_off).all()
    if pyphmm.info()["cuda_usable"]:
        sw.align_batch(refs[:1000], alts[:1000], params=params, overhang=overhang, backend="cuda")  # warm-up
        native = []

        def gpu_batch():
            st = {}
            out = sw.align_batch(refs, alts, params=params, overhang=overhang, backend="cuda", stats=st)
            native.append(st["seconds"])
            return out

        t, (cig, off) = timed(gpu_batch, repeat=3)
        report("gpu batch", t)  # from Python: lists of str in, CIGAR strs out
        report("gpu batch, native call", min(native))  # what a C or JNI caller pays
        bad = sum(1 for i in range(n) if (cig[i], off[i]) != (ref_cig[i], ref_off[i]))
        row["gpu_mismatches"] = bad
        print(f"  gpu == cpu: {'yes' if bad == 0 else f'NO, {bad} pairs differ'}")
    else:
        print(f"  gpu batch: skipped ({pyphmm.info()['cuda_status']})")
    if gkl is not None:
        call = gkl.prepare(params, overhang)
        t, ex = timed(lambda: [call(r, a) for r, a in zip(refs, alts)])
        report("gkl 1 thread (JNI)", t)
        bad = sum(1 for i in range(n) if ex[i] != (ref_cig[i], int(ref_off[i])))
        row["gkl_mismatches"] = bad
        print(f"  gkl == cpu: {'yes' if bad == 0 else f'NO, {bad} pairs differ'}")

    # Single-pair latency: one call per pair, as HaplotypeCaller calls.
    lr, la = refs[:latency_pairs], alts[:latency_pairs]
    lat = {
        "pyphmm python": per_call_latency(lambda r, a: sw.align(r, a, params=params, overhang=overhang), lr, la, rounds)
    }
    lat["pyphmm C"] = c_latency(lr, la, params, overhang, rounds)
    if gkl is not None:
        lat["gkl jpype"] = per_call_latency(call, lr, la, rounds)
    lat = {k: v for k, v in lat.items() if v is not None}
    row["latency_us"] = lat
    print(f"  single-pair latency over {len(lr)} pairs (best of {rounds} rounds; mean / median / p99 us):")
    for k, v in lat.items():
        ratio = f"   x{v['mean'] / lat['gkl jpype']['mean']:.2f} of GKL" if "gkl jpype" in lat else ""
        print(f"    {k:<14} {v['mean']:8.1f} {v['median']:8.1f} {v['p99']:8.1f}{ratio}")
    results.append(row)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs-scale", type=float, default=1.0, help="multiply the pair counts (e.g. 0.05)")
    ap.add_argument("--latency-pairs", type=int, default=2000)
    ap.add_argument("--latency-rounds", type=int, default=3, help="rounds of single-pair calls; the best counts")
    ap.add_argument("--no-gkl", action="store_true")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    inf = pyphmm.info()
    print(
        f"pyphmm {inf['version']}; cuda: {inf['device_name'] if inf['cuda_usable'] else inf['cuda_status']}; "
        f"cpu threads {inf['cpu_threads']}"
    )
    gkl = None if args.no_gkl else gkl_runner()
    results = []
    na = max(1, int(10_000 * args.pairs_scale))
    nb = max(1, int(100_000 * args.pairs_scale))
    refs, alts = hap_vs_ref(na, seed=1)
    bench_workload(
        "(a) hap vs ref 300-520 bp",
        refs,
        alts,
        sw.NEW_SW_PARAMETERS,
        "SOFTCLIP",
        gkl,
        min(args.latency_pairs, na),
        args.latency_rounds,
        results,
    )
    refs, alts = read_vs_hap(nb, seed=2)
    bench_workload(
        "(b) read 40-151 bp vs hap 300 bp",
        refs,
        alts,
        sw.ALIGNMENT_TO_BEST_HAPLOTYPE,
        "SOFTCLIP",
        gkl,
        min(args.latency_pairs, nb),
        args.latency_rounds,
        results,
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": inf, "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
