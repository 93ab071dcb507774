#!/usr/bin/env python3
"""PDHMM from Java: pyphmm's shim IntelPDHMM vs GKL 0.9's IntelPDHMM in one
JVM, on the same regions, one computeLikelihoods call per region as GATK's
VectorLoglessPairPDHMM makes them (java_shim/bench/BenchPdhmm.java does the
timing): total seconds, GCUPS, per-call latency median / p99, and every
mode's max |diff| against GKL's first mode.

  PYTHONPATH=. python3 scripts/bench_pdhmm_jni.py [--shape hc|gatk] [--regions N]
        [--reps K] [--threads T] [--gkl09-classpath CP] [--classes DIR] [--shim-jar JAR]
        [--warmup W] [--holders fresh|reused] [--jni-trace] [--jvms K [--mps off|on|both]]

Modes: the shim with 1 thread and with T (default: all cores); GKL 0.9 with
1 thread at AVX-512 (where the CPU has it) and AVX2 (--scalar: SCALAR too),
and OpenMP on T threads (FASTEST_AVAILABLE, as GATK's default). Every mode
makes warm-up passes (the shim's --warmup, default 10: the JIT compiles
the shim's packing over its first ~1,000 calls; GKL's one); GKL's
one-thread modes then time one pass (they are slow), the others --reps.

--holders fresh (the default without --jvms) builds each call's read
holders just before it, untimed, as VectorLoglessPairPDHMM does: new copies
of the reads' arrays, which the call then finds in the CPU's cache; GCUPS
come from the calls' summed time. --holders reused (the default with
--jvms, whose figure is the node's span) builds every region's holders once
and cycles through them, each call's arrays cold in the cache (the JVM's
side of a call then takes about 10 us more); GCUPS from the loop's wall
time. Haplotype holders are built once either way (GATK passes the
haplotypes' own arrays).

--jni-trace splits the shim's timed calls (PYPHMM_DEV=jni_trace=2): per
shim mode, the JNI entry's mean time a call and pyphmm_pdhmm's within it,
and Java's own share: the calls' mean less the entry's (the shim's packing
of the holders, the JNI transition).

--jvms K runs K JVMs side by side instead, as K GATK processes on one node
would: each with one caller thread on its share of the regions (JVM p takes
regions p, p + K, ...), --warmup passes, then a start barrier for all; the
shim's phase (under --mps on: a private MPS control daemon for its JVMs,
quit when the phase ends; both: without, then with) and, with GKL, GKL 0.9
single-threaded in as many JVMs (its fastest one-thread code). Printed per
phase: all cells / (last end - common start; with --holders fresh the
holders' building lies inside it), per-call median and p99 over
all JVMs, and max |diff| against pyphmm's CPU backend called from Python on
the same regions (and against GKL's phase, when it ran).

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
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import time

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np

import pyphmm
from devtools import ROOT as REPO
from devtools import java_classes, pd_regions
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import java_harness as jh
from devtools.oracle import pdhmm_api
from pyphmm import mps


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


def fleet_phase(cmd, mode, k, work, env, timeout=1800):
    """K JVMs running `mode` on their shares, released together after their
    warm-up: their JSON records, each with its likelihoods ("res")."""
    lines: queue.Queue = queue.Queue()
    children, errs = [], []

    def reader(p, stream):
        for line in stream:
            lines.put((p, line.rstrip("\n")))
        lines.put((p, None))

    def collect(want):
        got = {}
        while len(got) < k:
            try:
                p, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"bench_pdhmm_jni: {mode}: timed out") from None
            if line is None and p not in got:
                children[p].wait()
                with open(errs[p], errors="replace") as f:
                    tail = f.read()[-3000:]
                raise SystemExit(f"bench_pdhmm_jni: {mode}: JVM {p} exited ({children[p].returncode}):\n{tail}")
            if line is not None and want(line):
                got[p] = line
        return got

    deadline = time.monotonic() + timeout
    tag = mode.replace(":", "_")
    try:
        for p in range(k):
            errs.append(os.path.join(work, f"{tag}.{p}.stderr"))
            penv = dict(env, BENCHPD_SHARE=f"{p}/{k}", BENCHPD_BARRIER="1", BENCHPD_OUT=os.path.join(work, f"{p}"))
            with open(errs[p], "w") as err, mps.signals_deferred():
                children.append(
                    subprocess.Popen(
                        cmd + [mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, env=penv
                    )
                )
            threading.Thread(target=reader, args=(p, children[p].stdout), daemon=True).start()
        collect(lambda ln: ln == "READY")
        for c in children:  # the barrier: all warmed up, released together
            c.stdin.write("GO\n")
            c.stdin.flush()
        done = collect(lambda ln: ln.startswith("{"))
        for p, c in enumerate(children):
            if c.wait(timeout=max(1.0, deadline - time.monotonic())) != 0:
                raise SystemExit(f"bench_pdhmm_jni: {mode}: JVM {p} exited with status {c.returncode}")
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
    recs = [json.loads(done[p]) for p in range(k)]
    for p, r in enumerate(recs):
        r["res"] = read_dump(os.path.join(work, f"{p}.{tag}"))
        with open(errs[p], errors="replace") as f:
            r["pyphmm_lines"] = [ln for ln in f.read().splitlines() if ln.startswith("pyphmm")]
    return recs


def in_region_order(recs, shapes):
    """The K JVMs' likelihoods (JVM p held regions p, p + K, ...) in region order."""
    k = len(recs)
    parts, at = [], [0] * k
    for i, (r, h) in enumerate(shapes):
        p = i % k
        parts.append(recs[p]["res"][at[p] : at[p] + r * h])
        at[p] += r * h
    return np.concatenate(parts)


