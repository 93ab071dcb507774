"""GATK entry points: ``pyphmm gatk-jar``, ``pyphmm gatk-libdir DIR`` and
``pyphmm gatk [--gatk-jar JAR] -- ARGS...``.

Two ways to make unmodified GATK call pyphmm:
- the shim jar (pyphmm-gatk.jar) placed before GATK on the class path: it
  holds GKL's three binding classes, backed by libpyphmm.so;
- a directory of libraries with GKL's file names (all libpyphmm.so), for
  GKL's own classes when GATK runs with USE_LIBRARY_PATH=1 and
  -Djava.library.path=DIR (Debian's GKL always loads from there).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from . import _native

JAR_NAME = "pyphmm-gatk.jar"
GKL_LIBRARY_NAMES = ("libgkl_pairhmm.so", "libgkl_pairhmm_omp.so", "libgkl_smithwaterman.so", "libgkl_utils.so")
GATK_MAIN = "org.broadinstitute.hellbender.Main"


def jar_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), JAR_NAME)


def _existing_jar() -> str:
    path = jar_path()
    if not os.path.exists(path):
        raise OSError(f"{path} is missing: pyphmm was built without a JDK or gatk-native-bindings.jar")
    return path


def write_libdir(directory: str, copy: bool = False) -> list:
    """Creates GKL-named links to libpyphmm.so in `directory`; returns them.

    Links (not copies) so the JVM, which keys loaded libraries by canonical
    path, loads pyphmm once and every GKL native shares its state. With
    copy=True, libpyphmm.so itself is copied into the directory first (a
    self-contained, relocatable directory) and the names link to that copy.
    """
    lib = _native.library_path()
    if not os.path.exists(lib):
        raise OSError(f"{lib} is missing")
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
    return written


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
    for path in write_libdir(args.directory, copy=args.copy):
        print(path)
    print(f"pyphmm: run GATK with USE_LIBRARY_PATH=1 and -Djava.library.path={os.path.abspath(args.directory)}",
          file=sys.stderr)
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
    d.set_defaults(func=cmd_gatk_libdir)

    g = sub.add_parser("gatk", help="run GATK with the pyphmm shim first on the class path")
    g.add_argument("--gatk-jar", default=None, help="GATK local jar (default: $GATK_LOCAL_JAR)")
    g.add_argument("gatk_args", nargs=argparse.REMAINDER, help="arguments for GATK, after --")
    g.set_defaults(func=cmd_gatk)
