#!/usr/bin/env python3
"""JNI benchmark: pyphmm's GATK shim vs GKL AVX (1 thread) vs GKL OMP (all
cores) on the same regions, one computeLikelihoods call per region as GATK
makes them (java_shim/bench/BenchJni.java does the timing): total seconds,
GCUPS, per-call latency median / p99.

  python3 scripts/bench_jni.py [--realistic N] [--regions FILE.in]
        [--generated N] [--reps K] [--classes DIR] [--shim-jar JAR] [--copy-methods] [--trace]

Data, in order: --realistic N GATK-like regions (default 2000, the realistic
set of scripts/bench_pairhmm_gpu.py: 1-500 reads x 1-40 haplotypes, ~20 G
cells; GKL AVX timed over one pass after the warm-up pass, as it needs ~10 s
per pass, GKL OMP over 3, the shim over --reps + 2), --generated N small
test regions (devtools/oracle/shim.py: 1-60 reads x 1-8 haplotypes; --reps
passes) and the shared 1m.in records if present.

The harness calls initialize and computeLikelihoods through method handles,
never Method.invoke: a reflective call enters Java through the JVM's call
stub, which restores the thread's MXCSR on the way out and so undoes the
flush-to-zero mode GKL's initNative sets, leaving GKL to run with denormals
(10x slower on Intel CPUs). GATK calls GKL directly and keeps FTZ on.

JVMs: the shim (1 thread and all cores) and GKL AVX run in one JVM. GKL OMP
gets a JVM of its own, beside the shim again: GKL's AVX and OMP libraries
export the same JNI symbols (the natives are declared in IntelPairHmm), so in
one JVM the flavour loaded second silently runs the first one's code.

Needs a JRE (JAVA_HOME or java on PATH), GKL's jars (GKL_JARS, default
/usr/share/java) and native libraries (GKL_JNI, else the JVM's default
library path), the shim jar (--shim-jar, $PYPHMM_GATK_JAR, default
pyphmm/pyphmm-gatk.jar) and the harness classes: --classes DIR, else
compiled here with javac, else .carry/bench_classes (made by
scripts/prepare_gpu_carry.sh). Run from the repository root with it on
PYTHONPATH (devtools, this checkout's pyphmm). Default data: N generated realistic regions (devtools/oracle/shim.py)
plus the shared 1m.in records if present. --copy-methods additionally times
the shim with PYPHMM_DEV=jni_copy=region vs critical on tiny and small regions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401  (the repository root importable)

from devtools import ROOT as REPO
from devtools import java_classes
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import java_harness as jh
from devtools.oracle import shim


def write_realistic(n, seed, path):
    """The realistic set of bench_pairhmm_gpu.py (same generator and seed)."""
    import numpy as np

    from devtools.regions import gpu_bench_workload
    from pyphmm import io

    io.write_input_records(path, gpu_bench_workload(np.random.default_rng(seed + 1), n))


def harness_classes(explicit, work):
    """Directory holding BenchJni.class (devtools.java_classes)."""
    try:
        return java_classes.harness_classes(
            explicit,
            work,
            sources=[os.path.join(REPO, "java_shim", "bench", "BenchJni.java")],
            main_class="BenchJni",
            carried="bench_classes",
        )
    except java_classes.HarnessError as e:
        sys.exit(f"bench_jni: {e}")


def java_exe():
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    exe = shutil.which("java")
    if not exe:
        sys.exit("bench_jni: no java (set JAVA_HOME to a JRE or put java on PATH)")
    return exe


def check_inputs(shim_jar):
    if not os.path.exists(shim_jar):
        sys.exit(f"bench_jni: shim jar {shim_jar} not found (build it with setup.py, or pass --shim-jar)")
    missing = [p for p in (os.path.join(gkl_oracle.jar_dir(), "gkl.jar"), shim.BINDINGS_JAR) if not os.path.exists(p)]
    if missing:
        sys.exit(f"bench_jni: missing {', '.join(missing)} (set GKL_JARS to the directory of GKL's jars)")


def run(cfg, records, reps, modes, env_extra=None):
    """One JVM running the modes in order; returns (rows, pyphmm banner lines)."""
    cp = os.pathsep.join(gkl_oracle.class_path() + [cfg["classes"]])
    cmd = [cfg["java"], "-Xss4m"]
    if os.environ.get("GKL_JNI"):
        cmd.append(f"-Djava.library.path={os.environ['GKL_JNI']}")
    cmd += ["-cp", cp, "BenchJni", records, cfg["shim_jar"], shim.BINDINGS_JAR, str(reps)] + modes
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env_extra or {})))
    if p.returncode != 0:
        sys.exit(p.stderr[-4000:])
    banner = [ln for ln in p.stderr.splitlines() if ln.startswith("pyphmm")]
    return [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")], banner


def run_all(cfg, records, reps, cores, gkl_reps=None):
    """Shim and GKL AVX in one JVM; GKL OMP in its own (see the docstring).
    gkl_reps: passes for GKL AVX (GKL OMP: 3), when they differ from reps."""
    g1 = f":{gkl_reps}" if gkl_reps else ""
    gn = ":3" if gkl_reps else ""
    rows, banner = run(cfg, records, reps, [f"shim:{cores}", "shim:1", f"gkl:1{g1}"])
    omp, _ = run(cfg, records, reps, [f"shim:{cores}", f"gkl-omp:{cores}{gn}"])
    for r in rows:
        r["jvm"] = "A"
    for r in omp:
        r["jvm"] = "B"
    return rows + omp, banner


def table(rows, title):
    print(f"\n{title}")
    print(f"{'implementation':<18}{'JVM':>4}{'total s':>10}{'GCUPS':>9}{'median us':>11}{'p99 us':>10}{'checksum':>18}")
    for r in rows:
        print(
            f"{r['mode']:<18}{r.get('jvm', ''):>4}{r['seconds']:>10.3f}{r['gcups']:>9.3f}{r['median_us']:>11.1f}"
            f"{r['p99_us']:>10.1f}{r['checksum']:>18.6f}"
        )
    ref = next((r for r in rows if r["mode"] == "gkl:1"), None)
    for r in rows:
        if ref and r["mode"].startswith("shim") and r.get("jvm") == "A":
            omp = next((o for o in rows if o["mode"].startswith("gkl-omp")), None)
            print(
                f"  {r['mode']}: {r['gcups'] / ref['gcups']:.1f}x GKL AVX 1 thread"
                + (f", {r['gcups'] / omp['gcups']:.1f}x {omp['mode']}" if omp else "")
                + f"; checksum diff {r['checksum'] - ref['checksum']:+.3g}"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--regions", default=os.path.join(REPO, "..", "shared", "data", "1m.in"))
    ap.add_argument("--realistic", type=int, default=2000, help="realistic regions (0: none)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the realistic set")
    ap.add_argument("--generated", type=int, default=300, help="small test regions (0: none)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--classes", default=None, help="directory with a prebuilt BenchJni.class")
    ap.add_argument("--shim-jar", default=shim.SHIM_JAR, help="pyphmm's GATK shim jar")
    ap.add_argument("--copy-methods", action="store_true")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="also run the shim on the realistic set with PYPHMM_DEV=jni_trace=2 (JNI time split)",
    )
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    check_inputs(args.shim_jar)
    with tempfile.TemporaryDirectory() as work:
        cfg = {"classes": harness_classes(args.classes, work), "java": java_exe(), "shim_jar": args.shim_jar}
        version = subprocess.run([cfg["java"], "-version"], capture_output=True, text=True).stderr.splitlines()
        print(
            f"JVM: {version[0] if version else cfg['java']}; harness {cfg['classes']}; shim {args.shim_jar}; "
            f"GKL jars {gkl_oracle.jar_dir()}; GKL_JNI {os.environ.get('GKL_JNI', '(default path)')}; "
            f"{cores} cores"
        )
        print(
            "Each mode: one computeLikelihoods call per region (as GATK), after one warm-up pass. "
            "JVM A: shim + GKL AVX; JVM B: shim + GKL OMP (GKL's flavours cannot share a JVM)."
        )
        if args.realistic:
            real = os.path.join(work, "realistic.in")
            write_realistic(args.realistic, args.seed, real)
            rows, banner = run_all(cfg, real, args.reps + 2, cores, gkl_reps=1)
            print(banner[0] if banner else "(no pyphmm banner)")
            table(
                rows,
                f"realistic: {args.realistic} regions (bench_pairhmm_gpu.py --seed {args.seed}); timed "
                f"passes: shim {args.reps + 2}, GKL AVX 1, GKL OMP 3",
            )
            if args.trace:  # where a shim call's time goes, from the JNI layer's own timers
                r, lines = run(cfg, real, args.reps + 2, [f"shim:{cores}"], {"PYPHMM_DEV": "jni_trace=2"})
                print(
                    f"  traced shim:{cores}: median {r[0]['median_us']:.1f} us, mean "
                    f"{r[0]['seconds'] / r[0]['regions'] / r[0]['reps'] * 1e6:.1f} us per call"
                )
                traced = [ln for ln in lines if ln.startswith("pyphmm JNI:")]
                if traced:  # the last line covers the timed passes (the first, the warm-up)
                    print("  timed passes, " + traced[-1])
        if args.generated:
            gen = os.path.join(work, "generated.in")
            jh.write_regions(shim.random_regions(args.generated, seed=1), gen)
            rows, banner = run_all(cfg, gen, args.reps, cores)
            if not args.realistic:
                print(banner[0] if banner else "(no pyphmm banner)")
            table(rows, f"generated: {args.generated} regions (1-60 reads x 1-8 haps), {args.reps} reps")
        if os.path.exists(args.regions):
            rows, _ = run_all(cfg, args.regions, args.reps, cores)
            table(rows, f"{os.path.basename(args.regions)}: {rows[0]['regions']} records, {args.reps} reps")
        if args.copy_methods:
            copy_methods(cfg, work)


def copy_methods(cfg, work):
    tiny = os.path.join(work, "tiny.in")
    jh.write_regions(shim.random_regions(2000, seed=2, max_reads=1, max_haps=1), tiny)
    small = os.path.join(work, "small.in")
    jh.write_regions(shim.random_regions(1000, seed=3, max_reads=8, max_haps=2), small)
    for name, path in (("1 read x 1 hap", tiny), ("1-8 reads x 1-2 haps", small)):
        res = []
        traces = []
        for method in ("region", "critical", "region", "critical"):
            r, lines = run(cfg, path, 5, ["shim:1"], {"PYPHMM_DEV": f"jni_copy={method},jni_trace=2"})
            r[0]["mode"] = f"shim copy={method}"
            res += r
            traces += [ln for ln in lines if ln.startswith("pyphmm JNI:")]
        table(res, f"JNI copy method, {name} (2 runs each)")
        for ln in traces:
            print("  " + ln)


if __name__ == "__main__":
    main()
