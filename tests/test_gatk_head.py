"""GATK HEAD (4.6: GKL 0.9.0, gatk-native-bindings 1.1.0) against the shim.

GATK calls exactly three GKL classes for PairHMM and Smith-Waterman
(VectorLoglessPairHMM, SmithWatermanIntelAligner; see
tests/java/GatkHeadCaller.java for the call sequence), and GKL 0.9's
IntelPDHMM for --use-pdhmm (VectorLoglessPairPDHMM, GatkHeadPdhmm.java). GKL 0.9.0's Java
classes differ from Debian's 0.8.10 only in comments and in the loader's
list of library names (gkl_pdhmm added), and gatk-native-bindings 1.1.0
only adds the pdhmm package, so Debian's GKL is the peer for both the API
and the results:

- the shim's public API is GKL's, member for member (javap);
- a caller compiled against the shim and one compiled against GKL, running
  GATK's sequence (both argument sets, every Smith-Waterman strategy), give
  GKL's results; the shim run logs pyphmm's line and summaries, and
  PYPHMM_LOG=quiet silences them; the shim runs them with Debian's bindings
  1.0.0 alone, as an older GATK would (IntelPDHMM is then never loaded).

PDHMM has no Debian peer: IntelPDHMM's API is compared with GKL 0.9's as
stored in tests/data/gkl09-pdhmm-api.txt, and GATK's PDHMM calls with GKL
0.9's stored results (devtools.pdhmm_head_data); with a local GKL 0.9
($GKL09_CLASSPATH) both are also checked against GKL 0.9 itself.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from devtools import pdhmm_head_data
from devtools import sw_pairs as swgen
from devtools.child import child_env
from devtools.oracle import java_harness as jh
from devtools.oracle import pdhmm_api, shim, sw_reference
from devtools.oracle.pdhmm_shim import stored_regions, stored_results
from devtools.regions import region_cells

# Every test runs a JVM; the module's shared inputs and GKL's run take ~6 s.
pytestmark = [pytest.mark.jvm, pytest.mark.slow]

REPO = shim.REPO
CLASSES = (
    "com.intel.gkl.pairhmm.IntelPairHmm",
    "com.intel.gkl.pairhmm.IntelPairHmmOMP",
    "com.intel.gkl.smithwaterman.IntelSmithWaterman",
)
PRESETS = [(3, -1, -4, -3), (25, -50, -110, -6), (200, -150, -260, -11), (10, -15, -30, -5)]
TOL = 1e-5


def _javap(classpath, cls) -> list:
    p = subprocess.run(["javap", "-protected", "-cp", os.pathsep.join(classpath), cls], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [ln.strip() for ln in p.stdout.splitlines() if not ln.startswith("Compiled from")]


@pytest.mark.parametrize("cls", CLASSES)
def test_shim_api_is_gkls(cls):
    jh.require_javac()  # javap comes with the JDK
    assert _javap(jh.shim_classpath(), cls) == _javap(jh.gkl_classpath(), cls)


def test_shim_pdhmm_api_is_gkl09s():
    """IntelPDHMM's public API and its GKL natives (with their JNI
    descriptors) are GKL 0.9's, and java_shim/api's declarations are
    bindings 1.1.0's pdhmm types (javap, against the stored text)."""
    jh.require_javac()
    want = pdhmm_api.stored_sections()
    got = pdhmm_api.api_sections(jh.shim_classpath())
    natives = f"natives of {pdhmm_api.GKL_CLASS}"
    got_natives = got.pop(natives)
    assert all(line in got_natives for line in want.pop(natives))  # the shim adds natives of its own
    assert got == want


@pytest.mark.skipif(not pdhmm_api.gkl09_classpath(), reason="no GKL 0.9 jar here ($GKL09_CLASSPATH)")
def test_stored_api_is_gkl09s():
    assert pdhmm_api.api_sections(pdhmm_api.gkl09_classpath()) == pdhmm_api.stored_sections()


@pytest.fixture(scope="module")
def head_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("gatkhead")
    regions = shim.random_regions(40, seed=4060)
    refs, alts, _kinds = swgen.make_pairs(300, seed=4060)
    pairs = [(ref, alt, PRESETS[k % len(PRESETS)]) for k, (ref, alt) in enumerate(zip(refs, alts))]
    return {
        "dir": d,
        "regions": regions,
        "pairs": pairs,
        "regions_file": jh.write_regions(regions, d / "regions.in"),
        "pairs_file": jh.write_sw_pairs(pairs, d / "pairs.tsv"),
    }


