"""pyphmm-gatk.jar: GKL's binding classes backed by libpyphmm.so, and its loader.

Layout (the shim's loader reads it): the classes at their GKL names, and one
library per platform at pyphmm/native/<platform>/libpyphmm.so, platform being
linux-x86_64 or linux-aarch64. The jar needs nothing else at GATK run time:
no Python, no pyphmm installation.

Classes come from javac (java_shim/compile.sh against GATK's native-bindings
jar, recompiled only when a Java source changes) or, on hosts without a JDK,
from prebuilt classes ($PYPHMM_SHIM_CLASSES or .carry/shim_classes, made by
scripts/prepare_gpu_carry.sh). A cross-built AArch64 library joins the x86-64
one: $PYPHMM_AARCH64_LIB, else build/aarch64/libpyphmm.so when present.

  python3 -m buildtools.jar OUT.jar LIBRARY...   (one libpyphmm.so per platform)
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import struct
import subprocess
import sys
import zipfile

from . import incremental
from .native import CARRY, DEFAULT_OBJ_DIR, ROOT, log, tool_identity, version

JAR_NAME = "pyphmm-gatk.jar"
SHIM_SOURCES = os.path.join(ROOT, "java_shim")
SHIM_CLASSES = (
    "com/intel/gkl/pairhmm/IntelPairHmm.class",
    "com/intel/gkl/pairhmm/IntelPairHmmOMP.class",
    "com/intel/gkl/smithwaterman/IntelSmithWaterman.class",
    "com/intel/gkl/pdhmm/IntelPDHMM.class",
    "pyphmm/shim/LibraryLoader.class",
)
PLATFORMS = {"x86_64": "linux-x86_64", "aarch64": "linux-aarch64"}
ELF_MACHINES = {62: "x86_64", 183: "aarch64"}  # e_machine: EM_X86_64, EM_AARCH64
# Zip timestamps are fixed so that equal inputs give an identical jar.
ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def library_entry(platform: str) -> str:
    return f"pyphmm/native/{platform}/libpyphmm.so"


def platform_of(library: str) -> str:
    """The jar platform a built library is for, from its ELF header."""
    with open(library, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise RuntimeError(f"{library} is not an ELF file")
    machine = ELF_MACHINES.get(struct.unpack_from("<H", head, 18)[0])
    if machine is None:
        raise RuntimeError(f"{library}: no shim jar layout for its CPU (known: {', '.join(PLATFORMS)})")
    return PLATFORMS[machine]


def aarch64_library() -> str | None:
    """The cross-built AArch64 library to carry beside this build's:
    $PYPHMM_AARCH64_LIB, else build/aarch64/libpyphmm.so when present
    (scripts/build_aarch64.sh's output); a stale one is reported."""
    explicit = os.environ.get("PYPHMM_AARCH64_LIB")
    lib = explicit or os.path.join(ROOT, "build", "aarch64", "libpyphmm.so")
    if not os.path.exists(lib):
        if explicit:
            raise RuntimeError(f"PYPHMM_AARCH64_LIB={explicit}: no such file")
        return None
    sources = glob.glob(os.path.join(ROOT, "native", "**", "*.*"), recursive=True)
    if any(os.path.getmtime(src) > os.path.getmtime(lib) for src in sources):
        log(f"warning: {lib} is older than native/ (rebuild it: scripts/build_aarch64.sh)")
    return lib


def compile_classes(work_dir: str, bindings: str) -> str:
    """Compiles the shim's classes into work_dir/shim-classes when a Java
    source, compile.sh, the bindings jar or javac changed; returns the dir.
    The pdhmm API declarations (java_shim/api/) go to work_dir/pdhmm-api-classes,
    on the compile class path only: never into the jar."""
    classes = os.path.join(work_dir, "shim-classes")
    sources = sorted(
        glob.glob(os.path.join(SHIM_SOURCES, "src", "**", "*.java"), recursive=True)
        + glob.glob(os.path.join(SHIM_SOURCES, "api", "**", "*.java"), recursive=True)
    )
    compile_sh = os.path.join(SHIM_SOURCES, "compile.sh")
    sig = [bindings, tool_identity("javac"), sources]
    first = os.path.join(classes, SHIM_CLASSES[0])
    stamp = os.path.join(work_dir, "shim-classes.sig")
    if incremental.is_current(first, sig, sources + [compile_sh, bindings], stamp=stamp):
        return classes
    log("compiling the GATK shim classes")
    incremental.forget(first, stamp)
    part = classes + ".part"
    shutil.rmtree(part, ignore_errors=True)
    subprocess.check_call(["bash", compile_sh, part, bindings, os.path.join(work_dir, "pdhmm-api-classes")])
    shutil.rmtree(classes, ignore_errors=True)
    os.replace(part, classes)
    incremental.record(first, sig, stamp)
    return classes


def find_classes(work_dir: str) -> str | None:
    """The shim's classes: compiled with javac where a JDK and GATK's
    native-bindings jar are, else prebuilt ones, else None."""
    bindings = os.environ.get("GATK_NATIVE_BINDINGS_JAR", "/usr/share/java/gatk-native-bindings.jar")
    if shutil.which("javac") and os.path.exists(bindings):
        return compile_classes(work_dir, bindings)
    prebuilt = os.environ.get("PYPHMM_SHIM_CLASSES") or os.path.join(CARRY, "shim_classes")
    if all(os.path.exists(os.path.join(prebuilt, c)) for c in SHIM_CLASSES):
        log(f"GATK shim jar: prebuilt classes from {prebuilt}")
        return prebuilt
    return None


def write_jar(out: str, classes: str, libraries: dict, stamp_dir: str) -> str:
    """Writes the jar (atomically) unless it is current: classes + {platform: library}."""
    entries = [(c, os.path.join(classes, c)) for c in SHIM_CLASSES]
    entries += [(library_entry(p), path) for p, path in sorted(libraries.items())]
    manifest = (
        f"Manifest-Version: 1.0\r\nCreated-By: pyphmm build\r\nImplementation-Title: pyphmm GATK shim\r\n"
        f"Implementation-Version: {version()}\r\n\r\n"
    )
    sig = [manifest, [[name, os.path.abspath(path)] for name, path in entries]]
    stamp = incremental.stamp_for(out, stamp_dir)
    if incremental.is_current(out, sig, [path for _, path in entries], stamp=stamp):
        return out
    incremental.forget(out, stamp)
    part = out + ".part"
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in [("META-INF/", None), ("META-INF/MANIFEST.MF", manifest.encode())] + entries:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = (0o40755 if name.endswith("/") else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            if data is None:
                z.writestr(info, b"")
            elif isinstance(data, bytes):
                z.writestr(info, data)
            else:
                with open(data, "rb") as f:
                    z.writestr(info, f.read())
    os.replace(part, out)
    incremental.record(out, sig, stamp)
    log(f"GATK shim jar: wrote {os.path.relpath(out, ROOT)} ({', '.join(sorted(libraries))})")
    return out


def build_gatk_jar(lib: str, out_dir: str, work_dir: str, with_jni: bool) -> str | None:
    """pyphmm-gatk.jar in out_dir with this build's library (+ other
    platforms'); skipped with a note, never failing the build, when the
    library has no JNI layer or no shim classes can be had."""
    if not with_jni:
        log("GATK shim jar: skipped (libpyphmm.so was built without the JNI layer: no jni.h)")
        return None
    classes = find_classes(work_dir)
    if classes is None:
        log(
            "GATK shim jar: skipped (needs javac and gatk-native-bindings.jar, or prebuilt classes "
            "in $PYPHMM_SHIM_CLASSES / .carry/shim_classes: see scripts/prepare_gpu_carry.sh)"
        )
        return None
    libraries = {}
    arm = aarch64_library()
    if arm:
        libraries[platform_of(arm)] = arm
    libraries[platform_of(lib)] = lib  # this build's own wins on an AArch64 host
    return write_jar(os.path.join(out_dir, JAR_NAME), classes, libraries, work_dir)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python3 -m buildtools.jar", description="Writes the GATK shim jar around built libpyphmm.so files."
    )
    p.add_argument("output", help="the jar to write")
    p.add_argument("libraries", nargs="+", help="libpyphmm.so builds, at most one per platform (read from the file)")
    args = p.parse_args(argv)
    libraries = {}
    for lib in args.libraries:
        platform = platform_of(lib)
        if platform in libraries:
            p.error(f"two libraries for {platform}: {libraries[platform]} and {lib}")
        libraries[platform] = lib
    arm = aarch64_library()  # ($PYPHMM_AARCH64_LIB or the cross build's, as setup.py's jar)
    if arm and platform_of(arm) not in libraries:
        libraries[platform_of(arm)] = arm
    classes = find_classes(DEFAULT_OBJ_DIR)
    if classes is None:
        p.error("no shim classes: needs javac and gatk-native-bindings.jar, or $PYPHMM_SHIM_CLASSES")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    write_jar(args.output, classes, libraries, DEFAULT_OBJ_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(main())
