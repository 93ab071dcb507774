"""scripts/bench_multiproc.py on a tiny file: K JVMs and T threads through
the shim (pyphmm's CPU backend where there is no GPU), GKL AVX and GKL OMP
in the same run, every process's results compared with GKL's. Checks the
output lines, the figures' bookkeeping and the comparison; never timings.
Also the benchmark presets of scripts/gen_regions.py."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from test_mps import fake_control  # noqa: F401  (fixture: a stand-in nvidia-cuda-mps-control)

from devtools import ROOT
from devtools.child import child_env, default_signals
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import shim
from devtools.regions import generate
from pyphmm import io

SCRIPT = os.path.join(ROOT, "scripts", "bench_multiproc.py")


@pytest.fixture(scope="module")
def harness_ready():
    reason = gkl_oracle.missing_reason()
    if reason:
        if os.environ.get("PYPHMM_ALLOW_NO_GKL") == "1":
            pytest.skip(f"GKL unavailable: {reason}")
        pytest.fail(f"GKL unavailable: {reason}")
    if not os.path.exists(shim.SHIM_JAR):
        pytest.fail(f"shim jar {shim.SHIM_JAR} not built")
    if not (
        shutil.which("javac") or os.path.exists(os.path.join(ROOT, ".carry", "bench_classes", "BenchMultiproc.class"))
    ):
        pytest.skip("needs javac or .carry/bench_classes (scripts/prepare_gpu_carry.sh)")


@pytest.fixture(scope="module")
def classes(tmp_path_factory, harness_ready):
    """The harness compiled once for the module (test_generated_regions lets
    the script compile it itself)."""
    if not shutil.which("javac"):
        return os.path.join(ROOT, ".carry", "bench_classes")
    d = tmp_path_factory.mktemp("classes")
    subprocess.run(
        [
            "javac",
            "-nowarn",
            "--release",
            "11",
            "-cp",
            shim.BINDINGS_JAR,
            "-d",
            str(d),
            os.path.join(ROOT, "java_shim", "bench", "BenchMultiproc.java"),
        ],
        check=True,
    )
    return str(d)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, harness_ready):
    """5 small regions (up to 12 reads x 2-8 haplotypes): a few seconds of GKL here."""
    path = tmp_path_factory.mktemp("bench") / "tiny.in"
    io.write_input_records(str(path), generate(5, seed=7, preset="small", max_reads=12))
    return str(path)


def bench(*args, env=None):
    env = child_env(ROOT, **(env or {}))
    env.pop("PYPHMM_BACKEND", None)  # the script picks the CPU backend itself where there is no GPU
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=env, timeout=900)


def check_phase_lines(out: str, label: str, procs: int):
    """The phase's process lines and its one aggregate line; returns the
    process lines' max |diff| values (if printed)."""
    block = out.split(f"\n{label}\n", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(
        r"^  process +(\d+): (\d+) regions, [\d.]+ G cells in [\d.]+ s = ([\d.]+) GCUPS; "
        r"per call median ([\d.]+) us, p99 ([\d.]+) us(?:; max \|diff\| vs GKL AVX (\S+))?$",
        block,
        re.M,
    )
    assert [int(r[0]) for r in rows] == list(range(procs)), block
    assert all(float(r[2]) > 0 and float(r[4]) >= float(r[3]) > 0 for r in rows)
    agg = [ln for ln in block.splitlines() if "aggregate" in ln]
    assert len(agg) == 1 and re.search(
        rf"aggregate {re.escape(label)}: [\d.]+ G cells in [\d.]+ s = [\d.]+ GCUPS; "
        r"per call median [\d.]+ us, p99 [\d.]+ us",
        agg[0],
    ), block
    return [float(r[5]) for r in rows if r[5]]


def check_report(path: str, regions: int, cells: int, reps: int, gkl_reps: int):
    rep = json.load(open(path))
    assert rep["regions"] == regions and rep["cells_per_pass"] == cells
    for ph in rep["phases"]:
        n = reps if ph["phase"].startswith("shim") else gkl_reps
        assert ph["cells"] == cells * n
        assert sum(p["cells"] for p in ph["processes"]) == cells * n
        assert sum(p["regions"] for p in ph["processes"]) == regions
        if ph["phase"] != "gkl-avx":
            assert 0 <= ph["max_diff"] <= 1e-5
    return rep


def _cells(path):
    regs = list(io.read_records(path))
    return len(regs), sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regs)


