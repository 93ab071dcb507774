"""The library's numpy modules, imported when a command first needs them
(a record file computed in native code never loads numpy).

Where the process has too little memory (``ulimit -v``), numpy's import
fails in many ways (MemoryError, ImportError, even SyntaxError from a
half-read module): each is one MemoryError naming what failed, which the CLI
reports in one line (status 1). The CLI uses numpy for buffers, never for
linear algebra, so OpenBLAS starts one thread (its per-thread buffers made
the import fail under limits the CLI otherwise runs within), unless the
environment says otherwise."""

from __future__ import annotations

import importlib
import os


def numpy_module(name: str, needed_for: str):
    """pyphmm's module `name` (".io", ".pairhmm", ".sw")."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        return importlib.import_module(name, "pyphmm")
    except (ImportError, SyntaxError, MemoryError) as e:
        why = (f"{type(e).__name__}: {e}".splitlines() or [""])[0].rstrip(": ")
        raise MemoryError(f"cannot load numpy, which {needed_for} needs (out of memory?): {why}") from None
