"""pyphmm's GATK entry points against real GKL (Debian's gkl.jar + libgkl_*).

- shim jar (GKL's class names, loaded in its own class loader) vs GKL's
  IntelPairHmm in the same JVM, driven with GATK's exact call sequence;
- the library-path entry point: GKL's own classes, USE_LIBRARY_PATH=1 and
  java.library.path = a `pyphmm gatk-libdir` directory, in a subprocess JVM;
- Smith-Waterman through the shim vs GKL (GKL's known deviations checked
  against the literal GATK-rules reference, devtools/oracle/sw_reference.py);
- error paths, concurrency, the CLI entry points.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import zipfile

import numpy as np
import pytest

from devtools.child import child_env
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import shim, sw_reference
from pyphmm import sw

REPO = shim.REPO
N_REGIONS = 300
TOL = 1e-5


@pytest.fixture(scope="module")
def regions():
    return shim.random_regions(N_REGIONS, seed=20240611)


def test_shim_jar_holds_only_gkl_binding_classes_and_the_loader():
    """GKL's binding classes, and pyphmm's loader in a package of its own: no
    other class of GKL's is shadowed, and none of gatk-native-bindings'
    (GATK's own jar provides the pdhmm types IntelPDHMM was compiled with)."""
    names = zipfile.ZipFile(shim.SHIM_JAR).namelist()
    classes = sorted(n for n in names if n.endswith(".class"))
    assert classes == [
        "com/intel/gkl/pairhmm/IntelPairHmm.class",
        "com/intel/gkl/pairhmm/IntelPairHmmOMP.class",
        "com/intel/gkl/pdhmm/IntelPDHMM.class",
        "com/intel/gkl/smithwaterman/IntelSmithWaterman.class",
        "pyphmm/shim/LibraryLoader.class",
    ]
    files = sorted(n for n in names if not n.endswith("/"))
    lib = f"pyphmm/native/linux-{os.uname().machine}/libpyphmm.so"  # where the loader looks for this os.arch
    # plus the cross-built AArch64 library when the build had one (scripts/build_aarch64.sh)
    arm = [n for n in names if n == "pyphmm/native/linux-aarch64/libpyphmm.so" and n != lib]
    assert files == sorted(classes + ["META-INF/MANIFEST.MF", lib] + arm)


def test_only_intelpdhmm_names_the_pdhmm_types():
    """gatk-native-bindings 1.1.0's pdhmm types exist only in GATK 4.6+:
    one class that names them is loaded only when GATK asks for PDHMM, so
    in an older GATK the rest of the jar never needs them (the class files'
    constant pools hold every type they refer to)."""
    with zipfile.ZipFile(shim.SHIM_JAR) as z:
        naming = [n for n in z.namelist() if n.endswith(".class") and b"nativebindings/pdhmm/" in z.read(n)]
    assert naming == ["com/intel/gkl/pdhmm/IntelPDHMM.class"]


@pytest.mark.jvm
@pytest.mark.slow
@pytest.mark.parametrize("double", [False, True], ids=["float", "double"])
def test_pairhmm_shim_matches_gkl(gkl_jvm, regions, double):
    ours = shim.Binding("shim", double=double, threads=2)
    gkl = shim.Binding("gkl", double=double, threads=1)
    worst, n_values = 0.0, 0
    for k, region in enumerate(regions):
        a, b = ours.compute(region), gkl.compute(region)
        assert np.all(np.isfinite(a)), f"region {k}: non-finite result"
        d = float(np.max(np.abs(a - b)))
        assert d <= TOL, f"region {k} ({len(region[0])} reads x {len(region[1])} haps): |diff| {d}"
        worst, n_values = max(worst, d), n_values + a.size
    ours.done()
    gkl.done()
    print(f"{'double' if double else 'float'}: {len(regions)} regions, {n_values} values, max |diff| {worst:.3g}")


@pytest.mark.jvm
def test_pairhmm_omp_class_and_null_arguments(gkl_jvm, regions):
    """IntelPairHmmOMP uses the same natives; initialize(null) means float, 1 thread."""
    omp = shim.Binding("shim-omp", threads=64)
    gkl = shim.Binding("gkl")
    for region in regions[:20]:
        assert np.max(np.abs(omp.compute(region) - gkl.compute(region))) <= TOL
    plain = shim.shim_class("com.intel.gkl.pairhmm.IntelPairHmm")()
    assert plain.load(None)
    plain.initialize(None)
    assert np.max(np.abs(omp.compute(regions[0]) - gkl.compute(regions[0]))) <= TOL


def _expect(jpype, exc_name, fn):
    exc = jpype.JClass(exc_name)
    with pytest.raises(exc):
        fn()


@pytest.mark.jvm
def test_pairhmm_errors_raise_and_jvm_survives(gkl_jvm, regions):
    jpype = gkl_jvm
    b = shim.Binding("shim")
    ok_region = regions[1]
    reads, haps = ok_region
    good = reads[0]
    jr, jh, out = b.holders(ok_region)
    npe, iae = "java.lang.NullPointerException", "java.lang.IllegalArgumentException"
    # null top-level arguments (GKL's Java check)
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(None, jh, out))
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(jr, None, out))
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(jr, jh, None))
    # null holder element, null field arrays (GKL would crash)
    jr2, jh2, out2 = b.holders(ok_region)
    jr2[0] = None
    _expect(jpype, npe, lambda: b.impl.computeLikelihoods(jr2, jh2, out2))
    for field in range(5):
        bad = list(good)
        bad[field] = None
        _expect(jpype, npe, lambda bad=bad: b.compute(([bad] + reads[1:], haps)))
    _expect(jpype, npe, lambda: b.compute((reads, [None])))
    # quality arrays shorter or longer than the read (GKL reads past them)
    for field in range(1, 5):
        for delta in (-1, 1):
            bad = list(good)
            bad[field] = bad[field][:-1] if delta < 0 else bad[field] + b"\x1e"
            _expect(jpype, iae, lambda bad=bad: b.compute(([bad], haps)))
    # empty read, empty haplotype, short output array
    _expect(jpype, iae, lambda: b.compute(([(b"", b"", b"", b"", b"")], haps)))
    _expect(jpype, iae, lambda: b.compute((reads, [b""])))
    jr3, jh3, _ = b.holders(ok_region)
    short = jpype.JArray(jpype.JDouble)(len(reads) * len(haps) - 1)
    _expect(jpype, iae, lambda: b.impl.computeLikelihoods(jr3, jh3, short))
    # still alive and still right
    gkl = shim.Binding("gkl")
    assert np.max(np.abs(b.compute(ok_region) - gkl.compute(ok_region))) <= TOL


