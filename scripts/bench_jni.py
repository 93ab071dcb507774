#!/usr/bin/env python3
"""JNI benchmark: pyphmm's GATK shim vs GKL AVX (1 thread) vs GKL OMP (all
cores), same JVM, same regions, one computeLikelihoods call per region as
GATK makes them (java_shim/bench/BenchJni.java does the timing).

  PYTHONPATH=. python3 scripts/bench_jni.py [--regions FILE.in] [--generated N]
        [--reps K] [--copy-methods]

Default data: N generated realistic regions (tests/oracle/shim.py) plus
the shared 1m.in records if present. --copy-methods additionally times the
shim with PYPHMM_JNI_COPY=region vs critical on tiny and small regions.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

from oracle import gkl as gkl_oracle  # noqa: E402
from oracle import shim  # noqa: E402


def write_records(regions, path):
    with open(path, "w") as f:
        for reads, haps in regions:
            f.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                f.write(" ".join([r[0].decode()] + [bytes(q + 33 for q in x).decode() for x in r[1:]]) + "\n")
            for h in haps:
                f.write(h.decode() + "\n")


def compile_harness(work):
    classes = os.path.join(work, "classes")
    subprocess.run(["javac", "-nowarn", "--release", "11", "-d", classes,
                    os.path.join(REPO, "java_shim", "bench", "BenchJni.java")], check=True)
    return classes


def run(classes, records, reps, modes, env_extra=None):
    cp = os.pathsep.join(gkl_oracle.class_path() + [classes])
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run(["java", "-Xss4m", "-cp", cp, "BenchJni", records, shim.SHIM_JAR, shim.BINDINGS_JAR,
                        str(reps)] + modes, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(p.stderr[-4000:])
    banner = [ln for ln in p.stderr.splitlines() if ln.startswith("pyphmm")]
    return [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")], banner


def table(rows, title):
    print(f"\n{title}")
    print(f"{'implementation':<22}{'total s':>10}{'GCUPS':>9}{'median us':>11}{'p99 us':>10}")
    for r in rows:
        print(f"{r['mode']:<22}{r['seconds']:>10.3f}{r['gcups']:>9.3f}{r['median_us']:>11.1f}{r['p99_us']:>10.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--regions", default=os.path.join(REPO, "..", "shared", "data", "1m.in"))
    ap.add_argument("--generated", type=int, default=300)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--copy-methods", action="store_true")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    modes = ["shim:1", f"shim:{cores}", "gkl:1", f"gkl-omp:{cores}"]
    with tempfile.TemporaryDirectory() as work:
        classes = compile_harness(work)
        gen = os.path.join(work, "generated.in")
        write_records(shim.random_regions(args.generated, seed=1), gen)
        rows, banner = run(classes, gen, args.reps, modes)
        print(banner[0] if banner else "(no pyphmm banner)")
        table(rows, f"generated: {args.generated} regions (1-60 reads x 1-8 haps), {args.reps} reps")
        if os.path.exists(args.regions):
            rows, _ = run(classes, args.regions, args.reps, modes)
            table(rows, f"{os.path.basename(args.regions)}: {rows[0]['regions']} records, {args.reps} reps")
        if args.copy_methods:
            tiny = os.path.join(work, "tiny.in")
            write_records(shim.random_regions(2000, seed=2, max_reads=1, max_haps=1), tiny)
            small = os.path.join(work, "small.in")
            write_records(shim.random_regions(1000, seed=3, max_reads=8, max_haps=2), small)
            for name, path in (("1 read x 1 hap", tiny), ("1-8 reads x 1-2 haps", small)):
                res = []
                traces = []
                for method in ("region", "critical", "region", "critical"):
                    r, lines = run(classes, path, 5, ["shim:1"], {"PYPHMM_JNI_COPY": method,
                                                                   "PYPHMM_JNI_TRACE": "2"})
                    r[0]["mode"] = f"shim copy={method}"
                    res += r
                    traces += [ln for ln in lines if ln.startswith("pyphmm JNI:")]
                table(res, f"JNI copy method, {name} (2 runs each)")
                for ln in traces:
                    print("  " + ln)


if __name__ == "__main__":
    main()
