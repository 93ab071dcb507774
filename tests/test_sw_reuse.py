"""Prefix reuse of the CPU Smith-Waterman (FillBase, native/cpu/sw_cpu_fill.h):
a pair whose ref, parameters and edge rule repeat the thread's base pair and
whose alt shares a prefix with the base's alt resumes the fill at a
checkpoint column. Its results must be those of a full fill, which
tests/test_sw_kernel.py checks against GKL: here every vector width this CPU
runs (and the AVX-512 instance, emulated where the CPU lacks it) aligns
region-ordered calls with reuse on and off, and must reuse cells and give the
same CIGARs and offsets; with a JVM, the same calls are checked against GKL."""

import json
import subprocess
import sys

import numpy as np
import pytest

from devtools.child import child_env
from devtools.native_check import run_sw_check
from devtools.oracle.gkl_sw import STRATEGIES, matches_gkl
from devtools.sw_pairs import HAPLOTYPE_TO_REFERENCE, READ_TO_HAPLOTYPE, SW_PAD, haplotype_caller_regions
from pyphmm import sw

STEP = 64  # native/cpu/sw_cpu_fill.h kResumeStep
BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def _rand(rng, n):
    return BASES[rng.integers(0, 4, n)].tobytes()


def edge_calls(seed, sizes=(192, 193, 260, 411, 640)):
    """Calls at the rules' edges, grouped by ref: a base alt, then alts that
    share with it a prefix of a checkpoint multiple, one less, one more, all
    but the last base, all of it, and longer and shorter alts; every
    strategy in turn (the edge rule changes the base), int8 and int16 lanes,
    refs at the shape bounds (192 bases; alt at 3/4 of ref)."""
    rng = np.random.default_rng(seed)
    calls = []
    for m in sizes:
        ref = _rand(rng, m)
        base = ref[:10] + _rand(rng, 3) + ref[13:]
        n = len(base)
        for params in (HAPLOTYPE_TO_REFERENCE, READ_TO_HAPLOTYPE):
            for strategy in STRATEGIES:
                calls.append((ref, base, params, strategy))
                for cut in (STEP, STEP - 1, STEP + 1, 2 * STEP, 3 * STEP + 5, n - 1, n):
                    if cut > n:
                        continue
                    tail = _rand(rng, n - cut) if cut < n else b""
                    calls.append((ref, base[:cut] + tail, params, strategy))
                calls.append((ref, base + _rand(rng, 40), params, strategy))
                calls.append((ref, base[: max(3 * m // 4, 2 * STEP + 1)], params, strategy))
                calls.append((ref, base[: 3 * m // 4 - 1], params, strategy))  # below 3/4: no reuse
    return calls


def region_calls(n, seed):
    """haplotype_caller_regions' haplotype-vs-reference calls, in order."""
    return [(r, a, p, s) for r, a, p, s, k in haplotype_caller_regions(n, seed) if k == "hap_vs_ref"]


CALLS = region_calls(900, 4141) + edge_calls(4242)
# Fewer for the emulated AVX-512 instance, whose intrinsics are slow.
EMULATED_CALLS = region_calls(150, 4343) + edge_calls(4444, sizes=(192, 300))

CHILD = """
import json, sys
from pyphmm import sw
calls = [(bytes.fromhex(r), bytes.fromhex(a), tuple(p), s) for r, a, p, s in json.load(sys.stdin)]
one = [sw.align(r, a, params=p, overhang=s) for r, a, p, s in calls]
st = {}
cig, off = sw.align_batch([c[0] for c in calls], [c[1] for c in calls], params=[c[2] for c in calls],
                          overhang=[c[3] for c in calls], threads=1, stats=st)
print(json.dumps({"one": one, "batch": list(zip(cig, off.tolist())), "reused": st["reused_cells"]}))
"""


def run_child(isa, reuse):
    res = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps([(r.hex(), a.hex(), p, s) for r, a, p, s in CALLS]),
        env=child_env(PYPHMM_DEV=f"sw_isa={isa},sw_reuse={reuse}"),
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(res.stdout)
    return [tuple(x) for x in out["one"]], [tuple(x) for x in out["batch"]], out["reused"]


def differences(got, want):
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    return f"{len(bad)} of {len(want)} differ, first: {bad[:2]}"


def test_calls_resume():
    """The calls above reuse, by the library's own count: a third of the
    haplotype-vs-reference cells or more (the test of reuse is not empty)."""
    st = {}
    sw.align_batch(
        [c[0] for c in CALLS],
        [c[1] for c in CALLS],
        params=[c[2] for c in CALLS],
        overhang=[c[3] for c in CALLS],
        threads=1,
        stats=st,
    )
    assert st["reused_cells"] > st["cells"] // 5, st


@pytest.mark.slow
@pytest.mark.parametrize("isa", ["portable", "sse", "avx2", "avx512", "avx512vbmi", "neon"])
def test_each_width_same_as_full_fill(isa):
    """A width this CPU lacks falls back to the widest it has, so every
    width available here is covered."""
    one_on, batch_on, reused_on = run_child(isa, 1)
    one_off, batch_off, reused_off = run_child(isa, 0)
    assert reused_on > 0 and reused_off == 0
    assert one_on == one_off, differences(one_on, one_off)
    assert batch_on == one_off, differences(batch_on, one_off)


@pytest.mark.slow
@pytest.mark.parametrize("isa", ["avx512", "avx512vbmi"])
def test_avx512_instance_emulated_same_as_full_fill(sw_avx512_check_exe, isa):
    """The AVX-512 instances through tests/native/sw_avx512_check.cc (see
    tests/test_sw_kernel.py), on CPUs without AVX-512 too."""
    runs = {}
    for reuse in (1, 0):
        lines, counters = run_sw_check(sw_avx512_check_exe, EMULATED_CALLS, f"sw_isa={isa},sw_reuse={reuse}")
        runs[reuse] = ([tuple(ln.split()) for ln in lines], counters["reused_cells"])
    assert runs[1][1] > 0 and runs[0][1] == 0
    assert runs[1][0] == runs[0][0], differences(runs[1][0], runs[0][0])


@pytest.mark.jvm
@pytest.mark.slow
def test_region_order_vs_gkl(gkl_jvm):
    """GKL on the same calls, in the same order, one pair per call."""
    from devtools.oracle.gkl_sw import GklSmithWaterman

    gkl = GklSmithWaterman()
    calls = {}
    bad = []
    for r, a, p, s in CALLS:
        call = calls.setdefault((p, s), gkl.prepare(p, s))
        ours, theirs = sw.align(r, a, params=p, overhang=s), call(r, a)
        if not matches_gkl(tuple(ours), tuple(theirs), s):
            bad.append((p, s, r, a, ours, theirs))
    assert not bad, f"{len(bad)} of {len(CALLS)} differ from GKL, first: {bad[:1]}"


def test_padded_regions_shape():
    """The generator's haplotype calls are padded and share their window."""
    calls = region_calls(200, 7)
    assert calls and all(r.startswith(SW_PAD) and a.startswith(SW_PAD) for r, a, *_ in calls)
    assert len({r for r, *_ in calls}) < len(calls)
