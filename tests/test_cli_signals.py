"""Signals and closed pipes (docs/CLI.md, "Errors and exit status"): every terminating
signal that can be caught removes the partial output and exits 128+N, at
once even while a call into C computes, quietly from the CLI's first
instruction; a signal the caller ignores (nohup's SIGHUP) stays ignored;
a standard output whose reader has gone ends the run quietly."""

import os
import signal
import subprocess
import sys
import time

import pytest

from devtools.child import child_env, default_signals
from devtools.testdata import sw_cases
from pyphmm.gatk import jar_path
from pyphmm.samples import sample_path

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1]
SIGNAL_IDS = [signal.Signals(s).name for s in SIGNALS]

# A child that runs the CLI with the library's compute call replaced by a
# call into C that takes minutes, releases the GIL and never looks at
# signals (as a large chunk of real work does).
BUSY_CHILD = """
import hashlib, sys
import pyphmm.pairhmm, pyphmm.sw

def busy(*args, **kw):
    print("BUSY", file=sys.stderr, flush=True)
    hashlib.pbkdf2_hmac("sha256", b"p", b"s", 10**9)
    raise AssertionError("the call ran to its end")

pyphmm.sw.align_batch = busy
pyphmm.pairhmm.compute_regions = busy
from pyphmm.cli import main
sys.exit(main(sys.argv[1:]))
"""


def pairs_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{r[0]}\t{r[1]}\n" for r in sw_cases()[:20]))
    return path


@pytest.mark.parametrize(
    "sig", [s if k < 2 else pytest.param(s, marks=pytest.mark.slow) for k, s in enumerate(SIGNALS)], ids=SIGNAL_IDS
)
@pytest.mark.parametrize("command", ["align", "likelihoods-python"])
def test_a_signal_during_a_call_into_c_ends_the_run_at_once(tmp_path, command, sig):
    """align once waited for its chunk's call to return (seconds) before it
    saw SIGINT; here the call would take many minutes."""
    src = pairs_file(tmp_path) if command == "align" else sample_path()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = ["align" if command == "align" else "likelihoods", str(src), "-o", str(out_dir / "r.out")]
    p = subprocess.Popen(
        [sys.executable, "-c", BUSY_CHILD, *args, "--backend", "cpu"],
        env=child_env(PYPHMM_DEV="native_reader=0"),
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
    try:
        assert p.stderr.readline() == "BUSY\n"
        p.send_signal(sig)
        assert p.wait(timeout=60) == 128 + sig
    finally:
        p.kill()
    rest = p.stderr.read()
    assert "Traceback" not in rest and rest.startswith("pyphmm: "), rest
    assert os.listdir(out_dir) == []


# A child that sends itself SIGINT while it imports `module`: from the CLI's
# first instruction on, a Ctrl-C ends the run quietly with status 130.
EARLY_CHILD = """
import importlib.abc, os, runpy, signal, sys

target = sys.argv[1]

class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, module=None):
        if name == target:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Hook())
sys.argv = ["pyphmm"] + sys.argv[2:]
runpy.run_module("pyphmm", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(
    "module",
    [
        "pyphmm.cli.commands",
        pytest.param("pyphmm._native", marks=pytest.mark.slow),
        pytest.param("pyphmm.cli.likelihoods", marks=pytest.mark.slow),
        "numpy",
        pytest.param("pyphmm.io", marks=pytest.mark.slow),
    ],
)
def test_ctrl_c_while_the_cli_starts_is_quiet(tmp_path, module):
    with open(sample_path(), "rb") as f:
        p = subprocess.run(
            [sys.executable, "-c", EARLY_CHILD, module, "likelihoods", "-", "-o", str(tmp_path / "o")],
            stdin=f,
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
            preexec_fn=default_signals,
        )
    assert p.returncode == 130 and p.stderr == "pyphmm: interrupted\n", p.stderr[-2000:]
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_an_ignored_sighup_stays_ignored(tmp_path):
    """Under nohup SIGHUP is ignored before pyphmm starts: it goes on."""
    src = pairs_file(tmp_path)
    p = subprocess.Popen(
        [sys.executable, "-c", BUSY_CHILD, "align", str(src), "-o", str(tmp_path / "o"), "--backend", "cpu"],
        env=child_env(),
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: (default_signals(), signal.signal(signal.SIGHUP, signal.SIG_IGN)),
    )
    try:
        assert p.stderr.readline() == "BUSY\n"
        p.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert p.poll() is None, "SIGHUP ended a run that ignored it"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        p.kill()


def closed_pipe_run(args, tmp_path):
    """Runs the CLI with standard output a pipe whose reader has gone."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run(
            [sys.executable, "-m", "pyphmm", *args],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(w)


PIPE_COMMANDS = {
    "info": ["info"],
    "info-verbose": ["info", "--verbose"],
    "info-json": ["info", "--json"],
    "help": ["--help"],
    "likelihoods": ["likelihoods", sample_path(), "-o", "-", "--backend", "cpu"],
    "likelihoods-dev-stdout": ["likelihoods", sample_path(), "-o", "/dev/stdout", "--backend", "cpu"],
    "align": ["align", "pairs.tsv", "-o", "-", "--backend", "cpu"],
    "gatk-jar": ["gatk-jar"],
    "gatk-jar-output": ["gatk-jar", "--output", "-"],
    "gatk-libdir": ["gatk-libdir", "libs"],
}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(v, id=k, marks=() if k in ("info-verbose", "likelihoods", "align") else pytest.mark.slow)
        for k, v in PIPE_COMMANDS.items()
    ],
)
def test_a_closed_stdout_pipe_ends_quietly(tmp_path, args):
    """`pyphmm info --verbose | head -1` once said "[Errno 32] Broken pipe"
    and exited 2."""
    if args[0].startswith("gatk") and not os.path.exists(jar_path()):
        pytest.skip("this build has no shim jar (no JDK)")
    pairs_file(tmp_path)
    p = closed_pipe_run(args, tmp_path)
    assert p.returncode in (0, 141), p.stderr
    assert "error" not in p.stderr and "Traceback" not in p.stderr and "Exception" not in p.stderr, p.stderr
