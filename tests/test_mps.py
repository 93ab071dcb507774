"""pyphmm.mps and ``pyphmm mps``: directories, messages and the control
program's command lines, checked against a stand-in nvidia-cuda-mps-control
(no GPU needed). The stand-in records every call (arguments, the
CUDA_MPS_* directories, commands on stdin) and keeps a 'daemon running'
flag file in the pipe directory, answering as the real front end does:
exit 0 when a daemon answers, non-zero when none does."""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import pyphmm
from devtools.child import child_env, default_signals, run_cli
from pyphmm import mps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FAKE_CONTROL = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
    log = os.environ.get("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps")
    flag = os.path.join(pipe, "fake-daemon-running")
    call = {{"argv": sys.argv[1:], "pipe": pipe, "log": log}}
    rc = 0
    if sys.argv[1:] == ["-d"]:
        if os.environ.get("FAKE_MPS_FAIL_START"):
            print("fake: cannot start the daemon", file=sys.stderr)
            rc = 1
        elif os.path.exists(flag):
            print("An instance of this daemon is already running", file=sys.stderr)
            rc = 1
        elif not os.environ.get("FAKE_MPS_SILENT"):
            open(flag, "w").close()
            with open(os.path.join(log, "control.log"), "a") as f:
                f.write("fake control daemon started\\n")
    else:
        call["stdin"] = sys.stdin.read().split()
        if not os.path.exists(flag):
            print("Cannot find MPS control daemon process", file=sys.stderr)
            rc = 1
        else:
            for cmd in call["stdin"]:
                if cmd == "get_server_list":
                    print(os.environ.get("FAKE_MPS_SERVERS", ""))
                elif cmd == "get_client_list":  # (the server's pid follows)
                    print(os.environ.get("FAKE_MPS_CLIENTS", ""))
                elif cmd == "quit":
                    os.unlink(flag)
    call["rc"] = rc
    with open(os.environ["FAKE_MPS_RECORD"], "a") as f:
        f.write(json.dumps(call) + "\\n")
    sys.exit(rc)
    """)


@pytest.fixture
def fake_control(tmp_path, monkeypatch):
    """PATH gets a stand-in nvidia-cuda-mps-control; returns a function that
    reads its calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / mps.CONTROL
    exe.write_text(FAKE_CONTROL.format(python=sys.executable))
    exe.chmod(0o755)
    record = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MPS_RECORD", str(record))
    for var in (mps.PIPE_ENV, mps.LOG_ENV, "FAKE_MPS_FAIL_START", "FAKE_MPS_SILENT", "FAKE_MPS_SERVERS"):
        monkeypatch.delenv(var, raising=False)

    def calls():
        if not record.exists():
            return []
        return [json.loads(ln) for ln in record.read_text().splitlines()]

    return calls


def pyphmm_mps(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", "mps", *args],
        capture_output=True,
        text=True,
        env=child_env(ROOT, **(env or {})),
        timeout=120,
    )


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


# ---- directories -----------------------------------------------------------


def test_directories_default_env_and_arguments(monkeypatch):
    monkeypatch.delenv(mps.PIPE_ENV, raising=False)
    monkeypatch.delenv(mps.LOG_ENV, raising=False)
    pipe = f"/tmp/pyphmm-mps-{os.getuid()}"
    assert mps.resolve_dirs() == (pipe, pipe + "/log")
    monkeypatch.setenv(mps.PIPE_ENV, "/tmp/x-pipe")
    assert mps.resolve_dirs() == ("/tmp/x-pipe", "/tmp/x-pipe/log")
    monkeypatch.setenv(mps.LOG_ENV, "/tmp/x-log")
    assert mps.resolve_dirs() == ("/tmp/x-pipe", "/tmp/x-log")
    assert mps.resolve_dirs("/tmp/a", "/tmp/b") == ("/tmp/a", "/tmp/b")
    assert mps.resolve_dirs("rel") == (os.path.abspath("rel"), os.path.abspath("rel/log"))


def test_private_dir_created_0700_and_unsafe_ones_refused(tmp_path):
    made = mps.ensure_private_dir(str(tmp_path / "a" / "pipe"))
    assert _mode(made) == 0o700 and os.lstat(made).st_uid == os.getuid()
    assert mps.ensure_private_dir(made) == made  # an existing private one is fine
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o755)
    with pytest.raises(mps.MpsError, match=r"open to other users \(mode 0755\).*chmod 700"):
        mps.ensure_private_dir(str(loose))
    assert _mode(loose) == 0o755  # reported, not silently changed
    link = tmp_path / "link"
    link.symlink_to(made)
    with pytest.raises(mps.MpsError, match="not a directory"):
        mps.ensure_private_dir(str(link))
    plain = tmp_path / "file"
    plain.write_text("")
    with pytest.raises(mps.MpsError, match="not a directory"):
        mps.ensure_private_dir(str(plain))


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_private_dir_of_another_user_refused(tmp_path):
    other = tmp_path / "other"
    other.mkdir(0o700)
    os.chown(other, 4321, -1)
    with pytest.raises(mps.MpsError, match="belongs to uid 4321"):
        mps.ensure_private_dir(str(other))


