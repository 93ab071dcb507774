"""Command line: ``pyphmm likelihoods``, ``pyphmm info`` and friends."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

from . import _native
from ._pyphmm import ffi, lib
from ._version import __version__

# Records are computed in chunks: big enough to keep a GPU busy, small
# enough that a 10 GB input never sits in memory.
CHUNK_CELLS = 400_000_000
CHUNK_RECORDS = 20_000
PROGRESS_EVERY_S = 2.0


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {v}")
    return v


def _chunks(records):
    chunk, cells = [], 0
    for reads, haps in records:
        chunk.append((reads, haps))
        cells += int(reads.lengths.sum()) * int(haps.lengths.sum())
        if cells >= CHUNK_CELLS or len(chunk) >= CHUNK_RECORDS:
            yield chunk
            chunk, cells = [], 0
    if chunk:
        yield chunk


class _Progress:
    def __init__(self):
        self.start = time.perf_counter()
        self.last = self.start
        self.records = self.pairs = self.cells = 0
        self.compute_s = 0.0
        self.backends = set()

    def add(self, records: int, stats: dict) -> None:
        self.records += records
        self.pairs += stats["pairs"]
        self.cells += stats["cells"]
        self.compute_s += stats["seconds"]
        self.backends.add(stats["backend"] + (" (GPU failed, CPU fallback)" if stats["fell_back"] else ""))
        self.report(self.records, self.pairs, self.cells)

    def report(self, records: int, pairs: int, cells: int) -> None:
        """A progress line on stderr, at most every PROGRESS_EVERY_S."""
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            print(f"pyphmm: {records} records, {pairs} pairs, {cells / 1e9:.2f} G cells, {now - self.start:.1f} s",
                  file=sys.stderr, flush=True)

    def summary(self) -> str:
        total = time.perf_counter() - self.start
        gcups = self.cells / self.compute_s / 1e9 if self.compute_s > 0 else 0.0
        backend = ", ".join(sorted(b for b in self.backends if b != "none")) or "none"
        return (f"pyphmm: {self.records} records, {self.pairs} pairs, {self.cells} cells; "
                f"compute {self.compute_s:.3f} s, {gcups:.2f} GCUPS (compute); "
                f"total {total:.3f} s; backend {backend}")


def _likelihoods_native(args, progress: _Progress) -> bool:
    """The native reader's path (native/records.cc): parses, computes and
    writes in C++, parsing the next chunk while one computes. False when it
    did not finish, for whatever reason (a file outside its strict subset of
    the format, a malformed file, an unusable backend): the Python path then
    computes the file or reports the problem in its own words."""
    tmp = f"{args.output}.partial"
    opts = _native.make_options(args.backend, args.threads, args.double)
    err, st, records = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    done = ffi.new("int64_t[3]")  # records, pairs, cells written so far
    result = []
    # On a worker thread, so that Ctrl-C still reaches this one (a call into
    # C cannot be interrupted); the interpreter's exit then ends the worker.
    worker = threading.Thread(target=lambda: result.append(lib.pyphmm_pairhmm_file(
        os.fsencode(args.input), os.fsencode(tmp), opts, 0, records, st, done, err)), daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
            progress.report(done[0], done[1], done[2])
    except KeyboardInterrupt:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    rc = result[0] if result else lib.PYPHMM_E_INTERNAL
    if rc != lib.PYPHMM_OK:
        if os.path.exists(tmp):
            os.unlink(tmp)
        return False
    os.replace(tmp, args.output)
    progress.add(records[0], _native.stats_dict(st))
    return True


def cmd_likelihoods(args) -> int:
    progress = _Progress()
    if args.input != "-" and args.output != "-" and os.environ.get("PYPHMM_NATIVE_READER", "1") != "0":
        if _likelihoods_native(args, progress):
            print(progress.summary(), file=sys.stderr)
            return 0
    from . import io  # (numpy: only the Python path needs it)
    from .pairhmm import compute_regions

    with io.atomic_output(args.output) as out:
        for chunk in _chunks(io.read_records(args.input)):
            stats = {}
            results = compute_regions(chunk, double=args.double, backend=args.backend,
                                      threads=args.threads, stats=stats)
            for res in results:
                out.write(io.format_record(res))
            progress.add(len(chunk), stats)
    print(progress.summary(), file=sys.stderr)
    return 0


def _threshold_line(inf) -> str:
    line = (f"calls under {inf['gpu_min_cells']} cells run on the CPU under auto "
            f"(at {inf['cpu_threads']} CPU threads; ")
    cal = inf["calibration"]
    if inf["gpu_min_cells_source"] == "calibrated":
        return line + (f"calibrated: GPU call {cal['gpu_call_us']:.1f} us + {cal['gpu_gcups']:.1f} GCUPS, "
                       f"CPU {cal['cpu_gcups']:.2f} GCUPS)")
    if inf["gpu_min_cells_source"] == "env":
        return line + "from PYPHMM_GPU_MIN_CELLS)"
    return line + ("default" + ("" if inf["cuda_usable"] else ", no GPU") + ")")


def _hybrid_line(inf) -> str:
    if not inf["hybrid"]:
        return "one backend per call" + ("" if inf["cuda_usable"] else " (no GPU)")
    workers = max(0, inf["cpu_threads"] - inf["hybrid_gpu_threads"])
    return (f"GPU ({inf['hybrid_gpu_threads']} driver threads, largest regions) and "
            f"{workers} CPU threads (smallest regions) share calls of several regions under auto")


def cmd_info(args) -> int:
    inf = _native.info()
    if args.json:
        print(json.dumps(inf, indent=2))
        return 0
    cuda = (f"CUDA on {inf['device_name']} (device {inf['device']}, {inf['device_choice']})" if inf["cuda_usable"]
            else f"no CUDA: {inf['cuda_status']}")
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
        print("environment (PYPHMM_*):")
        print(_native.config_text(), end="")
    return 0


def _sharing_line(inf) -> str:
    """Several GPUs, other processes, MPS: what this process shares its GPU with."""
    devices = (f"calls spread over {inf['usable_devices']} GPUs" if inf["usable_devices"] > 1 and not inf["device_pinned"]
               else "one GPU")
    others = inf["gpu_other_processes"]
    if inf["mps"]:
        mps = f"MPS serves this process (pipe directory {inf['mps_pipe_dir']})"
    else:
        mps = "no MPS" + ("" if others <= 0 else "; start it with `pyphmm mps start` for many processes per GPU")
    seen = "unknown" if others < 0 else str(others)
    return f"{devices}; other processes on device {inf['device']} at start: {seen}; {mps}"


def build_parser(full: bool = True) -> argparse.ArgumentParser:
    """The command line; full=False registers only likelihoods and info,
    whose modules load without numpy (a record file then runs in native
    code from a fast start)."""
    p = argparse.ArgumentParser(prog="pyphmm", description="GATK PairHMM and Smith-Waterman, GPU and CPU.")
    p.add_argument("--version", action="version", version=f"pyphmm {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    lk = sub.add_parser("likelihoods", help="log10 likelihoods for a record file")
    lk.add_argument("input", help="record file (R H header, R read lines, H haplotype lines)")
    lk.add_argument("--output", "-o", required=True, help="results file, or - for stdout")
    lk.add_argument("--backend", choices=sorted(_native.BACKENDS), default="auto")
    lk.add_argument("--double", action="store_true", help="compute every pair in double precision")
    lk.add_argument("--threads", type=_positive_int, default=None, help="CPU threads (default: all)")
    lk.set_defaults(func=cmd_likelihoods)

    inf = sub.add_parser("info", help="version, backends, GPU")
    inf.add_argument("--json", action="store_true", help="machine-readable output")
    inf.add_argument("--verbose", "-v", action="store_true", help="also list the PYPHMM_* environment variables")
    inf.set_defaults(func=cmd_info)

    if full:
        from . import gatk  # GATK entry points: gatk-jar, gatk-libdir, gatk
        from . import mps  # NVIDIA MPS helper: pyphmm mps start|stop|status (handler in mps.py)
        from .sw import add_align_parser  # Smith-Waterman: pyphmm align (handler in sw.py)
        add_align_parser(sub)
        gatk.add_subcommands(sub)
        mps.add_subcommands(sub)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(full=argv[:1] != ["likelihoods"]).parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError, _native.BackendUnavailableError) as e:
        print(f"pyphmm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pyphmm: interrupted", file=sys.stderr)
        return 130
