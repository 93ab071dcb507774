"""Small C++ check programs (tests/native/*.cc) compiled against native/.

The one place that knows how a check is built, so the recipe can later come
from the project's native builder.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from . import ROOT

NATIVE = os.path.join(ROOT, "native")


def build_native_check(out_dir, name: str, *sources: str, std: str = "c++17", opt: str = "-O2") -> str:
    """Compiles tests/native/NAME.cc with the native/ SOURCES (paths relative
    to native/) into OUT_DIR/NAME; returns the executable's path. Raises
    FileNotFoundError when no C++ compiler ($CXX, default g++) exists."""
    cxx = os.environ.get("CXX", "g++")
    if not shutil.which(cxx):
        raise FileNotFoundError(f"C++ compiler {cxx} not found")
    exe = os.path.join(str(out_dir), name)
    subprocess.run([cxx, f"-std={std}", opt, "-pthread", "-Wno-psabi", f"-I{NATIVE}", f"-I{os.path.join(NATIVE, 'include')}",
                    os.path.join(ROOT, "tests", "native", f"{name}.cc"),
                    *(os.path.join(NATIVE, s) for s in sources), "-o", exe], check=True)
    return exe