@pytest.mark.jvm
def test_pairhmm_concurrent_java_threads_match_serial(gkl_jvm, regions):
    """8 threads call computeLikelihoods at once on different regions (jpype
    releases the GIL in Java calls) and get the serial results."""
    b = shim.Binding("shim", threads=1)
    work = regions[:64]
    prepared = [b.holders(r) for r in work]
    serial = [b.compute_holders(*p).copy() for p in prepared]
    results = [None] * len(work)
    errors = []

    def worker(t):
        try:
            for _rep in range(3):
                for k in range(t, len(work), 8):
                    jr, jh, _ = prepared[k]
                    out = gkl_jvm.JArray(gkl_jvm.JDouble)(len(work[k][0]) * len(work[k][1]))
                    results[k] = b.compute_holders(jr, jh, out)
                    assert np.array_equal(results[k], serial[k]), f"region {k} differs on thread {t}"
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all(np.array_equal(r, s) for r, s in zip(results, serial))


LIBPATH_DRIVER = textwrap.dedent("""
    import json
    import jpype
    from devtools.oracle import shim, gkl
    jpype.startJVM("-Djava.library.path=" + {libdir!r}, classpath=gkl.class_path(), convertStrings=False)
    regions = shim.random_regions(12, seed=7)
    b = shim.Binding("gkl-omp" if {omp!r} else "gkl", double={double!r}, threads=2)
    src = jpype.JClass("com.intel.gkl.pairhmm.IntelPairHmm").class_.getProtectionDomain().getCodeSource()
    out = [b.compute(r).tolist() for r in regions]
    b.done()
    print(json.dumps({{"code_source": str(src.getLocation()), "results": out}}))
""")


