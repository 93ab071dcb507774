"""The stored peer data of the PDHMM Java tests: PD regions of both
devtools.pd_regions shapes (HaplotypeCaller's, 3 of at most 700 pairs;
issue 41's GATK-shaped, 4 of at most 300) and GKL 0.9's likelihoods for them, computed by GKL
0.9's own IntelPDHMM through GATK HEAD's calls (tests/java/GatkHeadPdhmm.java:
8 threads, AVX level and OpenMP FASTEST_AVAILABLE, 1024 MB, one
computeLikelihoods per region). CI has no GKL 0.9, so the tests compare
with these files:

    tests/data/pdhmm-gatk-head.in          the regions (tests/java/Records.java's format)
    tests/data/pdhmm-gatk-head.gkl09.txt   "D <region> <values>", Java's Double.toString

Written where a GKL 0.9 oracle exists ($GKL09_CLASSPATH, see
devtools.oracle.pdhmm_api):

    GKL09_CLASSPATH=gkl-0.9.0.jar:gatk-native-bindings-1.1.0.jar python3 -m devtools.pdhmm_head_data
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile

from . import ROOT, pd_regions
from .oracle import java_harness as jh
from .oracle import pdhmm_api

REGIONS = os.path.join(ROOT, "tests", "data", "pdhmm-gatk-head.in")
RESULTS = os.path.join(ROOT, "tests", "data", "pdhmm-gatk-head.gkl09.txt")
SEED = 4109


def regions():
    out = []
    for shape, n, max_pairs in (("hc", 3, 700), ("gatk", 4, 300)):
        small = [r for r in pd_regions.generate(30, SEED, shape) if len(r[0]) * len(r[1]) <= max_pairs]
        out += [jh.as_pd_holders(r) for r in small[:n]]
    return out


def run_head_caller(classpath, work, pd_file, *, env=None, jvm_args=()) -> tuple:
    """GatkHeadCaller's PDHMM part alone (no PairHMM regions or SW pairs) on
    classpath; returns ({region: values}, "I" info lines, stderr)."""
    classes = os.path.join(work, "classes")
    jh.compile_sources(classes, ["Records.java", "GatkHeadCaller.java", "GatkHeadPdhmm.java"], classpath)
    empty = os.path.join(work, "empty")
    open(empty, "w").close()
    out = os.path.join(work, "out.txt")
    p = jh.run_java(
        [classes, *classpath],
        "GatkHeadCaller",
        [empty, empty, out, "FASTEST_AVAILABLE", pd_file],
        jvm_args=[f"-Djava.io.tmpdir={work}", *jvm_args],
        env=env,
    )
    if p.returncode != 0:
        raise RuntimeError(f"GatkHeadCaller failed:\n{p.stderr[-4000:]}")
    return parse(open(out).read()), p.stderr


def parse(text: str) -> tuple:
    values, info = {}, {}
    for line in text.splitlines():
        f = line.split(" ")
        if f[0] == "D":
            values[int(f[1])] = [float(x) for x in f[2:]]
        elif f[0] == "I":
            info[f[1]] = f[2]
    return values, info


def main() -> int:
    cp = pdhmm_api.gkl09_classpath()
    if not cp:
        print("devtools.pdhmm_head_data: set GKL09_CLASSPATH to GKL 0.9's and bindings 1.1.0's jars", file=sys.stderr)
        return 2
    jh.write_pd_regions(regions(), REGIONS)
    env = {k: v for k, v in os.environ.items() if k != "USE_LIBRARY_PATH"}  # GKL's own libraries
    with tempfile.TemporaryDirectory() as work:
        (values, info), _ = run_head_caller(cp, work, REGIONS, env=env)
    if info.get("pdhmm") != pdhmm_api.GKL_CLASS:
        raise RuntimeError(f"GKL 0.9's IntelPDHMM did not load: {info}")
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo"], capture_output=True, text=True)
    with open(RESULTS, "w") as f:
        f.write("# GKL 0.9.0's IntelPDHMM (its own Java class and library) through GATK HEAD's calls\n")
        f.write("# (tests/java/GatkHeadPdhmm.java) on tests/data/pdhmm-gatk-head.in; AVX level FASTEST_AVAILABLE on\n")
        f.write(f"# {cpu.stdout.split(':')[-1].strip() or platform.processor()}; devtools/pdhmm_head_data.py\n")
        for k in sorted(values):
            f.write(f"D {k} " + " ".join(repr(v) for v in values[k]) + "\n")
    print(f"wrote {REGIONS} and {RESULTS}: {len(values)} regions, {sum(map(len, values.values()))} values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
