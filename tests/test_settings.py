"""The library's settings (native/common/config.cc): the user settings, one
PYPHMM_* variable each, PYPHMM_DEV's developer keys and PYPHMM_TEST's test
seams. A value that does not parse is an error naming the setting, on every
front end, never a silent default."""

import subprocess
import sys

import pytest

from devtools import ROOT
from devtools.child import child_env, run_python

# The user settings the README's Configuration table documents.
USER_SETTINGS = (
    "PYPHMM_BACKEND",
    "PYPHMM_DEVICE",
    "PYPHMM_GPU_MIN_CELLS",
    "PYPHMM_HYBRID",
    "PYPHMM_CUDA_NAP",
    "PYPHMM_LOG",
)
SAMPLE = "pyphmm/data/sample.in"
CALL = """
import pyphmm
try:
    pyphmm.compute_likelihoods([pyphmm.Read("ACGT", [30] * 4, [45] * 4, [45] * 4, [10] * 4)], ["ACGTA"])
    print("computed")
except ValueError as e:
    print("ValueError:", e)
try:
    print(pyphmm.align("AAACCCCC", "CCCCCGGG"))
except ValueError as e:
    print("ValueError:", e)
"""


def cli(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", *args],
        env=child_env(ROOT, **env),
        input="AAACCCCC\tCCCCCGGG\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_info_lists_every_user_setting_and_developer_key():
    p = cli("info", "--verbose")
    assert p.returncode == 0, p.stderr
    names = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("PYPHMM_")]
    assert names == [*USER_SETTINGS, "PYPHMM_DEV"]
    for key in ("cuda_arith", "cpu_kernel", "sw_isa", "native_reader", "gpu_retry_ms"):
        assert f"\n  {key} " in p.stdout
    assert "PYPHMM_TEST" not in p.stdout  # test seams show only when set


def test_the_readme_table_lists_the_user_settings():
    """The README's configuration table: every user setting the library
    reads, and the shim's PYPHMM_LIBRARY; nothing else."""
    text = open(f"{ROOT}/README.md").read()
    table = text[text.index("## Configuration") :].split("\n## ")[0]
    rows = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert rows == [*USER_SETTINGS, "PYPHMM_LIBRARY"]


def test_developer_keys_are_documented():
    p = cli("info", "--verbose")
    keys = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("  ")]
    assert len(keys) >= 10
    text = open(f"{ROOT}/docs/DEVELOPING.md").read()
    assert [k for k in keys if f"| `{k}` |" not in text] == []


BAD = [
    ({"PYPHMM_BACKEND": "gpu"}, "PYPHMM_BACKEND=gpu is not valid: expected one of auto|cpu|cuda"),
    ({"PYPHMM_HYBRID": "maybe"}, "PYPHMM_HYBRID=maybe is not valid: expected 0 or 1"),
    ({"PYPHMM_CUDA_NAP": "95"}, "PYPHMM_CUDA_NAP=95 is not valid: expected an integer in 0..90"),
    ({"PYPHMM_LOG": "loud"}, "PYPHMM_LOG=loud is not valid: expected one of info|quiet|debug"),
    ({"PYPHMM_DEV": "cuda_arith=slow"}, "PYPHMM_DEV's cuda_arith=slow is not valid: expected one of fast|exact"),
    ({"PYPHMM_DEV": "cuda_arith"}, "PYPHMM_DEV: 'cuda_arith' needs a value (key=value)"),
    ({"PYPHMM_DEV": "native_reader=0,turbo=1"}, "PYPHMM_DEV: unknown setting 'turbo'"),
    ({"PYPHMM_TEST": "fake_gpu=99"}, "PYPHMM_TEST's fake_gpu=99 is not valid: expected an integer in 0..16"),
]


# (the quick tier: one variable's check and one of PYPHMM_DEV's keys)
@pytest.mark.parametrize(
    "env,message", [bad if k in (0, 6) else pytest.param(*bad, marks=pytest.mark.slow) for k, bad in enumerate(BAD)]
)
def test_a_bad_setting_stops_every_call_with_its_name(env, message):
    p = run_python(CALL, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith(f"ValueError: {message}") for line in lines), p.stdout


@pytest.mark.parametrize("env,message", BAD[:1] + BAD[-2:-1])
def test_a_bad_setting_is_a_cli_error(env, message, tmp_path):
    for args in (["info"], ["likelihoods", SAMPLE, "-o", str(tmp_path / "o")], ["align", "-", "-o", "-"]):
        p = cli(*args, **env)
        assert p.returncode == 2 and message in p.stderr, (args, p.returncode, p.stderr)
    assert not (tmp_path / "o").exists()


def test_good_developer_keys_compute_the_same():
    """Keys that change how, not what: results are GKL's either way."""
    plain = run_python(CALL)
    tuned = run_python(CALL, env={"PYPHMM_DEV": "cpu_kernel=portable,native_reader=0,hybrid_gpu_threads=3"})
    assert plain.returncode == tuned.returncode == 0
    assert plain.stdout == tuned.stdout and "computed" in plain.stdout
