"""Dispatch policy: the per-call GPU threshold (calibrated at first use or
PYPHMM_GPU_MIN_CELLS), whole-workload GPU+CPU sharing (hybrid), and how both
are reported (info, stats, CLI, PYPHMM_LOG=debug).

The policy reads its environment once per process, so every case runs in a
child process. Two kinds of children:
- real GPU (skipped without one): thresholds forced so that regions go each
  way, and a whole workload shared by GPU and CPU; every region's result
  must be the CPU backend's or the GPU backend's.
- PYPHMM_TEST=fake_gpu=1 (everywhere): the dispatcher's GPU is the CPU
  backend on one thread, so the calibration, the threshold split, the
  scheduler's claims, scatter, counters and the mid-way failure path all run
  on machines without a GPU, and every result must equal the CPU backend's
  exactly.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pyphmm
from devtools import ROOT
from devtools.child import child_env
from devtools.regions import make_region

HAVE_GPU = pyphmm.info()["cuda_usable"]
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no usable CUDA device: " + pyphmm.info()["cuda_status"])
TOL = 1e-5


def workload(scale=1):
    """Interleaved tiny, small, medium and large regions (sizes spread over
    four orders of magnitude, not sorted: the scheduler sorts)."""
    rng = np.random.default_rng(5)
    shapes = [(1, 1, 12, 20), (4, 2, 60, 120), (30, 4, 120, 250), (60 * scale, 6, 151, 400)]
    # reads are windows of the haplotypes with 2% mismatches (realistic
    # likelihoods), GATK's default gap penalties
    return [
        make_region(rng, nr, nh, (rl, rl), (hl, hl), preset="gatk_gaps", mismatch=0.02, qual=(10, 40))
        for nr, nh, rl, hl in (shapes[k % 4] for k in range(40))
    ]


def cells(r):
    reads, haps = r
    return int(reads.lengths.sum()) * int(haps.lengths.sum())


# The child: computes `mode` under the environment it was started with and
# prints one JSON line. same_gpu compares with the GPU backend within 1e-9
# (GPU and CPU differ by ~1e-6, so it still says which side computed it).
CHILD = r"""
import json, os, sys
import numpy as np
import pyphmm, test_dispatch as t
mode, kwargs = {mode!r}, {kwargs!r}
regions = t.workload(kwargs.pop("scale", 1))
cpu = pyphmm.compute_regions(regions, backend="cpu")
# (the fake GPU is the CPU backend; and =fail counts GPU calls, so make none here)
fake = "fake_gpu=" in os.environ.get("PYPHMM_TEST", "")
gpu = pyphmm.compute_regions(regions, backend="cuda") if pyphmm.info()["cuda_usable"] and not fake else cpu
out = {{"info": pyphmm.info()}}
if mode == "per_call":
    out["calls"] = []
    for k, (reads, haps) in enumerate(regions):
        st = {{}}
        got = pyphmm.compute_likelihoods(reads, haps, stats=st, **kwargs)
        # the GPU backend on this region alone: a call's shape picks its
        # kernels, and the launch-constant ones round by rows per lane
        gpu_k = pyphmm.compute_likelihoods(reads, haps, backend="cuda") if gpu is not cpu else cpu[k]
        out["calls"].append(dict(st, cells_region=t.cells(regions[k]),
                                 same_cpu=bool(np.array_equal(got, cpu[k])),
                                 same_gpu=bool(np.allclose(got, gpu_k, rtol=0, atol=1e-9)),
                                 diff_cpu=float(np.max(np.abs(got - cpu[k])))))
else:
    st = {{}}
    got = pyphmm.compute_regions(regions, stats=st, **kwargs)
    out["stats"] = st
    out["same_cpu"] = [bool(np.array_equal(a, b)) for a, b in zip(got, cpu)]
    out["same_gpu"] = [bool(np.allclose(a, b, rtol=0, atol=1e-9)) for a, b in zip(got, gpu)]
    out["diff_cpu"] = max(float(np.max(np.abs(a - b))) for a, b in zip(got, cpu))
    out["total_cells"] = sum(t.cells(r) for r in regions)
