"""Old-enough glibc: linking against an older glibc's symbol set, and the
check of which glibc a built file needs.

A shared library asks for each glibc symbol at the version that was the
default in the libc it was linked against: linked here (glibc 2.36), pthread_*,
sem_* and dl* come out at GLIBC_2.34 and the library refuses to load on RHEL 8
(2.28). Linking instead against stub libraries that export exactly glibc
2.28's symbols and versions binds every reference, ours and those inside the
static archives (libstdc++.a, libcudart_static.a) alike, to versions 2.28
has. zig generates such stubs for any glibc version (the `ziglang` package on
PyPI); only the stubs are used, the compilers stay GCC and nvcc. The few
symbols newer headers or libstdc++.a still reference get hidden local
definitions (glibc_compat.c), and libstdc++ is linked statically.

  python3 -m buildtools.glibc check [--max 2.28] FILE...   (.so, .whl, .jar)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

COMPAT_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "glibc_compat.c")
# -l name -> the stub zig generates for it
STUB_LIBRARIES = {
    "c": "libc.so.6",
    "m": "libm.so.6",
    "pthread": "libpthread.so.0",
    "dl": "libdl.so.2",
    "rt": "librt.so.1",
}
DYNAMIC_LINKER_STUB = "libld.so.2"  # zig's name for the ld-linux stub (__tls_get_addr)
NONSHARED = "libc_nonshared.a"  # atexit, stat wrappers, ... of that glibc version


def zig_command() -> list:
    """How to run zig: $PYPHMM_ZIG, else the ziglang package of this Python,
    else zig on PATH."""
    explicit = os.environ.get("PYPHMM_ZIG")
    if explicit:
        return shlex.split(explicit)
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang"]
    if shutil.which("zig"):
        return [shutil.which("zig")]
    raise RuntimeError(
        "PYPHMM_GLIBC_TARGET needs zig for the old glibc's stub libraries: "
        "pip install ziglang, or set PYPHMM_ZIG to a zig command"
    )


def check_target(target: str) -> str:
    if not re.fullmatch(r"2\.\d+", target or ""):
        raise RuntimeError(f"PYPHMM_GLIBC_TARGET must be a glibc version like 2.28, not {target!r}")
    return target


def stub_files(stub_dir: str) -> list:
    return [os.path.join(stub_dir, f) for f in list(STUB_LIBRARIES.values()) + [DYNAMIC_LINKER_STUB, NONSHARED]]


def prepare_stubs(work_dir: str, machine: str, target: str) -> str:
    """A directory to pass as -L: lib{c,m,pthread,dl,rt}.so exporting glibc
    `target`'s symbols for `machine`, made once (zig writes them while it
    links an empty library for that target; we keep copies)."""
    check_target(target)
    zig = zig_command()
    stub_dir = os.path.join(work_dir, f"{machine}-linux-gnu.{target}")
    marker = os.path.join(stub_dir, "stubs.json")
    zig_version = subprocess.run(zig + ["version"], capture_output=True, text=True, check=True).stdout.strip()
    signature = {"zig": zig_version, "machine": machine, "glibc": target}
    try:
        with open(marker) as f:
            if json.load(f) == signature and all(os.path.exists(p) for p in stub_files(stub_dir)):
                return stub_dir
    except (OSError, ValueError):
        pass
    found = _zig_stub_paths(zig, machine, target)
    shutil.rmtree(stub_dir, ignore_errors=True)
    os.makedirs(stub_dir)
    for name, path in found.items():
        shutil.copyfile(path, os.path.join(stub_dir, name))
    # -lc: the stub libc, that glibc's nonshared part and the dynamic linker
    # (as the system's libc.so linker script does); the others are plain names.
    with open(os.path.join(stub_dir, "libc.so"), "w") as f:
        f.write(
            f"GROUP ( {stub_dir}/libc.so.6 {stub_dir}/{NONSHARED} AS_NEEDED ( {stub_dir}/{DYNAMIC_LINKER_STUB} ) )\n"
        )
    for lib, soname in STUB_LIBRARIES.items():
        if lib != "c":
            os.symlink(soname, os.path.join(stub_dir, f"lib{lib}.so"))
    with open(marker, "w") as f:
        json.dump(signature, f)
    return stub_dir


def _zig_stub_paths(zig: list, machine: str, target: str) -> dict:
    """Links an empty library with zig for the target and reads the stubs'
    paths from its verbose link line."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "empty.c")
        with open(src, "w") as f:
            f.write("int pyphmm_glibc_probe;\n")
        cmd = (
            zig
            + ["cc", "-target", f"{machine}-linux-gnu.{target}", "-shared", "-o", os.path.join(tmp, "probe.so"), src]
            + [f"-l{lib}" for lib in STUB_LIBRARIES]
            + ["-v"]
        )
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"zig could not link for glibc {target}: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    wanted = list(STUB_LIBRARIES.values()) + [DYNAMIC_LINKER_STUB, NONSHARED]
    found = {}
    for token in proc.stderr.split():
        name = os.path.basename(token)
        if name in wanted and os.path.isfile(token):
            found[name] = token
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise RuntimeError(
            f"zig's link line names no {', '.join(missing)} (zig version not supported?):\n{proc.stderr[-2000:]}"
        )
    return found


