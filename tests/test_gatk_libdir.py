"""`pyphmm gatk-libdir`: a java.library.path directory for GATK's
USE_LIBRARY_PATH=1 mode, under which GKL's loader takes *every* GKL library
from that directory. pyphmm answers PairHMM, PDHMM, Smith-Waterman and
utils; GKL's own compression library comes from the user's GATK jar
(com/intel/gkl/native/) or a directory of GKL libraries, and its absence is
said on stderr.

The stand-in "GATK jar" carries Debian's GKL 0.8.10 (classes and libraries
under com/intel/gkl/native/, as GATK's local jar does). GKL 0.9's own
PDHMM class on such a directory: tests/test_pdhmm_jni.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from devtools import sw_pairs as swgen
from devtools.child import child_env
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import java_harness as jh
from devtools.oracle import shim

REPO = shim.REPO
DEBIAN_JNI = jh.gkl_library_path()
PYPHMM_NAMES = (
    "libgkl_pairhmm.so",
    "libgkl_pairhmm_omp.so",
    "libgkl_pdhmm.so",
    "libgkl_smithwaterman.so",
    "libgkl_utils.so",
)
# Debian's GKL 0.8.10 (no PDHMM)
DEBIAN_GKL_LIBS = (
    "libgkl_pairhmm.so",
    "libgkl_pairhmm_omp.so",
    "libgkl_smithwaterman.so",
    "libgkl_utils.so",
    "libgkl_compression.so",
)


def _standin_gatk_jar(path, extra_native=None):
    """GKL's classes + the bindings API + Debian's GKL libraries under
    com/intel/gkl/native/ (+ extra_native {name: bytes})."""
    with zipfile.ZipFile(path, "w") as out:
        for jar in (os.path.join(gkl_oracle.jar_dir(), "gkl.jar"), shim.BINDINGS_JAR):
            with zipfile.ZipFile(jar) as z:
                for name in z.namelist():
                    if name.endswith(".class"):
                        out.writestr(name, z.read(name))
        for name in DEBIAN_GKL_LIBS:
            out.write(os.path.join(DEBIAN_JNI, name), "com/intel/gkl/native/" + name)
        for name, data in (extra_native or {}).items():
            out.writestr("com/intel/gkl/native/" + name, data)
    return str(path)


@pytest.fixture(scope="module")
def standin_jar(tmp_path_factory):
    if not os.path.exists(os.path.join(DEBIAN_JNI, "libgkl_compression.so")):
        pytest.fail(f"Debian's GKL libraries not found in {DEBIAN_JNI} (apt-get install libgkl-jni)")
    return _standin_gatk_jar(tmp_path_factory.mktemp("gatkjar") / "gatk-package-local.jar")


def _libdir(*args, env=None):
    e = child_env(REPO, **(env or {}))
    if "GATK_LOCAL_JAR" not in (env or {}):
        e.pop("GATK_LOCAL_JAR", None)
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", "gatk-libdir", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=e,
    )


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _check_pyphmm_names(d):
    lib = os.path.realpath(os.path.join(REPO, "pyphmm", "libpyphmm.so"))
    for name in PYPHMM_NAMES:
        assert os.path.realpath(d / name) == lib, name


@pytest.mark.parametrize("source", ["--gatk-jar", "GATK_LOCAL_JAR", "--gkl-libs"])
def test_libdir_places_gkls_compression_library(tmp_path, standin_jar, source):
    d = tmp_path / "libs"
    if source == "--gatk-jar":
        p = _libdir(d, "--gatk-jar", standin_jar)
    elif source == "GATK_LOCAL_JAR":
        p = _libdir(d, env={"GATK_LOCAL_JAR": standin_jar})
    else:
        p = _libdir(d, "--gkl-libs", DEBIAN_JNI)
    assert p.returncode == 0, p.stderr
    _check_pyphmm_names(d)  # pyphmm's, although the jar carries GKL's PairHMM too
    assert _read(d / "libgkl_compression.so") == _read(os.path.join(DEBIAN_JNI, "libgkl_compression.so"))
    assert str(d / "libgkl_compression.so") in p.stdout.split()
    assert "warning" not in p.stderr, p.stderr  # nothing is missing


def test_libdir_pdhmm_is_pyphmms_even_if_the_jar_has_gkls(tmp_path):
    # (any library's bytes stand for GKL 0.9's libgkl_pdhmm.so: only placement is checked)
    gkls = _read(os.path.join(DEBIAN_JNI, "libgkl_utils.so"))
    jar = _standin_gatk_jar(tmp_path / "gatk.jar", {"libgkl_pdhmm.so": gkls})
    p = _libdir(tmp_path / "libs", "--gatk-jar", jar, "--copy")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
    for name in PYPHMM_NAMES:
        assert os.path.realpath(tmp_path / "libs" / name) == str(tmp_path / "libs" / "libpyphmm.so"), name


def test_libdir_without_gkl_says_what_is_missing(tmp_path):
    p = _libdir(tmp_path / "libs")
    assert p.returncode == 0, p.stderr
    _check_pyphmm_names(tmp_path / "libs")
    warnings = [ln for ln in p.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1, p.stderr
    assert "libgkl_compression.so" in warnings[0] and "deflater" in warnings[0] and "--gatk-jar" in warnings[0]


def test_libdir_rejects_missing_sources(tmp_path):
    for args in (["--gatk-jar", tmp_path / "nope.jar"], ["--gkl-libs", tmp_path / "nodir"]):
        p = _libdir(tmp_path / "libs", *args)
        assert p.returncode == 2 and "not found" in p.stderr, p.stderr
    (tmp_path / "bad.jar").write_bytes(b"not a zip")
    p = _libdir(tmp_path / "libs", "--gatk-jar", tmp_path / "bad.jar")
    assert p.returncode == 2 and "not a jar" in p.stderr, p.stderr


@pytest.mark.jvm
@pytest.mark.slow
def test_gkl_classes_compress_and_pyphmm_computes_from_libdir(tmp_path, standin_jar):
    """One GATK-like JVM with GKL's own classes under USE_LIBRARY_PATH=1:
    Intel's deflater/inflater round-trip a BGZF-sized block (and the JDK
    inflates Intel's output), and GATK HEAD's PairHMM/Smith-Waterman calls
    are answered by pyphmm with GKL's results."""
    d = tmp_path / "libs"
    assert _libdir(d, "--gatk-jar", standin_jar).returncode == 0
    regions = shim.random_regions(16, seed=1515)
    refs, alts, _ = swgen.make_pairs(60, seed=1515)
    pairs = [(r, a, (10, -15, -30, -5)) for r, a in zip(refs, alts)]
    rfile = jh.write_regions(regions, tmp_path / "regions.in")
    sfile = jh.write_sw_pairs(pairs, tmp_path / "pairs.tsv")
    classes = jh.compile_sources(
        tmp_path / "classes", ["Records.java", "GatkHeadCaller.java", "LibdirGatkRun.java"], jh.gkl_classpath()
    )
    env = child_env(REPO, USE_LIBRARY_PATH="1")
    env.pop("PYPHMM_LOG", None)
    p = jh.run_java(
        [classes, standin_jar] + jh.gkl_classpath(),
        "LibdirGatkRun",
        [tmp_path / "c.txt", rfile, sfile, tmp_path / "out.txt"],
        jvm_args=[f"-Djava.library.path={d}", f"-Djava.io.tmpdir={tmp_path}"],
        env=env,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    c = (tmp_path / "c.txt").read_text().split()
    assert c == [
        "C",
        "true",
        "true",
        "com.intel.gkl.compression.IntelDeflater",
        "com.intel.gkl.compression.IntelInflater",
        "60000",
        c[6],
        "true",
        "true",
    ], c
    assert 0 < int(c[6]) < 60000 / 3  # compressed (4 letters: ~2 bits a base)
    assert f"Loading libgkl_compression.so from {d}" in p.stderr
    lib = os.path.realpath(os.path.join(REPO, "pyphmm", "libpyphmm.so"))
    banners = [ln for ln in jh.pyphmm_lines(p.stderr) if ": backend " in ln]
    assert len(banners) == 2 and all(ln.endswith(f"; library {lib}") for ln in banners), p.stderr[-3000:]
    # the values are GKL's (GKL itself, from Debian's directory, in its own JVM)
    gp = jh.run_java(
        [classes] + jh.gkl_classpath(),
        "GatkHeadCaller",
        [rfile, sfile, tmp_path / "gkl.txt"],
        jvm_args=[f"-Djava.library.path={DEBIAN_JNI}"],
    )
    assert gp.returncode == 0, gp.stderr[-3000:]
    ours, peer = (tmp_path / "out.txt").read_text().splitlines(), (tmp_path / "gkl.txt").read_text().splitlines()
    assert len(ours) == len(peer) and ours[0] == peer[0] == "I pairhmm com.intel.gkl.pairhmm.IntelPairHmmOMP"
    n_sw_equal = 0
    for a, b in zip(ours, peer):
        if a.startswith("P "):
            va, vb = np.array(a.split()[3:], float), np.array(b.split()[3:], float)
            assert a.split()[:3] == b.split()[:3] and np.max(np.abs(va - vb)) <= 1e-5, (a[:80], b[:80])
        elif a.startswith("S ") and not a.startswith("S IGNORE"):  # (IGNORE: GKL's known deviation)
            assert a == b
            n_sw_equal += 1
    assert n_sw_equal == 3 * len(pairs)