print("RESULT " + json.dumps(out))
"""


POLICY_ENV = (
    "PYPHMM_BACKEND",
    "PYPHMM_HYBRID",
    "PYPHMM_GPU_MIN_CELLS",
    "PYPHMM_LOG",
    "PYPHMM_DEV",
    "PYPHMM_TEST",
    "PYPHMM_DEVICE",
)


def policy_env(env):
    """The caller's environment with exactly the policy variables in env."""
    e = child_env(ROOT, import_tests=True, **env)
    for k in POLICY_ENV:
        if k not in env:
            e.pop(k, None)
    return e


def run_child(mode, env, **kwargs):
    e = policy_env(env)
    code = CHILD.format(mode=mode, kwargs=kwargs)
    p = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")][0]
    return json.loads(line[len("RESULT ") :]), p.stderr


def info_child(env):
    p = subprocess.run(
        [sys.executable, "-m", "pyphmm", "info", "--json"],
        env=policy_env(env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p.stderr


def median_cells():
    sizes = sorted(cells(r) for r in workload())
    return (sizes[len(sizes) // 2 - 1] + sizes[len(sizes) // 2]) // 2


# ----------------------------------------------------------------- info, env
def test_info_reports_threshold_source_and_threads():
    inf = pyphmm.info()
    assert inf["gpu_min_cells"] >= 0 and inf["cpu_threads"] >= 1
    assert inf["gpu_min_cells_source"] in ("default", "calibrated", "env")
    assert (inf["calibration"] is not None) == (inf["gpu_min_cells_source"] == "calibrated")
    assert isinstance(inf["hybrid"], bool) and inf["hybrid_gpu_threads"] >= 1
    if not inf["cuda_usable"] and "fake_gpu=" not in os.environ.get("PYPHMM_TEST", ""):
        assert not inf["hybrid"]


def test_env_threshold_is_reported():
    inf, _ = info_child({"PYPHMM_GPU_MIN_CELLS": "12345"})
    assert inf["gpu_min_cells"] == 12345 and inf["gpu_min_cells_source"] == "env"
    assert inf["calibration"] is None
    p = subprocess.run(
        [sys.executable, "-m", "pyphmm", "info"],
        env=policy_env({"PYPHMM_GPU_MIN_CELLS": "12345"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "12345 cells" in p.stdout and "PYPHMM_GPU_MIN_CELLS" in p.stdout, p.stdout
    assert f"{inf['cpu_threads']} CPU threads" in p.stdout


@pytest.mark.parametrize("bad", ["abc", "-5", "1e6"])
def test_bad_env_threshold_is_an_error(bad):
    p = subprocess.run(
        [sys.executable, "-m", "pyphmm", "info", "--json"],
        env=policy_env({"PYPHMM_GPU_MIN_CELLS": bad}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert f"PYPHMM_GPU_MIN_CELLS={bad} is not valid: expected an integer >= 0" in p.stderr
    assert json.loads(p.stdout)["gpu_min_cells_source"] != "env"


def test_without_gpu_the_default_is_reported():
    if HAVE_GPU:
        pytest.skip("this machine has a GPU: the threshold is calibrated")
    inf, _ = info_child({})
    assert inf["gpu_min_cells"] == 2_000_000 and inf["gpu_min_cells_source"] == "default"
    assert not inf["hybrid"]


def test_hybrid_option_is_checked():
    with pytest.raises(TypeError, match="hybrid"):
        pyphmm.compute_regions([], hybrid=1)
    assert pyphmm.compute_regions([], hybrid=False) == []


def test_stats_count_sides_on_cpu():
    st = {}
    regions = workload()[:4]
    pyphmm.compute_regions(regions, backend="cpu", stats=st)
    assert st["cpu_regions"] == 4 and st["cpu_cells"] == st["cells"] == sum(cells(r) for r in regions)
    assert st["gpu_regions"] == 0 and st["gpu_cells"] == 0 and not st["hybrid"]


# ----------------------------------------------------------------- fake GPU (any machine)
FAKE = {"PYPHMM_TEST": "fake_gpu=1"}
ON = {"PYPHMM_HYBRID": "1"}  # whole-workload sharing is off by default


def test_fake_gpu_calibration():
    inf, err = info_child(dict(FAKE, PYPHMM_LOG="debug"))
    assert inf["gpu_min_cells_source"] == "calibrated"
    cal = inf["calibration"]
    assert cal["gpu_call_us"] > 0 and cal["gpu_gcups"] > 0 and cal["cpu_gcups"] > 0
    assert 10_000 <= inf["gpu_min_cells"] <= 1_000_000_000
    assert "pyphmm: calibration:" in err and not inf["hybrid"]  # sharing is opt-in (PYPHMM_HYBRID=1)


def test_fake_gpu_per_call_split():
    """A threshold between region sizes: small calls on the CPU, large on the
    (fake) GPU; counters say which, results are the CPU backend's."""
    t = median_cells()
    out, _ = run_child("per_call", dict(FAKE, PYPHMM_GPU_MIN_CELLS=str(t)))
    calls = out["calls"]
    assert all(c["same_cpu"] for c in calls)
    for c in calls:
        gpu_side = c["cells_region"] >= t
        assert c["backend"] == ("cuda" if gpu_side else "cpu")
        assert (c["gpu_regions"], c["cpu_regions"]) == ((1, 0) if gpu_side else (0, 1))
        assert (c["gpu_cells"] if gpu_side else c["cpu_cells"]) == c["cells_region"]
    assert 0 < sum(c["gpu_regions"] for c in calls) < len(calls)


def test_forced_threshold_keeps_everything_on_cpu():
    out, _ = run_child("whole", dict(FAKE, PYPHMM_GPU_MIN_CELLS=str(10**15)))
    st = out["stats"]
    assert st["cpu_regions"] == 40 and st["gpu_regions"] == 0 and not st["hybrid"] and st["backend"] == "cpu"
    assert all(out["same_cpu"])


def check_shared(out, n=40):
    st = out["stats"]
    assert st["hybrid"] and not st["fell_back"], st
    assert st["gpu_regions"] + st["cpu_regions"] == n
    assert st["gpu_cells"] + st["cpu_cells"] == st["cells"] == out["total_cells"]
    assert st["gpu_regions"] > 0 and st["cpu_regions"] > 0, st
    return st


def test_fake_gpu_hybrid_shares_regions():
    out, err = run_child(
        "whole",
        dict(FAKE, **ON, PYPHMM_GPU_MIN_CELLS="0", PYPHMM_DEV="hybrid_gpu_threads=1", PYPHMM_LOG="debug"),
        threads=3,
    )
    st = check_shared(out)
    assert st["hybrid_gpu_threads"] == 1 and st["hybrid_cpu_threads"] == 2
    assert all(out["same_cpu"])
    assert "; hybrid;" in err and f"GPU {st['gpu_regions']} regions" in err


@pytest.mark.parametrize(
    "env,kwargs",
    [
        ({}, {}),
        pytest.param({"PYPHMM_HYBRID": "0"}, {}, marks=pytest.mark.slow),
        pytest.param(ON, {"hybrid": False}, marks=pytest.mark.slow),
    ],
)
def test_fake_gpu_hybrid_off(env, kwargs):
    out, _ = run_child("whole", dict(FAKE, PYPHMM_GPU_MIN_CELLS="0", **env), **kwargs)
    st = out["stats"]
    assert not st["hybrid"] and st["gpu_regions"] == 40 and st["cpu_regions"] == 0
    assert all(out["same_cpu"])


@pytest.mark.slow
def test_hybrid_option_overrides_env():
    out, _ = run_child(
        "whole",
        dict(FAKE, PYPHMM_GPU_MIN_CELLS="0", PYPHMM_HYBRID="0", PYPHMM_DEV="hybrid_gpu_threads=1"),
        hybrid=True,
        threads=3,
    )
    assert out["stats"]["hybrid"]


@pytest.mark.slow
def test_cpu_backend_never_shares():
    out, _ = run_child("whole", dict(FAKE, PYPHMM_GPU_MIN_CELLS="0"), backend="cpu")
    st = out["stats"]
    assert not st["hybrid"] and st["cpu_regions"] == 40


def test_fake_gpu_fails_midway():
    """The GPU side fails after a batch of it succeeded: one warning, the CPU
    finishes, every result is the CPU backend's. Two GPU drivers, so that a
    second GPU call (the one that fails) happens however fast the CPU worker
    is: with one driver, a CPU worker that outpaced it could take every
    region before its second batch (seen on a 16-core host)."""
    out, err = run_child(
        "whole",
        {
            "PYPHMM_TEST": "fake_gpu=1,gpu_failure=alternate",
            "PYPHMM_GPU_MIN_CELLS": "0",
            "PYPHMM_DEV": "hybrid_gpu_threads=2",
            **ON,
        },
        threads=3,
    )
    st = out["stats"]
    assert st["hybrid"] and st["fell_back"]
    assert st["gpu_regions"] > 0, "the first batch succeeds: the failure is mid-way"
    assert st["gpu_regions"] + st["cpu_regions"] == 40
    assert all(out["same_cpu"])
    assert err.count("the CPU computes the remaining regions") == 1, err


HYBRID_LINE = re.compile(
    r"pyphmm: hybrid: GPU (\S+) cells/s, CPU (\S+) cells/s x (\d+) workers: "
    r"CPU share (\S+)% -> (shared|GPU alone)"
)


def hybrid_decision(err):
    """(gpu rate, cpu rate per thread, workers, share %, shared?) from the debug line."""
    m = HYBRID_LINE.search(err)
    assert m, err
    return float(m[1]), float(m[2]), int(m[3]), float(m[4]), m[5] == "shared"


@pytest.mark.slow
def test_fake_gpu_hybrid_decision_line():
    """The debug line states the predicted CPU share behind the decision; the
    fake GPU is one CPU thread, so with 2 workers their share is 2/3."""
    out, err = run_child(
        "whole",
        dict(FAKE, **ON, PYPHMM_GPU_MIN_CELLS="0", PYPHMM_DEV="hybrid_gpu_threads=1", PYPHMM_LOG="debug"),
        threads=3,
    )
    gpu, cpu, workers, share, shared = hybrid_decision(err)
    assert workers == 2 and shared and abs(share - 100 * 2 * cpu / (gpu + 2 * cpu)) < 0.1 and 60 < share < 70
    check_shared(out)


@pytest.mark.slow
def test_fake_gpu_hybrid_too_small_a_share_runs_gpu_alone():
    """Below PYPHMM_DEV's hybrid_min_cpu_share percent the CPU workers take nothing:
    one GPU call computes every region (the GPU's results, exactly)."""
    out, err = run_child(
        "whole",
        dict(
            FAKE,
            **ON,
            PYPHMM_GPU_MIN_CELLS="0",
            PYPHMM_DEV="hybrid_gpu_threads=1,hybrid_min_cpu_share=70",
            PYPHMM_LOG="debug",
        ),
        threads=3,
    )
    st = out["stats"]
    *_, share, shared = hybrid_decision(err)
    assert not shared and share < 70
    assert st["hybrid"] and st["hybrid_cpu_threads"] == 0 and st["gpu_regions"] == 40 and st["cpu_regions"] == 0
    assert all(out["same_cpu"])  # the fake GPU is the CPU backend


@pytest.mark.slow
def test_one_thread_hybrid_is_gpu_only():
    out, _ = run_child("whole", dict(FAKE, **ON, PYPHMM_GPU_MIN_CELLS="0"), threads=1)
    st = out["stats"]
    assert st["hybrid"] and st["hybrid_cpu_threads"] == 0 and st["gpu_regions"] == 40


# ----------------------------------------------------------------- real GPU
@pytest.mark.gpu
@needs_gpu
def test_gpu_calibrated_threshold_reported():
    inf, _ = info_child({})
    assert inf["gpu_min_cells_source"] == "calibrated", inf
    assert 10_000 <= inf["gpu_min_cells"] <= 1_000_000_000
    print(f"\ncalibrated threshold {inf['gpu_min_cells']} cells: {inf['calibration']}")


@pytest.mark.gpu
@needs_gpu
def test_gpu_per_call_split():
    t = median_cells()
    out, _ = run_child("per_call", {"PYPHMM_GPU_MIN_CELLS": str(t)})
    calls = out["calls"]
    for c in calls:
        gpu_side = c["cells_region"] >= t
        assert c["backend"] == ("cuda" if gpu_side else "cpu") and not c["fell_back"]
        assert (c["gpu_regions"], c["cpu_regions"]) == ((1, 0) if gpu_side else (0, 1))
        assert c["same_gpu"] if gpu_side else c["same_cpu"]
        assert c["diff_cpu"] <= TOL
    n_gpu = sum(c["gpu_regions"] for c in calls)
    assert 0 < n_gpu < len(calls)


@pytest.mark.gpu
@needs_gpu
def test_gpu_hybrid_decides_by_predicted_share():
    """A GPU with the throughput of an H100 leaves the CPU workers a share
    under 5%: the call then runs the GPU alone, with its results exactly."""
    out, err = run_child("whole", {"PYPHMM_GPU_MIN_CELLS": "0", "PYPHMM_LOG": "debug", **ON}, scale=8)
    gpu, cpu, workers, share, shared = hybrid_decision(err)
    print(f"\n{err.strip()}")
    assert shared == (workers > 0 and share >= 5.0)
    st = out["stats"]
    if not shared:
        assert st["hybrid_cpu_threads"] == 0 and st["cpu_regions"] == 0 and st["gpu_regions"] == 40
        assert all(out["same_gpu"])


@pytest.mark.gpu
@needs_gpu
def test_gpu_hybrid_shares_regions():
    """Sharing forced (PYPHMM_DEV=hybrid_min_cpu_share=0): the large regions total
    ~1 G cells, enough GPU time for the CPU threads to take the tiny ones;
    each region's result is exactly one backend's."""
    out, err = run_child(
        "whole",
        {"PYPHMM_GPU_MIN_CELLS": "0", "PYPHMM_LOG": "debug", "PYPHMM_DEV": "hybrid_min_cpu_share=0", **ON},
        scale=8,
    )
    st = check_shared(out)
    print(f"\n{err.strip()}")
    assert all(c or g for c, g in zip(out["same_cpu"], out["same_gpu"]))
    assert out["diff_cpu"] <= TOL
    assert st["backend"] == "cuda"


@pytest.mark.gpu
@needs_gpu
def test_gpu_hybrid_off_and_cuda_backend_are_gpu_only():
    for env, kwargs in (({}, {}), ({"PYPHMM_HYBRID": "0"}, {}), (ON, {"backend": "cuda"})):
        out, _ = run_child("whole", dict(env, PYPHMM_GPU_MIN_CELLS="0"), **kwargs)
        st = out["stats"]
        assert not st["hybrid"] and st["gpu_regions"] == 40 and st["cpu_regions"] == 0
        assert all(out["same_gpu"])


@pytest.mark.gpu
@needs_gpu
def test_gpu_hybrid_failure_falls_back():
    out, err = run_child("whole", {"PYPHMM_GPU_MIN_CELLS": "0", "PYPHMM_TEST": "gpu_failure=always", **ON})
    st = out["stats"]
    assert st["hybrid"] and st["fell_back"] and st["gpu_regions"] == 0 and st["cpu_regions"] == 40
    assert all(out["same_cpu"])
    # The child's reference GPU call failed first: one warning per process, not per failed call.
    assert err.count("warning: GPU PairHMM failed") == 1, err
