"""Shared fixtures. GKL is the oracle: when it is missing the tests that need
it fail (not skip), because CI installs it and a silent skip would hide a
broken comparison. Set PYPHMM_ALLOW_NO_GKL=1 only where no JVM can exist.

The tools the tests share (oracles, region generator, test vectors, child
processes, native check builds) live in the ``devtools`` package at the
repository root, importable through pytest's ``pythonpath`` setting."""

import os
import stat

import pytest

from devtools import native_check
from devtools.oracle import gkl as gkl_oracle


@pytest.fixture(scope="session")
def gkl_jvm():
    reason = gkl_oracle.missing_reason()
    if reason:
        if os.environ.get("PYPHMM_ALLOW_NO_GKL") == "1":
            pytest.skip(f"GKL oracle unavailable: {reason}")
        pytest.fail(f"GKL oracle unavailable: {reason}")
    return gkl_oracle.start_jvm()


@pytest.fixture
def native_check_exe(tmp_path):
    """build(name, *sources) -> path of tests/native/NAME.cc compiled with
    native/ SOURCES; skips where no C++ compiler exists."""

    def build(name, *sources, **flags):
        try:
            return native_check.build_native_check(tmp_path, name, *sources, **flags)
        except FileNotFoundError as e:
            pytest.skip(str(e))

    return build


@pytest.fixture
def knob(monkeypatch):
    """knob(NAME, value) sets (value) or unsets (None) one of the native
    library's reloadable environment variables for this test. The library
    reads its environment once, so every change is followed by a reload,
    and the test's end restores the environment and reloads again."""
    from pyphmm import _native

    def set_knob(name, value):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
        _native.reload_config()

    yield set_knob
    monkeypatch.undo()
    _native.reload_config()


@pytest.fixture
def device_node(tmp_path):
    """device_node(name, major, minor) -> a character device made in
    tmp_path (1, 3 is what /dev/null is, 1, 7 /dev/full): tests never write
    to a node of the real /dev. Skips where this process may not make or
    open one (not root, a container's device rules)."""

    def make(name, major, minor):
        path = tmp_path / name
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
            os.close(os.open(path, os.O_WRONLY))
        except OSError as e:
            pytest.skip(f"cannot make and open a device node here: {e.strerror}")
        return path

    return make
