"""``pyphmm gatk-jar``, ``pyphmm gatk-libdir DIR`` and ``pyphmm gatk
[--gatk-jar JAR] -- ARGS...`` (what they write: pyphmm.gatk)."""

from __future__ import annotations

import os
import subprocess
import sys

from .. import _native
from ..gatk import (
    GKL_LIBRARY_NAMES,
    GKL_OWN_LIBRARIES,
    existing_jar,
    find_gatk_jar,
    gatk_command,
    gkl_library_bytes,
)
from .output import OutputFile, make_directory, replace_with_link

# Mode of the libraries gatk-libdir writes (a file it replaces keeps its own).
LIBRARY_MODE = 0o755


def write_libdir(directory: str, copy: bool = False, gatk_jar: str | None = None, gkl_libs: str | None = None) -> tuple:
    """Fills `directory` for GATK's USE_LIBRARY_PATH=1 mode; returns
    (written paths, {missing GKL library: what GATK loses}).

    pyphmm's four GKL names are links to libpyphmm.so (not copies) so the JVM,
    which keys loaded libraries by canonical path, loads pyphmm once and every
    GKL native shares its state; with copy=True, libpyphmm.so itself is copied
    into the directory first (a relocatable directory) and the names link to
    that copy. GKL's own libraries (GKL_OWN_LIBRARIES) are copied from
    gatk_jar (com/intel/gkl/native/ inside it) or else from the directory
    gkl_libs; those found in neither are reported as missing. Every file is
    written as the CLI writes its outputs (pyphmm.cli.output).
    """
    if directory == "":
        raise ValueError("gatk-libdir: the directory must not be empty (give a directory name)")
    lib = _native.library_path()
    if not os.path.exists(lib):
        raise OSError(f"{lib} is missing")
    for path, what in ((gatk_jar, "GATK jar"), (gkl_libs, "GKL library directory")):
        if path and not os.path.exists(path):
            raise OSError(f"{what} not found: {path}")
    make_directory(directory, "gatk-libdir")
    target = lib
    if copy:
        _write_file(os.path.join(directory, "libpyphmm.so"), _read(lib), input_path=lib)
        target = "libpyphmm.so"  # relative link: the directory can move
    written = []
    for name in GKL_LIBRARY_NAMES:
        path = os.path.join(directory, name)
        replace_with_link(path, target)
        written.append(path)
    missing = {}
    for name, loss in GKL_OWN_LIBRARIES.items():
        data = gkl_library_bytes(name, gatk_jar, gkl_libs)
        if data is None:
            missing[name] = loss
            continue
        path = os.path.join(directory, name)
        _write_file(path, data)
        written.append(path)
    return written, missing


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write_file(path: str, data: bytes, input_path: str | None = None) -> None:
    with OutputFile(path, input_path, option="gatk-libdir", mode=LIBRARY_MODE) as out:
        out.write(data)
        out.commit()


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


def cmd_gatk_jar(args) -> int:
    path = existing_jar()
    if args.output is None:
        print(path)
        return 0
    # The jar is self-contained (classes + libpyphmm.so): a copy is all GATK
    # needs, on a host with or without Python.
    with OutputFile(args.output, input_path=path) as out:
        out.write(_read(path))
        out.commit()
    if not out.stdout:
        print(os.path.abspath(args.output))
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
    j.add_argument(
        "--output", metavar="FILE", help="copy the jar to FILE, or - for stdout (standalone: GATK needs nothing else)"
    )
    j.set_defaults(func=cmd_gatk_jar)

    d = sub.add_parser("gatk-libdir", help="write GKL-named libraries for USE_LIBRARY_PATH=1 GATK runs")
    d.add_argument("directory", help="directory to write libgkl_*.so into")
    d.add_argument("--copy", action="store_true", help="copy libpyphmm.so into the directory (relocatable)")
    d.add_argument(
        "--gatk-jar",
        default=None,
        help="GATK local jar to take GKL's own compression and PDHMM libraries from (default: $GATK_LOCAL_JAR)",
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
