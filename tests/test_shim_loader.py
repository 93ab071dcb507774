"""How the shim jar loads libpyphmm.so on a shared machine.

The jar keeps the library at pyphmm/native/linux-<arch>/libpyphmm.so (arch
from os.arch) and extracts it into java.io.tmpdir/pyphmm-USER-DIGEST only
when that directory is private to the user (created 0700; an existing one
must be owned by the user and writable by nobody else), comparing the file
with the jar's copy by SHA-256; otherwise it uses a fresh private directory
and removes it once loaded. A java.io.tmpdir that others may write without
the sticky bit is not used at all, and a noexec one gets one line naming
the fix; both then fall back to java.library.path.

Each case runs GATK HEAD's call sequence (tests/java/GatkHeadCaller.java)
in a JVM of its own and checks the values against GKL.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
import stat
import subprocess
import zipfile

import numpy as np
import pytest

from devtools.child import child_env
from devtools.oracle import java_harness as jh
from devtools.oracle import shim

# Every case runs GATK HEAD's caller in a JVM of its own (the shim tests of
# tests/test_shim.py load the jar through the same loader in the shared JVM).
pytestmark = [pytest.mark.jvm, pytest.mark.slow]

REPO = shim.REPO
MACHINE = os.uname().machine  # x86_64 or aarch64: the jar built here holds this one
RESOURCE = f"pyphmm/native/linux-{MACHINE}/libpyphmm.so"
OS_ARCH = {"x86_64": ("amd64", "x86_64"), "aarch64": ("aarch64", "arm64")}  # os.arch names of each
PLANTED_LIB = os.path.join(jh.gkl_library_path(), "libgkl_utils.so")  # a loadable library that is not pyphmm


@pytest.fixture(scope="module")
def caller(tmp_path_factory):
    d = tmp_path_factory.mktemp("loader")
    regions = shim.random_regions(6, seed=1313)
    return {
        "classes": jh.compile_sources(d / "classes", ["Records.java", "GatkHeadCaller.java"], jh.shim_classpath()),
        "regions": regions,
        "regions_file": jh.write_regions(regions, d / "r.in"),
        "pairs_file": jh.write_sw_pairs([], d / "p.tsv"),
        "dir": d,
    }


@pytest.fixture(scope="module")
def gkl_values(gkl_jvm, caller):
    b = shim.Binding("gkl")
    return [b.compute(r) for r in caller["regions"]]


def _jar_library() -> bytes:
    with zipfile.ZipFile(shim.SHIM_JAR) as z:
        return z.read(RESOURCE)


def _shared_dir(tmpdir) -> str:
    user = re.sub(r"[^A-Za-z0-9_.-]", "_", pwd.getpwuid(os.geteuid()).pw_name)
    return os.path.join(str(tmpdir), f"pyphmm-{user}-{hashlib.sha256(_jar_library()).hexdigest()[:16]}")


def _run(caller, tmpdir, *, libpath=None, jvm_extra=(), wrap=()):
    out = os.path.join(str(tmpdir), "..", f"out-{os.path.basename(str(tmpdir))}.txt")
    jvm = [f"-Djava.io.tmpdir={tmpdir}", *jvm_extra]
    if libpath:
        jvm.append(f"-Djava.library.path={libpath}")
    env = child_env(REPO)
    for k in ("PYPHMM_LIBRARY", "PYPHMM_LOG", "USE_LIBRARY_PATH"):
        env.pop(k, None)
    cmd = [
        *wrap,
        jh.java(),
        *jvm,
        "-cp",
        os.pathsep.join([caller["classes"]] + jh.shim_classpath()),
        "GatkHeadCaller",
        caller["regions_file"],
        caller["pairs_file"],
        out,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    with open(out) as f:
        lines = f.read().splitlines()
    return lines, p.stderr


def _check_values(lines, caller, gkl_values):
    assert lines[0] == "I pairhmm com.intel.gkl.pairhmm.IntelPairHmmOMP", lines[:1]
    got = [np.array(ln.split()[3:], float) for ln in lines if ln.startswith("P float ")]
    assert len(got) == len(gkl_values)
    for a, b in zip(got, gkl_values):
        assert np.max(np.abs(a - b)) <= 1e-5


def _loaded_from(stderr) -> str:
    banner = [ln for ln in stderr.splitlines() if " PairHMM: backend " in ln]
    assert len(banner) == 1, stderr[-2000:]
    return banner[0].rsplit("; library ", 1)[1]


def _snapshot(path):
    """Everything about a directory tree that a write would change."""
    snap = {}
    for root, dirs, files in os.walk(path):
        for name in [""] + dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            data = open(p, "rb").read() if stat.S_ISREG(st.st_mode) else None
            snap[os.path.relpath(p, path)] = (st.st_mode, st.st_uid, st.st_mtime_ns, st.st_size, data)
    return snap


def test_extracts_into_private_dir_checked_by_digest(tmp_path, caller, gkl_values):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    lines, err = _run(caller, tmpdir)
    _check_values(lines, caller, gkl_values)
    shared = _shared_dir(tmpdir)
    lib = os.path.join(shared, "libpyphmm.so")
    assert _loaded_from(err) == lib
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o700
    assert open(lib, "rb").read() == _jar_library()
    assert sorted(os.listdir(tmpdir)) == [os.path.basename(shared)] and os.listdir(shared) == ["libpyphmm.so"]
    # a second JVM reuses the verified file ...
    before = os.stat(lib)
    lines, err = _run(caller, tmpdir)
    _check_values(lines, caller, gkl_values)
    after = os.stat(lib)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # ... and replaces one whose bytes differ (same length: only the digest tells)
    data = bytearray(_jar_library())
    data[len(data) // 2] ^= 0xFF
    with open(lib, "wb") as f:
        f.write(data)
    lines, err = _run(caller, tmpdir)
    _check_values(lines, caller, gkl_values)
    assert open(lib, "rb").read() == _jar_library()


def _plant(tmpdir, how):
    planted = _shared_dir(tmpdir)
    os.mkdir(planted)
    shutil.copy(PLANTED_LIB, os.path.join(planted, "libpyphmm.so"))
    if how == "world-writable":
        os.chmod(planted, 0o777)
        os.chmod(os.path.join(planted, "libpyphmm.so"), 0o777)
    else:  # another user's directory (root can make one)
        os.chown(planted, 65534, 65534)
        os.chown(os.path.join(planted, "libpyphmm.so"), 65534, 65534)
        os.chmod(planted, 0o755)
    return planted


@pytest.mark.parametrize("how", ["world-writable", "another-users"])
def test_planted_directory_is_neither_written_nor_loaded(tmp_path, caller, gkl_values, how):
    if how == "another-users" and os.geteuid() != 0:
        pytest.skip("making another user's directory needs root")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(mode=0o1777)
    os.chmod(tmpdir, 0o1777)  # like /tmp: everyone writes, sticky
    planted = _plant(tmpdir, how)
    before = _snapshot(planted)
    lines, err = _run(caller, tmpdir)
    _check_values(lines, caller, gkl_values)
    assert _snapshot(planted) == before
    loaded = _loaded_from(err)
    assert not loaded.startswith(planted + os.sep), loaded
    assert re.fullmatch(re.escape(str(tmpdir)) + r"/pyphmm-[^/]+/libpyphmm\.so", loaded), loaded
    assert f"pyphmm: {planted} is not private to this user" in err
    assert sorted(os.listdir(tmpdir)) == [os.path.basename(planted)]  # the fresh directory is gone


def _pyphmm_libdir(tmp_path) -> str:
    d = tmp_path / "libpath"
    d.mkdir()
    os.symlink(os.path.join(REPO, "pyphmm", "libpyphmm.so"), d / "libpyphmm.so")
    return str(d)


def test_tmpdir_writable_by_others_without_sticky_bit_is_not_used(tmp_path, caller, gkl_values):
    tmpdir = tmp_path / "open"
    tmpdir.mkdir()
    os.chmod(tmpdir, 0o777)
    libpath = _pyphmm_libdir(tmp_path)
    lines, err = _run(caller, tmpdir, libpath=libpath)
    _check_values(lines, caller, gkl_values)
    assert os.listdir(tmpdir) == []
    assert f"not extracting libpyphmm.so into {tmpdir} (writable by other users and not sticky)" in err
    assert _loaded_from(err) == os.path.realpath(os.path.join(libpath, "libpyphmm.so"))
    # nowhere to load from: load() is false and GATK keeps its Java PairHMM
    lines, err = _run(caller, tmpdir)
    assert lines[0] == "I pairhmm java" and "cannot load libpyphmm.so" in err


def test_os_arch_picks_the_library(tmp_path, caller, gkl_values):
    for arch in OS_ARCH[MACHINE]:
        tmpdir = tmp_path / arch
        tmpdir.mkdir()
        lines, err = _run(caller, tmpdir, jvm_extra=[f"-Dos.arch={arch}"])
        _check_values(lines, caller, gkl_values)
        assert _loaded_from(err) == os.path.join(_shared_dir(tmpdir), "libpyphmm.so")
    # A platform the jar has no library for (it may carry the other machine's)
    arch = "ppc64le"
    tmpdir = tmp_path / "other"
    tmpdir.mkdir()
    lines, err = _run(caller, tmpdir, jvm_extra=[f"-Dos.arch={arch}"], libpath=_pyphmm_libdir(tmp_path))
    assert f"this jar has no libpyphmm.so for os.arch {arch} (linux-{arch}); trying java.library.path" in err
    _check_values(lines, caller, gkl_values)  # (from java.library.path)


@pytest.mark.parametrize(
    "option,says", [("noexec", "its file system is mounted noexec"), ("ro", "cannot extract libpyphmm.so")]
)
def test_unusable_tmpdir_names_the_fix(tmp_path, caller, gkl_values, option, says):
    """tmpfs mounted noexec (common on clusters) or read-only, in a private
    mount namespace (unshare, no root): one line naming the fix, then
    java.library.path."""
    tmpdir = tmp_path / option
    tmpdir.mkdir()
    mount = f"mount -t tmpfs -o {option} tmpfs {tmpdir}"
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a {option} file system here (unshare: {probe.stderr.strip()})")
    wrap = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount + ' && exec "$@"', "sh"]
    lines, err = _run(caller, tmpdir, libpath=_pyphmm_libdir(tmp_path), wrap=wrap)
    _check_values(lines, caller, gkl_values)
    fix = [ln for ln in err.splitlines() if ln.startswith("pyphmm: ") and "java.library.path" in ln]
    assert len(fix) == 1 and says in fix[0], err[-2000:]
    assert "-Djava.io.tmpdir=" in fix[0] and "PYPHMM_LIBRARY" in fix[0]
    assert _loaded_from(err) == os.path.realpath(os.path.join(REPO, "pyphmm", "libpyphmm.so"))


def test_concurrent_jvms_keep_the_file_they_loaded(tmp_path, caller):
    """JVMs that start together (Spark executors, parallel GATK runs) extract
    into the same directory; none may replace a file another has mapped."""
    classes = jh.compile_sources(tmp_path / "classes", ["LoaderMapping.java"], jh.shim_classpath())
    tmpdir, ready = tmp_path / "tmp", tmp_path / "ready"
    tmpdir.mkdir()
    ready.mkdir()
    env = child_env(REPO)
    env["PYPHMM_LOG"] = "quiet"
    env.pop("PYPHMM_LIBRARY", None)
    cmd = [
        jh.java(),
        f"-Djava.io.tmpdir={tmpdir}",
        "-cp",
        os.pathsep.join([classes] + jh.shim_classpath()),
        "LoaderMapping",
        str(ready),
    ]
    jvms = 6
    procs = [
        subprocess.Popen(cmd + [str(jvms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(jvms)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-2000:] for _, e in outs]
    lib = os.path.join(_shared_dir(tmpdir), "libpyphmm.so")
    assert [o.strip() for o, _ in outs] == [lib] * jvms, outs
