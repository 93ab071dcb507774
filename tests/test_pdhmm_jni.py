"""GKL 0.9's IntelPDHMM (GATK's --use-pdhmm) on pyphmm, both routes.

Peer data: GKL 0.9's own class and library through GATK HEAD's calls on
GATK-shaped PD regions (tests/data/pdhmm-gatk-head.*, devtools.pdhmm_head_data),
and GKL 0.9's API as javap prints it (tests/data/gkl09-pdhmm-api.txt). With
a local GKL 0.9 ($GKL09_CLASSPATH, devtools.oracle.pdhmm_api) the tests that
need it run GKL 0.9's own class too.

- the shim jar's IntelPDHMM (jpype, its own class loader): GKL's results
  through computeLikelihoods and the legacy computePDHMM; every error case
  with GKL's exception types (and clear ones where GKL would crash);
  instances with different settings on several threads at once;
  initialize(null); an older GATK without the pdhmm types;
- the library directory (`pyphmm gatk-libdir`): GKL's four symbols, called
  through a class that declares them as GKL 0.9 does (the stand-in in
  tests/java/gkl09_standin/, whose descriptors are GKL 0.9's) and, where
  it exists, through GKL 0.9's own class with USE_LIBRARY_PATH=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pyphmm
from devtools import pd_testdata, pdhmm_head_data
from devtools.child import child_env, run_python
from devtools.oracle import java_harness as jh
from devtools.oracle import pdhmm_api, shim
from devtools.oracle.pdhmm_shim import PdBinding, region_pairs, stored_regions, stored_results

pytestmark = pytest.mark.jvm

REPO = shim.REPO
TOL = 1e-5  # issue 41's bound against GKL 0.9's full-precision results
GKL_SYMBOLS = ("initNative", "computeLikelihoodsNative", "computePDHMMNative", "doneNative")


@pytest.fixture(scope="module")
def data():
    return stored_regions(), stored_results()


def _max_diff(got, want) -> float:
    assert got.shape == want.shape
    assert np.array_equal(np.isneginf(got), np.isneginf(want)), "-inf where GKL has a value, or the reverse"
    finite = np.isfinite(want)
    assert np.all(np.isfinite(got[finite])), "NaN or inf where GKL is finite"
    return float(np.max(np.abs(got[finite] - want[finite]), initial=0.0))


def test_library_exports_gkl09s_pdhmm_symbols():
    lib = os.path.join(REPO, "pyphmm", "libpyphmm.so")
    syms = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    for s in GKL_SYMBOLS:
        assert f" T Java_com_intel_gkl_pdhmm_IntelPDHMM_{s}\n" in syms


def test_shim_matches_gkl09(gkl_jvm, data):
    regions, want = data
    b = PdBinding()  # GATK's arguments: 8 threads, fastest AVX and OpenMP, 1024 MB
    worst = 0.0
    for k, region in enumerate(regions):
        d = _max_diff(b.compute(region), want[k])
        assert d <= TOL, f"region {k}: |diff| {d}"
        worst = max(worst, d)
    b.done()
    print(f"shim vs GKL 0.9: {len(regions)} regions, {sum(map(len, want.values()))} values, max |diff| {worst:.3g}")


@pytest.mark.parametrize("shape", pd_testdata.STORED_SHAPES)
def test_shim_matches_gkl09_on_generated_regions(gkl_jvm, shape):
    """pdhmm-core's stored regions of both shapes (24 each) with GKL 0.9's
    serial results, one computeLikelihoods call per region."""
    regions, results = pd_testdata.stored_regions(shape)
    b = PdBinding()
    worst = max(_max_diff(b.compute(jh.as_pd_holders(r)), want.ravel()) for r, want in zip(regions, results))
    assert worst <= TOL
    print(f"{shape}: {sum(len(r) * len(h) for r, h in regions)} pairs, max |diff| vs GKL 0.9 {worst:.3g}")


def test_shim_matches_gkl09_on_edge_cases(gkl_jvm):
    """Empty reads and haplotypes, qualities of 0, underflow, N and other
    bytes, every kind of PD span: GKL 0.9's serial results (-inf where it
    has -inf), through computeLikelihoods and the legacy batch."""
    b = PdBinding()
    for name, reads, haps, want in pd_testdata.read_edge_file():
        assert _max_diff(b.compute((reads, haps)), want.ravel()) <= TOL, name
        pairs = [(r, h) for r in reads for h in haps]
        assert _max_diff(b.legacy(pairs), want.ravel()) <= TOL, name


@pytest.mark.slow
def test_shim_matches_gkls_test_files(gkl_jvm):
    """GKL 0.9's own test files (2,601 pairs, expected values printed to 7
    significant digits: 1e-4, as GKL's unit test): the legacy batch call
    GKL's unit test makes, and one computeLikelihoods call per pair, which
    agree with each other exactly on the CPU (where a GPU takes the batch
    and the CPU the single pairs, within the GPU's certified 1e-10)."""
    b = PdBinding()
    for name in pd_testdata.GKL_FILES:
        cases = pd_testdata.gkl_cases(name)
        expected = np.array([c[2] for c in cases])
        batch = b.legacy([(c[0], c[1]) for c in cases])
        assert _max_diff(batch, expected) <= 1e-4, name
        single = np.concatenate([b.compute(([c[0]], [c[1]])) for c in cases])
        if np.array_equal(single, batch):
            continue
        assert pyphmm.info()["cuda_usable"], name  # (on the CPU alone, bit for bit)
        assert _max_diff(single, batch) <= 1e-10, name


def test_legacy_batch_matches_gkl09(gkl_jvm, data):
    """computePDHMM: every pair of all regions in one batch (GKL's unit-test
    API), before initialize (GKL: 1 thread), then again after it."""
    regions, want = data
    b = PdBinding(null_args=True)
    fresh = shim.shim_class("com.intel.gkl.pdhmm.IntelPDHMM")()
    pairs = [p for r in regions for p in region_pairs(r)]
    expected = np.concatenate([want[k] for k in range(len(regions))])
    for impl in (fresh, b.impl):
        got = np.array(impl.computePDHMM(*b.legacy_arrays(pairs)), dtype=np.float64)
        assert _max_diff(got, expected) <= TOL


# A child JVM whose JNI layer times its calls (PYPHMM_DEV=jni_trace=2, read
# once a process): three regions through the shim, one legacy batch, done().
TRACE_CHILD = r"""
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle.pdhmm_shim import PdBinding, stored_regions
gkl_oracle.start_jvm()
b = PdBinding(threads=1)
regions = stored_regions()
for region in regions[:3]:
    b.compute(region)
reads, haps = regions[0]
b.legacy([(reads[0], haps[0]), (reads[1], haps[0])])
b.done()
"""


def test_jni_trace_times_the_calls(gkl_jvm):
    """jni_trace=2: done() reports this JNI layer's compute calls (three
    regions and a legacy batch) and pyphmm_pdhmm's share of their time
    (gkl_jvm: the child needs what the shared JVM needs)."""
    res = run_python(TRACE_CHILD, env={"PYPHMM_DEV": "jni_trace=2"})
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("pyphmm PDHMM JNI: ")]
    assert len(lines) == 1, res.stderr[-3000:]
    words = lines[0].split()
    assert words[3:5] == ["4", "calls;"], lines[0]
    entry, pdhmm = float(words[8]), float(words[13])
    assert 0 < pdhmm <= entry, lines[0]


