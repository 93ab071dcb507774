"""The multi-process benchmark harness behind scripts/bench_multiproc.py
(whose docstring is the manual): JVM phases, the comparison with GKL, the
figures. A module so that tests can reach its parts."""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from devtools import java_classes, jvm_guard
from devtools.oracle import gkl as gkl_oracle
from pyphmm import mps

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout

HARNESS = "BenchMultiproc"
HARNESS_SRC = os.path.join(REPO, "java_shim", "bench", HARNESS + ".java")
DEFAULT_SHIM_JAR = os.environ.get("PYPHMM_GATK_JAR", os.path.join(REPO, "pyphmm", "pyphmm-gatk.jar"))
AVX_CLASS = "com.intel.gkl.pairhmm.IntelPairHmm"
OMP_CLASS = "com.intel.gkl.pairhmm.IntelPairHmmOMP"
TOL = 1e-5
# Writing GO to K pipes takes microseconds; a larger spread of the JVMs'
# barrier times means their clocks differ.
CLOCK_SKEW_MAX_NS = 5_000_000_000


class BenchError(RuntimeError):
    """A run that cannot be trusted: a JVM failed, or results or counts disagree."""


# ---- inputs ------------------------------------------------------------------


def scan_regions(path: str) -> list:
    """(reads, haplotypes, cells) per record of a record file, without
    building anything: the parent needs only the shapes."""
    out = []
    with open(path, "rb") as f:
        for header in f:
            if not header.strip():
                continue
            fields = header.split()
            if len(fields) != 2:
                raise BenchError(f"{path}: record {len(out)}: header {header.strip()[:40]!r} is not 'R H'")
            nr, nh = int(fields[0]), int(fields[1])
            read_bases = sum(len(f.readline().split(None, 1)[0]) for _ in range(nr))
            hap_bases = sum(len(f.readline().strip()) for _ in range(nh))
            out.append((nr, nh, read_bases * hap_bases))
    if not out:
        raise BenchError(f"{path} holds no records")
    return out


def generate(preset: str, count: int, seed: int, path: str) -> None:
    """Writes scripts/gen_regions.py's preset regions (in a child process, so
    this one never loads the native library)."""
    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "scripts", "gen_regions.py"),
            "--preset",
            preset,
            "--regions",
            str(count),
            "--seed",
            str(seed),
            "--output",
            path,
        ],
        check=True,
    )


def harness_classes(explicit: str | None, work: str) -> str:
    """Directory holding BenchMultiproc.class (devtools.java_classes)."""
    bindings = os.path.join(gkl_oracle.jar_dir(), "gatk-native-bindings.jar")
    try:
        return java_classes.harness_classes(
            explicit, work, sources=[HARNESS_SRC], main_class=HARNESS, carried="bench_classes", classpath=[bindings]
        )
    except java_classes.HarnessError as e:
        raise BenchError(str(e)) from None


def java_exe() -> str:
    jvm_guard.check("the benchmark's JVMs")
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    exe = shutil.which("java")
    if not exe:
        raise BenchError("no java (set JAVA_HOME to a JRE or put java on PATH)")
    return exe


def check_inputs(shim_jar: str) -> None:
    if not os.path.exists(shim_jar):
        raise BenchError(f"shim jar {shim_jar} not found (build it with setup.py, or pass --shim-jar)")
    need = [os.path.join(gkl_oracle.jar_dir(), n) for n in ("gkl.jar", "gatk-native-bindings.jar")]
    missing = [p for p in need if not os.path.exists(p)]
    if missing:
        raise BenchError(f"missing {', '.join(missing)} (set GKL_JARS to the directory of GKL's jars)")


# ---- one phase: K JVMs behind one start barrier -------------------------------


class Phase:
    """K JVMs x T caller threads of one binding, started together."""

    def __init__(self, name, impl, class_path, procs, threads, native_threads, warmup, reps, env_extra=None):
        self.name, self.impl, self.class_path = name, impl, class_path
        self.procs, self.threads, self.native_threads = procs, threads, native_threads
        self.warmup, self.reps = warmup, reps
        self.env_extra = env_extra or {}


