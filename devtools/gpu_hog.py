"""Another process that holds nearly all of a GPU's free memory, for tests of
what pyphmm does when cudaMalloc (or context creation) fails.

  python3 -m devtools.gpu_hog [--leave-mib N] [--device D]

Talks to the driver directly (libcuda through ctypes), so it needs nothing
but a driver. It allocates in blocks of 1 GiB down to 1 MiB until at most
--leave-mib MiB (default 0) remain free, prints one line
``READY free_mib=F held_mib=H`` and holds the memory until its stdin closes
or sends a line. ``hold(...)`` runs it as a context manager.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import subprocess
import sys

from . import ROOT
from .child import child_env

MIB = 1 << 20
BLOCKS_MIB = (1024, 256, 64, 16, 4, 1)


class DriverError(RuntimeError):
    pass


def _driver():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise DriverError(f"no CUDA driver library: {e}") from e

    def call(name, *args):
        rc = getattr(cu, name)(*args)
        if rc != 0:
            raise DriverError(f"{name} failed with CUresult {rc}")

    return cu, call


def fill(device: int, leave_bytes: int):
    """Allocates until at most leave_bytes are free (the memory stays held
    until the process ends); returns (free, held) in bytes."""
    cu, call = _driver()
    call("cuInit", 0)
    dev = ctypes.c_int()
    call("cuDeviceGet", ctypes.byref(dev), device)
    ctx = ctypes.c_void_p()
    call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    call("cuCtxSetCurrent", ctx)
    free, total = ctypes.c_size_t(), ctypes.c_size_t()

    def free_now():
        call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return free.value

    held = 0
    for mib in BLOCKS_MIB:
        size = mib * MIB
        while free_now() >= leave_bytes + size:
            ptr = ctypes.c_uint64()
            if cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)) != 0:
                break  # fragmentation or the driver's own reserve: try smaller blocks
            held += size
    return free_now(), held


@contextlib.contextmanager
def hold(leave_mib: int = 0, device: int = 0):
    """Runs the hog in a child process while the with-block runs; yields its
    READY line's numbers as a dict (free_mib, held_mib)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "devtools.gpu_hog", "--leave-mib", str(leave_mib), "--device", str(device)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(ROOT),
    )
    try:
        line = p.stdout.readline()
        if not line.startswith("READY"):
            p.kill()
            raise DriverError(f"gpu_hog did not start: {line!r} {p.stderr.read()}")
        yield {k: int(v) for k, v in (f.split("=") for f in line.split()[1:])}
    finally:
        if p.poll() is None:
            p.stdin.close()
            p.wait(timeout=60)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leave-mib", type=int, default=0)
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        free, held = fill(args.device, args.leave_mib * MIB)
    except DriverError as e:
        print(f"ERROR {e}", flush=True)
        return 1
    print(f"READY free_mib={free // MIB} held_mib={held // MIB}", flush=True)
    sys.stdin.readline()  # hold until told or until the parent goes away
    return 0


if __name__ == "__main__":
    sys.exit(main())