def test_initialize_null_and_arguments(gkl_jvm, data):
    """initialize(null) is GKL's defaults; a null level or setting is a
    NullPointerException and no memory limit an IllegalArgumentException,
    as in GKL. An explicit AVX level is accepted whatever this CPU has
    (pyphmm picks its kernel; GKL throws IllegalStateException for a level
    the CPU lacks), and every level, OpenMP setting and thread count gives
    the same numbers."""
    jpype = gkl_jvm
    regions, want = data
    assert _max_diff(PdBinding(null_args=True).compute(regions[0]), want[0]) <= TOL
    b = PdBinding()
    npe, iae = jpype.JClass("java.lang.NullPointerException"), jpype.JClass("java.lang.IllegalArgumentException")
    with pytest.raises(npe):
        b.impl.initialize(b.arguments(avx=None))
    with pytest.raises(npe):
        b.impl.initialize(b.arguments(omp=None))
    with pytest.raises(iae):
        b.impl.initialize(b.arguments(memory_mb=0))  # never set: GKL's native check
    results = []
    for avx in ("SCALAR", "AVX2", "AVX512", "FASTEST_AVAILABLE"):
        for omp, threads in (("DISABLE", 4), ("ENABLE", 3), ("FASTEST_AVAILABLE", 1)):
            b.impl.initialize(b.arguments(threads=threads, avx=avx, omp=omp, memory_mb=64))
            results.append(b.compute(regions[1]))
    assert all(np.array_equal(r, results[0]) for r in results)
    assert _max_diff(results[0], want[1]) <= TOL


