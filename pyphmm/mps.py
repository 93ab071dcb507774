"""NVIDIA MPS for many GATK processes on one GPU: ``pyphmm mps start|stop|status``.

Without MPS the CUDA contexts of separate processes are time-sliced on the
GPU, so N HaplotypeCaller processes sharing one GPU can get less throughput
in all than one process; under MPS their kernels run concurrently through
one server. This module drives ``nvidia-cuda-mps-control`` (shipped
with the NVIDIA driver) so users need not learn its control syntax.

The daemon runs with a private pipe directory (default
``/tmp/pyphmm-mps-<uid>``, mode 0700, owned by the user) and a log
directory (default ``<pipe dir>/log``), never NVIDIA's system-wide
``/tmp/nvidia-mps``: a client joins this daemon only when its environment
names the same ``CUDA_MPS_PIPE_DIRECTORY``, so other users' and other jobs'
processes are unaffected. Nothing here changes the GPU's compute mode or any
other device setting.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

CONTROL = "nvidia-cuda-mps-control"
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
LOG_ENV = "CUDA_MPS_LOG_DIRECTORY"
# /tmp itself, not $TMPDIR: the pipe directory holds Unix sockets, whose
# paths must stay short, and the default must be the same in every shell.
TMP = "/tmp"
START_WAIT_S = 10.0
STOP_WAIT_S = 30.0
COMMAND_TIMEOUT_S = 30.0


class MpsError(OSError):
    """MPS cannot be driven here (no control program, unsafe directory, daemon failure)."""


def default_pipe_dir() -> str:
    return os.path.join(TMP, f"pyphmm-mps-{os.getuid()}")


def resolve_dirs(pipe_dir: str | None = None, log_dir: str | None = None) -> tuple:
    """(pipe dir, log dir), absolute: the arguments, else the environment's
    CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY (what a shell that ran
    ``pyphmm mps start`` exported), else the per-user default. The log dir
    defaults to PIPE/log; the environment's is used only with its pipe dir."""
    pipe = pipe_dir or os.environ.get(PIPE_ENV) or default_pipe_dir()
    log = log_dir or (None if pipe_dir else os.environ.get(LOG_ENV)) or os.path.join(pipe, "log")
    return os.path.abspath(pipe), os.path.abspath(log)


def ensure_private_dir(path: str) -> str:
    """Creates `path` with mode 0700, or checks that an existing one is a real
    directory (not a link), owned by this user and closed to group and
    others. Anything else is an MpsError: another user could otherwise own or
    read the daemon's control pipe."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise MpsError(f"cannot create MPS directory {path}: {e.strerror}") from None
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise MpsError(
            f"MPS directory {path} exists and is not a directory (a link or a file); "
            "remove it or pass another directory"
        )
    if st.st_uid != os.getuid():
        raise MpsError(
            f"MPS directory {path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()}); "
            "pass a directory of your own"
        )
    if st.st_mode & 0o077:
        raise MpsError(
            f"MPS directory {path} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"run 'chmod 700 {path}' or pass another directory"
        )
    return path


def control_program() -> str:
    exe = shutil.which(CONTROL)
    if not exe:
        raise MpsError(
            f"{CONTROL} not found on PATH: MPS needs NVIDIA's driver utilities "
            "(e.g. Debian/Ubuntu's nvidia-cuda-mps or nvidia-compute-utils-NNN) on a Linux host "
            "with an NVIDIA GPU"
        )
    return exe


def client_env(pipe: str, log: str, base: dict | None = None) -> dict:
    """Environment for processes that should run as this daemon's clients."""
    env = dict(os.environ if base is None else base)
    env[PIPE_ENV], env[LOG_ENV] = pipe, log
    return env


