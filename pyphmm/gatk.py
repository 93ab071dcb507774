"""GATK entry points: ``pyphmm gatk-jar``, ``pyphmm gatk-libdir DIR`` and
``pyphmm gatk [--gatk-jar JAR] -- ARGS...``.

Two ways to make unmodified GATK call pyphmm:
- the shim jar (pyphmm-gatk.jar) placed before GATK on the class path: it
  holds GKL's binding classes, backed by libpyphmm.so;
- a directory of libraries with GKL's file names, for GKL's own classes when
  GATK runs with USE_LIBRARY_PATH=1 and -Djava.library.path=DIR (GKL 0.9,
  in GATK 4.6, reads java.library.path only when the environment variable
  USE_LIBRARY_PATH is set, else it extracts its own libraries from its jar;
  Debian's GKL always loads from there). GKL's loader then takes *every*
  GKL library from that directory, so besides pyphmm under the PairHMM,
  PDHMM, Smith-Waterman and utils names it must hold GKL's own compression
  library (IntelDeflater / IntelInflater), taken from the user's GATK jar or
  a directory of GKL libraries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

from . import _native

JAR_NAME = "pyphmm-gatk.jar"
GKL_LIBRARY_NAMES = (
    "libgkl_pairhmm.so",
    "libgkl_pairhmm_omp.so",
    "libgkl_pdhmm.so",
    "libgkl_smithwaterman.so",
    "libgkl_utils.so",
)
# GKL's libraries pyphmm does not replace, with what GATK loses without them
# under USE_LIBRARY_PATH=1.
GKL_OWN_LIBRARIES = {
    "libgkl_compression.so": "Intel's deflater and inflater (GATK falls back to the JDK's, "
    "slower BAM/CRAM/VCF.gz compression)",
}
GKL_NATIVE_IN_JAR = "com/intel/gkl/native/"  # where GKL's jar (inside GATK's) keeps them
GATK_MAIN = "org.broadinstitute.hellbender.Main"


def jar_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), JAR_NAME)


def _existing_jar() -> str:
    path = jar_path()
    if not os.path.exists(path):
        raise OSError(f"{path} is missing: pyphmm was built without a JDK or gatk-native-bindings.jar")
    return path


def write_libdir(directory: str, copy: bool = False, gatk_jar: str | None = None, gkl_libs: str | None = None) -> tuple:
    """Fills `directory` for GATK's USE_LIBRARY_PATH=1 mode; returns
    (written paths, {missing GKL library: what GATK loses}).

    pyphmm's GKL names (GKL_LIBRARY_NAMES) are links to libpyphmm.so (not copies) so the JVM,
    which keys loaded libraries by canonical path, loads pyphmm once and every
    GKL native shares its state; with copy=True, libpyphmm.so itself is copied
    into the directory first (a relocatable directory) and the names link to
    that copy. GKL's own libraries (GKL_OWN_LIBRARIES) are copied from
    gatk_jar (com/intel/gkl/native/ inside it) or else from the directory
    gkl_libs; those found in neither are reported as missing.
    """
    lib = _native.library_path()
    if not os.path.exists(lib):
        raise OSError(f"{lib} is missing")
    for path, what in ((gatk_jar, "GATK jar"), (gkl_libs, "GKL library directory")):
        if path and not os.path.exists(path):
            raise OSError(f"{what} not found: {path}")
    os.makedirs(directory, exist_ok=True)
    target = lib
    if copy:
        target = os.path.join(directory, "libpyphmm.so")
        tmp = target + ".part"
        shutil.copy2(lib, tmp)
        os.replace(tmp, target)
        target = "libpyphmm.so"  # relative link: the directory can move
    written = []
    for name in GKL_LIBRARY_NAMES:
        path = os.path.join(directory, name)
        tmp = path + ".part"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, path)
        written.append(path)
    missing = {}
    for name, loss in GKL_OWN_LIBRARIES.items():
        data = _gkl_library_bytes(name, gatk_jar, gkl_libs)
        if data is None:
            missing[name] = loss
            continue
        path = os.path.join(directory, name)
        _write_file(path, data)
        written.append(path)
    return written, missing


def _gkl_library_bytes(name: str, gatk_jar: str | None, gkl_libs: str | None):
    """GKL's library `name` from the GATK jar, else from gkl_libs; None if neither has it."""
    if gatk_jar:
        try:
            with zipfile.ZipFile(gatk_jar) as z:
                return z.read(GKL_NATIVE_IN_JAR + name)
        except KeyError:
            pass
        except zipfile.BadZipFile as e:
            raise OSError(f"{gatk_jar} is not a jar: {e}") from None
    if gkl_libs:
        path = os.path.join(gkl_libs, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
    return None


def _write_file(path: str, data: bytes) -> None:
    """Replaces path atomically (a link left by an earlier run included)."""
    tmp = path + ".part"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def missing_note(missing: dict, gatk_jar: str | None, gkl_libs: str | None) -> str:
    """The stderr lines that say which GKL features a directory lacks."""
    sources = " or ".join(s for s in (gatk_jar, gkl_libs) if s)
    where = (
        f"is not in {sources}"
        if sources
        else "not written (give the GATK jar: --gatk-jar JAR or $GATK_LOCAL_JAR, or a directory of GKL "
        "libraries: --gkl-libs DIR)"
    )
    lines = [
        f"pyphmm: warning: {name} {where}; under USE_LIBRARY_PATH=1 GATK will lack {loss}"
        for name, loss in missing.items()
    ]
    return "\n".join(lines)


def find_gatk_jar(explicit: str | None) -> str:
    path = explicit or os.environ.get("GATK_LOCAL_JAR")
    if not path:
        raise OSError("no GATK jar: pass --gatk-jar PATH or set GATK_LOCAL_JAR")
    if not os.path.isfile(path):
        raise OSError(f"GATK jar not found: {path}")
    return path


def gatk_command(gatk_jar: str, args: list, java: str | None = None) -> list:
    """java [JAVA_OPTS] -cp SHIM:GATK Main ARGS: the shim precedes GATK, so its
    GKL class names win; everything else in GATK (and GKL) is untouched."""
    java = java or os.environ.get("JAVA") or shutil.which("java") or "java"
    opts = os.environ.get("JAVA_OPTS", "").split()
    return [java] + opts + ["-cp", os.pathsep.join([_existing_jar(), gatk_jar]), GATK_MAIN] + list(args)


def cmd_gatk_jar(args) -> int:
    path = _existing_jar()
    if args.output:
        # The jar is self-contained (classes + libpyphmm.so): a copy is all
        # GATK needs, on a host with or without Python.
        tmp = args.output + ".part"
        shutil.copyfile(path, tmp)
        os.replace(tmp, args.output)
        path = os.path.abspath(args.output)
    print(path)
    return 0


def cmd_gatk_libdir(args) -> int:
    gatk_jar = args.gatk_jar or os.environ.get("GATK_LOCAL_JAR") or None
    written, missing = write_libdir(args.directory, copy=args.copy, gatk_jar=gatk_jar, gkl_libs=args.gkl_libs)
    for path in written:
        print(path)
    if missing:
        print(missing_note(missing, gatk_jar, args.gkl_libs), file=sys.stderr)
    print(
        f"pyphmm: run GATK with USE_LIBRARY_PATH=1 and -Djava.library.path={os.path.abspath(args.directory)}",
        file=sys.stderr,
    )
    return 0


def cmd_gatk(args) -> int:
    rest = list(args.gatk_args)
    if rest and rest[0] == "--":
        rest = rest[1:]
    cmd = gatk_command(find_gatk_jar(args.gatk_jar), rest)
    return subprocess.call(cmd)


def add_subcommands(sub) -> None:
    """Registers gatk-jar, gatk-libdir and gatk on the CLI's subparsers."""
    import argparse

    j = sub.add_parser("gatk-jar", help="print the path of the GATK shim jar (or copy it: --output FILE)")
    j.add_argument("--output", metavar="FILE", help="copy the jar to FILE (standalone: GATK needs nothing else)")
    j.set_defaults(func=cmd_gatk_jar)

    d = sub.add_parser("gatk-libdir", help="write GKL-named libraries for USE_LIBRARY_PATH=1 GATK runs")
    d.add_argument("directory", help="directory to write libgkl_*.so into")
    d.add_argument("--copy", action="store_true", help="copy libpyphmm.so into the directory (relocatable)")
    d.add_argument(
        "--gatk-jar",
        default=None,
        help="GATK local jar to take GKL's own compression library from (default: $GATK_LOCAL_JAR)",
    )
    d.add_argument(
        "--gkl-libs",
        default=None,
        metavar="DIR",
        help="directory of GKL libraries to take them from instead (e.g. /usr/lib/jni)",
    )
    d.set_defaults(func=cmd_gatk_libdir)

    g = sub.add_parser("gatk", help="run GATK with the pyphmm shim first on the class path")
    g.add_argument("--gatk-jar", default=None, help="GATK local jar (default: $GATK_LOCAL_JAR)")
    g.add_argument("gatk_args", nargs=argparse.REMAINDER, help="arguments for GATK, after --")
    g.set_defaults(func=cmd_gatk)