def test_instances_and_threads_at_once(gkl_jvm, data):
    """GKL's initialize() sets one process-wide configuration; the shim's
    instances keep their own: three instances (1, 2 and 8 threads) shared
    by six Java threads compute at once and give the serial results."""
    regions, want = data
    instances = [PdBinding(threads=t) for t in (1, 2, 8)]
    serial = [instances[0].compute(r) for r in regions]
    errors = []

    def worker(t):
        try:
            for rep in range(3):
                for k in range(len(regions)):
                    b = instances[(t + k + rep) % 3]
                    got = b.compute(regions[k])
                    assert np.array_equal(got, serial[k]), f"region {k} differs on thread {t}"
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all(_max_diff(serial[k], want[k]) <= TOL for k in range(len(regions)))


def _expect(jpype, exc_name, fn):
    with pytest.raises(jpype.JClass(exc_name)):
        fn()


def test_errors_raise_gkls_types_and_the_jvm_survives(gkl_jvm, data):
    """GKL's contract: IllegalArgumentException for negative ins/del/gcp
    qualities, a non-ACGT read base at a SNP position, empty read or
    haplotype arrays and a likelihood array of the wrong size;
    NullPointerException for null arguments. Where GKL would read past an
    array or crash (null holders and fields, quality or PD arrays shorter
    than their bases) the shim throws the same way instead."""
    jpype = gkl_jvm
    regions, want = data
    b = PdBinding()
    npe, iae = "java.lang.NullPointerException", "java.lang.IllegalArgumentException"
    reads, haps = regions[0]
    read, hap = reads[0], haps[0]
    jr, jh, out = b.holders((reads, haps))
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(None, jh, out))
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(jr, None, out))
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(jr, jh, None))
    short = jpype.JArray(jpype.JDouble)(len(reads) * len(haps) - 1)
    _expect(jpype, iae, lambda: b.impl.computeLikelihoods(jr, jh, short))
    _expect(jpype, iae, lambda: b.compute(([], haps)))  # "input arrays are empty"
    _expect(jpype, iae, lambda: b.compute((reads, [])))
    _expect(jpype, npe, lambda: b.compute(([None], [hap])))
    _expect(jpype, npe, lambda: b.compute(([read], [None])))
    for k in range(5):
        _expect(jpype, npe, lambda k=k: b.compute(([read[:k] + (None,) + read[k + 1 :]], [hap])))
        if k:  # a quality array shorter than the bases
            _expect(jpype, iae, lambda k=k: b.compute(([read[:k] + (read[k][:-1],) + read[k + 1 :]], [hap])))
    _expect(jpype, npe, lambda: b.compute(([read], [(hap[0], None)])))
    _expect(jpype, npe, lambda: b.compute(([read], [(None, hap[1])])))
    _expect(jpype, iae, lambda: b.compute(([read], [(hap[0], hap[1][:-1])])))
    for k in (1, 2, 3, 4):  # base quality -1 (past GKL's table), negative ins/del/gcp qualities
        bad = bytearray(read[k])
        bad[len(bad) // 2] = 0xFF
        _expect(jpype, iae, lambda k=k, bad=bad: b.compute(([read[:k] + (bytes(bad),) + read[k + 1 :]], [hap])))
    snp = next(i for i, p in enumerate(hap[1]) if p & 1)
    for base in b"Xn":  # not A, C, G, T (either case) or N, where the haplotype has a SNP
        odd = bytearray(hap[0][snp : snp + 20])
        probe = (bytes([base]) + bytes(odd[1:]), bytes([30] * 20), bytes([45] * 20), bytes([45] * 20), bytes([10] * 20))
        _expect(jpype, iae, lambda probe=probe: b.compute(([probe], [(hap[0][snp:], hap[1][snp:])])))
    # still alive and still right
    assert _max_diff(b.compute(regions[0]), want[0]) <= TOL


def test_gkls_edge_semantics(gkl_jvm, data):
    """GKL 0.9's answers (NOTES of its oracle, probed): a zero-length read
    or haplotype and all-zero qualities give -inf, no exception; quality
    and PD arrays longer than their bases are accepted, the extra bytes
    ignored; a non-ACGT read byte is a plain mismatch against a haplotype
    without SNP positions (every read base meets every column); a base
    quality of -2 as a Java byte is a valid table entry."""
    regions, _ = data
    b = PdBinding()
    reads, haps = regions[1]
    read, hap = reads[0], haps[0]
    got = b.compute(([read, (b"", b"", b"", b"", b"")], [hap, (b"", b"")]))
    assert np.isfinite(got[0]) and np.all(np.isneginf(got[1:])), got
    n = len(read[0])
    zero = (read[0], bytes(n), bytes(n), bytes(n), bytes(n))
    assert np.isneginf(b.compute(([zero], [hap]))[0])
    longer = (read[0],) + tuple(q + b"\x05\x05" for q in read[1:])
    assert np.array_equal(b.compute(([longer], [(hap[0], hap[1] + b"\x07")])), b.compute(([read], [hap])))
    probe = (b"X" + hap[0][1:30], bytes([30] * 30), bytes([45] * 30), bytes([45] * 30), bytes([10] * 30))
    assert np.isfinite(b.compute(([probe], [(hap[0], bytes(len(hap[0])))]))[0])
    # base qualities -2..-128 are GKL's table entries 254..128 (tiny error probabilities)
    high = (read[0], bytes([0xFE] * n), read[2], read[3], read[4])
    assert np.isfinite(b.compute(([high], [hap]))[0])


def test_legacy_batch_checks(gkl_jvm, data):
    """computePDHMM's checks, in GKL's order: null arrays
    (NullPointerException), sizes other than batchSize x slot, then
    batchSize, maxHapLength, maxReadLength <= 0 (IllegalArgumentException);
    beyond GKL, a length longer than its slot (GKL reads past it) and a
    negative quality (GKL: the same exception type)."""
    jpype = gkl_jvm
    regions, _ = data
    b = PdBinding()
    npe, iae = "java.lang.NullPointerException", "java.lang.IllegalArgumentException"
    pairs = region_pairs(regions[0])[:5]
    good = b.legacy_arrays(pairs)
    for k in range(9):
        args = list(good)
        args[k] = None
        _expect(jpype, npe, lambda args=args: b.impl.computePDHMM(*args))
        if k < 7:
            args[k] = b.jbytes(bytes(len(good[k]) - 1))
            _expect(jpype, iae, lambda args=args: b.impl.computePDHMM(*args))
    JLong = jpype.JArray(jpype.JLong)
    empty = [b.jbytes(b"")] * 7 + [JLong([]), JLong([])]
    _expect(jpype, iae, lambda: b.impl.computePDHMM(*empty, 0, 5, 5))
    for k in (10, 11):
        args = list(good)
        args[k] = 0
        _expect(jpype, iae, lambda args=args: b.impl.computePDHMM(*args))
    args = list(good)
    args[7] = JLong([good[10] + 1] + list(good[7])[1:])  # haplotype 0 longer than its slot
    _expect(jpype, iae, lambda args=args: b.impl.computePDHMM(*args))
    args = list(good)
    ins = bytearray(bytes(good[4]))
    ins[0] = 0xF0
    args[4] = b.jbytes(bytes(ins))
    _expect(jpype, iae, lambda args=args: b.impl.computePDHMM(*args))
    assert np.all(np.isfinite(b.impl.computePDHMM(*good)))


# ---- the library directory: GKL 0.9's class (or its stand-in), pyphmm's library


def _standin_classes(dest) -> str:
    """tests/java/gkl09_standin compiled against the pdhmm declarations."""
    src = os.path.join(jh.JAVA_SOURCES, "gkl09_standin", "com", "intel", "gkl", "pdhmm", "IntelPDHMM.java")
    jh.require_javac()
    cp = os.pathsep.join([pdhmm_api.api_classes(), shim.BINDINGS_JAR])
    subprocess.run(["javac", "-nowarn", "--release", "11", "-cp", cp, "-d", str(dest), src], check=True)
    return str(dest)


@pytest.mark.slow
def test_natives_have_gkl09s_descriptors(tmp_path):
    """The shim's and the stand-in's declarations of GKL's natives are GKL
    0.9's, descriptor for descriptor (so calling through them is calling as
    GKL 0.9's class does)."""
    jh.require_javac()
    want = pdhmm_api.stored_sections()[f"natives of {pdhmm_api.GKL_CLASS}"]
    standin = [_standin_classes(tmp_path / "standin"), pdhmm_api.api_classes(), shim.BINDINGS_JAR]
    assert pdhmm_api.natives(standin, pdhmm_api.GKL_CLASS) == want
    shim_natives = pdhmm_api.natives(jh.shim_classpath(), pdhmm_api.GKL_CLASS)
    assert all(line in shim_natives for line in want)


def _libdir(tmp_path) -> str:
    d = tmp_path / "gkl-libs"
    p = subprocess.run(
        [sys.executable, "-m", "pyphmm", "gatk-libdir", str(d)], capture_output=True, text=True, env=child_env(REPO)
    )
    assert p.returncode == 0, p.stderr
    assert os.path.realpath(d / "libgkl_pdhmm.so") == os.path.realpath(os.path.join(REPO, "pyphmm", "libpyphmm.so"))
    return str(d)


def _libdir_run(tmp_path, classpath, libdir, use_library_path=True):
    env = child_env(REPO)
    for k in ("USE_LIBRARY_PATH", "PYPHMM_LIBRARY", "PYPHMM_LOG"):
        env.pop(k, None)
    if use_library_path:
        env["USE_LIBRARY_PATH"] = "1"
    work = tmp_path / f"run-{len(os.listdir(tmp_path))}"
    work.mkdir()
    return pdhmm_head_data.run_head_caller(
        classpath, str(work), pdhmm_head_data.REGIONS, env=env, jvm_args=[f"-Djava.library.path={libdir}"]
    )


def _check_libdir_results(values, info, stderr, data):
    regions, want = data
    assert info["pdhmm"] == pdhmm_api.GKL_CLASS, info
    assert sorted(values) == list(range(len(regions)))
    worst = max(_max_diff(np.array(values[k]), want[k]) for k in values)
    assert worst <= TOL
    lines = jh.pyphmm_lines(stderr)
    banner = [ln for ln in lines if " PDHMM: backend " in ln]
    assert len(banner) == 1, stderr[-3000:]
    assert (
        "GKL arguments threads 8, AVX level FASTEST_AVAILABLE, OpenMP FASTEST_AVAILABLE, memory limit 1024 MB"
        in (banner[0])
    )
    pairs = sum(len(r) * len(h) for r, h in regions)
    assert [ln for ln in lines if f" PDHMM summary: {len(regions)} calls, {pairs} pairs, " in ln], stderr[-3000:]
    return worst


@pytest.mark.slow
def test_libdir_answers_gkl09s_calls(tmp_path, data):
    """CI's check of the library-directory route: GATK HEAD's PDHMM calls
    through a class that loads gkl_utils and gkl_pdhmm from
    java.library.path and declares GKL 0.9's natives (the stand-in; the
    real class is checked below where a GKL 0.9 jar exists)."""
    libdir = _libdir(tmp_path)
    cp = [_standin_classes(tmp_path / "standin"), pdhmm_api.api_classes(), *jh.gkl_classpath()]
    (values, info), stderr = _libdir_run(tmp_path, cp, libdir)
    worst = _check_libdir_results(values, info, stderr, data)
    print(f"stand-in through {libdir}: max |diff| vs GKL 0.9 {worst:.3g}")


@pytest.mark.slow
@pytest.mark.skipif(not pdhmm_api.gkl09_classpath(), reason="no GKL 0.9 jar here ($GKL09_CLASSPATH)")
def test_gkl09s_own_class_loads_pyphmm_from_the_libdir(tmp_path, data):
    """GKL 0.9's IntelPDHMM, unmodified: with USE_LIBRARY_PATH=1 it loads
    libgkl_pdhmm.so from java.library.path, here pyphmm, and GATK's calls
    give GKL's results; without USE_LIBRARY_PATH it extracts and runs its
    own library from its jar (no pyphmm line), whatever java.library.path
    says."""
    libdir = _libdir(tmp_path)
    (values, info), stderr = _libdir_run(tmp_path, pdhmm_api.gkl09_classpath(), libdir)
    assert f"Loading libgkl_pdhmm.so from {libdir}" in stderr, stderr[-3000:]
    worst = _check_libdir_results(values, info, stderr, data)
    print(f"GKL 0.9's own class through {libdir}: max |diff| vs GKL 0.9's library {worst:.3g}")
    (values, info), stderr = _libdir_run(tmp_path, pdhmm_api.gkl09_classpath(), libdir, use_library_path=False)
    assert not [ln for ln in jh.pyphmm_lines(stderr) if " PDHMM" in ln], stderr[-3000:]
    # GKL's own library: the stored values are its FASTEST_AVAILABLE on a CPU
    # without AVX-512 (AVX2); where it picks AVX-512 its sums round
    # differently (GKL's AVX paths are up to 4.2e-9 from its serial code).
    assert max(_max_diff(np.array(values[k]), data[1][k]) for k in values) <= 1e-8


def test_gkls_natives_through_reflection(gkl_jvm, data):
    """GKL 0.9's own calling sequence on GKL's four natives, in this JVM:
    the shim class declares them as GKL's does (descriptors checked above),
    and GKL's class would call them so on the library-directory route.
    Holders of another class than initNative was given are refused, not
    read through the wrong field IDs."""
    jpype = gkl_jvm
    regions, want = data
    b = PdBinding()
    cls = b.impl.getClass()
    Class, Object = jpype.JClass("java.lang.Class"), jpype.JClass("java.lang.Object")
    ObjArr = jpype.JArray(Object)

    def method(name, *types):
        m = cls.getDeclaredMethod(name, *types)
        m.setAccessible(True)
        return m

    JInt = jpype.JInt
    init = method("initNative", Class, Class, JInt, JInt, JInt, JInt)
    compute = method("computeLikelihoodsNative", ObjArr.class_, ObjArr.class_, jpype.JArray(jpype.JDouble).class_)
    legacy = method(
        "computePDHMMNative",
        *([jpype.JArray(jpype.JByte).class_] * 7),
        *([jpype.JArray(jpype.JLong).class_] * 2),
        JInt,
        JInt,
        JInt,
    )
    done = method("doneNative")
    Integer = jpype.JClass("java.lang.Integer")

    def call(m, target, *args):  # Method.invoke with an explicit Object[] (jpype would spread an array)
        boxed = [Integer.valueOf(a) if isinstance(a, int) else a for a in args]
        return m.invoke(target, ObjArr(boxed))

    call(init, None, b.Read.class_, b.Hap.class_, 0, 8, 0, 1024)
    jr, jh, out = b.holders(regions[2])
    call(compute, b.impl, jr, jh, out)
    assert _max_diff(np.array(out), want[2]) <= TOL
    got = np.array(call(legacy, b.impl, *b.legacy_arrays(region_pairs(regions[2]))))
    assert _max_diff(got, want[2]) <= TOL
    other = shim.shim_class("org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder")
    wrong = jpype.JClass("java.lang.reflect.Array").newInstance(other.class_, 1)
    wrong[0] = other()
    with pytest.raises(jpype.JClass("java.lang.reflect.InvocationTargetException")) as e:
        call(compute, b.impl, wrong, jh, jpype.JArray(jpype.JDouble)(len(jh)))
    assert str(e.value.getCause().getClass().getName()) == "java.lang.IllegalArgumentException"
    call(done, None)
