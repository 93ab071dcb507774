"""``pyphmm pd-likelihoods``: a PDHMM record file in (haplotype lines
``HAP PD``, docs/RECORD_FORMAT.md), its log10 likelihoods out, in the
results format of ``likelihoods`` and with its error, signal and
file-safety contract (docs/CLI.md). Files go through the Python reader
(pyphmm.io), in chunks; there is no native reader for this form.
"""

from __future__ import annotations

import re
import sys

from .. import _native
from .chunks import record_chunks
from .likelihoods import Progress
from .loading import numpy_module
from .output import OutputFile
from .signals import interruptible


def _compute(chunk_lines, chunk, name, args, stats):
    """The chunk's likelihoods. Input the records can hold but GKL refuses
    is reported at its record's header line (the library numbers the
    regions of a call)."""
    pdhmm = numpy_module(".pdhmm", "the PDHMM")
    try:
        return interruptible(pdhmm.compute_pd_regions, chunk, backend=args.backend, threads=args.threads, stats=stats)
    except ValueError as e:
        message = re.sub(r"^region (\d+), ", lambda m: f"{name}:{chunk_lines[int(m.group(1))]}: ", str(e))
        raise ValueError(message) from None
    except MemoryError as e:
        raise MemoryError(
            f"{name}:{chunk_lines[0]}: out of memory computing {len(chunk)} record(s) from this line on: "
            f"{str(e) or 'MemoryError'}"
        ) from None


def cmd_pd_likelihoods(args) -> int:
    io = numpy_module(".io", "the Python record reader")
    name = "<stdin>" if args.input == "-" else args.input
    lines = []  # header line of every record read so far

    def records():
        for line, reads, haps in io.read_pd_records_at(args.input):
            lines.append(line)
            yield line, reads, haps

    progress = Progress()
    with OutputFile(args.output, input_path=args.input) as out:
        for _, chunk, _ in record_chunks(records()):
            first = progress.records
            stats = {}
            results = _compute(lines[first : first + len(chunk)], chunk, name, args, stats)
            out.write("".join(io.format_record(res) for res in results))
            progress.add(len(chunk), stats)
        out.commit()
    print(progress.summary(), file=sys.stderr)
    return 0


def add_parser(sub, positive_int) -> None:
    pd = sub.add_parser("pd-likelihoods", help="PDHMM log10 likelihoods for a PD record file")
    pd.add_argument("input", help="PD record file (R H header, R read lines, H 'HAP PD' lines), or - for stdin")
    pd.add_argument("--output", "-o", required=True, help="results file, or - for stdout")
    pd.add_argument("--backend", choices=sorted(_native.BACKENDS), default="auto")
    pd.add_argument("--threads", type=positive_int, default=None, help="CPU threads (default: all)")
    pd.set_defaults(func=cmd_pd_likelihoods)
