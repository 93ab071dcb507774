"""Build for pyphmm: the native library, then the cffi extension.

libpyphmm.so holds everything native: the C ABI (native/include/pyphmm.h),
the CPU kernels, the CUDA kernels when nvcc is available, and GKL's JNI entry
points when a JDK's jni.h is. The cffi extension pyphmm._pyphmm links to it
and finds it beside itself at run time; the Java shim loads the same file.

Environment knobs:
  PYPHMM_NO_CUDA=1            build CPU-only even if nvcc is present
  PYPHMM_CUDA_ARCHS="80;90"   compute capabilities to compile (default
                              80;86;89;90, plus PTX for the newest one)
  PYPHMM_BUILD_JOBS=N         parallel compile jobs (default: CPU count)
  PYPHMM_NVCC_FLAGS="..."     extra nvcc flags (experiments; a change needs a clean build)
  PYPHMM_JNI_INCLUDE=DIR      jni.h + linux/jni_md.h for hosts without a JDK
                              (default: a JDK's include/, else .carry/jni_include)
  PYPHMM_SHIM_CLASSES=DIR     prebuilt shim classes for the jar where javac is
                              missing (default .carry/shim_classes)
  PYPHMM_AARCH64_LIB=FILE     AArch64 libpyphmm.so to embed in the jar beside this
                              build's (default build/aarch64/libpyphmm.so when present,
                              made by scripts/build_aarch64.sh)
  NVCC=/path/to/nvcc, JAVA_HOME=/path/to/jdk

scripts/prepare_gpu_carry.sh fills .carry/ on a machine with a JDK.
"""
import glob
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(ROOT, "native")
LIBNAME = "libpyphmm.so"
DEFAULT_CUDA_ARCHS = "80;86;89;90"
# Prebuilt inputs for hosts without a JDK (scripts/prepare_gpu_carry.sh); ignored by git.
CARRY = os.path.join(ROOT, ".carry")
SHIM_CLASSES = ("com/intel/gkl/pairhmm/IntelPairHmm.class", "com/intel/gkl/pairhmm/IntelPairHmmOMP.class",
                "com/intel/gkl/smithwaterman/IntelSmithWaterman.class")

sys.path.insert(0, os.path.join(ROOT, "pyphmm"))
from _version import __version__  # noqa: E402

sys.path.pop(0)


def log(msg):
    print(f"pyphmm build: {msg}", flush=True)


def find_nvcc():
    if os.environ.get("PYPHMM_NO_CUDA") == "1":
        return None
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if not nvcc:
        for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
                nvcc = os.path.join(home, "bin", "nvcc")
    return nvcc


def cuda_lib_dir(nvcc):
    """Directory holding libcudart_static.a for this nvcc.

    nvcc may be a wrapper script (as /usr/local/bin/nvcc is on some images),
    so besides its real path look where CUDA_HOME and the usual prefixes say.
    """
    homes = [os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), os.environ.get("CUDA_HOME"),
             os.environ.get("CUDA_PATH"), "/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"))[::-1]
    for home in filter(None, homes):
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            d = os.path.join(home, sub)
            if os.path.exists(os.path.join(d, "libcudart_static.a")):
                return d
    raise RuntimeError(f"libcudart_static.a not found for {nvcc} (set CUDA_HOME)")


def jni_include_dirs(inc):
    """[inc, inc/linux] when inc holds jni.h and linux/jni_md.h, else None."""
    if inc and os.path.exists(os.path.join(inc, "jni.h")) and \
            os.path.exists(os.path.join(inc, "linux", "jni_md.h")):
        return [inc, os.path.join(inc, "linux")]
    return None


def find_jni_include():
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


def newer_than(obj, deps):
    if not os.path.exists(obj):
        return False
    t = os.path.getmtime(obj)
    return all(os.path.getmtime(d) <= t for d in deps)


