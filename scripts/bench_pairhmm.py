#!/usr/bin/env python3
"""PairHMM throughput: pyphmm against Intel GKL on the same realistic data.

Data: regions from devtools.regions.generate (seeded, in memory) or a record file
(--input). Rows printed:
  pyphmm <backend>, per region    one compute_likelihoods call per region (as GATK calls)
  pyphmm <backend>, batch         all regions in one compute_regions call
  GKL IntelPairHmm AVX, 1 thread  one computeLikelihoods per region
  GKL IntelPairHmmOMP, N threads  one computeLikelihoods per region
for pyphmm with 1 thread and with --threads (default: all cores). GKL runs
in scripts/bench_jni.py's Java harness (java_shim/bench/BenchJni.java; javac
here, or .carry/bench_classes from scripts/prepare_gpu_carry.sh), each
configuration in a JVM of its own: IntelPairHmm and IntelPairHmmOMP declare
the same native methods, so in one JVM both would bind to whichever library
loaded first. Java holders are built before timing and only the
computeLikelihoods calls are timed, after a warm-up pass over all regions;
GKL's seconds are the mean of --repeats passes, pyphmm's the best. Seconds
are wall time of the calls only; GCUPS = sum(read_len * hap_len) / seconds
/ 1e9. --double runs both sides with every pair in double. The last column
is max |pyphmm - GKL| over every pair; "others" is the share of the machine's
CPU that other processes used meanwhile (a shared machine makes timings
noisy: rerun, or use --repeats, when it is not near 0%).

Run from the repository root with it on PYTHONPATH (devtools, this
checkout's pyphmm):

    python3 scripts/bench_pairhmm.py --regions 200 --seed 1
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np

import pyphmm
from devtools.regions import generate, pairs_and_cells
from pyphmm import io

WARMUP_REGIONS = 5


def time_pyphmm_per_region(regions, backend, threads, double, repeats):
    for r, h in regions[:WARMUP_REGIONS]:
        pyphmm.compute_likelihoods(r, h, backend=backend, threads=threads, double=double)
    best, out = None, None
    for _ in range(repeats):
        res, total, used = [], 0.0, set()
        for r, h in regions:
            st = {}
            t = time.perf_counter()
            res.append(pyphmm.compute_likelihoods(r, h, backend=backend, threads=threads, double=double, stats=st))
            total += time.perf_counter() - t
            used.add(st["backend"])
        if best is None or total < best:
            best, out = total, res
    return best, out, used


def time_pyphmm_batch(regions, backend, threads, double, repeats):
    pyphmm.compute_regions(regions[:WARMUP_REGIONS], backend=backend, threads=threads, double=double)
    best, out, st = None, None, {}
    for _ in range(repeats):
        t = time.perf_counter()
        res = pyphmm.compute_regions(regions, backend=backend, threads=threads, double=double, stats=st)
        total = time.perf_counter() - t
        if best is None or total < best:
            best, out = total, res
    return best, out, {st.get("backend", "none")}, st.get("double_pairs", 0)


def gkl_in_jvm(a, regions, omp: bool, threads: int):
    """Times one GKL configuration with scripts/bench_jni.py's Java harness
    (a JVM of its own, GKL called through method handles exactly as GATK
    calls it, so the flush-to-zero mode GKL sets at initialize stays on;
    driving GKL through jpype would undo it on every call and slow GKL
    tenfold on Intel CPUs). Returns (seconds per pass, results)."""
    import bench_jni  # (this script's directory is on sys.path)

    from devtools.oracle import shim

    with tempfile.TemporaryDirectory() as d:
        records = os.path.join(d, "regions.in")
        io.write_input_records(records, regions)
        cfg = {"classes": bench_jni.harness_classes(None, d), "java": bench_jni.java_exe(), "shim_jar": shim.SHIM_JAR}
        mode = f"gkl{'-omp' if omp else ''}:{threads}"
        env = {"BENCHJNI_OUT": os.path.join(d, "out")}
        if a.double:
            env["BENCHJNI_DOUBLE"] = "1"
        rows, _ = bench_jni.run(cfg, records, a.repeats, [mode], env)
        flat = np.fromfile(os.path.join(d, "out." + mode.replace(":", "_")), dtype=">f8")
    results, k = [], 0
    for r, h in regions:
        n = len(r) * len(h)
        results.append(flat[k : k + n].astype(np.float64).reshape(len(r), len(h)))
        k += n
    return rows[0]["seconds"] / a.repeats, results


class OtherLoad:
    """Share of the machine's CPU time used by other processes while a row
    ran (from /proc/stat minus this process and its children): timings on a
    shared box are only comparable when this stays near 0."""

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except OSError:
            return None
        busy = sum(v) - v[3] - (v[4] if len(v) > 4 else 0)
        t = os.times()
        return busy, sum(v), t.user + t.system + t.children_user + t.children_system

    def __enter__(self):
        self.start = self._sample()
        return self

    def __exit__(self, *exc):
        end = self._sample()
        if self.start is None or end is None or end[1] == self.start[1]:
            self.share = float("nan")
            return
        hz = os.sysconf("SC_CLK_TCK")
        own = (end[2] - self.start[2]) * hz
        self.share = max(0.0, (end[0] - self.start[0] - own) / (end[1] - self.start[1]))


def max_diff(a, b):
    return max((float(np.max(np.abs(x - y))) for x, y in zip(a, b) if x.size), default=0.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="pyphmm vs GKL PairHMM throughput")
    ap.add_argument("--regions", type=int, default=200, help="generated regions (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--input", help="record file to use instead of generated regions")
    ap.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="threads for the multi-threaded rows (default: all cores)",
    )
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    ap.add_argument("--double", action="store_true", help="every pair in double (useDoublePrecision)")
    ap.add_argument("--repeats", type=int, default=1, help="timed passes per row; the best is kept")
    ap.add_argument("--no-gkl", action="store_true", help="skip GKL rows")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    if a.input:
        regions = list(io.read_records(a.input))
        source = a.input
    else:
        regions = generate(regions=a.regions, seed=a.seed)
        source = f"gen_regions --regions {a.regions} --seed {a.seed}"
    pairs, cells = pairs_and_cells(regions)
    reads = sum(len(r) for r, _ in regions)
    print(
        f"data: {source}: {len(regions)} regions, {pairs} pairs, {reads} reads, {cells / 1e9:.3f} G cells "
        f"(prepared in {time.perf_counter() - t:.1f} s)"
    )
    inf = pyphmm.info()
    print(
        f"pyphmm {inf['version']} from {os.path.dirname(pyphmm.__file__)}: "
        f"cpu kernel {inf['cpu_kernel']}, {inf['cpu_threads']} cpu threads, "
        f"cuda {'usable: ' + str(inf['device_name']) if inf['cuda_usable'] else 'unusable'}; "
        f"precision {'double' if a.double else 'float + double fallback'}"
    )

    rows = []  # (name, seconds, results, other load)
    thread_set = [1] if a.threads == 1 else [1, a.threads]
    for th in thread_set:
        with OtherLoad() as load:
            s, res, used = time_pyphmm_per_region(regions, a.backend, th, a.double, a.repeats)
        rows.append((f"pyphmm {'/'.join(sorted(used))}, per region, {th} thr", s, res, load.share))
        with OtherLoad() as load:
            s, res, used, dbl = time_pyphmm_batch(regions, a.backend, th, a.double, a.repeats)
        rows.append((f"pyphmm {'/'.join(sorted(used))}, batch, {th} thr", s, res, load.share))
    print(f"pyphmm double-precision pairs: {dbl} of {pairs}")

    gkl_ref = None
    if not a.no_gkl:
        for omp, th in ((False, 1), (True, a.threads)):
            with OtherLoad() as load:
                s, res = gkl_in_jvm(a, regions, omp, th)
            rows.append((f"GKL {'IntelPairHmmOMP' if omp else 'IntelPairHmm AVX'}, {th} thr", s, res, load.share))
            gkl_ref = gkl_ref or res

    ref = gkl_ref if gkl_ref is not None else rows[0][2]
    print()
    print(f"| {'system':<38} | {'seconds':>8} | {'GCUPS':>6} | {'max |x - GKL|':>13} | {'others':>6} |")
    print(f"| {'-' * 38} | {'-' * 8} | {'-' * 6} | {'-' * 13} | {'-' * 6} |")
    for name, s, res, share in rows:
        finite = all(np.isfinite(x).all() for x in res)
        diff = max_diff(res, ref) if gkl_ref is not None else float("nan")
        print(
            f"| {name:<38} | {s:8.3f} | {cells / s / 1e9:6.2f} | {diff:13.2e} | {share:6.0%} |"
            + ("" if finite else "  NON-FINITE VALUES")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