@pytest.mark.jvm
@pytest.mark.slow
def test_processes_mode(tiny, classes, tmp_path):
    out_json = str(tmp_path / "r.json")
    p = bench("--classes", classes, "--processes", "2", "--regions", tiny, "--reps", "2", "--json", out_json)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len([ln for ln in p.stdout.splitlines() if "aggregate" in ln]) == 3
    diffs = check_phase_lines(p.stdout, "pyphmm shim, 2 JVMs x 1 thread, MPS off", 2)
    assert len(diffs) == 2 and max(diffs) <= 1e-5
    assert check_phase_lines(p.stdout, "GKL AVX, 2 JVMs x 1 thread, 1 native thread each", 2) == []
    assert re.search(r"\nGKL OMP, 1 JVM x 1 thread, \d+ native threads\n", p.stdout)
    # the shim (not GKL) served both JVMs of the shim phase, on the CPU backend here
    if not os.path.exists("/dev/nvidiactl"):
        assert re.search(r"\[2 of 2 JVMs\] pyphmm \S+ PairHMM: backend CPU", p.stdout), p.stdout
    assert "results: every process within 1e-05 of GKL AVX" in p.stdout
    n, cells = _cells(tiny)
    rep = check_report(out_json, n, cells, reps=2, gkl_reps=1)
    assert [ph["phase"] for ph in rep["phases"]] == ["shim-mps-off", "gkl-avx", "gkl-omp"]
    # interleaved shares: process 0 has regions 0, 2, 4; process 1 has 1, 3
    assert [pr["regions"] for pr in rep["phases"][0]["processes"]] == [3, 2]


