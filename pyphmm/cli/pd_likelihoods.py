"""``pyphmm pd-likelihoods``: a PDHMM record file in (haplotype lines
``HAP PD``, docs/RECORD_FORMAT.md), its log10 likelihoods out, in the
results format of ``likelihoods`` and with its error and file-safety
contract. Files go through the Python reader (pyphmm.io), in chunks.
"""

from __future__ import annotations

import re
import sys

from .. import _native
from .chunks import record_chunks
from .likelihoods import Progress
from .output import OutputFile


def cmd_pd_likelihoods(args) -> int:
    from .. import io  # numpy: imported by the command that needs it
    from ..pdhmm import compute_pd_regions

    progress = Progress()
    with OutputFile(args.output, input_path=args.input) as out:
        for chunk in record_chunks(io.read_pd_records(args.input)):
            stats = {}
            try:
                results = compute_pd_regions(chunk, backend=args.backend, threads=args.threads, stats=stats)
            except ValueError as e:  # input GKL refuses: name the record (1-based) the library calls region k
                first = progress.records + 1
                raise ValueError(_record_named(str(e), args.input, first)) from None
            out.write("".join(io.format_record(res) for res in results))
            progress.add(len(chunk), stats)
        out.commit()
    print(progress.summary(), file=sys.stderr)
    return 0


def _record_named(message: str, name: str, first: int) -> str:
    return re.sub(r"^region (\d+)", lambda m: f"{name}: record {first + int(m.group(1))}", message)


def add_parser(sub, positive_int) -> None:
    pd = sub.add_parser("pd-likelihoods", help="PDHMM log10 likelihoods for a PD record file")
    pd.add_argument("input", help="PD record file (R H header, R read lines, H 'HAP PD' lines), or - for stdin")
    pd.add_argument("--output", "-o", required=True, help="results file, or - for stdout")
    pd.add_argument("--backend", choices=sorted(_native.BACKENDS), default="auto")
    pd.add_argument("--threads", type=positive_int, default=None, help="CPU threads (default: all)")
    pd.set_defaults(func=cmd_pd_likelihoods)
