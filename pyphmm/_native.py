"""Thin layer over the cffi extension: options, errors, info.

Nothing here knows the algorithms; it turns Python arguments into the C ABI's
structs and the ABI's status codes into Python exceptions.
"""

from __future__ import annotations

import os

from ._convert import INT32_MAX, as_int
from ._pyphmm import ffi, lib

BACKENDS = {"auto": lib.PYPHMM_BACKEND_AUTO, "cpu": lib.PYPHMM_BACKEND_CPU, "cuda": lib.PYPHMM_BACKEND_CUDA}
BACKEND_NAMES = {v: k for k, v in BACKENDS.items()}
HYBRID = {None: lib.PYPHMM_HYBRID_DEFAULT, True: lib.PYPHMM_HYBRID_ON, False: lib.PYPHMM_HYBRID_OFF}
THRESHOLD_SOURCES = {
    lib.PYPHMM_THRESHOLD_DEFAULT: "default",
    lib.PYPHMM_THRESHOLD_CALIBRATED: "calibrated",
    lib.PYPHMM_THRESHOLD_ENV: "env",
}


MAX_THREADS = INT32_MAX


class BackendUnavailableError(RuntimeError):
    """The backend that was asked for cannot run here (e.g. no usable GPU)."""


class InternalError(RuntimeError):
    """The native library failed in a way no argument explains (a thread that
    could not start, a bug): PYPHMM_E_INTERNAL."""


def raise_status(code: int, message: str) -> None:
    """Raises the Python exception of an ABI status code (none for OK)."""
    if code == lib.PYPHMM_OK:
        return
    if code == lib.PYPHMM_E_INVALID:
        raise ValueError(message)
    if code == lib.PYPHMM_E_NOMEM:
        raise MemoryError(message)
    if code == lib.PYPHMM_E_UNAVAILABLE:
        raise BackendUnavailableError(message)
    if code == lib.PYPHMM_E_IO:
        raise OSError(message)
    raise InternalError(f"pyphmm internal error: {message}")


def raise_for_status(code: int, error) -> None:
    if code != lib.PYPHMM_OK:
        raise_status(code, ffi.string(error.message).decode("utf-8", "replace"))