def _control(pipe: str, log: str, command: str) -> subprocess.CompletedProcess:
    """One front-end call: `command` on the control program's stdin."""
    try:
        return subprocess.run(
            [control_program()],
            input=command + "\n",
            capture_output=True,
            text=True,
            env=client_env(pipe, log),
            timeout=COMMAND_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise MpsError(
            f"{CONTROL} did not answer within {COMMAND_TIMEOUT_S:.0f} s ({command!r}, pipe dir {pipe})"
        ) from None


def _launch_daemon(pipe: str, log: str) -> None:
    """nvidia-cuda-mps-control -d. Its output goes to a file, not a pipe: the
    forked daemon may keep the descriptors, and reading a pipe to its end
    would then wait for the daemon to exit."""
    out_path = os.path.join(log, "pyphmm-start.out")
    with open(out_path, "w+") as out:
        try:
            rc = subprocess.run(
                [control_program(), "-d"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=client_env(pipe, log),
                timeout=COMMAND_TIMEOUT_S,
            ).returncode
        except subprocess.TimeoutExpired:
            raise MpsError(f"{CONTROL} -d did not return within {COMMAND_TIMEOUT_S:.0f} s") from None
        out.seek(0)
        msg = out.read().strip()
    if rc != 0:
        raise MpsError(f"{CONTROL} -d failed (exit {rc}){': ' + msg if msg else ''}{_log_tail(log)}")


def _pid_list(pipe: str, log: str, command: str):
    """The PIDs a list command prints, or None when no control daemon
    answers on `pipe` (the front end then exits non-zero)."""
    p = _control(pipe, log, command)
    if p.returncode != 0:
        return None
    return [int(tok) for tok in p.stdout.split() if tok.isdigit()]


def server_pids(pipe: str, log: str):
    """PIDs of the daemon's MPS servers (an empty list when it has none yet),
    or None when no control daemon answers on `pipe`."""
    return _pid_list(pipe, log, "get_server_list")


def client_count(pipe: str, log: str, server: int):
    """How many clients MPS server `server` has (None when the daemon does
    not answer). A GPU's server took 48 at most on the hosts measured."""
    pids = _pid_list(pipe, log, f"get_client_list {server}")
    return None if pids is None else len(pids)


def is_running(pipe: str, log: str) -> bool:
    return server_pids(pipe, log) is not None


def _log_tail(log: str, lines: int = 5) -> str:
    path = os.path.join(log, "control.log")
    try:
        with open(path, errors="replace") as f:
            tail = f.read().splitlines()[-lines:]
    except OSError:
        return ""
    return f"; {path} ends with: " + " | ".join(tail) if tail else ""


def start(pipe: str, log: str) -> bool:
    """Starts a control daemon on `pipe` (private directories made first);
    False when one already answers there. Returns once it answers."""
    control_program()
    ensure_private_dir(pipe)
    ensure_private_dir(log)
    if is_running(pipe, log):
        return False
    _launch_daemon(pipe, log)
    deadline = time.monotonic() + START_WAIT_S
    while not is_running(pipe, log):
        if time.monotonic() > deadline:
            raise MpsError(
                f"the MPS control daemon started but does not answer on {pipe} after "
                f"{START_WAIT_S:.0f} s{_log_tail(log)}"
            )
        time.sleep(0.05)
    return True


def stop(pipe: str, log: str) -> bool:
    """Quits the daemon on `pipe` (and its servers, once their clients end);
    False when none answered there."""
    control_program()
    if not is_running(pipe, log):
        return False
    _quit(pipe, log, must_answer=True)
    return True


def _quit(pipe: str, log: str, must_answer: bool) -> None:
    """Sends 'quit' and waits until the daemon no longer answers."""
    p = _control(pipe, log, "quit")
    if p.returncode != 0:
        if must_answer:
            raise MpsError(
                f"'quit' to the MPS control daemon on {pipe} failed (exit {p.returncode}): "
                f"{(p.stderr or p.stdout).strip()}"
            )
        return
    deadline = time.monotonic() + STOP_WAIT_S
    while is_running(pipe, log):
        if time.monotonic() > deadline:
            raise MpsError(
                f"the MPS control daemon on {pipe} still answers {STOP_WAIT_S:.0f} s after 'quit' "
                "(its servers wait for their clients to exit)"
            )
        time.sleep(0.05)


def export_lines(pipe: str, log: str) -> str:
    return f"export {PIPE_ENV}={pipe}\nexport {LOG_ENV}={log}\n"


TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_raise():
    """SIGTERM and SIGHUP raise KeyboardInterrupt while the block runs, as
    SIGINT does, so that `finally` clauses (quitting a daemon) run when a job
    is killed politely. The previous handlers come back afterwards. (Python
    handles signals in the main thread only; elsewhere this does nothing.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    saved = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signals_deferred():
    """SIGINT, SIGTERM and SIGHUP that arrive during the block take effect
    (as KeyboardInterrupt) when it ends: for steps a signal must not cut in
    half, such as starting a child and recording it for cleanup, or the
    cleanup itself. Handlers, not the signal mask, so that children started
    in the block do not inherit blocked signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    saved = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in TERMINATING}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    if caught:
        raise KeyboardInterrupt(f"signal {caught[0]}")


@contextlib.contextmanager
def private_daemon():
    """A control daemon of its own for the duration of the block (benchmarks):
    fresh 0700 directories under /tmp, yielded as the clients' environment
    additions; on leaving the block, by error or by SIGINT/SIGTERM/SIGHUP
    too, the daemon is told to quit and the directories are removed."""
    control_program()
    base = tempfile.mkdtemp(prefix="pyphmm-mps-", dir=TMP)  # mode 0700
    pipe, log = base, os.path.join(base, "log")
    stopped = False
    try:
        with signals_raise():
            try:
                start(pipe, log)
                yield {PIPE_ENV: pipe, LOG_ENV: log}
            finally:
                with signals_deferred():
                    # Also after a failed start: a daemon that was launched
                    # but did not answer in time must not outlive the run.
                    try:
                        _quit(pipe, log, must_answer=False)
                        stopped = True
                    except MpsError as e:  # warn; never hide the block's own outcome
                        print(
                            f"pyphmm mps: warning: {e}; stop it with: echo quit | {PIPE_ENV}={pipe} "
                            f"{LOG_ENV}={log} {CONTROL}",
                            file=sys.stderr,
                        )
    finally:
        if stopped:  # a daemon that may still run keeps its directories
            shutil.rmtree(base, ignore_errors=True)


# ---- pyphmm mps ----------------------------------------------------------


def add_subcommands(sub) -> None:
    p = sub.add_parser(
        "mps",
        help="start, stop or query an NVIDIA MPS daemon for many processes on one GPU",
        description="NVIDIA MPS lets many processes (e.g. one HaplotypeCaller per interval) "
        "share one GPU concurrently instead of time-sliced. 'start' prints the "
        "export lines the GATK processes need.",
    )
    p.add_argument("action", choices=("start", "stop", "status"))
    p.add_argument(
        "--pipe-dir", default=None, help=f"private pipe directory (default ${PIPE_ENV}, else /tmp/pyphmm-mps-<uid>)"
    )
    p.add_argument(
        "--log-dir",
        default=None,
        help=f"log directory (default PIPE_DIR/log, or ${LOG_ENV} when the pipe dir comes from the environment)",
    )
    p.set_defaults(func=cmd_mps)


def cmd_mps(args) -> int:
    pipe, log = resolve_dirs(args.pipe_dir, args.log_dir)
    if args.action == "start":
        fresh = start(pipe, log)
        print(
            f"pyphmm mps: control daemon {'started' if fresh else 'already running'} (pipe dir {pipe}, "
            f"logs {log}); in each shell that starts GPU processes run:",
            file=sys.stderr,
        )
        sys.stdout.write(export_lines(pipe, log))
        return 0
    if args.action == "stop":
        if stop(pipe, log):
            print(f"pyphmm mps: control daemon on {pipe} stopped", file=sys.stderr)
        else:
            print(f"pyphmm mps: no control daemon on {pipe} (nothing to stop)", file=sys.stderr)
        return 0
    pids = server_pids(pipe, log)
    if pids is None:
        print(f"pyphmm mps: no control daemon on {pipe}")
        return 3
    counts = [(pid, client_count(pipe, log, pid)) for pid in pids]
    servers = ", ".join(
        f"{pid} ({n} client{'' if n == 1 else 's'})" if n is not None else str(pid) for pid, n in counts
    )
    servers = servers or "none yet (one starts with the first GPU client)"
    print(f"pyphmm mps: control daemon running on {pipe} (logs {log}); servers: {servers}")
    return 0
