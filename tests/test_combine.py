"""Concurrent small GPU calls of one process combined into shared GPU calls
(native/dispatch/combine.cc): every caller gets exactly its own results, its
own pairs redone in double and its own error, whichever batch carried it.

Runs against PYPHMM_TEST_FAKE_GPU (the CPU backend standing in for the GPU,
same protocol), so CI exercises it; tests/test_cuda_pairhmm.py checks the
GPU's combined calls against the CPU."""
import json

import pytest

from devtools.child import run_python

# Eight threads, one call per region (as GATK's engine threads call), then
# the same regions one by one on the CPU for reference.
CHILD = r"""
import json, threading
import numpy as np
import pyphmm
from devtools.regions import generate

regions = generate(48, seed=3, underflow=6, max_reads=30)
double = {double}
ref, ref_double = [], []
for r in regions:
    st = {{}}
    ref.append(pyphmm.compute_likelihoods(*r, backend="cpu", double=double, stats=st))
    ref_double.append(st["double_pairs"])
res, sts = [None] * len(regions), [None] * len(regions)

def worker(t):
    for k in range(t, len(regions), 8):
        st = {{}}
        res[k] = pyphmm.compute_likelihoods(*regions[k], backend="cuda", double=double, stats=st)
        sts[k] = st

threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print("RESULT " + json.dumps({{
    "same": [bool(np.array_equal(a, b)) for a, b in zip(res, ref)],
    "double_pairs": [s["double_pairs"] for s in sts], "ref_double_pairs": ref_double,
    "batch_calls": [s["batch_calls"] for s in sts], "backend": [s["backend"] for s in sts],
    "fell_back": [s["fell_back"] for s in sts],
}}))
"""


def run(double=False, **env):
    p = run_python(CHILD.format(double=double), env={"PYPHMM_TEST_FAKE_GPU": "1", **env},
                   unset=("PYPHMM_BACKEND",), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")][0]
    return json.loads(line[len("RESULT "):]), p.stderr


@pytest.mark.parametrize("double", [False, True], ids=["float", "double"])
def test_combined_calls_give_each_caller_its_own_results(double):
    out, _ = run(double)
    assert all(out["same"])
    assert out["double_pairs"] == out["ref_double_pairs"]
    assert sum(out["ref_double_pairs"]) > 0, "the underflow regions must take the double pass"
    assert set(out["backend"]) == {"cuda"} and not any(out["fell_back"])
    # With two GPU calls in flight at most, eight threads queue: calls share.
    assert max(out["batch_calls"]) > 1, out["batch_calls"]


def test_combining_off_runs_every_call_alone():
    out, _ = run(PYPHMM_GPU_COMBINE="0")
    assert all(out["same"]) and out["batch_calls"] == [1] * len(out["same"])


def test_failed_combined_call_falls_back_for_every_caller():
    """Every second GPU call fails: each caller of a failed batch recomputes
    its own regions on the CPU; one warning for the process."""
    out, err = run(PYPHMM_TEST_GPU_FAILURE="alternate")
    assert all(out["same"]) and out["double_pairs"] == out["ref_double_pairs"]
    assert any(out["fell_back"]) and not all(out["fell_back"])
    assert err.count("warning: GPU PairHMM failed") == 1, err