def make_options(backend: str = "auto", threads: int | None = None, double: bool = False, hybrid: bool | None = None):
    """Validates Python-level options and returns a pyphmm_options*.

    ``hybrid``: None follows PYPHMM_HYBRID (off when unset); True/False turn
    the whole-workload GPU+CPU scheduler on or off for this call."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {sorted(BACKENDS)}, not {backend!r}")
    if threads is not None:
        threads = as_int(threads, "threads", 1, MAX_THREADS)
    if not isinstance(double, bool):
        raise TypeError(f"double must be True or False, not {type(double).__name__}")
    if hybrid is not None and not isinstance(hybrid, bool):
        raise TypeError(f"hybrid must be True, False or None, not {type(hybrid).__name__}")
    opts = ffi.new("pyphmm_options *")
    opts.backend = BACKENDS[backend]
    opts.threads = threads or 0
    opts.double_precision = 1 if double else 0
    opts.device = -1
    opts.hybrid = HYBRID[hybrid]
    return opts


def stats_dict(stats) -> dict:
    return {
        "pairs": stats.pairs,
        "cells": stats.cells,
        "double_pairs": stats.double_pairs,
        "backend": BACKEND_NAMES.get(stats.backend_used, "none"),
        "fell_back": bool(stats.fell_back),
        "seconds": stats.seconds,
        # where the regions ran: a call under "auto" may use both sides
        "gpu_regions": stats.gpu_regions,
        "gpu_cells": stats.gpu_cells,
        "cpu_regions": stats.cpu_regions,
        "cpu_cells": stats.cpu_cells,
        "hybrid": bool(stats.hybrid),
        "hybrid_gpu_threads": stats.hybrid_gpu_threads,
        "hybrid_cpu_threads": stats.hybrid_cpu_threads,
        # GPU work: the device, launch-constant pairs, and (PYPHMM_DEV=cuda_timing=1) kernel
        # and host-phase seconds
        "device": stats.device,
        "const_pairs": stats.const_pairs,
        "kernel_seconds": stats.kernel_seconds,
        "phase_seconds": dict(zip(PHASES, stats.phase_seconds)),
        # Smith-Waterman on the CPU: cells resumed from an earlier pair's columns
        "reused_cells": stats.reused_cells,
    }


# pyphmm_stats.phase_seconds, in order.
PHASES = ("setup", "pack", "enqueue", "wait", "copy_out")


def info() -> dict:
    """Version, backends and devices of the loaded native library, and the
    dispatch policy: the per-call GPU threshold (``gpu_min_cells``, at
    ``cpu_threads`` threads) and where it came from (``calibrated`` at first
    use, ``env`` for PYPHMM_GPU_MIN_CELLS, or ``default``), and whether
    whole-workload calls share GPU and CPU (``hybrid``). On a GPU machine the
    first call runs the threshold's calibration (a few milliseconds)."""
    i = ffi.new("pyphmm_info *")
    lib.pyphmm_get_info(i)
    s = lambda field: ffi.string(field).decode("utf-8", "replace")  # noqa: E731
    backends = ["cpu"] + (["cuda"] if i.cuda_usable else [])
    return {
        "version": s(i.version),
        "abi_version": i.abi_version,
        "backends": backends,
        "cuda_compiled": bool(i.cuda_compiled),
        "cuda_usable": bool(i.cuda_usable),
        "cuda_status": s(i.cuda_status),
        "device_count": i.device_count,
        "device": i.device,
        "device_name": s(i.device_name) or None,
        "cpu_threads": i.cpu_threads,
        "cpu_kernel": s(i.cpu_kernel),
        "gpu_min_cells": i.gpu_min_cells,
        "gpu_min_cells_source": THRESHOLD_SOURCES.get(i.gpu_min_cells_source, "default"),
        "calibration": (
            {"gpu_call_us": i.calib_gpu_call_us, "gpu_gcups": i.calib_gpu_gcups, "cpu_gcups": i.calib_cpu_gcups}
            if i.gpu_min_cells_source == lib.PYPHMM_THRESHOLD_CALIBRATED
            else None
        ),
        "hybrid": bool(i.hybrid),
        "hybrid_gpu_threads": i.hybrid_gpu_threads,
        # sharing the GPU: devices calls may use, how this process's was
        # chosen, other processes on it then, whether MPS serves this process
        "usable_devices": i.usable_devices,
        "device_pinned": bool(i.device_pinned),
        "device_choice": s(i.device_choice) or None,
        "gpu_other_processes": i.gpu_other_processes,
        "mps": bool(i.mps),
        "mps_pipe_dir": s(i.mps_pipe_dir) or None,
        "cuda_nap_percent": i.cuda_nap_percent,
        "jni_compiled": bool(i.jni_compiled),
        "library": library_path(),
        "settings_error": settings_error(),
    }


def library_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libpyphmm.so")


def settings_error():
    """None, or the message naming the first PYPHMM_* setting in the
    environment whose value does not parse (every call refuses to run
    meanwhile, with this message)."""
    err = ffi.new("pyphmm_error *")
    if lib.pyphmm_config_check(err) == lib.PYPHMM_OK:
        return None
    return ffi.string(err.message).decode("utf-8", "replace")


def config_text() -> str:
    """The settings the native library reads: one line each with the value
    in use, where it came from and what it does (the user settings, then
    PYPHMM_DEV's keys)."""
    n = lib.pyphmm_config_describe(ffi.NULL, 0)
    buf = ffi.new("char[]", n + 1)
    lib.pyphmm_config_describe(buf, n + 1)
    return ffi.string(buf).decode("utf-8", "replace")


def reload_config() -> None:
    """Makes the native library read its PYPHMM_* environment variables
    again (they are read once): for a process that changes them while
    running. Decisions taken once per process (GPU choice, calibration, CPU
    kernel) stay as taken."""
    lib.pyphmm_config_reload()
