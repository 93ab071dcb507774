"""scripts/bench_pdhmm_jni.py's side-by-side JVMs (--jvms): a small run
through the shim (pyphmm's CPU backend where there is no GPU) prints its
phase, and the likelihoods dealt out to two JVMs (regions of different
shapes, taken alternately) come back in region order, equal to pyphmm's,
with holders built once or anew before each call. Checks bookkeeping,
never timings."""

import os
import re
import subprocess
import sys

import pytest

from devtools import ROOT
from devtools.child import child_env
from devtools.oracle import shim

SCRIPT = os.path.join(ROOT, "scripts", "bench_pdhmm_jni.py")


@pytest.mark.jvm
@pytest.mark.parametrize("holders", ["reused", "fresh"])
def test_side_by_side_jvms_match_pyphmm(tmp_path, holders):
    if not os.path.exists(shim.SHIM_JAR):
        pytest.fail(f"shim jar {shim.SHIM_JAR} not built")
    env = child_env()
    cmd = [sys.executable, SCRIPT, "--regions", "6", "--reps", "1", "--warmup", "1", "--jvms", "2"]
    cmd += ["--holders", holders]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    row = re.search(r"^shim, 2 JVMs x 1 thread, MPS off +([0-9.]+) +([0-9.]+) .* ([0-9.e+-]+|inf), -$", p.stdout, re.M)
    assert row, p.stdout
    gcups, span, diff = float(row.group(1)), float(row.group(2)), float(row.group(3))
    assert gcups > 0 and span > 0
    assert diff <= 1e-5, p.stdout
