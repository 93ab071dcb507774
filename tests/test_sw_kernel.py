"""The CPU Smith-Waterman kernel (native/cpu/sw_cpu_fill.cc) against GKL on
HaplotypeCaller-shaped pairs: reads vs haplotypes, padded haplotypes vs
reference windows, dangling ends, with repeats, indels, N bases and lowercase,
under GATK's four parameter sets and sets at the edges of the kernel's lane
types (int8, int16, and the int32 absolute fill beyond), every strategy, and
every vector width this CPU runs (PYPHMM_DEV's sw_isa forced per child process),
and the AVX-512 instance wherever it does not (emulated intrinsics)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from devtools.child import child_env
from devtools.oracle.gkl_sw import STRATEGIES, STRATEGY_NAMES, matches_gkl
from devtools.sw_pairs import haplotype_caller_mix
from pyphmm import sw

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

# Beside GATK's sets: sets at the bounds of diff_lane_bytes (the kernel's
# values in [lo, hi]): the last int8 set and the first int16 one at the low
# end (lo -127 vs -128) and at the high end (hi 127 vs 128), an int16 set
# near its low end, one past it and one with open > extend (both the
# absolute fill).
PARAMS = list(sw.PRESETS.values()) + [
    (12, -15, -40, -5),
    (13, -15, -40, -5),
    (21, -30, -40, -33),
    (22, -30, -40, -33),
    (6000, -6000, -9000, -1000),
    (10000, -10000, -11000, -2000),
    (5, -4, -2, -6),
]
PAIRS = 90


def shaped_pairs(n, seed):
    """HaplotypeCaller's mix, a third of the pairs with lowercase runs or
    extra N bases on either side."""
    rng = np.random.default_rng(seed)
    out = []
    for ref, alt, *_ in haplotype_caller_mix(n, seed):
        r, a = bytearray(ref), bytearray(alt)
        u = rng.random()
        seq = r if rng.random() < 0.5 else a
        if u < 0.15:
            i = int(rng.integers(0, len(seq)))
            seq[i : i + int(rng.integers(1, 20))] = seq[i : i + 20].lower()[: int(rng.integers(1, 20))]
        elif u < 0.3:
            for _ in range(int(rng.integers(1, 6))):
                seq[int(rng.integers(0, len(seq)))] = ord("N")
        out.append((bytes(r), bytes(a)))
    return out


CHILD = """
import json, sys
from pyphmm import sw
pairs = [(bytes.fromhex(r), bytes.fromhex(a)) for r, a in json.loads(sys.argv[1])]
out = []
for p in json.loads(sys.argv[2]):
    for s in {strategies!r}:
        out.append([sw.align(r, a, params=tuple(p), overhang=s) for r, a in pairs])
print(json.dumps(out))
"""


def run_child(isa, pairs):
    code = CHILD.format(strategies=STRATEGIES)
    arg_pairs = json.dumps([(r.hex(), a.hex()) for r, a in pairs])
    res = subprocess.run(
        [sys.executable, "-c", code, arg_pairs, json.dumps(PARAMS)],
        env=child_env(PYPHMM_DEV=f"sw_isa={isa}"),
        capture_output=True,
        text=True,
        check=True,
    )
    return [[(c, o) for c, o in row] for row in json.loads(res.stdout)]


@pytest.fixture(scope="module")
def gkl_results(gkl_jvm):
    from devtools.oracle.gkl_sw import GklSmithWaterman

    gkl = GklSmithWaterman()
    pairs = shaped_pairs(PAIRS, seed=4040)
    expected = []
    for p in PARAMS:
        for s in STRATEGIES:
            call = gkl.prepare(p, s)
            expected.append([call(r, a) for r, a in pairs])
    return pairs, expected


def check(rows, pairs, expected):
    bad = []
    k = 0
    for p in PARAMS:
        for s in STRATEGIES:
            for i, (ours, theirs) in enumerate(zip(rows[k], expected[k])):
                if not matches_gkl(tuple(ours), tuple(theirs), s):
                    bad.append((p, s, pairs[i], ours, theirs))
            k += 1
    assert not bad, f"{len(bad)} alignments differ from GKL, first: {bad[:2]}"


def test_in_process_vs_gkl(gkl_results):
    """The widest fill of this CPU, one call per pair as GATK makes them."""
    pairs, expected = gkl_results
    rows = [[sw.align(r, a, params=p, overhang=s) for r, a in pairs] for p in PARAMS for s in STRATEGIES]
    check(rows, pairs, expected)


@pytest.mark.parametrize("isa", ["portable", "sse", "avx2", "avx512", "avx512vbmi"])
def test_each_width_vs_gkl(gkl_results, isa):
    """Each vector width (a width this CPU lacks falls back with a warning
    to the widest it has, so every width available here is covered)."""
    pairs, expected = gkl_results
    check(run_child(isa, pairs), pairs, expected)


@pytest.mark.parametrize("isa", ["avx512", "avx512vbmi"])
def test_avx512_instance_emulated_vs_gkl(gkl_results, sw_avx512_check_exe, isa):
    """The AVX-512 instances (with and without VBMI), compiled against
    portable definitions of their intrinsics (tests/native/sw_avx512_emulation.h),
    so they run and are checked on CPUs without AVX-512 too."""
    exe = sw_avx512_check_exe
    pairs, expected = gkl_results
    codes = {name: code for code, name in STRATEGY_NAMES.items()}
    lines = [
        f"{r.hex()} {a.hex()} {p[0]} {p[1]} {p[2]} {p[3]} {codes[s]}"
        for p in PARAMS
        for s in STRATEGIES
        for r, a in pairs
    ]
    res = subprocess.run(
        [exe],
        input="\n".join(lines) + "\n",
        env=dict(os.environ, PYPHMM_DEV=f"sw_isa={isa}"),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr
    out = [(c, int(o)) for c, o in (ln.split() for ln in res.stdout.splitlines())]
    rows = [out[k * len(pairs) : (k + 1) * len(pairs)] for k in range(len(PARAMS) * len(STRATEGIES))]
    check(rows, pairs, expected)
