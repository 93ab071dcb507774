"""Child processes that import this checkout's pyphmm and devtools.

Settings such as the CPU kernel, the dispatch threshold or the fake GPU are
read once per process, so tests that vary them run a child Python.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from . import ROOT


def child_env(root: str = ROOT, *, import_tests: bool = False, **extra) -> dict:
    """Environment for a child Python that must import this checkout's pyphmm
    (and devtools): root first on PYTHONPATH, the caller's entries (e.g.
    carried wheels) kept after it; ``extra`` sets more variables.
    import_tests: tests/ on the path too, for a child that reuses a test
    module's functions (``import test_x as t``)."""
    tests = os.path.join(root, "tests") if import_tests else None
    path = os.pathsep.join(p for p in (root, tests, os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, **extra, PYTHONPATH=path)


def _python_env(env: dict | None, unset, import_tests: bool = False) -> dict:
    """child_env plus ``env``, without the inherited variables in ``unset``."""
    e = child_env(ROOT, import_tests=import_tests, **(env or {}))
    for name in unset:
        e.pop(name, None)
    return e


def run_python(
    code: str, *, env: dict | None = None, unset=(), import_tests: bool = False, timeout: float = 600, **kw
) -> subprocess.CompletedProcess:
    """Runs ``python -c code`` in a child with this checkout importable;
    ``env`` adds variables, ``unset`` removes inherited ones, import_tests
    as in child_env. Returns the CompletedProcess (text output)."""
    e = _python_env(env, unset, import_tests)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=timeout, **kw)


def popen_python(code: str, *args: str, env: dict | None = None, unset=()) -> subprocess.Popen:
    """Starts ``python -c code ARGS`` as run_python does, with pipes for
    stdin, stdout and stderr (text), for a child the test talks to while it
    runs."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=_python_env(env, unset),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_cli(*args, env: dict | None = None, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Runs ``python -m pyphmm ARGS`` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", *args],
        capture_output=True,
        text=True,
        env=child_env(ROOT, **(env or {})),
        timeout=timeout,
        **kw,
    )


def default_signals() -> None:
    """A child's preexec_fn: the terminating signals the CLI handles at their
    default disposition, as in a terminal's foreground job. A shell without
    job control starts background commands with SIGINT and SIGQUIT ignored,
    and the CLI keeps a signal ignored that it inherits ignored (nohup), so
    a test that sends one must not depend on how its runner was started.
    A runner may also start it with them blocked (the mask survives exec),
    so they are unblocked too."""
    sigs = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1)
    for sig in sigs:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
