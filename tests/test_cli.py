"""Command line, run as a user would: ``python -m pyphmm ...`` in a subprocess."""

import ctypes
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pyphmm
from devtools.child import child_env
from pyphmm import io
from pyphmm.samples import sample_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", *args], capture_output=True, text=True, env=child_env(ROOT), timeout=120, **kw
    )


@pytest.fixture(scope="module")
def expected():
    regs = list(io.read_records(sample_path()))
    return regs, pyphmm.compute_regions(regs, backend="cpu")


def test_likelihoods_end_to_end(tmp_path, expected):
    regs, want = expected
    out = tmp_path / "sample.out"
    p = run("likelihoods", sample_path(), "--output", str(out), "--backend", "cpu")
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    got = list(io.read_results(str(out)))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not os.path.exists(str(out) + ".partial")
    pairs = sum(len(r) * len(h) for r, h in regs)
    cells = sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regs)
    summary = p.stderr.strip().splitlines()[-1]
    assert f"{len(regs)} records" in summary
    assert f"{pairs} pairs" in summary and f"{cells} cells" in summary
    assert re.search(r"\d+\.\d+ GCUPS", summary), summary


def test_threads_and_double_options(tmp_path, expected):
    regs, _ = expected
    out = tmp_path / "d.out"
    p = run("likelihoods", sample_path(), "-o", str(out), "--double", "--threads", "1", "--backend", "cpu")
    assert p.returncode == 0, p.stderr
    want = pyphmm.compute_regions(regs, backend="cpu", double=True)
    for a, b in zip(io.read_results(str(out)), want):
        np.testing.assert_array_equal(a, b)


def test_output_to_stdout(expected):
    _, want = expected
    p = run("likelihoods", sample_path(), "--output", "-", "--backend", "cpu")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "".join(io.format_record(r) for r in want)
    assert "GCUPS" in p.stderr


@pytest.mark.parametrize(
    "content,line",
    [
        # a good record, then a bad one: nothing at all may be left behind
        ("1 1\nACGT IIII IIII IIII ++++\nACGT\n2 1\nACGT III IIII IIII ++++\nAC II II II ++\nACGT\n", 5),
        ("1 1\nACGT IIII IIII IIII ++++\nACGT\n2 1\nACGT IIII IIII IIII ++++\n", 6),
        ("x y\n", 1),
    ],
)
def test_malformed_file_exit_2_without_output(tmp_path, content, line):
    bad = tmp_path / "bad.in"
    bad.write_text(content)
    out = tmp_path / "bad.out"
    p = run("likelihoods", str(bad), "-o", str(out))
    assert p.returncode == 2
    assert p.stderr.startswith("pyphmm: error:"), p.stderr
    assert f"{bad}:{line}:" in p.stderr or f"at line {line}," in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert not out.exists() and not os.path.exists(str(out) + ".partial")
    assert os.listdir(tmp_path) == ["bad.in"]


def test_missing_input_exit_2(tmp_path):
    out = tmp_path / "o.out"
    p = run("likelihoods", str(tmp_path / "nope.in"), "-o", str(out))
    assert p.returncode == 2 and "pyphmm: error:" in p.stderr and "nope.in" in p.stderr
    assert not out.exists()


def test_bad_arguments_exit_2():
    for args in (
        ("likelihoods", sample_path(), "-o", "-", "--threads", "0"),
        ("likelihoods", sample_path(), "-o", "-", "--backend", "gpu"),
        ("likelihoods", sample_path()),
        (),
    ):
        p = run(*args)
        assert p.returncode == 2, args
        assert p.stdout == ""


def test_cuda_backend_on_cpu_only_exit_2(tmp_path):
    if pyphmm.info()["cuda_usable"]:
        p = run("likelihoods", sample_path(), "-o", "-", "--backend", "cuda")
        assert p.returncode == 0
        return
    out = tmp_path / "c.out"
    p = run("likelihoods", sample_path(), "-o", str(out), "--backend", "cuda")
    assert p.returncode == 2 and "pyphmm: error:" in p.stderr
    assert not out.exists() and os.listdir(tmp_path) == []