class NativeBuild:
    """Compiles native/ into libpyphmm.so (incrementally, in parallel)."""

    def __init__(self, temp_dir):
        self.temp = os.path.join(temp_dir, "native")
        self.nvcc = find_nvcc()
        self.jni = find_jni_include()
        self.headers = glob.glob(os.path.join(NATIVE, "**", "*.h"), recursive=True)
        self.headers += glob.glob(os.path.join(NATIVE, "**", "*.cuh"), recursive=True)
        self.defines = [f'-DPYPHMM_VERSION="{__version__}"']
        if self.jni:
            self.defines.append("-DPYPHMM_WITH_JNI")

    def sources(self):
        cc = glob.glob(os.path.join(NATIVE, "*.cc"))
        for sub in ("common", "cpu", "dispatch") + (("jni",) if self.jni else ()):
            cc += glob.glob(os.path.join(NATIVE, sub, "*.cc"))
        cuda_dir = os.path.join(NATIVE, "cuda")
        absent = os.path.join(cuda_dir, "cuda_absent.cc")
        cu = glob.glob(os.path.join(cuda_dir, "*.cu")) if self.nvcc else []
        if cu:  # the CUDA backend's host-only files (planning) go through the host compiler
            cc += [f for f in glob.glob(os.path.join(cuda_dir, "*.cc")) if f != absent]
        else:
            cc.append(absent)
        return sorted(cc), sorted(cu)

    def cxx_command(self, src, obj):
        cxx = os.environ.get("CXX", "g++")
        cmd = [cxx, "-std=c++17", "-O3", "-fPIC", "-pthread", "-fvisibility=hidden",
               # GKL's float arithmetic has no fused multiply-adds; neither do we.
               "-ffp-contract=off", "-Wall", "-Wextra", "-Wno-psabi",
               f"-I{os.path.join(NATIVE, 'include')}", f"-I{NATIVE}"] + self.defines
        for inc in self.jni or []:
            cmd.append(f"-I{inc}")
        return cmd + ["-c", src, "-o", obj]

    def nvcc_command(self, src, obj):
        archs = [a.strip() for a in os.environ.get("PYPHMM_CUDA_ARCHS", DEFAULT_CUDA_ARCHS).split(";")
                 if a.strip()]
        gencode = []
        for a in archs:
            gencode += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
        newest = max(archs, key=int)
        gencode += ["-gencode", f"arch=compute_{newest},code=compute_{newest}"]
        extra = os.environ.get("PYPHMM_NVCC_FLAGS", "").split()
        return [self.nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC,-fvisibility=hidden,-pthread",
                f"-I{os.path.join(NATIVE, 'include')}", f"-I{NATIVE}"] + self.defines + gencode + extra + \
               ["-c", src, "-o", obj]

    def compile(self):
        cc, cu = self.sources()
        jobs = []
        for src in cc + cu:
            rel = os.path.relpath(src, NATIVE).replace(os.sep, "_")
            obj = os.path.join(self.temp, rel + ".o")
            cmd = self.nvcc_command(src, obj) if src.endswith(".cu") else self.cxx_command(src, obj)
            jobs.append((src, obj, cmd))
        os.makedirs(self.temp, exist_ok=True)

        def run(job):
            src, obj, cmd = job
            if newer_than(obj, [src] + self.headers + [__file__]):
                return obj
            log(f"compiling {os.path.relpath(src, ROOT)}")
            subprocess.check_call(cmd)
            return obj

        workers = int(os.environ.get("PYPHMM_BUILD_JOBS", os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            # CUDA files take longest: start them first.
            return list(pool.map(run, sorted(jobs, key=lambda j: not j[0].endswith(".cu"))))

    def link(self, objs, out):
        cxx = os.environ.get("CXX", "g++")
        cmd = [cxx, "-shared", "-o", out] + objs + ["-pthread", "-Wl,--exclude-libs,ALL"]
        if any(o.endswith(".cu.o") for o in objs):
            # Static CUDA runtime: the library runs wherever a driver exists
            # and loads (then falls back to the CPU) where none does.
            cmd += [f"-L{cuda_lib_dir(self.nvcc)}", "-lcudart_static", "-ldl", "-lrt"]
        subprocess.check_call(cmd)

    def build(self, out_dir):
        log(f"CUDA: {self.nvcc or 'not found, CPU-only build'}; "
            f"JNI: {'yes' if self.jni else 'no jni.h found, GKL entry points omitted'}")
        objs = self.compile()
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, LIBNAME)
        self.link(objs, out)
        return out


def aarch64_lib():
    """The cross-built AArch64 library the jar carries beside this build's, or None."""
    lib = os.environ.get("PYPHMM_AARCH64_LIB") or os.path.join(ROOT, "build", "aarch64", LIBNAME)
    if not os.path.exists(lib):
        return None
    sources = glob.glob(os.path.join(NATIVE, "**", "*.*"), recursive=True)
    if any(os.path.getmtime(s) > os.path.getmtime(lib) for s in sources):
        log(f"warning: {lib} is older than native/ (rerun scripts/build_aarch64.sh)")
    return lib


def assemble_jar(classes, lib, out, arm_lib=None):
    """The jar build.sh makes, from prebuilt shim classes plus this build's
    libpyphmm.so, written with zipfile (a jar is a zip with a manifest)."""
    import zipfile
    part = out + ".part"
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: pyphmm setup.py\r\n\r\n")
        for name in SHIM_CLASSES:
            z.write(os.path.join(classes, name), name)
        z.write(lib, jar_library_entry(lib))
        if arm_lib and jar_library_entry(lib) != "pyphmm/native/linux-aarch64/libpyphmm.so":
            z.write(arm_lib, "pyphmm/native/linux-aarch64/libpyphmm.so")
    os.replace(part, out)


def jar_library_entry(lib):
    """Where the shim's loader looks for this library: by its ELF e_machine
    (little-endian u16 at offset 18), pyphmm/native/linux-<arch>/."""
    with open(lib, "rb") as f:
        machine = int.from_bytes(f.read(20)[18:20], "little")
    arch = {62: "x86_64", 183: "aarch64"}.get(machine)
    if arch is None:
        raise RuntimeError(f"{lib}: ELF machine {machine} is neither x86-64 nor AArch64")
    return f"pyphmm/native/linux-{arch}/libpyphmm.so"


def build_gatk_jar(lib, pkg_dir, with_jni):
    """pyphmm-gatk.jar: GKL-named shim classes + this build's libpyphmm.so.
    With javac (and GATK's native-bindings jar) it compiles the classes;
    without, it uses prebuilt ones ($PYPHMM_SHIM_CLASSES or
    .carry/shim_classes); else it skips with a note, never fails the build."""
    out = os.path.join(pkg_dir, "pyphmm-gatk.jar")
    if not with_jni:
        log("GATK shim jar: skipped (libpyphmm.so was built without the JNI layer: no jni.h)")
        return None
    bindings = os.environ.get("GATK_NATIVE_BINDINGS_JAR", "/usr/share/java/gatk-native-bindings.jar")
    arm_lib = aarch64_lib()
    if arm_lib:
        log(f"GATK shim jar: with the AArch64 library {arm_lib}")
    if shutil.which("javac") and shutil.which("jar") and os.path.exists(bindings):
        env = dict(os.environ, PYPHMM_AARCH64_LIB=arm_lib or "")
        subprocess.check_call(["bash", os.path.join(ROOT, "java_shim", "build.sh"), lib, out, bindings], env=env)
        return out
    classes = os.environ.get("PYPHMM_SHIM_CLASSES") or os.path.join(CARRY, "shim_classes")
    if all(os.path.exists(os.path.join(classes, c)) for c in SHIM_CLASSES):
        assemble_jar(classes, lib, out, arm_lib)
        log(f"GATK shim jar: wrote {out} (prebuilt classes from {classes})")
        return out
    log("GATK shim jar: skipped (needs javac, jar and gatk-native-bindings.jar, or prebuilt classes "
        "in $PYPHMM_SHIM_CLASSES / .carry/shim_classes: see scripts/prepare_gpu_carry.sh)")
    return None


class BuildExt(build_ext):
    """Builds libpyphmm.so before the cffi extension that links against it."""

    def run(self):
        pkg_dir = os.path.join(ROOT, "pyphmm") if self.inplace else os.path.join(self.build_lib, "pyphmm")
        native = NativeBuild(self.build_temp)
        lib = native.build(pkg_dir)
        build_gatk_jar(lib, pkg_dir, bool(native.jni))
        for ext in self.extensions:
            ext.library_dirs.append(os.path.dirname(lib))
        super().run()


setup(
    name="pyphmm",
    version=__version__,
    description="GPU and CPU PairHMM and Smith-Waterman for GATK, with GKL's semantics",
    long_description=open(os.path.join(ROOT, "README.md")).read() if os.path.exists(
        os.path.join(ROOT, "README.md")) else "",
    long_description_content_type="text/markdown",
    packages=["pyphmm", "pyphmm.cli"],
    package_data={"pyphmm": ["data/*.in", LIBNAME, "pyphmm-gatk.jar"]},
    python_requires=">=3.9",
    install_requires=["cffi>=1.15", "numpy>=1.21"],
    setup_requires=["cffi>=1.15"],
    cffi_modules=["pyphmm/_build.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt},
    entry_points={"console_scripts": ["pyphmm=pyphmm.cli:main"]},
)
