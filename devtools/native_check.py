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


def run_sw_check(exe: str, calls, dev: str) -> tuple:
    """Runs the program of tests/native/sw_avx512_check.cc on (ref, alt,
    params, strategy) calls, one aligned per call, with PYPHMM_DEV=dev.
    Returns its lines ("CIGAR OFFSET", in call order) and the counters it
    prints on standard error (reused_cells, diagonal_alignments) as a dict."""
    import subprocess

    from pyphmm import sw

    lines = "".join(
        f"{r.hex()} {a.hex()} {p[0]} {p[1]} {p[2]} {p[3]} {int(sw.OverhangStrategy[s])}\n" for r, a, p, s in calls
    )
    res = subprocess.run([exe], input=lines.encode(), env=dict(os.environ, PYPHMM_DEV=dev), capture_output=True)
    if res.returncode != 0 or b"warning" in res.stderr:
        raise RuntimeError(f"{exe} (PYPHMM_DEV={dev}): exit {res.returncode}: {res.stderr.decode()}")
    words = res.stderr.decode().split()
    counters = {words[k]: int(words[k + 1]) for k in range(0, len(words) - 1, 2)}
    return res.stdout.decode().splitlines(), counters
