"""The tree's layering, checked from the sources: the CLI sits above the
library (no module of the library imports it), tests and scripts share
tools through devtools only, and nothing edits sys.path."""

import ast
import os

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


def test_nothing_edits_sys_path():
    for path in python_files("tests", "scripts", "devtools"):
        if path == os.path.abspath(__file__):
            continue
        text = open(path).read()
        for edit in ("sys.path.insert", "sys.path.append"):
            assert edit not in text, os.path.relpath(path, ROOT)


def test_cli_names_match_the_library():
    """The align command lists presets and strategies without importing the
    library's numpy modules at start; the lists must be the library's."""
    assert align.PRESET_NAMES == tuple(sw.PRESETS)
    assert align.OVERHANG_NAMES == tuple(m.name for m in sw.OverhangStrategy)
