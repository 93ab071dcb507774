"""The Java test harnesses of tests/java/ (GATK HEAD's call sequence, the
shim soak, the Spark job): compiling them, writing their inputs, running
them in JVMs of their own with either pyphmm's shim jar or GKL's jars.

A harness JVM is a subprocess, never the shared jpype JVM: loading the shim
and GKL in one JVM needs separate class loaders, while these programs must
see GKL's class names exactly as GATK does.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from .. import jvm_guard
from . import gkl as gkl_oracle
from . import pdhmm_api, shim

JAVA_SOURCES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "java"
)


def java() -> str:
    """The java launcher a harness runs with (JAVA_HOME's, else PATH's)."""
    jvm_guard.check("java")
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    return shutil.which("java") or "java"


def require_javac() -> None:
    """Harnesses are compiled by the tests (CI installs a JDK); a host with a
    JRE only (the GPU host) skips them."""
    if not shutil.which("javac"):
        pytest.skip("needs a JDK (javac) to compile the Java test harness")


def compile_sources(dest, names, classpath, release: int = 11) -> str:
    """javac --release RELEASE of tests/java/NAMES into dest; returns dest."""
    require_javac()
    jvm_guard.check("javac")
    os.makedirs(dest, exist_ok=True)
    srcs = [os.path.join(JAVA_SOURCES, n) for n in names]
    p = subprocess.run(
        ["javac", "-nowarn", "--release", str(release), "-cp", os.pathsep.join(classpath), "-d", str(dest)] + srcs,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    return str(dest)


def shim_classpath() -> list:
    """What GATK's class path holds for GKL's classes under the shim: the
    shim jar and the native-bindings API (GKL's jar is never reached for
    those names because the shim comes first); bindings 1.1.0's pdhmm
    types, which Debian's 1.0.0 jar lacks, from java_shim/api/."""
    return [shim.SHIM_JAR, shim.BINDINGS_JAR, pdhmm_api.api_classes()]


def gkl_classpath() -> list:
    return gkl_oracle.class_path()


def gkl_library_path() -> str:
    """Where Debian's GKL loads its libraries from (its loader only reads
    java.library.path)."""
    return os.environ.get("GKL_JNI", "/usr/lib/jni")


def write_regions(regions, path) -> str:
    """Record file (SPEC section 2) for tuple regions of tests/oracle/shim.py."""
    with open(path, "w") as f:
        for reads, haps in regions:
            f.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                f.write(" ".join([r[0].decode()] + [bytes(q + 33 for q in x).decode() for x in r[1:]]) + "\n")
            for h in haps:
                f.write(h.decode() + "\n")
    return str(path)


def as_pd_holders(region):
    """A devtools.pd_regions region (ReadBatch, PDHaplotypeBatch) as plain
    bytes: reads (bases, quals, ins, dels, gcp), haplotypes (bases, pd),
    the fields of bindings 1.1.0's pdhmm holders."""
    reads, haps = region
    out = []
    for s, e in zip(reads.offsets[:-1].tolist(), reads.offsets[1:].tolist()):
        out.append(tuple(getattr(reads, f)[s:e].tobytes() for f in ("bases", "quals", "ins", "dels", "gcp")))
    spans = zip(haps.offsets[:-1].tolist(), haps.offsets[1:].tolist())
    return out, [(haps.bases[s:e].tobytes(), haps.pd[s:e].tobytes()) for s, e in spans]


def pd_region_cells(region) -> int:
    """Sum of read lengths x sum of haplotype lengths of a holders-form region."""
    reads, haps = region
    return sum(len(r[0]) for r in reads) * sum(len(h[0]) for h in haps)


def write_pd_regions(regions, path) -> str:
    """PDHMM regions (as_pd_holders' form) as tests/java/Records.java reads
    them: a record file whose haplotype lines carry the PD bytes,
    comma-separated signed values, after the bases."""
    with open(path, "w") as f:
        for reads, haps in regions:
            f.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                f.write(" ".join([r[0].decode()] + [bytes(q + 33 for q in x).decode() for x in r[1:]]) + "\n")
            for bases, pd in haps:
                f.write(bases.decode() + " " + ",".join(str(b - 256 if b > 127 else b) for b in pd) + "\n")
    return str(path)


def write_sw_pairs(pairs, path) -> str:
    """REF TAB ALT TAB m,x,o,e lines."""
    with open(path, "w") as f:
        for ref, alt, p in pairs:
            f.write(f"{ref.decode()}\t{alt.decode()}\t{','.join(map(str, p))}\n")
    return str(path)


def run_java(classpath, main, args, *, jvm_args=(), env=None, timeout=600):
    cmd = [java(), *jvm_args, "-cp", os.pathsep.join(classpath), main, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def pyphmm_lines(stderr: str) -> list:
    """pyphmm's own log lines (banner, summaries, loader messages)."""
    return [ln for ln in stderr.splitlines() if ln.startswith("pyphmm")]
