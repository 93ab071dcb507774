"""The library's numpy modules, imported when a command first needs them
(a record file computed in native code never loads numpy).

Where the process has too little memory (``ulimit -v``), numpy's import
fails in many ways (MemoryError, ImportError, even SyntaxError from a
half-read module): each is one MemoryError naming what failed, which the CLI
reports in one line (status 1)."""

from __future__ import annotations

import importlib


def numpy_module(name: str, needed_for: str):
    """pyphmm's module `name` (".io", ".pairhmm", ".sw")."""
    try:
        return importlib.import_module(name, "pyphmm")
    except (ImportError, SyntaxError, MemoryError) as e:
        why = f"{type(e).__name__}: {e}".splitlines()[0]
        raise MemoryError(f"cannot load numpy, which {needed_for} needs (out of memory?): {why}") from None
