#!/usr/bin/env python3
"""PDHMM from Java: pyphmm's shim IntelPDHMM vs GKL 0.9's IntelPDHMM in one
JVM, on the same regions, one computeLikelihoods call per region as GATK's
VectorLoglessPairPDHMM makes them (java_shim/bench/BenchPdhmm.java does the
timing): total seconds, GCUPS, per-call latency median / p99, and every
mode's max |diff| against GKL's first mode.

  PYTHONPATH=. python3 scripts/bench_pdhmm_jni.py [--shape hc|issue] [--regions N]
        [--reps K] [--threads T] [--gkl09-classpath CP] [--classes DIR] [--shim-jar JAR]

Modes: the shim with 1 thread and with T (default: all cores); GKL 0.9 with
1 thread at AVX-512 (where the CPU has it) and AVX2 (--scalar: SCALAR too),
and OpenMP on T threads (FASTEST_AVAILABLE, as GATK's default). Every mode
makes a warm-up pass; GKL's one-thread modes then time one pass (they are
slow), the others --reps.

Workloads (devtools.pd_regions): "hc", HaplotypeCaller --use-pdhmm's calls
as measured in issue 41 (default), or "gatk", the issue's GATK-shaped
regions.

Needs a JRE, the shim jar (--shim-jar, $PYPHMM_GATK_JAR, default
pyphmm/pyphmm-gatk.jar), the harness class (--classes DIR, else compiled
here with javac, else .carry/bench_classes from scripts/prepare_gpu_carry.sh)
and, for GKL, GKL 0.9's class path (--gkl09-classpath or $GKL09_CLASSPATH:
GKL 0.9's jar and gatk-native-bindings 1.1.0's; commons-logging and
commons-io are added from GKL_JARS when found there). Without GKL 0.9 only
the shim runs. The shim's loader takes bindings 1.1.0 from GKL's class path,
else Debian's 1.0.0 plus java_shim/api's declarations (.carry/pdhmm_api_classes
on a host without javac).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np

from devtools import ROOT as REPO
from devtools import java_classes, pd_regions
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import java_harness as jh
from devtools.oracle import pdhmm_api


def harness_classes(explicit, work):
    try:
        return java_classes.harness_classes(
            explicit,
            work,
            sources=[os.path.join(REPO, "java_shim", "bench", "BenchPdhmm.java")],
            main_class="BenchPdhmm",
            carried="bench_classes",
        )
    except java_classes.HarnessError as e:
        sys.exit(f"bench_pdhmm_jni: {e}")


def class_paths(shim_jar, gkl_cp):
    """(shim loader's class path, GKL's or '-')."""
    if gkl_cp:
        bindings = [p for p in gkl_cp if "native-bindings" in os.path.basename(p) or "gnb" in os.path.basename(p)]
        shim_cp = [shim_jar] + (bindings or gkl_cp)
        return os.pathsep.join(shim_cp), os.pathsep.join(gkl_cp)
    debian = os.path.join(gkl_oracle.jar_dir(), "gatk-native-bindings.jar")
    return os.pathsep.join([shim_jar, debian, pdhmm_api.api_classes()]), "-"


def cpu_has_avx512() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f " in f.read().replace("\n", " ")
    except OSError:
        return False


def read_dump(path):
    with open(path, "rb") as f:
        data = f.read()
    return np.array(struct.unpack(f">{len(data) // 8}d", data))


def max_diff(a, b) -> float:
    if a.shape != b.shape or not np.array_equal(np.isneginf(a), np.isneginf(b)):
        return float("inf")
    finite = np.isfinite(b)
    return float(np.max(np.abs(a[finite] - b[finite]), initial=0.0))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_pdhmm_jni.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="hc", choices=pd_regions.SHAPES)
    p.add_argument("--regions", type=int, default=200)
    p.add_argument("--scalar", action="store_true", help="also GKL's SCALAR mode (one thread, slow)")
    p.add_argument("--seed", type=int, default=41)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--gkl09-classpath", default=os.environ.get("GKL09_CLASSPATH"))
    p.add_argument("--classes", default=None, help="directory holding BenchPdhmm.class")
    p.add_argument(
        "--shim-jar", default=os.environ.get("PYPHMM_GATK_JAR", os.path.join(REPO, "pyphmm", "pyphmm-gatk.jar"))
    )
    args = p.parse_args(argv)
    if not os.path.exists(args.shim_jar):
        sys.exit(f"bench_pdhmm_jni: shim jar {args.shim_jar} not found (build it with setup.py, or pass --shim-jar)")
    gkl_cp = None
    if args.gkl09_classpath:
        os.environ["GKL09_CLASSPATH"] = args.gkl09_classpath
        gkl_cp = [c for c in pdhmm_api.gkl09_classpath() if os.path.basename(c) != "gkl.jar"]
    t = args.threads
    modes = ["shim:1", f"shim:{t}"]
    if gkl_cp:
        gkl = (["gkl:1:AVX512:1"] if cpu_has_avx512() else []) + ["gkl:1:AVX2:1"] + ["gkl:1:SCALAR:1"] * args.scalar
        modes = gkl + [f"gkl:{t}:FASTEST_AVAILABLE"] + modes
    with tempfile.TemporaryDirectory() as work:
        regions = [jh.as_pd_holders(r) for r in pd_regions.generate(args.regions, args.seed, args.shape)]
        records = jh.write_pd_regions(regions, os.path.join(work, "regions.in"))
        classes = harness_classes(args.classes, work)
        shim_cp, gkl_path = class_paths(args.shim_jar, gkl_cp)
        cmd = [jh.java(), "-Xss4m", "-cp", classes, "BenchPdhmm", records, shim_cp, gkl_path, str(args.reps), *modes]
        env = dict(os.environ, BENCHPD_OUT=os.path.join(work, "out"))
        env.pop("USE_LIBRARY_PATH", None)  # GKL's own library, from its jar
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            sys.exit(proc.stderr[-4000:])
        rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
        dumps = {r["mode"]: read_dump(os.path.join(work, "out." + r["mode"].replace(":", "_"))) for r in rows}
    pairs = sum(len(r) * len(h) for r, h in regions)
    cells = sum(jh.pd_region_cells(r) for r in regions)
    print(f"workload {args.shape}: {len(regions)} regions, {pairs} pairs, {cells / 1e9:.3f} G cells per pass")
    for ln in proc.stderr.splitlines():
        if ln.startswith("pyphmm") and ": backend " in ln:
            print(ln)
    ref = rows[0]["mode"]
    print(f"{'mode':<26}{'passes':>7}{'total s':>10}{'GCUPS':>9}{'median us':>11}{'p99 us':>10}  max|diff| vs {ref}")
    for r in rows:
        d = max_diff(dumps[r["mode"]], dumps[ref])
        print(
            f"{r['mode']:<26}{r['reps']:>7}{r['seconds']:>10.3f}{r['gcups']:>9.3f}{r['median_us']:>11.1f}"
            f"{r['p99_us']:>10.1f}  {d:.3g}"
        )
    by = {r["mode"]: r["gcups"] for r in rows}
    for shim_mode in ("shim:1", f"shim:{t}"):
        peers = [m for m in by if m.startswith("gkl")]
        if peers:
            print(f"  {shim_mode}: " + ", ".join(f"{by[shim_mode] / by[m]:.1f}x {m}" for m in peers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
