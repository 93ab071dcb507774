"""scripts/bench_pdhmm_jni.py's side-by-side JVMs (--jvms): the regions
dealt out to K JVMs come back in region order, and a small run through the
shim (pyphmm's CPU backend where there is no GPU) prints its phase with
results equal to pyphmm's. Checks bookkeeping, never timings."""

import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from devtools import ROOT
from devtools.child import child_env
from devtools.oracle import shim

SCRIPT = os.path.join(ROOT, "scripts", "bench_pdhmm_jni.py")


def bench_module():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("bench_pdhmm_jni", SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.pop(0)


def test_results_of_k_jvms_come_back_in_region_order():
    shapes = [(2, 3), (1, 1), (4, 2), (3, 3), (1, 2)]
    flat = [np.arange(r * h, dtype=np.float64) + 100 * i for i, (r, h) in enumerate(shapes)]
    k = 2  # JVM p held regions p, p + k, ...
    recs = [{"res": np.concatenate([flat[i] for i in range(p, len(shapes), k)])} for p in range(k)]
    np.testing.assert_array_equal(bench_module().in_region_order(recs, shapes), np.concatenate(flat))


@pytest.mark.jvm
def test_side_by_side_jvms_match_pyphmm(tmp_path):
    if not os.path.exists(shim.SHIM_JAR):
        pytest.fail(f"shim jar {shim.SHIM_JAR} not built")
    env = child_env()
    cmd = [sys.executable, SCRIPT, "--regions", "6", "--reps", "1", "--warmup", "1", "--jvms", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    row = re.search(r"^shim, 2 JVMs x 1 thread, MPS off +([0-9.]+) +([0-9.]+) .* ([0-9.e+-]+|inf), -$", p.stdout, re.M)
    assert row, p.stdout
    gcups, span, diff = float(row.group(1)), float(row.group(2)), float(row.group(3))
    assert gcups > 0 and span > 0
    assert diff <= 1e-5, p.stdout
