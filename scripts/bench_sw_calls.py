#!/usr/bin/env python3
"""Smith-Waterman as HaplotypeCaller calls it: one align per pair, on one
core, for HaplotypeCaller's mix of calls (reads vs their best haplotype,
haplotypes vs the padded reference window, dangling ends; about 80,000 cells
a call, half of them haplotype vs reference), in one of two orders:
  --order regions (default): devtools.sw_pairs.haplotype_caller_regions,
    region by region as HaplotypeCaller calls: the dangling ends, then every
    haplotype against the region's one padded window, then the reads;
  --order mixed: devtools.sw_pairs.haplotype_caller_mix, every call drawn
    on its own (each haplotype with a window of its own), so no call
    repeats an earlier one's window and pyphmm's prefix reuse never applies.

Per kind of call and overall: per-call median / p99 (us) and GCUPS (cells /
summed call time), from
  - Python: pyphmm.align, one call per pair;
  - Java, 1 thread: IntelSmithWaterman.align through pyphmm's shim and
    through GKL's own library (AVX-512 where the CPU has it, else AVX2), one
    JVM each (java_shim/bench/BenchSwCalls.java), then both in one JVM,
    their timed passes over the mix in turn: a host whose speed drifts over
    minutes moves the separate runs apart, the passes in turn much less;
  - Java, --jvms JVMs at once (default 16, each one thread), shim and GKL
    in turn, released together after their warm-up: per-call figures over
    all JVMs and the aggregate rate.
Results are checked: the shim's CIGARs and offsets against pyphmm.align's
and GKL's (the mix uses SOFTCLIP, INDEL and LEADING_INDEL, where GKL follows
GATK). The last line states what a batch-of-one GPU call would have to beat:
the CPU's per-call median on haplotype-vs-reference pairs from Java.

  PYTHONPATH=. python3 scripts/bench_sw_calls.py [--pairs 3000] [--reps 5]
        [--order regions|mixed] [--jvms 16] [--classes DIR] [--shim-jar JAR]
        [--json OUT]
  PYTHONPATH=. python3 scripts/bench_sw_calls.py --write-pairs DIR [--pairs N]

--write-pairs writes the mix's read-vs-haplotype and SOFTCLIP
haplotype-vs-reference pairs, in call order, as DIR/read_vs_hap.tsv and
DIR/hap_vs_ref.tsv
(REF TAB ALT, the input of scripts/sw_latency.c) and exits: instruction
counts per call come from running that program under callgrind, e.g.
  valgrind --tool=callgrind sw_latency DIR/read_vs_hap.tsv 10 -15 -30 -5 9 1

Needs what scripts/bench_jni.py needs (a JRE, GKL's jars and libraries, the
shim jar, javac or prebuilt harness classes); without a JRE only the Python
figures are printed.
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
from devtools import ROOT as REPO
from devtools import java_classes
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import shim
from devtools.sw_pairs import haplotype_caller_mix, haplotype_caller_regions
from pyphmm import sw

KINDS = ("read_vs_hap", "hap_vs_ref", "dangling_end", "all")
ORDERS = {"regions": haplotype_caller_regions, "mixed": haplotype_caller_mix}


def summary(us, cells, best_total):
    """best_total: the summed time of each pair's fastest call, times the
    passes (what GCUPS divides by: free of preemption by other processes)."""
    s = sorted(us)
    return {
        "calls": len(us),
        "median_us": s[len(s) // 2],
        "p99_us": s[int((len(s) - 1) * 0.99)],
        "gcups": cells / (best_total * 1e-6) / 1e9 if best_total else 0.0,
    }


def python_calls(pairs, reps):
    """Per kind: pyphmm.align per pair, each call timed; the results."""
    results = [sw.align(r, a, params=p, overhang=s) for r, a, p, s, _ in pairs]  # warm-up
    us = {k: [] for k in KINDS}
    cells = dict.fromkeys(KINDS, 0)
    best = [float("inf")] * len(pairs)
    clock = time.perf_counter_ns
    for _ in range(reps):
        for i, (r, a, p, s, kind) in enumerate(pairs):
            t0 = clock()
            sw.align(r, a, params=p, overhang=s)
            dt = (clock() - t0) / 1e3
            best[i] = min(best[i], dt)
            for k in (kind, "all"):
                us[k].append(dt)
                cells[k] += len(r) * len(a)
    best_total = {k: reps * sum(b for b, q in zip(best, pairs) if k in (q[4], "all")) for k in KINDS}
    return {k: summary(us[k], cells[k], best_total[k]) for k in KINDS if us[k]}, results


def write_pairs(pairs, path):
    with open(path, "w") as f:
        for r, a, p, s, kind in pairs:
            f.write(f"{r.decode()}\t{a.decode()}\t{','.join(map(str, p))}\t{s}\t{kind}\n")


def java_cmd(cfg, pairs_file, mode, reps, outs=()):
    cp = os.pathsep.join(gkl_oracle.class_path() + [cfg["classes"]])
    cmd = [cfg["java"], "-Xss4m"]
    if os.environ.get("GKL_JNI"):
        cmd.append(f"-Djava.library.path={os.environ['GKL_JNI']}")
    cmd += ["-cp", cp, "BenchSwCalls", pairs_file, cfg["shim_jar"], shim.BINDINGS_JAR, mode, str(reps)]
    return cmd + list(outs)


def parse_rows(stdout, mode=None):
    """{kind: row} of the JSON lines (of one mode's, where given)."""
    rows = {}
    for ln in stdout.splitlines():
        if ln.startswith("{"):
            r = json.loads(ln)
            if mode and r["mode"] != mode:
                continue
            r["gcups"] = r["cells"] / r["best_seconds"] / 1e9 if r["best_seconds"] else 0.0
            rows[r["kind"]] = r
    return rows


def java_one(cfg, pairs_file, mode, reps, outs):
    """One JVM, one thread: {kind: row} (for "both": {mode: {kind: row}}), and its log lines."""
    p = subprocess.run(java_cmd(cfg, pairs_file, mode, reps, outs), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench_sw_calls: {mode} JVM failed:\n{p.stderr[-4000:]}")
    two = ("shim", "gkl") if mode == "both" else ("shim", "base") if mode.startswith("base=") else None
    rows = {m: parse_rows(p.stdout, m) for m in two} if two else parse_rows(p.stdout)
    return rows, [ln for ln in p.stderr.splitlines() if ln.strip()]


def java_many(cfg, pairs_file, mode, reps, jvms):
    """jvms JVMs, released together after each one's warm-up; per kind: all
    calls' median / p99 (from the JVMs' medians and p99s: the worst JVM's
    p99, the median JVM's median), summed cells over summed time, and the
    aggregate calls per second over the slowest JVM's timed wall time."""
    env = dict(os.environ, BENCHSW_WAIT="1")
    procs = [
        subprocess.Popen(
            java_cmd(cfg, pairs_file, mode, reps),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        for _ in range(jvms)
    ]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            sys.exit(f"bench_sw_calls: a {mode} JVM did not get ready")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [parse_rows(p.communicate()[0]) for p in procs]
    rows = {}
    for k in outs[0]:
        per = [o[k] for o in outs]
        meds = sorted(r["median_us"] for r in per)
        calls = sum(r["calls"] for r in per)
        rows[k] = {
            "calls": calls,
            "median_us": meds[len(meds) // 2],
            "p99_us": max(r["p99_us"] for r in per),
            "gcups": sum(r["cells"] for r in per) / sum(r["best_seconds"] for r in per) / 1e9,
            "calls_per_s": calls / max(r["wall"] for r in per),
        }
    return rows


def table(title, columns):
    """columns: {label: {kind: row}}."""
    print(f"\n{title}")
    print(f"  {'':<22}" + "".join(f"{k:>26}" for k in KINDS))
    print(f"  {'':<22}" + "".join(f"{'median   p99 us  GCUPS':>26}" for _ in KINDS))
    for label, rows in columns.items():
        cells = []
        for k in KINDS:
            r = rows.get(k)
            cells.append(f"{r['median_us']:9.1f} {r['p99_us']:8.1f} {r['gcups']:6.2f}" if r else f"{'-':>26}")
        print(f"  {label:<22}" + "".join(f"{c:>26}" for c in cells))


def read_results(path):
    with open(path) as f:
        return [(c, int(o)) for c, o in (ln.split() for ln in f)]


def java_exe():
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def java_setup(args, work):
    """The Java side's configuration, or (None, why not)."""
    java = java_exe()
    if not java:
        return None, "no java (set JAVA_HOME or put java on PATH)"
    if not os.path.exists(args.shim_jar):
        return None, f"shim jar {args.shim_jar} not found"
    missing = [p for p in (os.path.join(gkl_oracle.jar_dir(), "gkl.jar"), shim.BINDINGS_JAR) if not os.path.exists(p)]
    if missing:
        return None, f"missing {', '.join(missing)} (set GKL_JARS to the directory of GKL's jars)"
    try:
        classes = java_classes.harness_classes(
            args.classes,
            work,
            sources=[os.path.join(REPO, "java_shim", "bench", "BenchSwCalls.java")],
            main_class="BenchSwCalls",
            carried="bench_classes",
        )
    except java_classes.HarnessError as e:
        return None, str(e)
    return {"java": java, "classes": classes, "shim_jar": args.shim_jar}, None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3000, help="calls in the mix (default 3000)")
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--order", choices=sorted(ORDERS), default="regions", help="the calls' order (default regions)")
    ap.add_argument("--reps", type=int, default=5, help="timed passes over the mix (default 5)")
    ap.add_argument("--jvms", type=int, default=16, help="JVMs of the many-callers run (0: skip)")
    ap.add_argument("--classes", default=None, help="directory holding BenchSwCalls.class")
    ap.add_argument("--shim-jar", default=shim.SHIM_JAR)
    ap.add_argument(
        "--baseline-jar",
        default=None,
        metavar="JAR",
        help="an earlier pyphmm's shim jar: also time it and this shim in one JVM, their passes in turn",
    )
    ap.add_argument("--json", default=None)
    ap.add_argument("--write-pairs", default=None, metavar="DIR", help="write per-kind pair files and exit")
    args = ap.parse_args(argv)
    if args.write_pairs:
        os.makedirs(args.write_pairs, exist_ok=True)
        for kind in ("read_vs_hap", "hap_vs_ref"):
            rows = [
                (r, a) for r, a, _, s, k in ORDERS[args.order](args.pairs, args.seed) if k == kind and s == "SOFTCLIP"
            ]
            with open(os.path.join(args.write_pairs, f"{kind}.tsv"), "wb") as f:
                f.write(b"".join(r + b"\t" + a + b"\n" for r, a in rows))
            print(f"{kind}: {len(rows)} pairs, {sum(len(r) * len(a) for r, a in rows) / len(rows):.0f} cells a pair")
        return 0
    inf = pyphmm.info()
    print(f"pyphmm {inf['version']}; cpu threads {inf['cpu_threads']}; {os.uname().machine}")
    pairs = ORDERS[args.order](args.pairs, args.seed)
    counts = {k: sum(1 for p in pairs if p[4] == k) for k in KINDS[:-1]}
    cells = sum(len(r) * len(a) for r, a, *_ in pairs)
    st = {}
    sw.align_batch(
        *zip(*[(r, a) for r, a, *_ in pairs]),
        params=[p[2] for p in pairs],
        overhang=[p[3] for p in pairs],
        backend="cpu",
        threads=1,
        stats=st,
    )
    print(
        f"mix, order {args.order}: {len(pairs)} calls {counts}, {cells / len(pairs):.0f} cells a call; "
        f"pyphmm resumes {st['reused_cells'] / cells:.1%} of the cells from an earlier call's columns"
    )
    report = {
        "info": inf,
        "order": args.order,
        "pairs": len(pairs),
        "counts": counts,
        "reused_cells": st["reused_cells"],
    }

    py_rows, py_results = python_calls(pairs, args.reps)
    columns = {"pyphmm.align (Python)": py_rows}
    with tempfile.TemporaryDirectory() as work:
        cfg, why = java_setup(args, work)
        if cfg is None:
            print(f"Java figures skipped: {why}")
        else:
            pairs_file = os.path.join(work, "pairs.tsv")
            write_pairs(pairs, pairs_file)
            outs = {n: os.path.join(work, f"{n}.out") for n in ("shim", "gkl", "shim2", "gkl2")}
            shim_rows, shim_log = java_one(cfg, pairs_file, "shim", args.reps, [outs["shim"]])
            gkl_rows, gkl_log = java_one(cfg, pairs_file, "gkl", args.reps, [outs["gkl"]])
            turn_rows, turn_log = java_one(cfg, pairs_file, "both", args.reps, [outs["shim2"], outs["gkl2"]])
            if args.baseline_jar:
                outs.update({n: os.path.join(work, f"{n}.out") for n in ("shim3", "base")})
                base_rows, base_log = java_one(
                    cfg,
                    pairs_file,
                    f"base={os.path.abspath(args.baseline_jar)}",
                    args.reps,
                    [outs["shim3"], outs["base"]],
                )
                turn_log += [ln for ln in base_log if "summary" in ln]
            # The shim's summary lines give the time inside pyphmm, without Java and JNI.
            for ln in gkl_log + shim_log + [f"(in turn) {ln}" for ln in turn_log if "summary" in ln]:
                if "smithwaterman" in ln.lower() or "pyphmm" in ln.lower() or "avx" in ln.lower():
                    print(f"  [jvm] {ln}")
            columns["shim, Java, 1 thread"] = shim_rows
            columns["GKL, Java, 1 thread"] = gkl_rows
            columns["shim, GKL in turn"] = turn_rows["shim"]
            columns["GKL, shim in turn"] = turn_rows["gkl"]
            if args.baseline_jar:
                columns["shim, baseline in turn"] = base_rows["shim"]
                columns["baseline, shim in turn"] = base_rows["base"]
            res = {n: read_results(path) for n, path in outs.items()}
            shim_res, gkl_res = res["shim"], res["gkl"]
            bad_py = sum(1 for x, y in zip(shim_res, py_results) if x != tuple(y))
            bad_gkl = sum(1 for x, y in zip(shim_res, gkl_res) if x != y)
            others = [n for n in ("shim2", "gkl2", "shim3", "base") if n in res]
            bad_runs = sum(1 for n in others for x, y in zip(shim_res, res[n]) if x != y)
            print(
                f"results: shim == pyphmm.align: {bad_py == 0} ({bad_py} differ); shim == GKL: {bad_gkl == 0} "
                f"({bad_gkl} differ); the runs in turn == the shim's: {bad_runs == 0} ({bad_runs} differ)"
            )
            report["mismatches"] = {"python": bad_py, "gkl": bad_gkl, "runs_in_turn": bad_runs}
            if args.jvms > 0:
                for mode in ("shim", "gkl"):
                    columns[f"{mode}, {args.jvms} JVMs"] = java_many(cfg, pairs_file, mode, args.reps, args.jvms)
    table("per call (median / p99 us) and GCUPS (cells over the summed time of each pair's fastest call)", columns)
    report["rows"] = columns
    one = columns.get("shim, Java, 1 thread")
    for title, a, b in (
        ("shim vs GKL, 1 thread, one JVM each", "shim, Java, 1 thread", "GKL, Java, 1 thread"),
        ("shim vs GKL, 1 thread, one JVM, passes in turn", "shim, GKL in turn", "GKL, shim in turn"),
        (
            "shim vs the baseline jar, 1 thread, one JVM, passes in turn",
            "shim, baseline in turn",
            "baseline, shim in turn",
        ),
    ):
        if a in columns and b in columns:
            print(f"\n{title}, per-call median (x faster):")
            x, y = columns[a], columns[b]
            for k in KINDS:
                print(
                    f"  {k:<14} {y[k]['median_us'] / x[k]['median_us']:6.2f}x   "
                    f"GCUPS {x[k]['gcups'] / y[k]['gcups'] if y[k]['gcups'] else 0:6.2f}x"
                )
    for label in (f"shim, {args.jvms} JVMs", f"gkl, {args.jvms} JVMs"):
        if label in columns:
            print(f"{label}: {columns[label]['all']['calls_per_s']:.0f} calls/s in all")
    base = one or py_rows
    print(
        f"\nGPU batch of one: to win it must return a haplotype-vs-reference call "
        f"({sum(len(r) * len(a) for r, a, *_, k in pairs if k == 'hap_vs_ref') // max(1, counts['hap_vs_ref'])} "
        f"cells) in under {base['hap_vs_ref']['median_us']:.1f} us (the CPU's median per call"
        f"{' from Java' if one else ' from Python'}), launch and copies included."
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