def _reader(proc_index: int, stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put((proc_index, line.rstrip("\n")))
    lines.put((proc_index, None))


def _stderr_tail(path: str, n: int = 25) -> str:
    with open(path, errors="replace") as f:
        return "\n".join(f.read().splitlines()[-n:])


def run_phase(cfg: dict, phase: Phase, regions_path: str, work: str) -> list:
    """Starts the phase's JVMs, releases them together once all are READY,
    and returns one record per process: its JSON line, its result and
    latency arrays per thread, and its pyphmm stderr lines."""
    env = dict(os.environ, **phase.env_extra)
    cmd = [cfg["java"]] + os.environ.get("JAVA_OPTS", "").split()
    if os.environ.get("GKL_JNI"):
        cmd.append(f"-Djava.library.path={os.environ['GKL_JNI']}")
    cmd += ["-cp", os.pathsep.join([cfg["classes"]] + phase.class_path), HARNESS, phase.impl, regions_path]
    lines: queue.Queue = queue.Queue()
    children, prefixes, errs = [], [], []
    deadline = time.monotonic() + cfg["timeout"]
    try:
        for p in range(phase.procs):
            prefix = os.path.join(work, f"{phase.name}.{p}")
            err_path = prefix + ".stderr"
            # Signals wait until the JVM is on the list the `finally` kills.
            with open(err_path, "w") as err, mps.signals_deferred():
                child = subprocess.Popen(
                    cmd
                    + [
                        str(p),
                        str(phase.procs),
                        str(phase.threads),
                        str(phase.native_threads),
                        str(phase.warmup),
                        str(phase.reps),
                        prefix,
                    ],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env=env,
                )
                children.append(child)
            prefixes.append(prefix)
            errs.append(err_path)
            threading.Thread(target=_reader, args=(p, child.stdout, lines), daemon=True).start()

        def collect(want) -> dict:
            got = {}
            while len(got) < phase.procs:
                try:
                    p, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise BenchError(f"{phase.name}: timed out after {cfg['timeout']} s") from None
                if line is None:
                    if p in got:  # that JVM's last line came before its end of output
                        continue
                    children[p].wait()
                    raise BenchError(
                        f"{phase.name}: JVM {p} exited (status {children[p].returncode}) before "
                        f"it was done; its stderr ends with:\n{_stderr_tail(errs[p])}"
                    )
                if want(line):
                    got[p] = line
            return got

        collect(lambda ln: ln == "READY")
        for child in children:  # the barrier: every JVM is ready, release them together
            child.stdin.write("GO\n")
            child.stdin.flush()
        done = collect(lambda ln: ln.startswith("{"))
        for p, child in enumerate(children):
            try:
                child.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise BenchError(f"{phase.name}: JVM {p} did not exit after its results") from None
            if child.returncode != 0:
                raise BenchError(
                    f"{phase.name}: JVM {p} exited with status {child.returncode}:\n{_stderr_tail(errs[p])}"
                )
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    out = []
    for p in range(phase.procs):
        rec = json.loads(done[p])
        for t in rec["threads"]:
            t["res"] = np.fromfile(f"{prefixes[p]}.{t['t']}.res", dtype=np.float64)
            t["lat"] = np.fromfile(f"{prefixes[p]}.{t['t']}.lat", dtype=np.int64)
        with open(errs[p], errors="replace") as f:
            rec["pyphmm_lines"] = [ln for ln in f.read().splitlines() if ln.startswith("pyphmm")]
        out.append(rec)
    return out


# ---- results -------------------------------------------------------------------


def assemble(procs_out: list, shapes: list, procs: int, threads: int) -> tuple:
    """Every region's likelihoods (flat float64 arrays, region order) from the
    threads' files, plus the process that computed each region."""
    workers = procs * threads
    flat: list = [None] * len(shapes)
    owner = [0] * len(shapes)
    for rec in procs_out:
        for t in rec["threads"]:
            w = rec["proc"] * threads + t["t"]
            pos = 0
            for j in range(w, len(shapes), workers):
                n = shapes[j][0] * shapes[j][1]
                if pos + n > t["res"].size:
                    raise BenchError(f"process {rec['proc']} thread {t['t']}: fewer results than its regions need")
                flat[j], owner[j] = t["res"][pos : pos + n], rec["proc"]
                pos += n
            if pos != t["res"].size:
                raise BenchError(f"process {rec['proc']} thread {t['t']}: {t['res'].size - pos} results too many")
    return flat, owner


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b|, with equal values (-inf included) differing by 0 and NaN
    or a one-sided infinity by inf."""
    if a.size == 0:
        return 0.0
    same = a == b
    with np.errstate(invalid="ignore"):
        d = np.where(same, 0.0, np.abs(a - b))
    d[np.isnan(d)] = np.inf
    return float(d.max())


def compare(flat: list, owner: list, ref: list, procs: int) -> list:
    """max |diff| vs the reference per process."""
    worst = [0.0] * procs
    for j, (a, b) in enumerate(zip(flat, ref)):
        worst[owner[j]] = max(worst[owner[j]], max_diff(a, b))
    return worst


def summarize(
    name: str, label: str, procs_out: list, shapes: list, reps: int, threads: int, diffs: list | None
) -> dict:
    """Per-process and aggregate figures; prints them."""
    total_cells = sum(c for _, _, c in shapes) * reps
    cells = sum(t["cells"] for r in procs_out for t in r["threads"])
    if cells != total_cells:
        raise BenchError(f"{name}: the JVMs computed {cells} cells, the file holds {total_cells} for {reps} passes")
    go = [r["go_ns"] for r in procs_out]
    if max(go) - min(go) > CLOCK_SKEW_MAX_NS:  # nanoTime is CLOCK_MONOTONIC, one clock per host, on Linux
        raise BenchError(
            f"{name}: the JVMs' barrier times lie {(max(go) - min(go)) / 1e9:.1f} s apart: "
            "their clocks are not comparable (System.nanoTime is CLOCK_MONOTONIC on Linux only)"
        )
    end = max(t["end_ns"] for r in procs_out for t in r["threads"])
    span = (end - min(go)) / 1e9
    lat_all = np.concatenate([t["lat"] for r in procs_out for t in r["threads"]])
    print(f"\n{label}")
    rows = []
    for r in sorted(procs_out, key=lambda r: r["proc"]):
        c = sum(t["cells"] for t in r["threads"])
        s = (max(t["end_ns"] for t in r["threads"]) - r["go_ns"]) / 1e9
        lat = np.concatenate([t["lat"] for t in r["threads"]])
        row = {
            "proc": r["proc"],
            "regions": sum(t["regions"] for t in r["threads"]),
            "cells": c,
            "seconds": s,
            "gcups": c / s / 1e9 if s > 0 else 0.0,
            "median_us": _pct(lat, 50),
            "p99_us": _pct(lat, 99),
        }
        if diffs is not None:
            row["max_diff"] = diffs[r["proc"]]
        rows.append(row)
        print(
            f"  process {r['proc']:>2}: {row['regions']} regions, {c / 1e9:.3f} G cells in {s:.4f} s = "
            f"{row['gcups']:.2f} GCUPS; per call median {row['median_us']:.1f} us, p99 {row['p99_us']:.1f} us"
            + (f"; max |diff| vs GKL AVX {row['max_diff']:.2g}" if diffs is not None else "")
        )
        if threads > 1:
            for t in r["threads"]:
                ts = (t["end_ns"] - t["start_ns"]) / 1e9
                print(
                    f"      thread {t['t']:>2}: {t['regions']} regions, {t['cells'] / ts / 1e9 if ts else 0:.2f} "
                    f"GCUPS, median {_pct(t['lat'], 50):.1f} us"
                )
    agg = {
        "phase": name,
        "label": label,
        "cells": cells,
        "seconds": span,
        "gcups": cells / span / 1e9,
        "median_us": _pct(lat_all, 50),
        "p99_us": _pct(lat_all, 99),
        "barrier_skew_ms": (max(go) - min(go)) / 1e6,
        "processes": rows,
    }
    print(
        f"  aggregate {label}: {cells / 1e9:.3f} G cells in {span:.4f} s = {agg['gcups']:.2f} GCUPS; "
        f"per call median {agg['median_us']:.1f} us, p99 {agg['p99_us']:.1f} us; "
        f"barrier skew {agg['barrier_skew_ms']:.2f} ms"
    )
    return agg


def _pct(lat_ns: np.ndarray, q: float) -> float:
    if lat_ns.size == 0:
        return 0.0
    s = np.sort(lat_ns)
    return float(s[min(s.size - 1, int(s.size * q / 100))]) / 1e3


def pyphmm_lines(procs_out: list) -> list:
    """The shim's stderr lines (banner, hints), each with how many JVMs printed it."""
    counts: dict = {}
    for r in procs_out:
        for ln in dict.fromkeys(r["pyphmm_lines"]):
            counts[ln] = counts.get(ln, 0) + 1
    return [f"  [{n} of {len(procs_out)} JVMs] {ln}" for ln, n in counts.items()]


# ---- main ----------------------------------------------------------------------


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {v}")
    return v


def _non_negative(text: str) -> int:
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {v}")
    return v


def parse_args(argv=None, doc: str = ""):
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", "-k", type=_positive, default=1, help="JVMs per phase (default 1)")
    ap.add_argument("--threads", "-t", type=_positive, default=1, help="caller threads per JVM (default 1)")
    ap.add_argument("--regions", default=None, help="record file (default: generated, see --preset)")
    ap.add_argument(
        "--preset", choices=("typical", "small"), default="typical", help="generated regions' shape (default typical)"
    )
    ap.add_argument("--count", type=_positive, default=1500, help="generated regions (default 1500)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generated regions")
    ap.add_argument("--mps", choices=("off", "on", "both"), default="off", help="shim phase without/with MPS")
    ap.add_argument("--reps", type=_positive, default=3, help="timed passes of the shim (default 3)")
    ap.add_argument("--gkl-reps", type=_positive, default=1, help="timed passes of GKL (default 1)")
    ap.add_argument(
        "--warmup",
        type=_non_negative,
        default=None,
        help=f"the shim's untimed passes before the barrier (default {GPU_WARMUP} on a GPU, where the JVM compiles "
        "the call path only after thousands of ~100 us calls; 1 on the CPU backend)",
    )
    ap.add_argument(
        "--gkl-warmup", type=_non_negative, default=1, help="GKL's untimed passes before the barrier (default 1)"
    )
    ap.add_argument(
        "--omp-threads",
        type=_positive,
        default=os.cpu_count() or 1,
        help="GKL OMP's native threads (default: all cores)",
    )
    ap.add_argument("--classes", default=None, help=f"directory with a prebuilt {HARNESS}.class")
    ap.add_argument("--shim-jar", default=DEFAULT_SHIM_JAR, help="pyphmm's GATK shim jar")
    ap.add_argument("--timeout", type=_positive, default=3600, help="seconds per phase (default 3600)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    return ap.parse_args(argv)


# The shim's default warm-up passes on a GPU. With one pass over a share of
# ~100 regions, 16 JVMs under MPS still compiled the Java side of the call
# during the timed passes (calls of 1-4 ms); 20 passes reach the steady state.
GPU_WARMUP = 20


def default_warmup(extra_env: dict) -> int:
    """The shim's warm-up passes when --warmup is not given: GPU_WARMUP, or 1
    where the shim JVMs run the CPU backend (calls of milliseconds)."""
    return 1 if dict(os.environ, **extra_env).get("PYPHMM_BACKEND") == "cpu" else GPU_WARMUP


def shim_env() -> tuple:
    """Environment additions for the shim's JVMs and a note on the backend."""
    if os.environ.get("PYPHMM_BACKEND"):
        return {}, f"PYPHMM_BACKEND={os.environ['PYPHMM_BACKEND']} (from the environment)"
    if not os.path.exists("/dev/nvidiactl"):
        return {"PYPHMM_BACKEND": "cpu"}, "no NVIDIA GPU here: the shim runs pyphmm's CPU backend (PYPHMM_BACKEND=cpu)"
    return {}, "backend auto (GPU where the calibrated threshold sends calls)"


def run(args, work: str) -> int:
    if args.mps != "off":
        mps.control_program()  # no MPS here: say so before minutes of GKL
    check_inputs(args.shim_jar)
    cfg = {
        "java": java_exe(),
        "classes": harness_classes(args.classes, work),
        "timeout": args.timeout,
    }
    if args.regions:
        regions_path, source = os.path.abspath(args.regions), args.regions
    else:
        regions_path = os.path.join(work, "regions.in")
        generate(args.preset, args.count, args.seed, regions_path)
        source = f"gen_regions.py --preset {args.preset} --regions {args.count} --seed {args.seed}"
    shapes = scan_regions(regions_path)
    cells = sum(c for _, _, c in shapes)
    k, t = args.processes, args.threads
    extra, backend_note = shim_env()
    if args.warmup is None:
        args.warmup = default_warmup(extra)
    gkl_cp = gkl_oracle.class_path()
    version = subprocess.run([cfg["java"], "-version"], capture_output=True, text=True).stderr.splitlines()
    print(
        f"bench_multiproc: {len(shapes)} regions ({source}), {sum(r * h for r, h, _ in shapes)} pairs, "
        f"{cells / 1e9:.3f} G cells per pass; {os.cpu_count()} cores; {k} JVM(s) x {t} caller thread(s)"
    )
    print(
        f"JVM: {version[0] if version else cfg['java']}; harness {cfg['classes']}; shim {args.shim_jar}; "
        f"GKL jars {gkl_oracle.jar_dir()}; GKL_JNI {os.environ.get('GKL_JNI', '(default path)')}"
    )
    print(
        f"shim: {backend_note}; passes (untimed warm-up before the barrier / timed): shim {args.warmup} / "
        f"{args.reps}, GKL {args.gkl_warmup} / {args.gkl_reps}"
    )

    phases = []  # (name, label, Phase, mps?)
    shape = f"{k} JVM{'s' if k > 1 else ''} x {t} thread{'s' if t > 1 else ''}"
    for mode in ("off", "on") if args.mps == "both" else (args.mps,):
        phases.append(
            (
                f"shim-mps-{mode}",
                f"pyphmm shim, {shape}, MPS {mode}",
                Phase(f"shim-mps-{mode}", AVX_CLASS, [args.shim_jar] + gkl_cp, k, t, 1, args.warmup, args.reps, extra),
                mode == "on",
            )
        )
    phases.append(
        (
            "gkl-avx",
            f"GKL AVX, {shape}, 1 native thread each",
            Phase("gkl-avx", AVX_CLASS, gkl_cp, k, t, 1, args.gkl_warmup, args.gkl_reps),
            False,
        )
    )
    phases.append(
        (
            "gkl-omp",
            f"GKL OMP, 1 JVM x 1 thread, {args.omp_threads} native threads",
            Phase("gkl-omp", OMP_CLASS, gkl_cp, 1, 1, args.omp_threads, args.gkl_warmup, args.gkl_reps),
            False,
        )
    )

    outputs = {}
    for name, _label, phase, under_mps in phases:
        if under_mps:
            with mps.private_daemon() as mps_env:
                phase.env_extra = dict(phase.env_extra, **mps_env)
                print(f"\nMPS: control daemon started, pipe dir {mps_env[mps.PIPE_ENV]} (quit after the phase)")
                outputs[name] = run_phase(cfg, phase, regions_path, work)
            pipes = {r["mps_pipe"] for r in outputs[name]}
            if pipes != {mps_env[mps.PIPE_ENV]}:
                raise BenchError(f"{name}: the JVMs saw CUDA_MPS_PIPE_DIRECTORY {pipes}, not the daemon's")
        else:
            outputs[name] = run_phase(cfg, phase, regions_path, work)

    ref, _ = assemble(outputs["gkl-avx"], shapes, k, t)
    report = {
        "regions": len(shapes),
        "source": source,
        "cells_per_pass": cells,
        "processes": k,
        "threads": t,
        "phases": [],
    }
    failures = []
    for name, label, phase, _ in phases:
        flat, owner = assemble(outputs[name], shapes, phase.procs, phase.threads)
        diffs = compare(flat, owner, ref, phase.procs) if name != "gkl-avx" else None
        agg = summarize(name, label, outputs[name], shapes, phase.reps, phase.threads, diffs)
        for line in pyphmm_lines(outputs[name]):
            print(line)
        if diffs is not None:
            agg["max_diff"] = max(diffs)
            for p, d in enumerate(diffs):
                if not d <= TOL:
                    failures.append(f"{label}, process {p}: max |diff| vs GKL AVX {d:.3g} > {TOL:g}")
        report["phases"].append(agg)

    by_name = {a["phase"]: a for a in report["phases"]}
    print("\nsummary")
    for a in report["phases"]:
        if a["phase"].startswith("shim"):
            print(
                f"  {a['label']}: {a['gcups']:.2f} GCUPS = {a['gcups'] / by_name['gkl-avx']['gcups']:.1f}x GKL AVX "
                f"({by_name['gkl-avx']['gcups']:.2f}), {a['gcups'] / by_name['gkl-omp']['gcups']:.1f}x GKL OMP "
                f"({by_name['gkl-omp']['gcups']:.2f}); max |diff| vs GKL AVX {a['max_diff']:.2g}"
            )
    print(f"  GKL OMP vs GKL AVX: max |diff| {by_name['gkl-omp']['max_diff']:.2g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if failures:
        print("\nFAIL: results differ from GKL's by more than " + f"{TOL:g}:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    print(f"\nresults: every process within {TOL:g} of GKL AVX")
    return 0


def main(argv=None, doc: str = "") -> int:
    args = parse_args(argv, doc)
    sys.stdout.reconfigure(line_buffering=True)  # progress in order with the JVMs' and errors' stderr
    try:
        with mps.signals_raise():  # SIGTERM/SIGHUP unwind like Ctrl-C: JVMs killed, MPS quit
            with tempfile.TemporaryDirectory(prefix="bench-multiproc-") as work:
                return run(args, work)
    except (BenchError, OSError, subprocess.CalledProcessError) as e:  # (MpsError is an OSError)
        print(f"bench_multiproc: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench_multiproc: interrupted", file=sys.stderr)
        return 130