@pytest.mark.jvm
@pytest.mark.parametrize(
    "omp,double",
    [(False, False), pytest.param(True, True, marks=pytest.mark.slow)],
    ids=["IntelPairHmm-float", "OMP-double"],
)
def test_library_path_entry_point_runs_pyphmm_under_gkl_classes(gkl_jvm, tmp_path, omp, double):
    libdir = tmp_path / "gkl-libs"
    cli = subprocess.run(
        [sys.executable, "-m", "pyphmm", "gatk-libdir", str(libdir)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=child_env(REPO),
    )
    assert cli.returncode == 0, cli.stderr
    env = child_env(REPO, USE_LIBRARY_PATH="1")
    code = LIBPATH_DRIVER.format(libdir=str(libdir), omp=omp, double=double)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    data = json.loads(p.stdout.strip().splitlines()[-1])
    # GKL's own (Debian) class, not the shim
    assert data["code_source"].endswith("gkl.jar") or "gkl" in data["code_source"], data["code_source"]
    # pyphmm answered GKL's natives, loaded through the GKL-named links, and
    # said so in GATK's log: one line at initNative, one summary at done()
    lib = os.path.realpath(os.path.join(REPO, "pyphmm", "libpyphmm.so"))
    banner = [ln for ln in p.stderr.splitlines() if ln.startswith("pyphmm ") and " PairHMM: backend " in ln]
    assert len(banner) == 1 and banner[0].endswith(f"; library {lib}"), p.stderr[-3000:]
    assert ("; precision double;" if double else "; precision float, double where float underflows;") in banner[0]
    assert "; CPU kernel " in banner[0]
    summary = [ln for ln in p.stderr.splitlines() if " PairHMM summary: " in ln]
    n_pairs = sum(len(r) * len(h) for r, h in shim.random_regions(12, seed=7))
    assert len(summary) == 1 and f"summary: 12 calls, {n_pairs} pairs, " in summary[0], p.stderr[-3000:]
    assert f"Loading libgkl_pairhmm{'_omp' if omp else ''}.so from {libdir}" in p.stderr
    # and its numbers are GKL's
    gkl = shim.Binding("gkl", double=double)
    for region, got in zip(shim.random_regions(12, seed=7), data["results"]):
        assert np.max(np.abs(np.array(got) - gkl.compute(region))) <= TOL


# ---- Smith-Waterman -----------------------------------------------------

SW_PRESETS = [(3, -1, -4, -3), (25, -50, -110, -6), (200, -150, -260, -11), (10, -15, -30, -5)]


def _sw_pairs(n, seed):
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ACGT", np.uint8)
    pairs = []
    for _ in range(n):
        ref = alphabet[rng.integers(0, 4, int(rng.integers(20, 201)))]
        start = int(rng.integers(0, len(ref) // 2))
        alt = ref[start : start + int(rng.integers(10, 151))].copy()
        for _v in range(int(rng.integers(0, 5))):
            pos = int(rng.integers(0, len(alt)))
            kind = rng.integers(0, 3)
            if kind == 0:
                alt[pos] = alphabet[rng.integers(0, 4)]
            elif kind == 1:
                alt = np.concatenate([alt[:pos], alphabet[rng.integers(0, 4, int(rng.integers(1, 8)))], alt[pos:]])
            elif len(alt) > 12:
                alt = np.delete(alt, range(pos, min(len(alt), pos + int(rng.integers(1, 8)))))
        if rng.random() < 0.3:  # overhangs past either end
            alt = np.concatenate(
                [
                    alphabet[rng.integers(0, 4, int(rng.integers(1, 15)))],
                    alt,
                    alphabet[rng.integers(0, 4, int(rng.integers(0, 15)))],
                ]
            )
        pairs.append((bytes(ref), bytes(alt), SW_PRESETS[int(rng.integers(0, len(SW_PRESETS)))]))
    return pairs


def _sw_objects(jpype):
    ours = shim.shim_class("com.intel.gkl.smithwaterman.IntelSmithWaterman")()
    gkl = jpype.JClass("com.intel.gkl.smithwaterman.IntelSmithWaterman")()
    return ours, gkl


@pytest.mark.jvm
# (IGNORE: GKL's deviating pairs go through the Python reference, seconds more)
@pytest.mark.parametrize(
    "strategy", ["SOFTCLIP", "INDEL", "LEADING_INDEL", pytest.param("IGNORE", marks=pytest.mark.slow)]
)
def test_sw_shim_matches_gkl(gkl_jvm, strategy):
    """>= 2,000 pairs per strategy. GKL/GATK-Java deviations (docs/SMITH_WATERMAN.md: IGNORE
    with a trailing overhang) must match the literal Java rules, and nothing
    else may differ."""
    jpype = gkl_jvm
    ours, gkl = _sw_objects(jpype)
    assert gkl.load(None), "GKL Smith-Waterman did not load"
    assert ours.load(None), "pyphmm shim IntelSmithWaterman.load() returned false (Smith-Waterman unavailable)"
    SWParameters = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters")
    SWStrategy = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy")
    GParameters = jpype.JClass("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters")
    GStrategy = jpype.JClass("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy")
    code = {"SOFTCLIP": 9, "INDEL": 10, "LEADING_INDEL": 11, "IGNORE": 12}[strategy]  # GKL's codes
    deviations, unexplained = 0, []
    for k, (ref, alt, p) in enumerate(_sw_pairs(2000, seed=code)):
        jref, jalt = jpype.JArray(jpype.JByte)(ref), jpype.JArray(jpype.JByte)(alt)
        a = ours.align(jref, jalt, SWParameters(*p), getattr(SWStrategy, strategy))
        b = gkl.align(jref, jalt, GParameters(*p), getattr(GStrategy, strategy))
        got, peer = (str(a.cigar), int(a.alignment_offset)), (str(b.cigar), int(b.alignment_offset))
        if got == peer:
            continue
        java = sw_reference.align(ref, alt, p, strategy)
        if got == java and strategy == "IGNORE" and peer[0].endswith("S"):
            deviations += 1  # known GKL 0.8.10 deviation, pyphmm follows GATK's Java
        else:
            unexplained.append((k, ref, alt, p, got, peer, java))
    assert not unexplained, f"{len(unexplained)} pairs differ; first: {unexplained[0]}"
    print(f"{strategy}: 2000 pairs, {deviations} known GKL deviations (pyphmm == GATK Java)")


@pytest.mark.jvm
def test_sw_shim_cigar_that_fills_the_output_array(gkl_jvm):
    """align() passes a CIGAR buffer of 2 max(len(ref), len(alt)) bytes and
    reads the CIGAR up to the first NUL: CIGARs of exactly that length (no
    NUL left) come back whole, as GKL's trim() gives them."""
    jpype = gkl_jvm
    ours, gkl = _sw_objects(jpype)
    assert gkl.load(None) and ours.load(None)
    SWParameters = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters")
    SWStrategy = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy")
    GParameters = jpype.JClass("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters")
    GStrategy = jpype.JClass("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy")
    cases = [(b"A", b"A", "1M"), (b"A", b"C", "1M"), (b"AC", b"CA", "1S1M"), (b"ACGT", b"TTTT", None)]
    full = 0
    for ref, alt, want in cases:
        jref, jalt = jpype.JArray(jpype.JByte)(ref), jpype.JArray(jpype.JByte)(alt)
        p = (3, -1, -4, -3)
        a = ours.align(jref, jalt, SWParameters(*p), SWStrategy.SOFTCLIP)
        b = gkl.align(jref, jalt, GParameters(*p), GStrategy.SOFTCLIP)
        assert (str(a.cigar), int(a.alignment_offset)) == (str(b.cigar), int(b.alignment_offset))
        assert want is None or str(a.cigar) == want
        full += len(str(a.cigar)) == 2 * max(len(ref), len(alt))
    assert full >= 2  # the cases do fill the array


@pytest.mark.jvm
def test_sw_shim_cigar_past_gkls_bound(gkl_jvm):
    """A CIGAR longer than GKL's buffer of 2 max(len(ref), len(alt)) bytes
    is an IllegalArgumentException, also when the shim's reused per-thread
    buffer (grown by an earlier, longer pair) would hold it; the thread's
    next call is right again."""
    jpype = gkl_jvm
    ours, _ = _sw_objects(jpype)
    assert ours.load(None)
    SWParameters = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters")
    SWStrategy = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy")
    arr = lambda b: jpype.JArray(jpype.JByte)(b)  # noqa: E731
    P = SWParameters(1, -100, -1, -1)
    assert str(sw.align(b"CAC", b"CCC", params=(1, -100, -1, -1), overhang="INDEL")[0]) == "1M1D1I1M"  # 8 > 6
    long_ref = b"ACGT" * 300
    assert str(ours.align(arr(long_ref), arr(long_ref[5:900]), P, SWStrategy.SOFTCLIP).cigar) == "895M"
    _expect(
        jpype, "java.lang.IllegalArgumentException", lambda: ours.align(arr(b"CAC"), arr(b"CCC"), P, SWStrategy.INDEL)
    )
    a = ours.align(arr(b"ACGTTT"), arr(b"ACGT"), SWParameters(3, -1, -4, -3), SWStrategy.SOFTCLIP)
    assert (str(a.cigar), int(a.alignment_offset)) == ("4M", 0)


@pytest.mark.jvm
def test_sw_shim_input_checks(gkl_jvm):
    """GKL's Java-side checks, which run before the native call."""
    jpype = gkl_jvm
    ours, _ = _sw_objects(jpype)
    # bind the natives (the PairHMM class loads the shared library)
    assert shim.shim_class("com.intel.gkl.pairhmm.IntelPairHmm")().load(None)
    SWParameters = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters")
    SWStrategy = shim.shim_class("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy")
    P, S = SWParameters(3, -1, -4, -3), SWStrategy.SOFTCLIP
    arr = lambda b: jpype.JArray(jpype.JByte)(b)  # noqa: E731
    npe, iae = "java.lang.NullPointerException", "java.lang.IllegalArgumentException"
    _expect(jpype, npe, lambda: ours.align(None, arr(b"ACGT"), P, S))
    _expect(jpype, npe, lambda: ours.align(arr(b"ACGT"), None, P, S))
    _expect(jpype, npe, lambda: ours.align(arr(b"ACGT"), arr(b"ACGT"), None, S))
    _expect(jpype, npe, lambda: ours.align(arr(b"ACGT"), arr(b"ACGT"), P, None))
    _expect(jpype, iae, lambda: ours.align(arr(b""), arr(b"ACGT"), P, S))
    _expect(jpype, iae, lambda: ours.align(arr(b"ACGT"), arr(b""), P, S))
    _expect(jpype, iae, lambda: ours.align(arr(b"A" * 32768), arr(b"ACGT"), P, S))
    _expect(jpype, iae, lambda: ours.align(arr(b"ACGT"), arr(b"ACGT"), SWParameters(65537, -1, -4, -3), S))


# ---- CLI entry points ---------------------------------------------------

FAKE_MAIN = """
package org.broadinstitute.hellbender;
public class Main {
    public static void main(String[] args) throws Exception {
        Class<?> c = Class.forName("com.intel.gkl.pairhmm.IntelPairHmm");
        System.out.println("IntelPairHmm from " + c.getProtectionDomain().getCodeSource().getLocation());
        System.out.println("args " + String.join("|", args));
    }
}
"""


@pytest.fixture(scope="module")
def fake_gatk_jar(tmp_path_factory):
    """A stand-in GATK jar: its Main reports where IntelPairHmm comes from
    (it bundles GKL and the native-bindings API, as the real GATK jar does)."""
    if not (shutil.which("javac") and shutil.which("jar")):  # (CI installs a JDK; the GPU host has a JRE only)
        pytest.skip("needs a JDK (javac, jar) to build the stand-in GATK jar")
    d = tmp_path_factory.mktemp("fakegatk")
    src = d / "src" / "org" / "broadinstitute" / "hellbender"
    src.mkdir(parents=True)
    (src / "Main.java").write_text(FAKE_MAIN)
    subprocess.run(["javac", "--release", "11", "-d", str(d / "classes"), str(src / "Main.java")], check=True)
    subprocess.run(
        [
            "bash",
            "-c",
            f"cd {d}/classes && unzip -q -o {gkl_oracle.jar_dir()}/gkl.jar 'com/*' && "
            f"unzip -q -o {shim.BINDINGS_JAR} 'org/*'",
        ],
        check=True,
    )
    jar = d / "gatk-local.jar"
    subprocess.run(["jar", "--create", "--file", str(jar), "-C", str(d / "classes"), "."], check=True)
    return str(jar)


def _pyphmm(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=child_env(REPO, **(env or {})),
    )


def test_cli_gatk_jar_and_libdir(tmp_path):
    p = _pyphmm("gatk-jar")
    assert p.returncode == 0 and os.path.samefile(p.stdout.strip(), shim.SHIM_JAR)
    for copy in (False, True):
        d = tmp_path / f"libs-{copy}"
        p = _pyphmm("gatk-libdir", str(d), *(["--copy"] if copy else []))
        assert p.returncode == 0, p.stderr
        for name in (
            "libgkl_pairhmm.so",
            "libgkl_pairhmm_omp.so",
            "libgkl_pdhmm.so",
            "libgkl_smithwaterman.so",
            "libgkl_utils.so",
        ):
            real = os.path.realpath(d / name)
            assert real == (
                str(d / "libpyphmm.so") if copy else os.path.realpath(os.path.join(REPO, "pyphmm", "libpyphmm.so"))
            )
        syms = subprocess.run(
            ["nm", "-D", "--defined-only", str(d / "libgkl_utils.so")], capture_output=True, text=True
        ).stdout
        for s in (
            "isAvxSupportedNative",
            "isAvx2SupportedNative",
            "isAvx512SupportedNative",
            "getFlushToZeroNative",
            "setFlushToZeroNative",
            "getAvailableOmpThreadsNative",
        ):
            assert f"Java_com_intel_gkl_IntelGKLUtils_{s}" in syms


@pytest.mark.slow
@pytest.mark.jvm
@pytest.mark.parametrize("runner", ["cli", "script"])
def test_gatk_runner_puts_shim_first(fake_gatk_jar, runner):
    gatk_args = ["HaplotypeCaller", "-R", "ref.fa", "--pair-hmm-implementation", "AVX_LOGLESS_CACHING"]
    if runner == "cli":
        p = _pyphmm("gatk", "--gatk-jar", fake_gatk_jar, "--", *gatk_args)
    else:
        p = subprocess.run(
            [os.path.join(REPO, "scripts", "gatk-gpu"), "--", *gatk_args],
            capture_output=True,
            text=True,
            env=child_env(REPO, GATK_LOCAL_JAR=fake_gatk_jar),
        )
    assert p.returncode == 0, p.stderr
    assert "pyphmm-gatk.jar" in p.stdout, p.stdout
    assert f"args {'|'.join(gatk_args)}" in p.stdout
    assert _pyphmm("gatk", "--", "x", env={"GATK_LOCAL_JAR": ""}).returncode == 2
