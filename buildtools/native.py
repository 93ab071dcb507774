"""libpyphmm.so: toolchain discovery, compiler flags, incremental build.

libpyphmm.so holds everything native: the C ABI (native/include/pyphmm.h),
the CPU kernels, the CUDA kernels when nvcc is available, and GKL's JNI entry
points when a JDK's jni.h is. Objects are kept in one directory
(build/native by default) across builds, so a second build recompiles only
what changed and skips the link when no object did (see incremental.py).

Environment knobs:
  PYPHMM_NO_CUDA=1            build CPU-only even if nvcc is present
  PYPHMM_CUDA_ARCHS="80;90"   compute capabilities to compile (default
                              80;86;89;90, plus PTX for the newest one)
  PYPHMM_BUILD_JOBS=N         parallel compile jobs (default: CPU count)
  PYPHMM_NVCC_FLAGS="..."     extra nvcc flags (experiments)
  PYPHMM_JNI_INCLUDE=DIR      jni.h + linux/jni_md.h for hosts without a JDK
                              (default: a JDK's include/, else .carry/jni_include)
  PYPHMM_GLIBC_TARGET=2.28    link against that glibc's symbol set (glibc.py):
                              the library then loads on any glibc >= 2.28
  CXX, CC, NVCC, CUDA_HOME, JAVA_HOME

The library alone (a cross build, say), with the same knobs:
  CXX=aarch64-linux-gnu-g++ CC=aarch64-linux-gnu-gcc PYPHMM_NO_CUDA=1 \
      python3 -m buildtools.native --out build/aarch64 --obj build/aarch64/obj
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from . import glibc, incremental

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NATIVE = os.path.join(ROOT, "native")
INCLUDE = os.path.join(NATIVE, "include")
LIBNAME = "libpyphmm.so"
EXPORTS_MAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libpyphmm.map")
DEFAULT_CUDA_ARCHS = "80;86;89;90"
# Prebuilt inputs for hosts without a JDK (scripts/prepare_gpu_carry.sh); ignored by git.
CARRY = os.path.join(ROOT, ".carry")
DEFAULT_OBJ_DIR = os.path.join(ROOT, "build", "native")


def log(msg: str) -> None:
    print(f"pyphmm build: {msg}", flush=True)


def version() -> str:
    """pyphmm/_version.py's __version__, read without importing the package."""
    with open(os.path.join(ROOT, "pyphmm", "_version.py")) as f:
        match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read())
    if not match:
        raise RuntimeError("pyphmm/_version.py has no __version__")
    return match.group(1)


# ---- toolchain discovery ----------------------------------------------------


def cxx() -> str:
    return os.environ.get("CXX", "g++")


def cc() -> str:
    return os.environ.get("CC", "gcc")


@functools.lru_cache(maxsize=None)
def tool_identity(tool: str) -> list:
    """[resolved path, version banner]: part of every signature, so that a
    different or upgraded compiler rebuilds what it compiled."""
    path = shutil.which(tool) or tool
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        out = ""
    lines = [line for line in out.splitlines() if line.strip()]
    return [os.path.realpath(path), lines[0] if lines else "", lines[-1] if lines else ""]


@functools.lru_cache(maxsize=None)
def target_machine(compiler: str) -> str:
    """The CPU the compiler targets ('x86_64', 'aarch64'), from -dumpmachine."""
    triple = subprocess.run([compiler, "-dumpmachine"], capture_output=True, text=True, check=True).stdout
    return triple.strip().split("-", 1)[0]


def find_nvcc() -> str | None:
    if os.environ.get("PYPHMM_NO_CUDA") == "1":
        return None
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if not nvcc:
        for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
                nvcc = os.path.join(home, "bin", "nvcc")
    return nvcc


