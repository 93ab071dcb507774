"""The CLI's parser, the `info` command, and the exceptions each exit
status stands for (pyphmm.cli.main runs them; docs/CLI.md).

Modules that need numpy are imported by the commands that use them, so a
record file computed in native code starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import _native
from .._version import __version__
from . import align, likelihoods
from .output import WriteError

# Exceptions of a command that end it with one `pyphmm: error:` line: the
# machine failed the run (status 1), or its input, arguments or files are
# wrong (status 2).
FAILED = (WriteError, MemoryError, _native.InternalError)
REFUSED = (ValueError, TypeError, OSError, _native.BackendUnavailableError)


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= v <= _native.MAX_THREADS:
        raise argparse.ArgumentTypeError(f"must be within 1..{_native.MAX_THREADS}: {v}")
    return v


def _threshold_line(inf) -> str:
    line = f"calls under {inf['gpu_min_cells']} cells run on the CPU under auto (at {inf['cpu_threads']} CPU threads; "
    cal = inf["calibration"]
    if inf["gpu_min_cells_source"] == "calibrated":
        return line + (
            f"calibrated: GPU call {cal['gpu_call_us']:.1f} us + {cal['gpu_gcups']:.1f} GCUPS, "
            f"CPU {cal['cpu_gcups']:.2f} GCUPS)"
        )
    if inf["gpu_min_cells_source"] == "env":
        return line + "from PYPHMM_GPU_MIN_CELLS)"
    return line + ("default" + ("" if inf["cuda_usable"] else ", no GPU") + ")")


def _hybrid_line(inf) -> str:
    if not inf["hybrid"]:
        return "one backend per call" + ("" if inf["cuda_usable"] else " (no GPU)")
    workers = max(0, inf["cpu_threads"] - inf["hybrid_gpu_threads"])
    return (
        f"GPU ({inf['hybrid_gpu_threads']} driver threads, largest regions) and "
        f"{workers} CPU threads (smallest regions) share calls of several regions under auto"
    )


def cmd_info(args) -> int:
    inf = _native.info()
    if args.json:
        print(json.dumps(inf, indent=2))
        return _settings_status(inf)
    cuda = (
        f"CUDA on {inf['device_name']} (device {inf['device']}, {inf['device_choice']})"
        if inf["cuda_usable"]
        else f"not used: {inf['cuda_status']}"
    )
    print(f"pyphmm {inf['version']} (ABI {inf['abi_version']})")
    print(f"backends: {', '.join(inf['backends'])}")
    print(f"gpu: {cuda}")
    if inf["cuda_usable"]:
        print(f"gpu sharing: {_sharing_line(inf)}")
    print(f"cpu: {inf['cpu_threads']} threads, PairHMM kernel {inf['cpu_kernel']}")
    print(f"dispatch: {_threshold_line(inf)}")
    print(f"whole workloads: {_hybrid_line(inf)}")
    print(f"GKL JNI entry points: {'yes' if inf['jni_compiled'] else 'no (built without a JDK)'}")
    print(f"library: {inf['library']}")
    if args.verbose:
        print("settings (README: Configuration; PYPHMM_DEV: docs/DEVELOPING.md):")
        print(_native.config_text(), end="")
    return _settings_status(inf)


def _settings_status(inf) -> int:
    """info's exit status: 2, with the error, when a setting does not parse."""
    if inf["settings_error"]:
        print(f"pyphmm: error: {inf['settings_error']}", file=sys.stderr)
        return 2
    return 0


def check_settings(command: str) -> None:
    """A setting that does not parse fails a computing command before any
    input is read (ValueError: status 2)."""
    if command in ("likelihoods", "align"):
        problem = _native.settings_error()
        if problem:
            raise ValueError(problem)


def _sharing_line(inf) -> str:
    """Several GPUs, other processes, MPS: what this process shares its GPU with."""
    spread = inf["usable_devices"] > 1 and not inf["device_pinned"]
    devices = f"calls spread over {inf['usable_devices']} GPUs" if spread else "one GPU"
    others = inf["gpu_other_processes"]
    if inf["mps"]:
        mps = f"MPS serves this process (pipe directory {inf['mps_pipe_dir']})"
    else:
        mps = "no MPS" + ("" if others <= 0 else "; start it with `pyphmm mps start` for many processes per GPU")
    seen = "unknown" if others < 0 else str(others)
    nap = inf["cuda_nap_percent"]
    waits = f"a waiting thread naps {nap}% of the wait" if nap else "a waiting thread spins"
    return f"{devices}; other processes on device {inf['device']} at start: {seen}; {mps}; {waits}"


# Commands defined in this package: a command line that names one of them
# needs neither the GATK nor the MPS module (their imports are ~15 ms of a
# record file's start-up).
_OWN_COMMANDS = ("likelihoods", "align", "info")


def build_parser(argv=()) -> argparse.ArgumentParser:
    first = next((a for a in argv if not a.startswith("-")), None)
    p = argparse.ArgumentParser(prog="pyphmm", description="GATK PairHMM and Smith-Waterman, GPU and CPU.")
    p.add_argument("--version", action="version", version=f"pyphmm {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    likelihoods.add_parser(sub, _positive_int)
    align.add_parser(sub, _positive_int)
    inf = sub.add_parser("info", help="version, backends, GPU")
    inf.add_argument("--json", action="store_true", help="machine-readable output")
    inf.add_argument(
        "--verbose", "-v", action="store_true", help="also list the settings (PYPHMM_* variables) and their values"
    )
    inf.set_defaults(func=cmd_info)
    if first not in _OWN_COMMANDS:  # (also for --help and mistyped commands, which list every command)
        from .. import mps  # NVIDIA MPS helper: pyphmm mps start|stop|status
        from . import gatk  # GATK entry points: gatk-jar, gatk-libdir, gatk

        gatk.add_subcommands(sub)
        mps.add_subcommands(sub)
    return p
