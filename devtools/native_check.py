"""Small C++ check programs (tests/native/*.cc) compiled against native/,
with the library's own host flags (buildtools.native, which setup.py uses)."""

from __future__ import annotations

import os

from buildtools.native import compile_check_program

from . import ROOT


def build_native_check(
    out_dir, name: str, *sources: str, std: str = "c++17", opt: str = "-O2", extra: tuple = ()
) -> str:
    """Compiles tests/native/NAME.cc with the native/ SOURCES (paths relative
    to native/) into OUT_DIR/NAME, with EXTRA flags after the library's;
    returns the executable's path. Raises FileNotFoundError when no C++
    compiler ($CXX, default g++) exists."""
    exe = os.path.join(str(out_dir), name)
    return compile_check_program(
        exe, os.path.join(ROOT, "tests", "native", f"{name}.cc"), sources, extra_flags=(f"-std={std}", opt, *extra)
    )