def cuda_static_runtime(nvcc: str) -> str:
    """libcudart_static.a for this nvcc.

    nvcc may be a wrapper script (as /usr/local/bin/nvcc is on some images),
    so besides its real path look where CUDA_HOME and the usual prefixes say.
    """
    homes = [
        os.path.dirname(os.path.dirname(os.path.realpath(nvcc))),
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        "/usr/local/cuda",
    ] + sorted(glob.glob("/usr/local/cuda-*"))[::-1]
    for home in filter(None, homes):
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            path = os.path.join(home, sub, "libcudart_static.a")
            if os.path.exists(path):
                return path
    raise RuntimeError(f"libcudart_static.a not found for {nvcc} (set CUDA_HOME)")


def jni_include_dirs(inc: str | None) -> list | None:
    """[inc, inc/linux] when inc holds jni.h and linux/jni_md.h, else None."""
    if inc and os.path.exists(os.path.join(inc, "jni.h")) and os.path.exists(os.path.join(inc, "linux", "jni_md.h")):
        return [inc, os.path.join(inc, "linux")]
    return None


def find_jni_include() -> list | None:
    """JNI headers: $PYPHMM_JNI_INCLUDE (a carried copy, for hosts with a JRE
    but no JDK), a JDK's include/, then .carry/jni_include (made by
    scripts/prepare_gpu_carry.sh). None: build without the JNI layer."""
    explicit = os.environ.get("PYPHMM_JNI_INCLUDE")
    if explicit:
        dirs = jni_include_dirs(explicit)
        if not dirs:
            raise RuntimeError(f"PYPHMM_JNI_INCLUDE={explicit} must hold jni.h and linux/jni_md.h")
        return dirs
    homes = [os.environ.get("JAVA_HOME"), "/usr/lib/jvm/default-java"]
    homes += sorted(glob.glob("/usr/lib/jvm/*"))
    javac = shutil.which("javac")
    if javac:
        homes.append(os.path.dirname(os.path.dirname(os.path.realpath(javac))))
    for home in filter(None, homes):
        dirs = jni_include_dirs(os.path.join(home, "include"))
        if dirs:
            return dirs
    return jni_include_dirs(os.path.join(CARRY, "jni_include"))


# ---- flags --------------------------------------------------------------------


def host_flags(defines=(), includes=(), native_dir=NATIVE) -> list:
    """The host C++ compiler's flags for native/ code (no -c/-o): the library
    and the tests' check programs compile with exactly these."""
    flags = [
        "-std=c++17",
        "-O3",
        "-fPIC",
        "-pthread",
        "-fvisibility=hidden",
        # GKL's float arithmetic has no fused multiply-adds; neither do we.
        "-ffp-contract=off",
        "-Wall",
        "-Wextra",
        "-Wno-psabi",
        f"-I{os.path.join(native_dir, 'include')}",
        f"-I{native_dir}",
    ]
    return flags + list(defines) + [f"-I{inc}" for inc in includes]


def cuda_archs() -> list:
    archs = [a.strip() for a in os.environ.get("PYPHMM_CUDA_ARCHS", DEFAULT_CUDA_ARCHS).split(";") if a.strip()]
    if not archs or not all(a.isdigit() for a in archs):
        raise RuntimeError(f"PYPHMM_CUDA_ARCHS must list compute capabilities like '80;90', not {archs!r}")
    return archs


def nvcc_flags(defines=(), native_dir=NATIVE) -> list:
    """nvcc's flags: SASS for each architecture plus PTX for the newest, so
    later GPUs JIT-compile the PTX."""
    archs = cuda_archs()
    gencode = []
    for a in archs:
        gencode += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    newest = max(archs, key=int)
    gencode += ["-gencode", f"arch=compute_{newest},code=compute_{newest}"]
    extra = os.environ.get("PYPHMM_NVCC_FLAGS", "").split()
    return (
        [
            "-std=c++17",
            "-O3",
            "-Xcompiler",
            "-fPIC,-fvisibility=hidden,-pthread",
            f"-I{os.path.join(native_dir, 'include')}",
            f"-I{native_dir}",
        ]
        + list(defines)
        + gencode
        + extra
    )