@pytest.mark.jvm
@pytest.mark.slow
def test_threads_mode(tiny, classes, tmp_path):
    out_json = str(tmp_path / "r.json")
    p = bench(
        "--classes", classes, "--threads", "2", "--regions", tiny, "--reps", "1", "--warmup", "0", "--json", out_json
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert len([ln for ln in p.stdout.splitlines() if "aggregate" in ln]) == 3
    assert max(check_phase_lines(p.stdout, "pyphmm shim, 1 JVM x 2 threads, MPS off", 1)) <= 1e-5
    block = p.stdout.split("pyphmm shim, 1 JVM x 2 threads, MPS off\n", 1)[1]
    assert re.search(r"^      thread  0: 3 regions, [\d.]+ GCUPS", block, re.M)
    assert re.search(r"^      thread  1: 2 regions, [\d.]+ GCUPS", block, re.M)
    n, cells = _cells(tiny)
    check_report(out_json, n, cells, reps=1, gkl_reps=1)


@pytest.mark.jvm
@pytest.mark.slow
def test_generated_regions(harness_ready):
    p = bench("--preset", "small", "--count", "2", "--seed", "3", "--reps", "1")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 regions (gen_regions.py --preset small --regions 2 --seed 3)" in p.stdout
    warmup = 1 if not os.path.exists("/dev/nvidiactl") else r"\d+"  # (the default: see test_default_warmup)
    assert re.search(rf"passes \(untimed warm-up before the barrier / timed\): shim {warmup} / 1, GKL 1 / 1", p.stdout)


def test_default_warmup(monkeypatch):
    """Without --warmup the shim warms up for GPU_WARMUP passes on a GPU, one
    pass on the CPU backend (from the environment or chosen by shim_env)."""
    from devtools import multiproc as bench_multiproc

    monkeypatch.delenv("PYPHMM_BACKEND", raising=False)
    assert bench_multiproc.GPU_WARMUP > 1
    assert bench_multiproc.default_warmup({}) == bench_multiproc.GPU_WARMUP
    assert bench_multiproc.default_warmup({"PYPHMM_BACKEND": "cpu"}) == 1
    monkeypatch.setenv("PYPHMM_BACKEND", "cpu")
    assert bench_multiproc.default_warmup({}) == 1
    monkeypatch.setenv("PYPHMM_BACKEND", "cuda")
    assert bench_multiproc.default_warmup({}) == bench_multiproc.GPU_WARMUP


@pytest.mark.jvm
@pytest.mark.slow
def test_results_off_gkl_fail_loudly(tiny, classes, monkeypatch, capsys):
    """The comparison is live: shim results moved by 2e-5 make the run fail."""
    from devtools import multiproc as bench_multiproc

    real = bench_multiproc.run_phase

    def perturbed(cfg, phase, regions_path, work):
        out = real(cfg, phase, regions_path, work)
        if phase.name.startswith("shim"):
            for rec in out:
                for t in rec["threads"]:
                    t["res"][-1] += 2e-5
        return out

    monkeypatch.setattr(bench_multiproc, "run_phase", perturbed)
    monkeypatch.setenv("PYPHMM_BACKEND", "cpu")
    rc = bench_multiproc.main(
        ["--classes", classes, "--processes", "2", "--regions", tiny, "--reps", "1", "--warmup", "0"]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert "FAIL: results differ from GKL's by more than 1e-05" in err
    assert re.search(r"pyphmm shim, 2 JVMs x 1 thread, MPS off, process 0: max \|diff\| vs GKL AVX 2(\.\d+)?e-05", err)
    assert "process 1: max |diff|" in err


@pytest.mark.jvm
@pytest.mark.slow
def test_mps_both_with_stand_in_daemon(tiny, classes, fake_control):  # noqa: F811
    p = bench(
        "--classes", classes, "--processes", "2", "--regions", tiny, "--reps", "1", "--warmup", "0", "--mps", "both"
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert len([ln for ln in p.stdout.splitlines() if "aggregate" in ln]) == 4
    check_phase_lines(p.stdout, "pyphmm shim, 2 JVMs x 1 thread, MPS off", 2)
    check_phase_lines(p.stdout, "pyphmm shim, 2 JVMs x 1 thread, MPS on", 2)
    pipe = re.search(r"MPS: control daemon started, pipe dir (\S+)", p.stdout).group(1)
    calls = fake_control()
    assert [c for c in calls if c["argv"] == ["-d"]] == [
        {"argv": ["-d"], "pipe": pipe, "log": os.path.join(pipe, "log"), "rc": 0}
    ]
    assert any("quit" in c.get("stdin", []) and c["pipe"] == pipe and c["rc"] == 0 for c in calls)
    assert not os.path.exists(pipe)


@pytest.mark.jvm
@pytest.mark.slow
def test_mps_quit_when_a_jvm_fails(tiny, classes, tmp_path, fake_control):  # noqa: F811
    bad = tmp_path / "bad.in"
    lines = open(tiny).read().splitlines()
    lines[1] = " ".join(lines[1].split()[:4])  # a read line with 4 fields: the JVMs reject it
    bad.write_text("\n".join(lines) + "\n")
    p = bench("--classes", classes, "--regions", str(bad), "--mps", "on", "--warmup", "0")
    assert p.returncode == 2
    assert "shim-mps-on: JVM 0 exited" in p.stderr and "read line has 4 fields" in p.stderr
    pipe = [c for c in fake_control() if c["argv"] == ["-d"]][0]["pipe"]
    assert any("quit" in c.get("stdin", []) and c["pipe"] == pipe for c in fake_control())
    assert not os.path.exists(pipe)


def test_mps_without_control_program(tiny, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    p = bench("--regions", tiny, "--mps", "on", env={"PATH": str(empty)})
    assert p.returncode == 2 and "nvidia-cuda-mps-control not found on PATH" in p.stderr
    assert "Traceback" not in p.stderr


# ---- gen_regions presets ----------------------------------------------------


def test_presets():
    typical = generate(3, seed=1, preset="typical")
    for reads, haps in typical:
        assert len(reads) == 60 and len(haps) == 4
        assert set(reads.lengths.tolist()) == {150} and set(haps.lengths.tolist()) == {350}
    small = generate(40, seed=1, preset="small")
    assert {len(r) for r, _ in small} <= set(range(10, 61)) and {len(h) for _, h in small} <= set(range(2, 9))
    assert len({len(r) for r, _ in small}) > 5
    rl = np.concatenate([r.lengths for r, _ in small])
    assert rl.min() >= 10 and rl.max() <= 151
    with pytest.raises(ValueError, match="preset must be one of small, typical"):
        generate(1, preset="huge")


def _jvms_with_arg(arg: str) -> list:
    """PIDs of java processes whose command line holds `arg` (the harness
    JVMs name the regions file)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"java" and arg.encode() in argv:
                pids.append(int(d))
    return pids


@pytest.mark.jvm
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_kills_jvms_and_quits_mps(tiny, classes, tmp_path, fake_control, sig):  # noqa: F811
    regions = str(tmp_path / "sig.in")
    shutil.copy(tiny, regions)
    env = child_env(ROOT)
    env.pop("PYPHMM_BACKEND", None)
    child = subprocess.Popen(
        [
            sys.executable,
            SCRIPT,
            "--classes",
            classes,
            "--processes",
            "2",
            "--regions",
            regions,
            "--mps",
            "on",
            "--warmup",
            "50",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_signals,
    )
    for line in child.stdout:
        if line.startswith("MPS: control daemon started"):
            break
    deadline = time.monotonic() + 60
    while len(_jvms_with_arg(regions)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_jvms_with_arg(regions)) == 2  # both JVMs are warming up
    child.send_signal(sig)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130 and "bench_multiproc: interrupted" in err, err
    assert _jvms_with_arg(regions) == []
    pipe = [c for c in fake_control() if c["argv"] == ["-d"]][0]["pipe"]
    assert any("quit" in c.get("stdin", []) and c["pipe"] == pipe and c["rc"] == 0 for c in fake_control())
    assert not os.path.exists(pipe)