# ---- pyphmm mps start|stop|status -----------------------------------------


def test_cli_without_control_program(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for action in ("start", "stop", "status"):
        p = pyphmm_mps(action, "--pipe-dir", str(tmp_path / "p"), env={"PATH": str(empty)})
        assert p.returncode == 2, p.stderr
        assert "nvidia-cuda-mps-control not found on PATH" in p.stderr
        assert "Traceback" not in p.stderr
    assert not (tmp_path / "p").exists()  # nothing created when MPS cannot run


def test_cli_start_status_stop(tmp_path, fake_control):
    pipe, log = str(tmp_path / "mps"), str(tmp_path / "mps" / "log")
    p = pyphmm_mps("status", "--pipe-dir", pipe)
    assert p.returncode == 3 and f"no control daemon on {pipe}" in p.stdout

    p = pyphmm_mps("start", "--pipe-dir", pipe)
    assert p.returncode == 0, p.stderr
    # stdout is exactly what a shell evaluates: eval "$(pyphmm mps start)"
    assert p.stdout == f"export CUDA_MPS_PIPE_DIRECTORY={pipe}\nexport CUDA_MPS_LOG_DIRECTORY={log}\n"
    assert "control daemon started" in p.stderr
    assert _mode(pipe) == 0o700 and _mode(log) == 0o700
    starts = [c for c in fake_control() if c["argv"] == ["-d"]]
    assert starts == [{"argv": ["-d"], "pipe": pipe, "log": log, "rc": 0}]

    p = pyphmm_mps("status", "--pipe-dir", pipe, env={"FAKE_MPS_SERVERS": "4242", "FAKE_MPS_CLIENTS": "11\n12\n13"})
    assert p.returncode == 0 and f"control daemon running on {pipe}" in p.stdout
    assert "servers: 4242 (3 clients)" in p.stdout, p.stdout
    assert "get_client_list" in fake_control()[-1]["stdin"] and "4242" in fake_control()[-1]["stdin"]
    p = pyphmm_mps("status", "--pipe-dir", pipe)
    assert p.returncode == 0 and "servers: none yet" in p.stdout

    p = pyphmm_mps("start", "--pipe-dir", pipe)  # idempotent: no second daemon
    assert p.returncode == 0 and "already running" in p.stderr and p.stdout.startswith("export ")
    assert len([c for c in fake_control() if c["argv"] == ["-d"]]) == 1

    p = pyphmm_mps("stop", "--pipe-dir", pipe)
    assert p.returncode == 0 and "stopped" in p.stderr
    quits = [c for c in fake_control() if "quit" in c.get("stdin", [])]
    assert len(quits) == 1 and quits[0]["pipe"] == pipe and quits[0]["log"] == log and quits[0]["rc"] == 0
    assert pyphmm_mps("status", "--pipe-dir", pipe).returncode == 3
    p = pyphmm_mps("stop", "--pipe-dir", pipe)
    assert p.returncode == 0 and "nothing to stop" in p.stderr
    assert len([c for c in fake_control() if "quit" in c.get("stdin", [])]) == 1


@pytest.mark.slow
def test_cli_uses_exported_directories(tmp_path, fake_control):
    """After eval "$(pyphmm mps start --pipe-dir D)", stop and status find D."""
    pipe = str(tmp_path / "exported")
    assert pyphmm_mps("start", "--pipe-dir", pipe).returncode == 0
    env = {mps.PIPE_ENV: pipe, mps.LOG_ENV: pipe + "/log"}
    assert pyphmm_mps("status", env=env).returncode == 0
    assert pyphmm_mps("stop", env=env).returncode == 0
    assert fake_control()[-1]["pipe"] == pipe


def test_cli_refuses_shared_directory(tmp_path, fake_control):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    p = pyphmm_mps("start", "--pipe-dir", str(shared))
    assert p.returncode == 2 and "open to other users" in p.stderr
    assert not any(c["argv"] == ["-d"] for c in fake_control())


def test_cli_start_failure_reported(tmp_path, fake_control):
    p = pyphmm_mps("start", "--pipe-dir", str(tmp_path / "m"), env={"FAKE_MPS_FAIL_START": "1"})
    assert p.returncode == 2
    assert "nvidia-cuda-mps-control -d failed (exit 1): fake: cannot start the daemon" in p.stderr


# ---- private daemons (benchmarks) -----------------------------------------


def _quit_sent(calls, pipe):
    return any("quit" in c.get("stdin", []) and c["pipe"] == pipe and c["rc"] == 0 for c in calls)


@pytest.mark.slow
def test_private_daemon_quits_on_exit_and_on_error(fake_control):
    with mps.private_daemon() as env:
        pipe = env[mps.PIPE_ENV]
        assert os.path.dirname(pipe) == "/tmp" and _mode(pipe) == 0o700
        assert env[mps.LOG_ENV] == os.path.join(pipe, "log")
        assert mps.is_running(pipe, env[mps.LOG_ENV])
    assert not os.path.exists(pipe)
    assert [c for c in fake_control() if c["argv"] == ["-d"]][0]["pipe"] == pipe
    assert _quit_sent(fake_control(), pipe)

    with pytest.raises(ZeroDivisionError):
        with mps.private_daemon() as env:
            pipe2 = env[mps.PIPE_ENV]
            raise ZeroDivisionError("inside the daemon's block")
    assert pipe2 != pipe and not os.path.exists(pipe2)
    assert _quit_sent(fake_control(), pipe2)


@pytest.mark.slow
def test_private_daemon_that_never_answers(fake_control, monkeypatch):
    monkeypatch.setattr(mps, "START_WAIT_S", 0.3)
    monkeypatch.setenv("FAKE_MPS_SILENT", "1")  # -d succeeds, nothing answers
    with pytest.raises(mps.MpsError, match="does not answer"):
        with mps.private_daemon():
            pytest.fail("the block must not run without a daemon")
    pipe = [c for c in fake_control() if c["argv"] == ["-d"]][0]["pipe"]
    assert any("quit" in c.get("stdin", []) and c["pipe"] == pipe for c in fake_control())  # still told to quit
    assert not os.path.exists(pipe)


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_private_daemon_quits_on_signal(fake_control, sig):
    code = textwrap.dedent("""\
        import sys, time
        from pyphmm import mps
        with mps.private_daemon() as env:
            print(env[mps.PIPE_ENV], flush=True)
            time.sleep(60)
        """)
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(ROOT),
        preexec_fn=default_signals,
    )
    pipe = child.stdout.readline().strip()
    assert pipe.startswith("/tmp/pyphmm-mps-"), child.stderr.read()
    assert os.path.isdir(pipe)
    child.send_signal(sig)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0 and "KeyboardInterrupt" in err
    assert _quit_sent(fake_control(), pipe)
    deadline = time.monotonic() + 5
    while os.path.exists(pipe) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(pipe)