def compile_check_program(out, main_source, sources=(), extra_flags=()) -> str:
    """Builds a test's native check program: `main_source` (a path) plus
    native/ `sources` (paths relative to native/), compiled and linked with
    the library's host flags; `extra_flags` come last, so they can override
    (e.g. -std=c++20, -O1). Returns `out`. Raises FileNotFoundError when the
    C++ compiler is missing (a test may skip on it)."""
    compiler = cxx()
    if not shutil.which(compiler):
        raise FileNotFoundError(f"C++ compiler {compiler!r} not found")
    paths = [os.fspath(main_source)] + [os.path.join(NATIVE, s) for s in sources]
    subprocess.run([compiler] + host_flags() + list(extra_flags) + paths + ["-o", os.fspath(out)], check=True)
    return os.fspath(out)


# ---- the library --------------------------------------------------------------


class NativeBuild:
    """Compiles native/ (or another tree of that shape) into libpyphmm.so,
    incrementally and in parallel."""

    def __init__(self, obj_dir: str = DEFAULT_OBJ_DIR, native_dir: str = NATIVE):
        self.obj_dir = obj_dir
        self.native_dir = native_dir
        self.cxx = cxx()
        self.nvcc = find_nvcc()
        self.jni = find_jni_include()
        self.machine = target_machine(self.cxx)
        self.glibc_target = os.environ.get("PYPHMM_GLIBC_TARGET") or None
        self._glibc_stubs = None
        self.defines = [f'-DPYPHMM_VERSION="{version()}"']
        if self.jni:
            self.defines.append("-DPYPHMM_WITH_JNI")

    def sources(self) -> list:
        """Every .cc under native/, except: frontends/jni/ without jni.h; in cuda/, the
        .cu files and any host .cc beside them only with nvcc, and
        cuda_absent.cc only without."""
        out = []
        for path in sorted(glob.glob(os.path.join(self.native_dir, "**", "*.cc"), recursive=True)):
            rel = os.path.relpath(path, self.native_dir).split(os.sep)
            if rel[:2] == ["frontends", "jni"] and not self.jni:
                continue
            if rel[0] == "cuda" and (rel[-1] == "cuda_absent.cc") == bool(self.nvcc):
                continue
            out.append(path)
        if self.nvcc:
            out += sorted(glob.glob(os.path.join(self.native_dir, "cuda", "**", "*.cu"), recursive=True))
        if self.glibc_target:
            out.append(glibc.COMPAT_SOURCE)
        return out

    def object_path(self, src: str) -> str:
        """obj_dir mirrors native/; sources from elsewhere go to obj_dir/extra."""
        if src.startswith(self.native_dir + os.sep):
            return os.path.join(self.obj_dir, "native", os.path.relpath(src, self.native_dir) + ".o")
        return os.path.join(self.obj_dir, "extra", os.path.basename(src) + ".o")

    def compile_command(self, src: str, obj: str) -> tuple:
        """(command, signature) for one source file."""
        depfile = ["-MMD", "-MF", obj + ".d"]
        if src.endswith(".cu"):
            cmd = [self.nvcc] + nvcc_flags(self.defines, self.native_dir) + depfile + ["-c", src, "-o", obj]
            return cmd, [cmd, tool_identity(self.nvcc), tool_identity(self.cxx)]
        if src.endswith(".c"):
            cmd = [cc(), "-O2", "-fPIC", "-fvisibility=hidden", "-Wall"] + depfile + ["-c", src, "-o", obj]
            return cmd, [cmd, tool_identity(cc())]
        cmd = [self.cxx] + host_flags(self.defines, self.jni or (), self.native_dir) + depfile + ["-c", src, "-o", obj]
        return cmd, [cmd, tool_identity(self.cxx)]

    def compile(self) -> list:
        os.makedirs(self.obj_dir, exist_ok=True)
        jobs = []
        for src in self.sources():
            obj = self.object_path(src)
            cmd, sig = self.compile_command(src, obj)
            jobs.append((src, obj, cmd, sig))

        def run(job):
            src, obj, cmd, sig = job
            if incremental.is_current(obj, sig, [src], depfile=obj + ".d"):
                return obj
            log(f"compiling {os.path.relpath(src, os.path.dirname(self.native_dir))}")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            incremental.forget(obj)
            subprocess.check_call(cmd)
            incremental.record(obj, sig)
            return obj

        workers = int(os.environ.get("PYPHMM_BUILD_JOBS", os.cpu_count() or 1))
        # CUDA files take longest: start them first; keep the link order stable.
        order = sorted(jobs, key=lambda j: not j[0].endswith(".cu"))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            built = dict(zip((j[1] for j in order), pool.map(run, order)))
        return [built[j[1]] for j in jobs]

    def link_command(self, objs: list, out: str) -> tuple:
        """(command, inputs besides objs) of the link."""
        cmd = [self.cxx, "-shared", "-o", out] + objs
        # -z defs: an unresolved symbol fails here, not at the user's dlopen.
        cmd += ["-pthread", "-Wl,--exclude-libs,ALL", "-Wl,-z,defs", f"-Wl,--version-script={EXPORTS_MAP}"]
        inputs = [EXPORTS_MAP]
        if self.nvcc:
            # Static CUDA runtime: the library runs wherever a driver exists
            # and loads (then falls back to the CPU) where none does.
            runtime = cuda_static_runtime(self.nvcc)
            cmd += [runtime, "-lrt"]
            inputs.append(runtime)
        cmd += ["-ldl"]
        if self.glibc_target:
            stubs = self.glibc_library_dirs()[0]
            # libstdc++ is linked in (hidden), so no GLIBCXX version is needed
            # at run time; libgcc_s stays shared (its static part wants a newer glibc).
            cmd += ["-static-libstdc++", f"-L{stubs}"]
            inputs += glibc.stub_files(stubs)
        return cmd, inputs

    def glibc_library_dirs(self) -> list:
        """[-L directory of the old glibc's stubs] under PYPHMM_GLIBC_TARGET,
        else []: the cffi extension links against them too."""
        if not self.glibc_target:
            return []
        if self._glibc_stubs is None:
            self._glibc_stubs = glibc.prepare_stubs(
                os.path.join(self.obj_dir, "glibc"), self.machine, self.glibc_target
            )
        return [self._glibc_stubs]

    def link(self, objs: list, out: str) -> str:
        part = out + ".part"
        cmd, inputs = self.link_command(objs, part)
        sig = [cmd, tool_identity(self.cxx)]
        stamp = incremental.stamp_for(out, self.obj_dir)
        if incremental.is_current(out, sig, objs + inputs, stamp=stamp):
            log(f"{os.path.relpath(out, ROOT)} is up to date")
            return out
        log(
            f"linking {os.path.relpath(out, ROOT)}"
            + (f" for glibc >= {self.glibc_target}" if self.glibc_target else "")
        )
        incremental.forget(out, stamp)
        subprocess.check_call(cmd)
        os.replace(part, out)  # atomic: a process using the old file keeps it
        incremental.record(out, sig, stamp)
        return out

    def build(self, out_dir: str) -> str:
        log(
            f"CUDA: {self.nvcc or 'not found, CPU-only build'}; "
            f"JNI: {'yes' if self.jni else 'no jni.h found, GKL entry points omitted'}"
        )
        objs = self.compile()
        os.makedirs(out_dir, exist_ok=True)
        return self.link(objs, os.path.join(out_dir, LIBNAME))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m buildtools.native", description="Builds libpyphmm.so alone.")
    p.add_argument("--out", required=True, help="directory for libpyphmm.so")
    p.add_argument("--obj", default=DEFAULT_OBJ_DIR, help=f"object directory (default {DEFAULT_OBJ_DIR})")
    args = p.parse_args(argv)
    print(NativeBuild(args.obj).build(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