def _run_caller(inputs, peer: str, impl: str = "FASTEST_AVAILABLE", env_extra=None, expect_failure=False, pd=False):
    """Compiles GatkHeadCaller against the peer's classes and runs it there
    (expect_failure: the run must fail; returns its stderr). Peers: shim,
    gkl (Debian's), shim-1.0 (the shim with bindings 1.0.0 only: an older
    GATK). pd: GATK's PDHMM calls too, on the stored PD regions."""
    d = inputs["dir"]
    cp = {"shim": jh.shim_classpath, "gkl": jh.gkl_classpath, "shim-1.0": lambda: [shim.SHIM_JAR, shim.BINDINGS_JAR]}[
        peer
    ]()
    classes = d / f"classes-{peer}-{pd}"
    if not classes.exists():
        jh.compile_sources(classes, ["Records.java", "GatkHeadCaller.java"] + ["GatkHeadPdhmm.java"] * pd, cp)
    out = d / f"out-{peer}-{impl}-{pd}.txt"
    jvm = [f"-Djava.io.tmpdir={d}"]
    if peer == "gkl":
        jvm.append(f"-Djava.library.path={jh.gkl_library_path()}")
    env = child_env(REPO, **(env_extra or {}))
    for k in ("USE_LIBRARY_PATH", "PYPHMM_LIBRARY", "PYPHMM_LOG"):
        if k not in (env_extra or {}):
            env.pop(k, None)
    p = jh.run_java(
        [str(classes)] + cp,
        "GatkHeadCaller",
        [inputs["regions_file"], inputs["pairs_file"], out, impl] + [pdhmm_head_data.REGIONS] * pd,
        jvm_args=jvm,
        env=env,
    )
    if expect_failure:
        assert p.returncode != 0, p.stdout[-2000:]
        return p.stderr
    assert p.returncode == 0, p.stderr[-4000:]
    return _parse(out.read_text()), p.stderr


def _parse(text):
    """(info, PairHMM, Smith-Waterman, PDHMM) of GatkHeadCaller's output."""
    info, hmm, sw, pd = {}, {}, {}, {}
    for line in text.splitlines():
        f = line.split(" ")
        if f[0] == "I":
            info[f[1]] = f[2]
        elif f[0] == "P":
            hmm[(f[1], int(f[2]))] = np.array([float(x) for x in f[3:]])
        elif f[0] == "S":
            sw[(f[1], int(f[2]))] = (f[3], int(f[4]))
        elif f[0] == "D":
            pd[int(f[1])] = np.array([float(x) for x in f[2:]])
    return info, hmm, sw, pd


@pytest.fixture(scope="module")
def gkl_run(head_inputs):
    return _run_caller(head_inputs, "gkl")


def test_gatk_head_sequence_gives_gkls_results(head_inputs, gkl_run):
    (info, hmm, sw, _), stderr = _run_caller(head_inputs, "shim")
    (ginfo, ghmm, gsw, _), _ = gkl_run
    # the same factory outcome as GKL: OMP first (FASTEST_AVAILABLE), native SW
    assert info == ginfo == {"pairhmm": "com.intel.gkl.pairhmm.IntelPairHmmOMP", "sw": "native"}
    n = len(head_inputs["regions"])
    assert set(hmm) == set(ghmm) == {(m, k) for m in ("float", "double") for k in range(n)}
    for key in hmm:
        assert hmm[key].shape == ghmm[key].shape and np.all(np.isfinite(hmm[key]))
        d = float(np.max(np.abs(hmm[key] - ghmm[key])))
        assert d <= TOL, f"{key}: |diff| {d}"
    assert set(sw) == set(gsw) and len(sw) == 4 * len(head_inputs["pairs"])
    unexplained = []
    for (strategy, k), got in sw.items():
        if got == gsw[(strategy, k)]:
            continue
        ref, alt, p = head_inputs["pairs"][k]
        # GKL 0.8.10's known deviation (SPEC 4): pyphmm follows GATK's Java rules
        if not (strategy == "IGNORE" and got == sw_reference.align(ref, alt, p, strategy)):
            unexplained.append((strategy, k, got, gsw[(strategy, k)]))
    assert not unexplained, unexplained[:3]
    # GATK's log: one line per binding kind at init, a summary per done()/close()
    lines = jh.pyphmm_lines(stderr)
    assert len([ln for ln in lines if " PairHMM: backend " in ln]) == 1, lines
    assert len([ln for ln in lines if " Smith-Waterman: backend " in ln]) == 1, lines
    summaries = [ln for ln in lines if " PairHMM summary: " in ln]
    pairs = sum(len(r) * len(h) for r, h in head_inputs["regions"])
    cells = sum(region_cells(r) for r in head_inputs["regions"])
    assert len(summaries) == 2  # two engines (float, double): running totals at each done()
    assert f"summary: {n} calls, {pairs} pairs, {cells} cells, " in summaries[0]
    assert f"summary: {2 * n} calls, {2 * pairs} pairs, {2 * cells} cells, " in summaries[1]
    assert "; 0 GPU fallbacks" in summaries[1]
    sw_summary = [ln for ln in lines if " Smith-Waterman summary: " in ln]
    assert len(sw_summary) == 1 and " alignments, " in sw_summary[0]