def test_info():
    p = run("info")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"pyphmm {pyphmm.__version__} (ABI 6)")
    assert "dispatch: calls under" in p.stdout and "whole workloads:" in p.stdout
    for word in ("backends:", "gpu:", "cpu:", "library:"):
        assert word in p.stdout


def test_info_json():
    p = run("info", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    mine = json.loads(json.dumps(pyphmm.info()))
    if mine["gpu_min_cells_source"] == "calibrated":  # timed in each process: numbers differ
        for d in (data, mine):
            d.pop("calibration"), d.pop("gpu_min_cells")
    # Seen by each process at its start: the child sees this test process on the GPU.
    assert data.pop("gpu_other_processes") >= mine.pop("gpu_other_processes")
    if mine["usable_devices"] > 1:  # the child may choose another GPU than the one this process holds
        for d in (data, mine):
            device = d.pop("device")
            assert 0 <= device < d["usable_devices"]
            assert d.pop("cuda_status").startswith(f"CUDA device {device}: {d.pop('device_name')} ")
    assert data == mine


def nvidia_driver_loads() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_a_machine_without_an_nvidia_driver_says_so():
    """A CUDA build once said "CUDA driver version is insufficient for CUDA
    runtime version" on a machine with no driver at all; where a driver
    loads, the status must not claim there is none."""
    inf = pyphmm.info()
    if not inf["cuda_compiled"]:
        pytest.skip("this build has no CUDA kernels: no driver is asked")
    if nvidia_driver_loads():
        assert "no NVIDIA driver" not in inf["cuda_status"], inf["cuda_status"]
        return
    assert inf["cuda_status"] == "no NVIDIA driver found: libcuda.so.1 cannot be loaded"
    p = run("info")
    assert "gpu: not used: no NVIDIA driver found: libcuda.so.1 cannot be loaded\n" in p.stdout, p.stdout
    p = run("likelihoods", sample_path(), "-o", "-")  # the auto backend's notice
    assert p.returncode == 0 and "insufficient" not in p.stderr, p.stderr
    assert "no NVIDIA driver found" in p.stderr, p.stderr


def test_version():
    p = run("--version")
    assert p.returncode == 0 and pyphmm.__version__ in p.stdout


def test_commands_load_only_what_they_need(tmp_path):
    """A record file's run imports neither the GATK nor the MPS module (part
    of its start-up time); --help and a mistyped command still list every
    command, and `mps` still works."""
    probe = (
        "import sys; from pyphmm.cli import main; rc = main(sys.argv[1:]); "
        "print('loaded:', sorted(m for m in ('pyphmm.gatk', 'pyphmm.mps') if m in sys.modules)); sys.exit(rc)"
    )

    def loaded(*args):
        p = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=child_env(ROOT), timeout=120
        )
        return p, re.search(r"^loaded: (.*)$", p.stdout, re.M).group(1)

    p, mods = loaded("likelihoods", sample_path(), "-o", str(tmp_path / "out.txt"), "--backend", "cpu")
    assert p.returncode == 0 and mods == "[]", p.stdout + p.stderr
    p, mods = loaded("info")
    assert p.returncode == 0 and mods == "[]", p.stdout + p.stderr
    p, mods = loaded("gatk-jar")  # (a build without a JDK has no jar: status 2, saying so)
    jar_built = os.path.exists(os.path.join(ROOT, "pyphmm", "pyphmm-gatk.jar"))
    assert p.returncode == (0 if jar_built else 2) and "pyphmm.gatk" in mods, p.stdout + p.stderr
    help_text = run("--help").stdout
    assert all(c in help_text for c in ("likelihoods", "align", "info", "gatk-jar", "gatk-libdir", "mps"))
    p = run("bogus")
    assert p.returncode == 2 and "'mps'" in p.stderr and "'gatk'" in p.stderr