def run_fleet(args, base_cmd, env, gkl_cp, regions, generated, work):
    k = args.jvms
    shapes = [(len(r), len(h)) for r, h in regions]
    cells = sum(jh.pd_region_cells(r) for r in regions)
    phases = []
    if gkl_cp:
        phases.append(
            (
                f"GKL 0.9 {'AVX512' if cpu_has_avx512() else 'AVX2'}, {k} JVMs x 1 thread",
                f"gkl:1:{'AVX512' if cpu_has_avx512() else 'AVX2'}",
                None,
            )
        )
    for m in ("off", "on") if args.mps == "both" else (args.mps,):
        phases.append((f"shim, {k} JVMs x 1 thread, MPS {m}", "shim:1", m == "on"))
    print(
        f"workload {args.shape}: {len(regions)} regions, {cells / 1e9:.3f} G cells per pass; {k} JVMs, "
        f"warm-up passes: shim {args.warmup}, GKL 1; {args.reps} timed"
    )
    cpu = np.concatenate([v.ravel() for v in pyphmm.compute_pd_regions(generated, backend="cpu")])
    print(f"{'phase':<40}{'GCUPS':>9}{'span s':>9}{'median us':>11}{'p99 us':>10}  max|diff| vs CPU, GKL")
    ref, by = None, {}
    for label, mode, under_mps in phases:
        if under_mps:
            with mps.private_daemon() as mps_env:
                recs = fleet_phase(base_cmd, mode, k, work, dict(env, **mps_env))
        else:
            recs = fleet_phase(base_cmd, mode, k, work, env)
        res = in_region_order(recs, shapes)
        if ref is None and mode.startswith("gkl"):
            ref = res
        span = (max(r["t_end_ns"] for r in recs) - min(r["t_go_ns"] for r in recs)) / 1e9
        by[label] = cells * args.reps / span / 1e9
        print(
            f"{label:<40}{by[label]:>9.2f}{span:>9.3f}{np.median([r['median_us'] for r in recs]):>11.1f}"
            f"{max(r['p99_us'] for r in recs):>10.1f}  {max_diff(res, cpu):.3g}, "
            + (f"{max_diff(res, ref):.3g}" if ref is not None else "-")
        )
        for ln in sorted({ln for r in recs for ln in r["pyphmm_lines"] if ": backend " in ln})[:2]:
            print("  " + ln)
    peers = [lb for lb in by if lb.startswith("GKL")]
    for lb in by:
        if peers and not lb.startswith("GKL"):
            print(f"  {lb}: {by[lb] / by[peers[0]]:.1f}x {peers[0]}")
    return 0


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
    p.add_argument("--jvms", type=int, default=0, help="K JVMs side by side, one caller each (see above)")
    p.add_argument("--mps", choices=("off", "on", "both"), default="off", help="with --jvms: the shim under MPS")
    p.add_argument("--warmup", type=int, default=10, help="warm-up passes of the shim's modes (GKL's: 1)")
    p.add_argument("--holders", choices=("fresh", "reused"), help="see above")
    p.add_argument("--jni-trace", action="store_true", help="also where a shim call's time goes (see above)")
    args = p.parse_args(argv)
    if args.jvms and args.jvms > args.regions:
        sys.exit("bench_pdhmm_jni: --jvms must not exceed --regions")
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
        generated = pd_regions.generate(args.regions, args.seed, args.shape)
        regions = [jh.as_pd_holders(r) for r in generated]
        records = jh.write_pd_regions(regions, os.path.join(work, "regions.in"))
        classes = harness_classes(args.classes, work)
        shim_cp, gkl_path = class_paths(args.shim_jar, gkl_cp)
        cmd = [jh.java(), "-Xss4m", "-cp", classes, "BenchPdhmm", records, shim_cp, gkl_path, str(args.reps)]
        env = dict(os.environ, BENCHPD_OUT=os.path.join(work, "out"), BENCHPD_WARMUP=str(args.warmup))
        env["BENCHPD_HOLDERS"] = args.holders or ("reused" if args.jvms else "fresh")
        env.pop("USE_LIBRARY_PATH", None)  # GKL's own library, from its jar
        if args.jni_trace:
            env["PYPHMM_DEV"] = ",".join(v for v in (env.get("PYPHMM_DEV"), "jni_trace=2") if v)
            env["BENCHPD_DONE_AFTER_WARMUP"] = "1"
        if args.jvms:
            return run_fleet(args, cmd, env, gkl_cp, regions, generated, work)
        cmd += modes
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            sys.exit(proc.stderr[-4000:])
        rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
        dumps = {r["mode"]: read_dump(os.path.join(work, "out." + r["mode"].replace(":", "_"))) for r in rows}
    pairs = sum(len(r) * len(h) for r, h in regions)
    cells = sum(jh.pd_region_cells(r) for r in regions)
    print(f"workload {args.shape}: {len(regions)} regions, {pairs} pairs, {cells / 1e9:.3f} G cells per pass")
    traces = []
    for ln in proc.stderr.splitlines():
        if ln.startswith("pyphmm") and (": backend " in ln or " summary: " in ln):
            print(ln)
        if ln.startswith("pyphmm PDHMM JNI: "):
            traces.append(ln)
    ref = rows[0]["mode"]
    print(f"{'mode':<26}{'passes':>7}{'total s':>10}{'GCUPS':>9}{'median us':>11}{'p99 us':>10}  max|diff| vs {ref}")
    for r in rows:
        d = max_diff(dumps[r["mode"]], dumps[ref])
        print(
            f"{r['mode']:<26}{r['reps']:>7}{r['seconds']:>10.3f}{r['gcups']:>9.3f}{r['median_us']:>11.1f}"
            f"{r['p99_us']:>10.1f}  {d:.3g}"
        )
    # (two trace lines a shim mode, in the modes' order: its warm-up's, its timed calls')
    for r, ln in zip([r for r in rows if r["mode"].startswith("shim")], traces[1::2]):
        entry = float(ln.split("entry ")[1].split(" us")[0])
        mean = r["seconds"] / (r["reps"] * r["regions"]) * 1e6
        split = ln[len("pyphmm PDHMM JNI: ") :]
        print(f"{r['mode']}: {split}; the timed calls' mean {mean:.2f} us, Java's own {mean - entry:.2f} us")
    by = {r["mode"]: r["gcups"] for r in rows}
    for shim_mode in ("shim:1", f"shim:{t}"):
        peers = [m for m in by if m.startswith("gkl")]
        if peers:
            print(f"  {shim_mode}: " + ", ".join(f"{by[shim_mode] / by[m]:.1f}x {m}" for m in peers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
