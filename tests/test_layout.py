"""The tree's layering, checked from the sources: the CLI sits above the
library (no module of the library imports it), tests and scripts share
tools through devtools only, and nothing edits sys.path but the one
bootstrap a script imports first (scripts/_checkout.py)."""

import ast
import os
import subprocess
import sys

import pytest

from devtools import ROOT
from pyphmm import sw
from pyphmm.cli import align


def python_files(*dirs):
    for d in dirs:
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(base, name)


def imported_modules(path):
    """Absolute names of the modules a file imports (relative ones resolved)."""
    tree = ast.parse(open(path).read(), path)
    package = os.path.relpath(os.path.dirname(path), ROOT).replace(os.sep, ".")
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module
            names.append(mod)
            names += [f"{mod}.{a.name}" for a in node.names]
    return names


def test_library_does_not_import_the_cli():
    for path in python_files("pyphmm"):
        if os.sep + "cli" + os.sep in path or path.endswith("__main__.py"):
            continue
        bad = [m for m in imported_modules(path) if m == "pyphmm.cli" or m.startswith("pyphmm.cli.")]
        assert not bad, f"{os.path.relpath(path, ROOT)} imports {bad}"


@pytest.mark.parametrize(
    "tree,forbidden",
    [("tests", ("scripts", "gen_regions", "bench_")), ("scripts", ("tests", "oracle", "helpers", "swgen", "test_"))],
)
def test_tests_and_scripts_do_not_import_each_other(tree, forbidden):
    for path in python_files(tree):
        for m in imported_modules(path):
            assert not m.split(".")[0].startswith(forbidden), f"{os.path.relpath(path, ROOT)} imports {m}"


# The one file that may edit sys.path: it makes the repository root
# importable for a script run as `python3 scripts/NAME.py`.
BOOTSTRAP = os.path.join(ROOT, "scripts", "_checkout.py")
ROOT_PACKAGES = ("pyphmm", "devtools", "buildtools")


def test_nothing_edits_sys_path():
    for path in python_files("tests", "scripts", "devtools"):
        if path in (os.path.abspath(__file__), BOOTSTRAP):
            continue
        text = open(path).read()
        for edit in ("sys.path.insert", "sys.path.append"):
            assert edit not in text, os.path.relpath(path, ROOT)


def scripts_needing_the_root():
    """The scripts that import pyphmm, devtools or buildtools."""
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, "scripts"))):
        path = os.path.join(ROOT, "scripts", name)
        if name.endswith(".py") and path != BOOTSTRAP:
            if any(m.split(".")[0] in ROOT_PACKAGES for m in imported_modules(path)):
                out.append(path)
    return out


def test_scripts_import_the_bootstrap_first():
    """Before any of the repository's packages: `python3 scripts/NAME.py`
    then works from anywhere, without PYTHONPATH."""
    assert scripts_needing_the_root()
    for path in scripts_needing_the_root():
        tree = ast.parse(open(path).read(), path)
        tops = []
        for node in tree.body:
            if isinstance(node, ast.Import):
                tops += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                tops.append(node.module)
        first = next(i for i, m in enumerate(tops) if m.split(".")[0] in ROOT_PACKAGES)
        assert "_checkout" in tops[:first], f"{os.path.relpath(path, ROOT)} imports {tops[first]} before _checkout"


@pytest.mark.parametrize(
    "path",
    [p if k == 0 else pytest.param(p, marks=pytest.mark.slow) for k, p in enumerate(scripts_needing_the_root())],
    ids=os.path.basename,
)
def test_scripts_run_from_the_root_without_pythonpath(path):
    """`python3 scripts/bench_multiproc.py` once failed with "No module named
    'devtools'" unless PYTHONPATH=. was set."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(
        [sys.executable, os.path.relpath(path, ROOT), "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and "usage" in p.stdout.lower(), p.stderr[-2000:]


def test_cli_names_match_the_library():
    """The align command lists presets and strategies without importing the
    library's numpy modules at start; the lists must be the library's."""
    assert align.PRESET_NAMES == tuple(sw.PRESETS)
    assert align.OVERHANG_NAMES == tuple(m.name for m in sw.OverhangStrategy)


# native/'s layers, lowest first: a file may include its own layer's files
# and those of lower layers, never a higher one. cpu/ and cuda/ are one
# layer that does not mix (the backends mirror each other); the front ends
# (record files, JNI) sit on the C ABI and the dispatch, and nothing below
# them knows about files or Java.
NATIVE_LAYERS = {"include": 0, "common": 1, "cpu": 2, "cuda": 2, "dispatch": 3, "frontends": 4}


def native_includes(path):
    """(file's layer dir, included layer dir) for each quoted #include."""
    native = os.path.join(ROOT, "native")
    own = os.path.relpath(path, native).split(os.sep)[0]
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line.startswith('#include "'):
            continue
        target = line.split('"')[1]
        local = os.path.normpath(os.path.join(os.path.dirname(path), target))
        resolved = local if os.path.exists(local) else os.path.join(native, target)
        if target == "pyphmm.h":
            resolved = os.path.join(native, "include", "pyphmm.h")
        assert os.path.exists(resolved), f"{os.path.relpath(path, ROOT)}: {target} not found"
        yield own, os.path.relpath(resolved, native).split(os.sep)[0]


def test_native_layers():
    native = os.path.join(ROOT, "native")
    seen = set()
    for base, _, files in os.walk(native):
        for name in files:
            if not name.endswith((".h", ".cc", ".cu", ".cuh")):
                continue
            path = os.path.join(base, name)
            for own, dep in native_includes(path):
                seen.add(own)
                rel = os.path.relpath(path, ROOT)
                assert own in NATIVE_LAYERS and dep in NATIVE_LAYERS, f"{rel}: unknown layer {own} or {dep}"
                assert NATIVE_LAYERS[dep] <= NATIVE_LAYERS[own], f"{rel} (layer {own}) includes {dep}, a higher layer"
                if {own, dep} == {"cpu", "cuda"}:
                    raise AssertionError(f"{rel}: the CPU and CUDA backends do not include each other")
    assert {"common", "cpu", "cuda", "dispatch", "frontends"} <= seen


def test_front_ends_hold_record_files_and_java():
    """Record files and JNI live under native/frontends/ only."""
    for base, _, files in os.walk(os.path.join(ROOT, "native")):
        if os.path.relpath(base, ROOT).startswith(os.path.join("native", "frontends")):
            continue
        for name in files:
            text = open(os.path.join(base, name), encoding="utf-8").read()
            rel = os.path.relpath(os.path.join(base, name), ROOT)
            assert "<jni.h>" not in text and "JNIEnv" not in text, f"{rel} uses JNI outside native/frontends/"
            if not rel.startswith(os.path.join("native", "include")):
                assert "pyphmm_pairhmm_file" not in text, f"{rel} handles record files outside native/frontends/"
