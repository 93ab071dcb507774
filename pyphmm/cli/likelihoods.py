"""``pyphmm likelihoods``: a record file in, its log10 likelihoods out.

A file path in and a file (or device, FIFO) out runs in native code
(native/frontends/records/), without loading numpy; standard input, and an
output that only Python can write (standard output, a descriptor such as
/dev/stderr), go through the Python reader (pyphmm.io), as does every file
when PYPHMM_DEV=native_reader=0 turns the native reader off. Both readers
accept the same language and report the same errors
(docs/RECORD_FORMAT.md).
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time

from .. import _native
from .._pyphmm import ffi, lib
from .chunks import NATIVE_CHUNK_CELLS, record_chunks
from .loading import numpy_module
from .output import OutputFile, WriteError
from .signals import interruptible

PROGRESS_EVERY_S = 2.0


class Progress:
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
            print(
                f"pyphmm: {records} records, {pairs} pairs, {cells / 1e9:.2f} G cells, {now - self.start:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    def summary(self) -> str:
        total = time.perf_counter() - self.start
        gcups = self.cells / self.compute_s / 1e9 if self.compute_s > 0 else 0.0
        backend = ", ".join(sorted(b for b in self.backends if b != "none")) or "none"
        return (
            f"pyphmm: {self.records} records, {self.pairs} pairs, {self.cells} cells; "
            f"compute {self.compute_s:.3f} s, {gcups:.2f} GCUPS (compute); "
            f"total {total:.3f} s; backend {backend}"
        )


def _native_file(args, out: OutputFile, progress: Progress) -> bool:
    """Runs the file through native/frontends/records/ into out.native_path.
    True when done, False when PYPHMM_DEV=native_reader=0 turns that reader
    off; raises for every failure, in the native reader's words."""
    opts = _native.make_options(args.backend, args.threads, args.double)
    err, st, records = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    done = ffi.new("int64_t[3]")  # records, pairs, cells written so far
    result = []
    # On a worker thread, so that signals still reach this one (a call into
    # C cannot be interrupted); the caller then removes the output and the
    # interpreter's exit ends the worker.
    worker = threading.Thread(
        target=lambda: result.append(
            lib.pyphmm_pairhmm_file(
                os.fsencode(args.input), os.fsencode(out.native_path), opts, NATIVE_CHUNK_CELLS, records, st, done, err
            )
        ),
        daemon=True,
    )
    try:
        worker.start()
    except RuntimeError:  # no thread can start (a memory limit): the call runs here
        worker.run()
    while worker.is_alive():
        worker.join(0.2)
        progress.report(done[0], done[1], done[2])
    rc = result[0] if result else lib.PYPHMM_E_INTERNAL
    if rc == lib.PYPHMM_E_UNSUPPORTED:  # (before it opens anything)
        return False
    out.opened_elsewhere()
    if rc != lib.PYPHMM_OK:
        message = ffi.string(err.message).decode("utf-8", "replace").replace(out.native_path, out.target)
        if rc == lib.PYPHMM_E_IO and message.startswith(f"{out.target}: write failed: "):
            if message.endswith(os.strerror(errno.EPIPE)):
                raise BrokenPipeError(errno.EPIPE, message)
            raise WriteError(message)
        _native.raise_status(rc, message)
    progress.add(records[0], _native.stats_dict(st))
    return True


def _python_path(args, out: OutputFile, progress: Progress) -> None:
    io = numpy_module(".io", "the Python record reader")
    pairhmm = numpy_module(".pairhmm", "the Python record reader")
    name = "<stdin>" if args.input == "-" else args.input
    for line, chunk, cells in record_chunks(io.read_records_at(args.input)):
        stats = {}
        try:
            results = interruptible(
                pairhmm.compute_regions,
                chunk,
                double=args.double,
                backend=args.backend,
                threads=args.threads,
                stats=stats,
            )
        except MemoryError as e:
            raise MemoryError(
                f"{name}:{line}: out of memory computing {len(chunk)} record(s) from this line on "
                f"({cells} cells): {str(e) or 'MemoryError'}"
            ) from None
        out.write("".join(io.format_record(res) for res in results))
        progress.add(len(chunk), stats)


def cmd_likelihoods(args) -> int:
    progress = Progress()
    with OutputFile(args.output, input_path=args.input) as out:
        native = args.input != "-" and out.native_path is not None
        if not (native and _native_file(args, out, progress)):
            _python_path(args, out, progress)
        out.commit()
    print(progress.summary(), file=sys.stderr)
    return 0


def add_parser(sub, positive_int) -> None:
    lk = sub.add_parser("likelihoods", help="log10 likelihoods for a record file")
    lk.add_argument("input", help="record file (R H header, R read lines, H haplotype lines), or - for stdin")
    lk.add_argument("--output", "-o", required=True, help="results file, or - for stdout")
    lk.add_argument("--backend", choices=sorted(_native.BACKENDS), default="auto")
    lk.add_argument("--double", action="store_true", help="compute every pair in double precision")
    lk.add_argument("--threads", type=positive_int, default=None, help="CPU threads (default: all)")
    lk.set_defaults(func=cmd_likelihoods)
