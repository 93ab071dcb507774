"""A GPU without room for one more process: an MPS server at its client
limit (48 on the hosts measured), or an exclusive-process GPU in use.

The process then computes on the CPU, says why in one line, and tries the
GPU again every PYPHMM_DEV's gpu_retry_ms; once it starts, later calls go to it.
With several GPUs a process whose chosen GPU is full takes another one.

The fake devices stand in for the GPU everywhere (PYPHMM_TEST's gpu_full=a:b:
the first a starts of device 0 fail for want of room, ...); the last test
fills a real GPU's MPS server and runs on GPU hosts only."""

import ctypes
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from devtools.child import popen_python, run_python
from pyphmm import mps

CHILD = r"""
import json, sys, time
import pyphmm
from pyphmm import io, samples
recs = list(io.read_records(samples.sample_path()))
def call():
    st = {}
    res = pyphmm.compute_regions(recs, stats=st)
    i = pyphmm.info()
    return {"backend": st["backend"], "usable": i["cuda_usable"], "device": i["device"],
            "choice": i["device_choice"], "status": i["cuda_status"],
            "results": [r.tolist() for r in res]}
print(json.dumps(call()), flush=True)
sys.stdin.readline()  # the test's go-ahead (a pause, or a freed GPU)
time.sleep(float(sys.argv[1]))
print(json.dumps(call()), flush=True)
"""


@pytest.fixture(autouse=True)
def private_registry(tmp_path, monkeypatch):
    """The children's GPU registry (dispatch/devices.h) in a directory of
    this test's own."""
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))


ENV_NAMES = ("PYPHMM_DEVICE", "PYPHMM_TEST", "PYPHMM_DEV", "PYPHMM_BACKEND")


def start(wait_s, **env):
    unset = [name for name in ENV_NAMES if name not in env]
    return popen_python(CHILD, str(wait_s), env=dict(PYPHMM_GPU_MIN_CELLS="0", **env), unset=unset)


def report(p):
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return json.loads(line)


def both_calls(wait_s=0.0, **env):
    """The child's two reports (before and after the pause) and its stderr."""
    p = start(wait_s, **env)
    first = report(p)
    p.stdin.write("\n")
    p.stdin.flush()
    second = report(p)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return first, second, err


def test_a_full_gpu_is_tried_again_and_taken_once_it_has_room():
    """Device 0's first start fails: the first call runs on the CPU with one
    line saying why; a call after the retry interval runs on the GPU."""
    first, second, err = both_calls(0.5, PYPHMM_TEST="fake_gpu=1,gpu_full=1", PYPHMM_DEV="gpu_retry_ms=150")
    assert first["backend"] == "cpu" and not first["usable"], first
    assert "has no room for this process" in first["status"] and "trying again every 0.15 s" in first["status"]
    assert second["backend"] == "cuda" and second["usable"] and second["device"] == 0, second
    assert err.count("has no room for this process") == 1, err
    assert err.count("GPU 0 (fake GPU 0 (CPU stand-in)) has room now") == 1, err
    # the same likelihoods on both sides (the fake GPU is the CPU backend)
    assert first["results"] == second["results"]


def test_without_retries_a_full_gpu_stays_unused():
    first, second, err = both_calls(0.5, PYPHMM_TEST="fake_gpu=1,gpu_full=1", PYPHMM_DEV="gpu_retry_ms=0")
    assert first["backend"] == second["backend"] == "cpu", (first, second)
    assert "has no room" in second["status"] and "trying again" not in second["status"]
    assert "has room now" not in err


def test_a_process_whose_gpu_is_full_takes_another():
    """Device 0 is the least loaded, so chosen, but full: the process takes
    device 1 at once and says so in its choice."""
    first, _, err = both_calls(PYPHMM_TEST="fake_gpu=2,gpu_load=0:3,gpu_full=1:0")
    assert first["backend"] == "cuda" and first["device"] == 1, first
    assert first["choice"] == "least loaded of 2 GPUs; GPU 0 had no room", first
    assert "has no room" not in err


@pytest.mark.slow
def test_a_pinned_process_waits_for_its_own_gpu():
    first, second, _ = both_calls(
        0.5, PYPHMM_TEST="fake_gpu=2,gpu_full=1:0", PYPHMM_DEVICE="0", PYPHMM_DEV="gpu_retry_ms=150"
    )
    assert first["backend"] == "cpu" and first["device"] == -1, first
    assert second["backend"] == "cuda" and second["device"] == 0, second


@pytest.mark.slow
def test_when_every_gpu_is_full_the_first_choice_is_tried_first():
    first, second, _ = both_calls(
        0.5, PYPHMM_TEST="fake_gpu=2,gpu_load=0:3,gpu_full=1:1", PYPHMM_DEV="gpu_retry_ms=150"
    )
    assert first["backend"] == "cpu", first
    assert "GPU 0 (fake GPU 0 (CPU stand-in)) has no room" in first["status"], first
    assert second["backend"] == "cuda" and second["device"] == 0, second


