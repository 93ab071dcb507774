"""A GPU whose memory another process holds: every result still equals GKL
(the call falls back to the CPU), the process says so once, and the GPU is
used again once memory is back.

The other process is devtools.gpu_hog (the driver API through ctypes).
Skipped where no usable GPU exists; run on the GPU host.
"""

import json

import numpy as np
import pytest

import pyphmm
from devtools.child import run_python
from devtools.oracle import TOL, max_abs_diff
from devtools.oracle.gkl import gkl_regions
from devtools.regions import make_region

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.jvm,
    pytest.mark.skipif(
        not pyphmm.info()["cuda_usable"], reason="no usable CUDA device: " + pyphmm.info()["cuda_status"]
    ),
]

WARNING = "pyphmm: warning: GPU PairHMM failed"


def workload():
    """A small call (grows the GPU buffers a little), then a file-sized one
    (needs more than a full GPU leaves)."""
    rng = np.random.default_rng(20261123)
    small = [make_region(rng, 3, 2, (100, 151), (300, 400))]
    big = [make_region(rng, 60, 4, (10, 151), (30, 521)) for _ in range(120)]
    return small, big


# The child: `before` = the hog holds the GPU from the start (no context
# can be made), `during` = it takes the memory between two calls.
_CHILD = """
import json, numpy as np, pyphmm
from devtools import gpu_hog
from test_gpu_memory import workload
small, big = workload()
def run(regions):
    st = {{}}
    got = pyphmm.compute_regions(regions, backend="auto", stats=st)
    return got, {{k: st[k] for k in ("backend", "fell_back")}}
phases = {{}}
if "{when}" == "before":
    with gpu_hog.hold() as held:
        got, phases["held"] = run(big)
else:
    _, phases["small"] = run(small)
    with gpu_hog.hold() as held:
        got, phases["held"] = run(big)
    again, phases["after"] = run(big)
    np.save("{out}/again.npy", np.concatenate(again))
np.save("{out}/held.npy", np.concatenate(got))
print("RESULT", json.dumps(dict(phases, hog=held)))
"""


@pytest.mark.parametrize("when", ["before", "during"])
def test_full_gpu_memory_falls_back_once(gkl_jvm, tmp_path, when):
    p = run_python(
        _CHILD.format(when=when, out=tmp_path),
        # (on a host with several GPUs the child would choose one the hog leaves free)
        env={"PYPHMM_GPU_MIN_CELLS": "0", "PYPHMM_DEVICE": "0"},
        unset=("PYPHMM_BACKEND", "PYPHMM_LOG", "PYPHMM_TEST"),
        import_tests=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")][0]
    phases = json.loads(line[len("RESULT ") :])
    assert phases["hog"]["free_mib"] < 64, f"the hog left too much free memory: {phases['hog']}"

    assert phases["held"]["fell_back"], phases
    warnings = [x for x in p.stderr.splitlines() if x.startswith(WARNING)]
    assert len(warnings) == 1, p.stderr
    assert "memory" in warnings[0], warnings[0]  # the reason is named

    _, big = workload()
    gkl = gkl_regions(big)
    want = np.concatenate(gkl)
    got = np.load(tmp_path / "held.npy")
    assert got.shape == want.shape and np.isfinite(got).all()
    assert max_abs_diff([got], [want]) <= TOL
    if when == "during":
        assert phases["small"]["backend"] == "cuda" and not phases["small"]["fell_back"], phases
        # memory is back: the GPU computes again, without a second message
        assert phases["after"]["backend"] == "cuda" and not phases["after"]["fell_back"], phases
        assert max_abs_diff([np.load(tmp_path / "again.npy")], [want]) <= TOL