def _mps_server_running() -> bool:
    """Whether any process on this host is an MPS server (as the library
    looks for one: by its command line)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"nvidia-cuda-mps-server" in f.read(256):
                    return True
        except OSError:
            pass
    return False


@pytest.fixture
def mps_stand_in():
    """A pipe directory with a listening control socket, and a process named
    nvidia-cuda-mps-server: what the library looks for to know that MPS
    serves a process. Yields (pipe_dir, start_server)."""
    pipe = tempfile.mkdtemp(prefix="pyphmm-t-", dir="/tmp")  # (a socket path is limited to ~100 bytes)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.bind(os.path.join(pipe, "control"))
    control.listen(1)
    servers = []

    def start_server():
        servers.append(subprocess.Popen(["nvidia-cuda-mps-server", "600"], executable=shutil.which("sleep")))

    try:
        yield pipe, start_server
    finally:
        for s in servers:
            s.kill()
            s.wait()
        control.close()
        shutil.rmtree(pipe)


@pytest.mark.skipif(
    not pyphmm.info()["cuda_compiled"],
    reason="the library looks for MPS in its CUDA backend (native/cuda/device.cu), which this build lacks",
)
@pytest.mark.parametrize(
    "control, server, nap, mps_seen, naps",
    [
        (True, True, None, True, 60),  # MPS serves the process: its waits nap by default
        (True, True, "0", True, 0),  # the knob overrides both ways
        (True, False, None, False, 0),  # a control daemon without a server serves no one
        (False, False, "30", False, 30),
        (False, False, None, False, 0),
    ],
)
def test_library_sees_mps_and_naps_under_it(mps_stand_in, monkeypatch, control, server, nap, mps_seen, naps):
    """The native library's view (pyphmm info, through a stand-in GPU): an
    MPS server that serves the process, and the nap that follows from it
    unless PYPHMM_CUDA_NAP says otherwise."""
    pipe, start_server = mps_stand_in
    if control and not server and _mps_server_running():
        pytest.skip("a real MPS server runs on this host: a control socket here counts as served")
    if server:
        start_server()
    env = {"PYPHMM_TEST": "fake_gpu=1", "CUDA_MPS_PIPE_DIRECTORY": pipe if control else pipe + "-none"}
    monkeypatch.delenv("PYPHMM_CUDA_NAP", raising=False)
    if nap is not None:
        env["PYPHMM_CUDA_NAP"] = nap
    p = run_cli("info", "--json", env=env)
    assert p.returncode == 0, p.stderr
    inf = json.loads(p.stdout)
    assert (inf["mps"], inf["cuda_nap_percent"]) == (mps_seen, naps), inf
    assert inf["mps_pipe_dir"] == env["CUDA_MPS_PIPE_DIRECTORY"]
    text = run_cli("info", env=env).stdout
    waits = f"a waiting thread naps {naps}% of the wait" if naps else "a waiting thread spins"
    assert waits in text and ("MPS serves this process" in text) == mps_seen, text