def test_gatk_head_pdhmm_sequence_gives_gkl09s_results(head_inputs):
    """GATK HEAD's --use-pdhmm calls (new IntelPDHMM, load(null), initialize
    with 8 threads, fastest AVX and OpenMP, 1024 MB, one computeLikelihoods
    per region, done()) through the shim give GKL 0.9's stored results, and
    GATK's log gets pyphmm's PDHMM line and summary."""
    (info, _, _, pd), stderr = _run_caller(head_inputs, "shim", pd=True)
    assert info["pdhmm"] == "com.intel.gkl.pdhmm.IntelPDHMM"
    regions, want = stored_regions(), stored_results()
    assert sorted(pd) == sorted(want) == list(range(len(regions)))
    worst = 0.0
    for k in want:
        assert pd[k].shape == want[k].shape
        assert np.array_equal(np.isneginf(pd[k]), np.isneginf(want[k]))
        finite = np.isfinite(want[k])
        worst = max(worst, float(np.max(np.abs(pd[k][finite] - want[k][finite]), initial=0.0)))
    assert worst <= TOL, worst
    lines = jh.pyphmm_lines(stderr)
    banner = [ln for ln in lines if " PDHMM: backend " in ln]
    assert len(banner) == 1, lines
    assert (
        "; GKL arguments threads 8, AVX level FASTEST_AVAILABLE, OpenMP FASTEST_AVAILABLE, memory limit 1024 MB;"
        in (banner[0])
    )
    pairs = sum(len(r) * len(h) for r, h in regions)
    cells = sum(jh.pd_region_cells(r) for r in regions)
    summary = [ln for ln in lines if " PDHMM summary: " in ln]
    assert len(summary) == 1 and f"summary: {len(regions)} calls, {pairs} pairs, {cells} cells, " in summary[0], lines
    assert "; 0 GPU fallbacks" in summary[0]


def test_an_older_gatk_without_pdhmm_types(head_inputs, gkl_run):
    """With gatk-native-bindings 1.0.0 alone (GATK before 4.6) the shim's
    PairHMM and Smith-Waterman run GATK's sequence as before: only
    IntelPDHMM names the pdhmm types, and nothing loads it."""
    (info, hmm, sw, _), _ = _run_caller(head_inputs, "shim-1.0")
    (ginfo, ghmm, gsw, _), _ = gkl_run
    assert info == ginfo and set(hmm) == set(ghmm) and set(sw) == set(gsw)
    for key in ghmm:
        assert np.max(np.abs(hmm[key] - ghmm[key])) <= TOL


@pytest.mark.parametrize("impl", ["AVX_LOGLESS_CACHING", "AVX_LOGLESS_CACHING_OMP"])
def test_gatk_head_explicit_implementations(head_inputs, gkl_run, impl):
    """-pairHMM AVX_LOGLESS_CACHING / _OMP name one class; both are the shim's."""
    (info, hmm, _, _), _ = _run_caller(head_inputs, "shim", impl=impl)
    cls = "IntelPairHmmOMP" if impl.endswith("OMP") else "IntelPairHmm"
    assert info["pairhmm"] == f"com.intel.gkl.pairhmm.{cls}"
    (_, ghmm, _, _), _ = gkl_run
    for key in ghmm:
        assert np.max(np.abs(hmm[key] - ghmm[key])) <= TOL


def test_quiet_silences_banner_and_summary(head_inputs):
    _, stderr = _run_caller(head_inputs, "shim", env_extra={"PYPHMM_LOG": "quiet"}, pd=True)
    # (the library's own warnings, e.g. a CUDA build without a GPU, are not these lines)
    assert not [ln for ln in jh.pyphmm_lines(stderr) if ": backend " in ln or " summary: " in ln], stderr[-2000:]


@pytest.mark.parametrize(
    "env,message",
    [
        ({"PYPHMM_LOG": "loud"}, "PYPHMM_LOG=loud is not valid: expected one of info|quiet|debug"),
        ({"PYPHMM_DEV": "turbo=1"}, "PYPHMM_DEV: unknown setting 'turbo'"),
    ],
)
def test_a_bad_setting_stops_gatk_with_its_name(head_inputs, env, message):
    """GATK gets an IllegalArgumentException naming the setting when a
    binding initialises, rather than a run with a setting the user did not get."""
    stderr = _run_caller(head_inputs, "shim", env_extra=env, expect_failure=True)
    assert f"java.lang.IllegalArgumentException: pyphmm: {message}" in stderr, stderr[-3000:]


def test_a_full_gpu_in_gatks_log(head_inputs, gkl_run):
    """A fake GPU without room at its first two starts: GATK's log line says
    so, a later call finds room (one line), the summary has cells on both
    sides, and every likelihood is GKL's."""
    (_, hmm, _, _), stderr = _run_caller(
        head_inputs,
        "shim",
        env_extra={"PYPHMM_TEST": "fake_gpu=1,gpu_full=2", "PYPHMM_DEV": "gpu_retry_ms=1"},
    )
    lines = jh.pyphmm_lines(stderr)
    banner = [ln for ln in lines if " PairHMM: backend " in ln]
    assert len(banner) == 1 and "has no room for this process" in banner[0], lines
    assert len([ln for ln in lines if "has room now" in ln]) == 1, lines
    summary = [ln for ln in lines if " PairHMM summary: " in ln][-1]
    assert "; cells on GPU 0.0%" not in summary, summary
    (_, ghmm, _, _), _ = gkl_run
    for key in ghmm:
        assert np.max(np.abs(hmm[key] - ghmm[key])) <= TOL
