#!/usr/bin/env python3
"""Soak test of the GATK shim: many computeLikelihoods calls in one JVM from
several threads, resident memory sampled inside the JVM, which must stay flat
after the warm-up (tests/java/ShimSoak.java does the calls).

  python3 scripts/soak_shim.py [--calls 1000000] [--threads 8]
        [--regions 200] [--bound-mib 16] [--classes DIR] [--shim-jar JAR]

Regions: --regions realistic small GATK regions (tests/oracle/shim.py's
generator: 1-12 reads of 10-151 bp, 1-4 haplotypes of 30-521 bp, varied
qualities), called round robin; each call builds GATK's holders afresh,
every 4th also aligns a read to a haplotype (Smith-Waterman), and every
result is compared with the region's first one.

Memory: the JVM runs with a fixed, pre-touched heap (-Xms = -Xmx,
AlwaysPreTouch, serial GC), so VmRSS moves only with native memory, code
and metadata. The first --warmup-fraction of the calls (default 10%) warm
up (every region seen by every thread's buffers, JIT); from there until the
threads finish, the growth (median of the last 5 samples minus median of the
first 5) must stay within --bound-mib; the fitted slope (bytes per call) is
printed too, but is noisy on short runs (the JIT and malloc move RSS by a
MiB or so). Exit status 1 when the bound is exceeded or any result differs.

Classes: --classes DIR, else compiled here with javac, else
.carry/soak_classes (scripts/prepare_gpu_carry.sh; for hosts with a JRE
only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401  (the repository root importable)

from devtools import java_classes
from devtools.oracle import java_harness as jh
from devtools.oracle import shim

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCES = ("Records.java", "ShimSoak.java")


def harness_classes(explicit, work, shim_jar):
    """Directory holding ShimSoak.class (devtools.java_classes)."""
    try:
        return java_classes.harness_classes(
            explicit,
            work,
            sources=[os.path.join(jh.JAVA_SOURCES, s) for s in SOURCES],
            main_class="ShimSoak",
            carried="soak_classes",
            classpath=[shim_jar, shim.BINDINGS_JAR],
        )
    except java_classes.HarnessError as e:
        sys.exit(f"soak_shim: {e}")


def analyse(samples, calls, warmup_fraction):
    """(rss after warm-up, rss at end, max, growth, slope bytes/call) in bytes."""
    # after the warm-up, while every thread still works (their done() at the
    # end releases per-thread buffers, which is not what is measured here)
    warm = [(c, kb * 1024) for c, kb in samples if warmup_fraction * calls <= c <= 0.98 * calls]
    if len(warm) < 10:
        sys.exit(f"soak_shim: only {len(warm)} samples after the warm-up: run more calls")
    first = statistics.median(r for _, r in warm[:5])
    last = statistics.median(r for _, r in warm[-5:])
    xs, ys = [c for c, _ in warm], [r for _, r in warm]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    return first, last, max(ys), last - first, slope


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--regions", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1_000_000)
    ap.add_argument("--heap", default="512m", help="fixed JVM heap (-Xms = -Xmx)")
    ap.add_argument("--warmup-fraction", type=float, default=0.1)
    ap.add_argument(
        "--bound-mib",
        type=float,
        default=16.0,
        help="allowed RSS growth after the warm-up (16 MiB over 1,000,000 calls: a leak of 17 bytes per call)",
    )
    ap.add_argument("--classes", default=None)
    ap.add_argument("--shim-jar", default=shim.SHIM_JAR)
    args = ap.parse_args(argv)
    if not os.path.exists(args.shim_jar):
        sys.exit(f"soak_shim: shim jar {args.shim_jar} not found (build it with setup.py, or pass --shim-jar)")
    with tempfile.TemporaryDirectory(prefix="pyphmm-soak-") as work:
        classes = harness_classes(args.classes, work, args.shim_jar)
        regions = shim.random_regions(args.regions, seed=args.seed, max_reads=12, max_haps=4)
        records = jh.write_regions(regions, os.path.join(work, "regions.in"))
        out = os.path.join(work, "soak.txt")
        cmd = [
            jh.java(),
            f"-Xms{args.heap}",
            f"-Xmx{args.heap}",
            "-XX:+AlwaysPreTouch",
            "-XX:+UseSerialGC",
            "-cp",
            os.pathsep.join([classes, args.shim_jar, shim.BINDINGS_JAR]),
            "ShimSoak",
            records,
            str(args.calls),
            str(args.threads),
            out,
        ]
        p = subprocess.run(cmd, capture_output=True, text=True)
        # pyphmm's lines: each banner once; the summaries (one per done()/close(),
        # running totals) last
        ours = [ln for ln in p.stderr.splitlines() if ln.startswith("pyphmm")]
        for line in [ln for ln in ours if ": backend " in ln] + [
            [ln for ln in ours if kind in ln][-1]
            for kind in (" PairHMM summary", " Smith-Waterman summary")
            if any(kind in ln for ln in ours)
        ]:
            print(line)
        if p.returncode != 0:
            print(p.stderr[-4000:], file=sys.stderr)
            return 1
        samples, done = [], None
        with open(out) as f:
            for line in f:
                f_ = line.split()
                if f_[0] == "rss":
                    samples.append((int(f_[1]), int(f_[2])))
                elif f_[0] == "done":
                    done = dict(zip(f_[1::2], f_[2::2]))
    first, last, peak, growth, slope = analyse(samples, args.calls, args.warmup_fraction)
    seconds = float(done["seconds"])
    mib = 1 << 20
    print(
        f"soak: {done['calls']} PairHMM calls + {done['sw']} Smith-Waterman calls on {args.threads} threads "
        f"over {args.regions} regions in {seconds:.1f} s ({int(done['calls']) / seconds:.0f} calls/s); "
        f"{done['mismatches']} results differ"
    )
    print(
        f"soak: VmRSS after warm-up ({args.warmup_fraction:.0%} of calls) {first / mib:.1f} MiB, at the end "
        f"{last / mib:.1f} MiB, peak {peak / mib:.1f} MiB; growth {growth / mib:+.2f} MiB "
        f"(bound {args.bound_mib:g} MiB), fitted slope {slope:+.2f} bytes/call over {len(samples)} samples"
    )
    ok = int(done["calls"]) == args.calls and done["mismatches"] == "0" and growth <= args.bound_mib * mib
    print("soak: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
