"""Which GPU each process takes when several are visible, with stand-in
devices (PYPHMM_TEST=fake_gpu=N: no CUDA is touched, so this runs anywhere).

Each child process reports the GPU it chose, then stays alive until the test
closes its stdin: a live process holds its place in the per-user registry
($XDG_RUNTIME_DIR/pyphmm/gpu-claims, a private directory per test here)."""

import os
from collections import Counter

import pytest

from devtools.child import popen_python

CHILD = (
    "import sys, pyphmm\n"
    "i = pyphmm.info()\n"
    "print(i['device'], i['usable_devices'], i['device_choice'], flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.fixture
def runtime_dir(tmp_path):
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    return d


def start(runtime_dir, gpus, load=None, **env):
    """A child on `gpus` fake devices; load: other processes on each ("1:0")."""
    unset = [name for name in ("PYPHMM_DEVICE", "PYPHMM_BACKEND") if name not in env]
    seams = f"fake_gpu={gpus}" + (f",gpu_load={load}" if load else "")
    return popen_python(CHILD, env=dict(XDG_RUNTIME_DIR=str(runtime_dir), PYPHMM_TEST=seams, **env), unset=unset)


def chosen(p):
    """(device, usable devices, how it was chosen) from a child's report."""
    line = p.stdout.readline()
    assert line, p.stderr.read()
    device, usable, how = line.split(maxsplit=2)
    return int(device), int(usable), how.strip()


def finish(*procs):
    for p in procs:
        p.stdin.close()
        assert p.wait(timeout=60) == 0, p.stderr.read()


@pytest.mark.parametrize("gpus,procs", [(2, 4), pytest.param(3, 6, marks=pytest.mark.slow)])
def test_processes_started_together_spread_evenly(runtime_dir, gpus, procs):
    """Started at once, before any of them could appear in NVML: the
    registry still spreads them one per GPU in turn."""
    ps = [start(runtime_dir, gpus) for _ in range(procs)]
    try:
        got = [chosen(p) for p in ps]
    finally:
        finish(*ps)
    assert all(usable == gpus and how == f"least loaded of {gpus} GPUs" for _, usable, how in got), got
    assert Counter(d for d, _, _ in got) == {d: procs // gpus for d in range(gpus)}, got


def test_gpus_freed_by_exited_processes_are_taken_next(runtime_dir):
    """Three processes on two GPUs; the two sharing one exit; the next
    process takes that GPU (a counter alone would not: its turn is the other)."""
    ps = [start(runtime_dir, 2) for _ in range(3)]
    devs = [chosen(p)[0] for p in ps]
    shared = Counter(devs).most_common(1)[0][0]
    finish(*[p for p, d in zip(ps, devs) if d == shared])
    rest = [p for p, d in zip(ps, devs) if d != shared]
    d = start(runtime_dir, 2)
    try:
        assert chosen(d)[0] == shared
    finally:
        finish(*rest, d)


def test_other_processes_seen_by_nvml_count(runtime_dir):
    """GPU 0 has a process that is not pyphmm's (NVML's count, faked): of
    three processes, two go to GPU 1 and one to GPU 0 (two on each GPU)."""
    ps = [start(runtime_dir, 2, load="1:0") for _ in range(3)]
    try:
        got = [chosen(p)[0] for p in ps]
    finally:
        finish(*ps)
    assert Counter(got) == {1: 2, 0: 1}, got


def test_a_pinned_process_counts_as_load(runtime_dir):
    a = start(runtime_dir, 2, PYPHMM_DEVICE="1")
    assert chosen(a) == (1, 2, "PYPHMM_DEVICE=1")
    b = start(runtime_dir, 2)
    try:
        assert chosen(b)[0] == 0
    finally:
        finish(a, b)


def own_start_time():
    """This process's start time as /proc/PID/stat field 22 gives it."""
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


@pytest.mark.parametrize("valid", [True, False])
def test_registry_entries_count_only_for_live_processes(runtime_dir, valid):
    """An entry for a live process (this test's, on GPU 0) counts; the same
    pid with another start time (a reused pid) and a line that is no entry
    do not; the file is rewritten with live entries only."""
    claims = runtime_dir / "pyphmm" / "gpu-claims"
    claims.parent.mkdir(mode=0o700)
    started = own_start_time() if valid else 1
    claims.write_text(f"ticket 0\n{os.getpid()} {started} fake:0\nnot an entry\n")
    a = start(runtime_dir, 2)
    try:
        # live entry: GPU 0 is loaded; else both idle and ticket 0 takes the first
        assert chosen(a)[0] == (1 if valid else 0)
        lines = claims.read_text().splitlines()
        assert lines[0] == "ticket 1"
        assert [x.split()[0] for x in lines[1:]] == ([str(os.getpid())] if valid else []) + [str(a.pid)]
    finally:
        finish(a)


def test_without_a_private_directory_a_gpu_is_still_chosen(tmp_path):
    """XDG_RUNTIME_DIR that cannot hold the registry: NVML's counts alone."""
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    a = start(not_a_dir, 2, load="1:0")
    try:
        assert chosen(a)[0] == 1
    finally:
        finish(a)
