"""Shared fixtures. GKL is the oracle: when it is missing the tests that need
it fail (not skip), because CI installs it and a silent skip would hide a
broken comparison. Set PYPHMM_ALLOW_NO_GKL=1 only where no JVM can exist.

The tools the tests share (oracles, region generator, test vectors, child
processes, native check builds) live in the ``devtools`` package at the
repository root, importable through pytest's ``pythonpath`` setting.

The hooks below keep the markers (tests/README.md) honest while tests run:
a test without ``jvm`` that starts a JVM fails, a test with ``gpu`` skips
where no CUDA device is usable, and a test without ``gpu`` that skips for
want of one fails (tests/test_markers.py checks the sources)."""

import functools
import os
import re
import stat
import sys

import pytest

from devtools import jvm_guard, native_check
from devtools.oracle import gkl as gkl_oracle

# Skip reasons that say a test needs a GPU ("no usable CUDA device: ...",
# "fewer than two CUDA devices", "needs a GPU"; not "no CUDA kernels").
NO_GPU_REASON = re.compile(r"\b((no|fewer than \w+)( usable)?|needs? an?) (CUDA |GPU )?(device|GPU)s?\b", re.I)
# Fixtures that hand a test the shared JVM.
JVM_FIXTURES = ("gkl_jvm",)


@functools.lru_cache(maxsize=None)
def no_cuda_device_reason():
    """None where this build has a usable CUDA device, else why not."""
    import pyphmm

    info = pyphmm.info()
    return None if info["cuda_usable"] else f"needs a CUDA device (pytest.mark.gpu): {info['cuda_status']}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Around a test without the jvm marker (its fixtures' setup included),
    the devtools helpers that start a JVM fail it, and so does any JVM its
    processes start (jvm_guard.REFUSING_OPTIONS)."""
    if item.get_closest_marker("jvm"):
        return (yield)

    def refuse(what):
        pytest.fail(f"{item.nodeid} starts a JVM ({what}) but lacks @pytest.mark.jvm", pytrace=False)

    saved = os.environ.get("JAVA_TOOL_OPTIONS")
    os.environ["JAVA_TOOL_OPTIONS"] = jvm_guard.REFUSING_OPTIONS
    jvm_guard.install(refuse)
    try:
        return (yield)
    finally:
        jvm_guard.install(None)
        if saved is None:
            os.environ.pop("JAVA_TOOL_OPTIONS", None)
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = saved


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    jvm = [f for f in JVM_FIXTURES if f in item.fixturenames]
    if jvm and not item.get_closest_marker("jvm"):
        pytest.fail(f"{item.nodeid} uses {jvm[0]} but lacks @pytest.mark.jvm", pytrace=False)
    # (PYPHMM_TEST_GPU_BACKEND=cpu: the GPU tests' dry run, tests/test_cuda_pairhmm.py)
    if item.get_closest_marker("gpu") and os.environ.get("PYPHMM_TEST_GPU_BACKEND") != "cpu":
        reason = no_cuda_device_reason()
        if reason:
            pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.skipped and not item.get_closest_marker("gpu"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if NO_GPU_REASON.search(reason):
            report.outcome = "failed"
            report.longrepr = f"{item.nodeid} skips for want of a GPU ({reason}) but lacks @pytest.mark.gpu"
    return report


@pytest.fixture(scope="session")
def gkl_jvm():
    reason = gkl_oracle.missing_reason()
    if reason:
        if os.environ.get("PYPHMM_ALLOW_NO_GKL") == "1":
            pytest.skip(f"GKL oracle unavailable: {reason}")
        pytest.fail(f"GKL oracle unavailable: {reason}")
    return gkl_oracle.start_jvm()


@pytest.fixture(scope="session")
def sw_avx512_check_exe(tmp_path_factory):
    """tests/native/sw_avx512_check.cc: the AVX-512 Smith-Waterman instances
    compiled against portable definitions of their intrinsics, so that they
    run on any x86-64 CPU with AVX2 (PYPHMM_DEV=sw_isa=avx512 or avx512vbmi).
    Built once a session (the emulated intrinsics take minutes to compile);
    skips where it cannot run."""
    if not sys.platform.startswith("linux") or os.uname().machine != "x86_64":
        pytest.skip("the AVX-512 instance exists on x86-64 only")
    with open("/proc/cpuinfo") as f:
        if " avx2" not in f.read():
            pytest.skip("the emulated AVX-512 instance runs its 256-bit half vectors with AVX2")
    emulation = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "sw_avx512_emulation.h")
    try:
        return native_check.build_native_check(
            tmp_path_factory.mktemp("sw_avx512"),
            "sw_avx512_check",
            "cpu/sw_cpu.cc",
            "cpu/sw_cpu_fill.cc",
            "common/config.cc",
            "common/thread_pool.cc",
            extra=("-DPYPHMM_SW_EMULATE_AVX512", "-include", emulation),
        )
    except FileNotFoundError as e:
        pytest.skip(str(e))


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
