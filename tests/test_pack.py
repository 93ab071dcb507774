"""The CUDA backend's host packer (native/common/pack_elems.cc): its AVX2
path equals its scalar loop and the documented element layout. Compiled and
run here, so it is checked on machines without a GPU too."""

import os
import subprocess

import pytest


@pytest.mark.slow
def test_vector_packer_matches_scalar_and_layout(native_check_exe):
    exe = native_check_exe("pack_check", "common/pack_elems.cc", "common/config.cc")
    res = subprocess.run([str(exe)], capture_output=True, text=True, env=dict(os.environ, PYPHMM_DEV=""))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    if res.stdout.startswith("no-avx2"):
        pytest.skip("this CPU has no AVX2: only the scalar packer can run here")
    assert " 0 mismatches" in res.stdout, res.stdout


@pytest.mark.slow
def test_gpu_host_planning(native_check_exe):
    """The GPU PairHMM's planning (bins, constant triple, chunks, the packed
    buffer), which only CUDA builds link, compiled with the host compiler:
    tests/native/pairhmm_plan_check.cc decodes what it packs."""
    exe = native_check_exe(
        "pairhmm_plan_check",
        "cuda/pairhmm_plan.cc",
        "common/pack_elems.cc",
        "common/tables.cc",
        "common/thread_pool.cc",
        "common/config.cc",
    )
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout[-2000:] + res.stderr[-2000:]