# ---- checking built files -----------------------------------------------------


def version_tuple(v: str) -> tuple:
    return tuple(int(x) for x in v.split("."))


def versioned_imports(path: str) -> list:
    """[(version node, symbol)] of the undefined symbols in an ELF file,
    from `objdump -T` (e.g. ('GLIBC_2.34', 'pthread_create'))."""
    out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        m = re.search(r"\*UND\*\s+\S+\s+\(?([A-Z]+_[0-9][0-9.]*)\)?\s+(\S+)\s*$", line)
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def problems(path: str, max_glibc: str) -> list:
    """What keeps an ELF file from loading on glibc `max_glibc` without a
    newer libstdc++: symbols at newer GLIBC versions, and any import from the
    system libstdc++ (GLIBCXX/CXXABI), whose version differs between hosts."""
    limit = version_tuple(max_glibc)
    bad = []
    for node, sym in versioned_imports(path):
        kind, _, ver = node.partition("_")
        if kind == "GLIBC" and version_tuple(ver) > limit:
            bad.append(f"{sym}@{node}")
        elif kind in ("GLIBCXX", "CXXABI"):
            bad.append(f"{sym}@{node} (system libstdc++)")
    return bad


def max_glibc(path: str) -> str:
    versions = [node.partition("_")[2] for node, _ in versioned_imports(path) if node.startswith("GLIBC_")]
    return max(versions, key=version_tuple) if versions else "none"


def elf_files(path: str, tmp: str, label: str = "") -> list:
    """[(label, path)] of the ELF files in `path`: the file itself, or the
    members of a zip (wheel, jar), jars inside wheels included."""
    label = label or path
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x7fELF":
        return [(label, path)]
    if not zipfile.is_zipfile(path):
        return []
    out = []
    with zipfile.ZipFile(path) as z:
        for i, name in enumerate(z.namelist()):
            if name.endswith("/"):
                continue
            dest = os.path.join(tmp, f"{len(os.listdir(tmp))}-{i}-{os.path.basename(name)}")
            with z.open(name) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst)
            out += elf_files(dest, tmp, f"{label}!{name}")
    return out


def check_files(paths, max_version: str) -> tuple:
    """(report lines, ok) for every ELF file in `paths`."""
    lines, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            elves = elf_files(path, tmp)
            if not elves:
                lines.append(f"{path}: no ELF file inside")
                ok = False
            for label, elf in elves:
                bad = problems(elf, max_version)
                lines.append(f"{label}: needs glibc {max_glibc(elf)}" + (f"; too new: {', '.join(bad)}" if bad else ""))
                ok = ok and not bad
    return lines, ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m buildtools.glibc")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="fail when a file (or a wheel's / jar's ELF member) needs a newer glibc")
    c.add_argument("--max", default="2.28", help="newest glibc version allowed (default 2.28)")
    c.add_argument("files", nargs="+")
    args = p.parse_args(argv)
    lines, ok = check_files(args.files, check_target(args.max))
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