def test_a_call_pinned_to_a_full_gpu_is_told_it_is_unavailable():
    """The C ABI's options.device on a GPU without room: PYPHMM_E_UNAVAILABLE
    naming why (the caller asked for nothing wrong), not INVALID, which
    stays for a device that does not exist."""
    code = (
        "from pyphmm import _native, io, samples\n"
        "from pyphmm._pyphmm import ffi, lib\n"
        "from pyphmm.pairhmm import _Packed, _region_list\n"
        "packed = _Packed(_region_list(list(io.read_records(samples.sample_path()))))\n"
        "out = ffi.new('double[]', packed.total)\n"
        "for device in (0, 5):\n"
        "    opts, err = _native.make_options('auto'), ffi.new('pyphmm_error *')\n"
        "    opts.device = device\n"
        "    rc = lib.pyphmm_pairhmm(packed.c_regions, len(packed.shapes), out, opts, ffi.NULL, err)\n"
        "    print(rc == lib.PYPHMM_E_UNAVAILABLE, rc == lib.PYPHMM_E_INVALID, ffi.string(err.message).decode())\n"
    )
    p = run_python(code, env=dict(PYPHMM_TEST="fake_gpu=1,gpu_full=1", PYPHMM_DEV="gpu_retry_ms=0"), timeout=120)
    assert p.returncode == 0, p.stderr
    full, missing = p.stdout.splitlines()
    assert full.startswith("True False options.device 0: GPU 0 (fake GPU 0 (CPU stand-in)) has no room"), full
    assert missing == "False True options.device 5 is not a usable GPU here (0 usable)", missing


# ---- a real MPS server at its client limit (GPU hosts) ---------------------

HOLDER = r"""
import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1")
rc = cu.cuInit(0)
ctx, dev = ctypes.c_void_p(), ctypes.c_int()
if rc == 0:
    rc = cu.cuDeviceGet(ctypes.byref(dev), 0)
if rc == 0:
    rc = cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
print(rc, flush=True)
sys.stdin.readline()
"""


def _cuda_devices():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    n = ctypes.c_int()
    return n.value if cu.cuInit(0) == 0 and cu.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0


def _fill(mps_env, visible):
    """Bare driver contexts on CUDA_VISIBLE_DEVICES=visible until the MPS
    server refuses one (skips if 96 fit); the holders, still alive."""
    holders = []
    for _ in range(96):
        h = subprocess.Popen(
            [sys.executable, "-c", HOLDER],
            env=dict(os.environ, CUDA_VISIBLE_DEVICES=visible, **mps_env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        holders.append(h)
        if int(h.stdout.readline()) != 0:
            return holders
    release(holders)
    pytest.skip("the MPS server took 96 clients without refusing one")


def release(holders):
    for h in holders:
        if h.poll() is None:
            h.communicate("\n", timeout=60)


NEEDS_MPS = pytest.mark.skipif(shutil.which(mps.CONTROL) is None, reason=f"{mps.CONTROL} not installed")


@pytest.mark.gpu
@pytest.mark.slow
@NEEDS_MPS
@pytest.mark.skipif(_cuda_devices() < 1, reason="no CUDA device")
def test_a_process_beyond_the_mps_client_limit_moves_to_the_gpu_when_one_leaves():
    """Holders (bare driver contexts) fill a private MPS server until one
    is refused; a pyphmm process then computes on the CPU; once five
    holders leave, its next call runs on the GPU, within 1e-5 of the CPU's
    results."""
    with mps.private_daemon() as mps_env:
        holders = []
        try:
            holders = _fill(mps_env, "0")
            p = start(4.0, PYPHMM_DEV="gpu_retry_ms=500", CUDA_VISIBLE_DEVICES="0", **mps_env)
            first = report(p)
            assert first["backend"] == "cpu" and "has no room for this process" in first["status"], first
            for h in holders[-6:]:  # the refused holder and five more
                h.stdin.write("\n")
                h.stdin.flush()
            p.stdin.write("\n")
            p.stdin.flush()
            second = report(p)
            _, err = p.communicate(timeout=120)
        finally:
            release(holders)
    assert second["backend"] == "cuda" and second["usable"], (second, err)
    assert "has room now" in err, err
    for a, b in zip(first["results"], second["results"]):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=0, atol=1e-5)
    assert len(holders) > 1
    print(f"MPS refused client {len(holders)}; {err.strip()}")


THREADS = r"""
import collections, json, threading
import pyphmm
from pyphmm import io, samples
recs = list(io.read_records(samples.sample_path()))
seen = collections.Counter()
lock = threading.Lock()
def work():
    for _ in range(30):
        for reads, haps in recs:
            st = {}
            pyphmm.compute_likelihoods(reads, haps, stats=st)
            with lock:
                seen[f"{st['backend']} {st['device']} {st['fell_back']}"] += 1
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"seen": seen, "device": pyphmm.info()["device"]}))
"""


@pytest.mark.gpu
@pytest.mark.slow
@NEEDS_MPS
@pytest.mark.skipif(_cuda_devices() < 2, reason="fewer than two CUDA devices")
def test_threads_of_a_process_keep_off_a_full_second_gpu():
    """GPU 1's MPS server is full: a process with eight calling threads
    chooses GPU 0, and its calls spread over the GPUs only where they start,
    so none goes to GPU 1 and none falls back to the CPU."""
    with mps.private_daemon() as mps_env:
        holders = []
        try:
            holders = _fill(mps_env, "1")
            env = dict(PYPHMM_GPU_MIN_CELLS="0", CUDA_VISIBLE_DEVICES="0,1", **mps_env)
            p = run_python(THREADS, env=env, unset=("PYPHMM_DEVICE",), timeout=300)
        finally:
            release(holders)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["device"] == 0 and got["seen"] == {"cuda 0 False": 8 * 30 * 16}, (got, p.stderr)
    assert "GPU PairHMM failed" not in p.stderr, p.stderr
