"""Signals that end a command: every one that would terminate the process
and can be caught ends it with status 128+N, after the command has removed
its partial output.

Only the standard library is imported here: `main` installs the handlers as
its first instruction, before the commands' modules (and numpy) load, so a
Ctrl-C at any moment of a run gives status 130 and no traceback.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading

# Signals whose default action ends the process, less those a fault raises
# (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT: the code that
# raised them cannot go on to clean up) and those Python itself ignores
# (SIGPIPE, SIGXFSZ: a write then fails with an error instead).
_NAMES = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF")
_NAMES += ("SIGXCPU", "SIGIO", "SIGPWR", "SIGSTKFLT")


def terminating_signals() -> list:
    """The signals `install` handles on this platform."""
    sigs = [getattr(signal, n) for n in _NAMES if hasattr(signal, n)]
    if hasattr(signal, "SIGRTMIN"):
        sigs += range(signal.SIGRTMIN, signal.SIGRTMAX + 1)
    return sorted(set(sigs))


class Terminated(BaseException):
    """A terminating signal arrived (SIGTERM from timeout or a batch system,
    SIGHUP from a dropped SSH connection, Ctrl-C, ...): the command stops, its
    partial output is removed, and the process exits with 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


class _State:
    stopping = False  # a signal arrived: later ones must not cut the clean-up short
    critical = 0  # depth of critical() sections
    pending = None  # the signal that arrived within one


_state = _State()


def _handler(signum, frame):
    if _state.stopping:
        return
    if _state.critical:
        _state.pending = _state.pending or signum
        return
    _state.stopping = True
    raise Terminated(signum)


@contextlib.contextmanager
def critical():
    """A section that a signal does not cut in two (creating or renaming an
    output and remembering that it did): a signal that arrives inside it is
    raised at its end."""
    _state.critical += 1
    try:
        yield
    finally:
        _state.critical -= 1
        if not _state.critical and _state.pending is not None and not _state.stopping:
            signum, _state.pending = _state.pending, None
            _state.stopping = True
            raise Terminated(signum)


def install() -> dict:
    """Handles every terminating signal that is not ignored (a job started
    under nohup keeps ignoring SIGHUP); returns what to give `restore`.
    Only the main thread can do so: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    _state.stopping, _state.critical, _state.pending = False, 0, None
    previous = {}
    for sig in terminating_signals():
        try:
            old = signal.getsignal(sig)
            if old in (signal.SIG_DFL, signal.default_int_handler):
                previous[sig] = signal.signal(sig, _handler)
        except (OSError, ValueError):  # reserved by the C library
            continue
    return previous


def restore(previous: dict) -> None:
    for sig, old in previous.items():
        signal.signal(sig, old)


class _Worker:
    """The one thread that runs interruptible's calls, kept for the process:
    what the library keeps per thread (Smith-Waterman's buffers, a GPU
    caller's wait estimates) then lasts from one chunk to the next, as it
    did when the main thread computed."""

    thread = None
    tasks: queue.SimpleQueue = queue.SimpleQueue()

    @classmethod
    def serve(cls):
        while True:
            cls.tasks.get()()

    @classmethod
    def started(cls) -> bool:
        if cls.thread is None or not cls.thread.is_alive():
            thread = threading.Thread(target=cls.serve, name="pyphmm-compute", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no thread can start (a memory limit)
                return False
            cls.thread = thread
        return True


def interruptible(fn, *args, **kw):
    """fn(*args, **kw) on a worker thread while this one waits: a call into C
    cannot be interrupted, so computing on the main thread would hold a
    signal's handler until the call returns (seconds for a large chunk).
    Returns fn's result or raises its exception; a signal raises Terminated
    here at once, and the worker ends with the process. Where no thread can
    start, fn runs here."""
    if not _Worker.started():
        return fn(*args, **kw)
    box = {}
    done = threading.Event()

    def task():
        try:
            box["value"] = fn(*args, **kw)
        except BaseException as e:  # handed to the caller
            box["error"] = e
        finally:
            done.set()

    _Worker.tasks.put(task)
    while not done.wait(0.2):  # (a lock wait: signals interrupt it)
        pass
    if "error" in box:
        raise box["error"]
    return box["value"]
