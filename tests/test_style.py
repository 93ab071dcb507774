"""The tree follows its style settings: ruff's (pyproject.toml) for Python,
.clang-format for C, C++ and CUDA. scripts/setup.sh installs both tools;
either command below, with the check flags dropped, applies the style."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# .clang-format's output differs between clang-format releases: the tree is
# formatted with Debian 12's.
CLANG_FORMAT_MAJOR = 14


def _tracked(*patterns):
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return out.stdout.split()


def _ruff():
    try:
        import ruff  # noqa: F401
    except ImportError:
        pytest.skip("ruff is not installed (scripts/setup.sh installs it)")
    return [sys.executable, "-m", "ruff"]


def test_python_lint():
    res = subprocess.run(
        [*_ruff(), "check", "--output-format", "concise", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_python_format():
    res = subprocess.run([*_ruff(), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_native_format():
    tool = shutil.which("clang-format")
    if tool is None:
        pytest.skip("clang-format is not installed (scripts/setup.sh installs it)")
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    major = re.search(r"version (\d+)", version)
    if not major or int(major.group(1)) != CLANG_FORMAT_MAJOR:
        pytest.skip(f"the tree is formatted with clang-format {CLANG_FORMAT_MAJOR}, this is: {version.strip()}")
    files = _tracked("*.c", "*.cc", "*.h", "*.cu", "*.cuh")
    assert files
    res = subprocess.run([tool, "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
