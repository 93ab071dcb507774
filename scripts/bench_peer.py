#!/usr/bin/env python3
"""pyphmm vs the gpuPairHMM paper's code, side by side on one GPU.

  python3 scripts/bench_peer.py --peer DIR [--regions 2000] [--seed 1] [--arch 90]
  python3 scripts/bench_peer.py --skip-build --build BUILT_DIR ...

DIR is a checkout of https://github.com/asbschmidt/gpuPairHMM (not part of
this project; nothing of it is copied here). The script builds it in a
scratch directory (make GPUARCH=<arch>), then in one run:

(1) peak: the peer's own benchmark_peakperformance (square shapes, its
    GCUPS lines as printed), then pyphmm's peak benchmark on the square
    shapes it reports and on rectangular ones;
(2) file mode, end to end: each program reads a record file, computes and
    writes its results (process start, CUDA start-up, parsing and output
    included; best of 2), on the realistic set of bench_pairhmm_gpu.py
    (same seed) and on ../shared/data/1m.in. The peer has no timing output of
    its own in this version, hence wall time for both;
(3) the two result files compared: max |difference|, values differing by
    more than 1e-5, tokens that are not numbers and non-finite values on each
    side.
"""

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np

from devtools import ROOT
from pyphmm import io as pio

HERE = os.path.join(ROOT, "scripts")


def load_gpu_bench():
    spec = importlib.util.spec_from_file_location("bench_pairhmm_gpu", os.path.join(HERE, "bench_pairhmm_gpu.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_peer(src, build, arch):
    if os.path.exists(build):
        shutil.rmtree(build)
    shutil.copytree(src, build, ignore=shutil.ignore_patterns(".git"))
    t0 = time.perf_counter()
    p = subprocess.run(
        [
            "make",
            "-j",
            "4",
            f"GPUARCH={arch}",
            "GPUARCH_NUM_COMPILE_THREADS=4",
            "gpuPairHMM",
            "benchmark_peakperformance",
        ],
        cwd=build,
        capture_output=True,
        text=True,
    )
    if p.returncode:
        sys.exit(f"building the peer failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    print(f"built the peer in {time.perf_counter() - t0:.0f} s (GPUARCH={arch})")


def best_wall(cmd, reps=2):
    env = dict(os.environ)
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t0
        if p.returncode:
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        best = dt if best is None else min(best, dt)
    return best, p.stderr.strip().splitlines()[-1:] or [""]


def cells_of_file(path):
    cells = pairs = 0
    for reads, haps in pio.read_records(path):
        cells += int(np.diff(reads.offsets).sum()) * int(np.diff(haps.offsets).sum())
        pairs += len(reads) * len(haps)
    return pairs, cells


def _values(path):
    """Every number of a results file in order (headers included), NaN for a
    token that is not a number (the peer's writer can emit such tokens)."""
    vals, bad = [], 0
    with open(path) as f:
        for tok in f.read().split():
            try:
                vals.append(float(tok))
            except ValueError:
                vals.append(float("nan"))
                bad += 1
    return np.array(vals), bad


def compare(peer_out, ours_out):
    a, bad_a = _values(peer_out)
    b, bad_b = _values(ours_out)
    if a.shape != b.shape:
        return f"different token counts: peer {a.size} ({bad_a} not numbers), pyphmm {b.size} ({bad_b})"
    both = np.isfinite(a) & np.isfinite(b)
    d = np.abs(a[both] - b[both])
    return (
        f"{a.size} values: max |peer - pyphmm| {d.max() if d.size else 0:.3g}, "
        f"{int((d > 1e-5).sum())} differ by > 1e-5; not numbers: peer {bad_a}, pyphmm {bad_b}; "
        f"other non-finite: peer {int((~np.isfinite(a)).sum()) - bad_a}, pyphmm {int((~np.isfinite(b)).sum()) - bad_b}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", help="gpuPairHMM source checkout (not needed with --skip-build)")
    ap.add_argument("--build", default="/tmp/gpupairhmm-build", help="scratch directory for the peer's build")
    ap.add_argument("--arch", default="90", help="compute capability to build the peer for")
    ap.add_argument("--skip-build", action="store_true", help="--build already holds the peer's binaries")
    ap.add_argument("--skip", default="", help="comma list of peak,files")
    ap.add_argument("--regions", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--peak-pairs", type=int, default=500_000)
    ap.add_argument("--peer-peak-timeout", type=int, default=900, help="seconds for the peer's peak benchmark")
    ap.add_argument(
        "--files",
        nargs="*",
        default=[os.path.join(ROOT, "..", "shared", "data", "1m.in")],
        help="record files for (2) besides the realistic set",
    )
    a = ap.parse_args()
    if not a.skip_build and not a.peer:
        ap.error("--peer DIR is required unless --skip-build")
    if not a.skip_build:
        build_peer(os.path.abspath(a.peer), a.build, a.arch)
    gb = load_gpu_bench()

    skip = set(a.skip.split(","))
    if "peak" not in skip:
        bench_peaks(a, gb)
    if "files" not in skip:
        bench_files(a, gb)


def bench_peaks(a, gb):
    print("== (1) peak ==")
    print("-- peer: benchmark_peakperformance (square shapes; its own output) --")
    sys.stdout.flush()
    try:  # its output goes straight to ours (it runs many minutes: every kernel configuration)
        # line-buffered, so what it printed survives the timeout
        line_buffered = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
        cmd = line_buffered + [os.path.join(a.build, "benchmark_peakperformance")]
        subprocess.run(cmd, cwd=a.build, timeout=a.peer_peak_timeout)
    except subprocess.TimeoutExpired:
        print(f"(stopped after {a.peer_peak_timeout} s)")
    print("-- pyphmm --")
    gb.bench_peak(np.random.default_rng(a.seed), a.peak_pairs, [(128, 128), (256, 256), (128, 256), (256, 512)])


def bench_files(a, gb):
    print("== (2) file mode, end to end (best of 2 wall times) ==")
    realistic = os.path.join(a.build, "realistic.in")
    pio.write_input_records(realistic, gb.realistic(np.random.default_rng(a.seed + 1), a.regions))
    for path in [realistic] + list(a.files):
        pairs, cells = cells_of_file(path)
        peer_out, ours_out = os.path.join(a.build, "peer.out"), os.path.join(a.build, "pyphmm.out")
        t_peer, _ = best_wall([os.path.join(a.build, "gpuPairHMM"), "--inputfile", path, "--outputfile", peer_out])
        t_ours, summary = best_wall(
            [sys.executable, "-m", "pyphmm", "likelihoods", path, "-o", ours_out, "--backend", "cuda"]
        )
        print(
            f"{os.path.basename(path)}: {pairs} pairs, {cells / 1e9:.2f} G cells: peer {t_peer:.2f} s "
            f"({cells / t_peer / 1e9:.1f} GCUPS), pyphmm {t_ours:.2f} s ({cells / t_ours / 1e9:.1f} GCUPS); "
            f"pyphmm / peer time {t_ours / t_peer:.2f}"
        )
        print(f"  pyphmm's own summary: {summary[0]}")
        print(f"  results: {compare(peer_out, ours_out)}")


if __name__ == "__main__":
    main()
