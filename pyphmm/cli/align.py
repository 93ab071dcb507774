"""``pyphmm align``: REF<TAB>ALT pairs in, CIGAR<TAB>OFFSET lines out, in
input order (Smith-Waterman with GATK's semantics, pyphmm.sw)."""

from __future__ import annotations

import sys
import time

from .. import _native
from .chunks import ALIGN_CHUNK_PAIRS
from .loading import numpy_module
from .output import OutputFile
from .signals import interruptible

PRESET_NAMES = ("ORIGINAL_DEFAULT", "STANDARD_NGS", "NEW_SW_PARAMETERS", "ALIGNMENT_TO_BEST_HAPLOTYPE")
OVERHANG_NAMES = ("SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE")


def read_pairs(path: str, max_length: int):
    """Yields (line number, ref, alt) from a REF<TAB>ALT file ("-": standard
    input); errors name file:line. Lines follow a record file's rules
    (pyphmm.io.read_line: printable ASCII and tabs, checked as they arrive,
    at most MAX_RECORD_LINE bytes), and blank lines are skipped as between
    records."""
    from ..io import MAX_RECORD_LINE, quote, read_line

    f = sys.stdin.buffer if path == "-" else open(path, "rb")
    name = "<stdin>" if path == "-" else path
    try:
        lineno = 0
        while True:
            line = read_line(f, MAX_RECORD_LINE, name, lineno + 1, "pair")
            if line is None:
                return
            lineno += 1
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2:
                raise ValueError(
                    f"{name}:{lineno}: expected REF<TAB>ALT, got {len(fields)} field(s) in {quote(line.rstrip())}"
                )
            ref, alt = fields
            for what, seq in (("ref", ref), ("alt", alt)):
                if not seq:
                    raise ValueError(f"{name}:{lineno}: empty {what}")
                if len(seq) > max_length:
                    raise ValueError(f"{name}:{lineno}: {what} is {len(seq)} bp, longer than {max_length}")
                if " " in seq:
                    raise ValueError(f"{name}:{lineno}: {what} holds whitespace")
            yield lineno, ref, alt
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _settings(args, sw):
    OverhangStrategy, parse_params = sw.OverhangStrategy, sw.parse_params

    if args.params is not None and args.preset is not None:
        raise ValueError("give --params or --preset, not both")
    if args.params is not None:
        try:
            vals = [int(x) for x in args.params.split(",")]
        except ValueError:
            raise ValueError(f"--params must be M,X,O,E integers, not {args.params!r}") from None
        params = parse_params(vals)
    else:
        params = parse_params(args.preset or "ORIGINAL_DEFAULT")
    return params, OverhangStrategy.parse(args.overhang)


def cmd_align(args) -> int:
    sw = numpy_module(".sw", "pyphmm align")
    params, overhang = _settings(args, sw)
    start = time.perf_counter()
    total = cells = 0
    refs, alts = [], []
    with OutputFile(args.output, input_path=args.input) as out:

        def flush():
            nonlocal cells
            st = {}
            cig, off = interruptible(
                sw.align_batch,
                refs,
                alts,
                params=params,
                overhang=overhang,
                backend=args.backend,
                threads=args.threads,
                stats=st,
            )
            cells += st.get("cells", 0)
            out.write("".join(f"{c}\t{o}\n" for c, o in zip(cig, off.tolist())))
            refs.clear()
            alts.clear()

        for _, ref, alt in read_pairs(args.input, sw.MAX_LENGTH):
            refs.append(ref)
            alts.append(alt)
            total += 1
            if len(refs) >= ALIGN_CHUNK_PAIRS:
                flush()
        if refs:
            flush()
        out.commit()
    print(f"pyphmm: {total} alignments, {cells} cells, {time.perf_counter() - start:.3f} s", file=sys.stderr)
    return 0


def add_parser(sub, positive_int) -> None:
    p = sub.add_parser("align", help="Smith-Waterman (GATK semantics) for REF<TAB>ALT pairs")
    p.add_argument("input", help="one REF<TAB>ALT pair per line, or - for stdin")
    p.add_argument("--output", "-o", required=True, help="CIGAR<TAB>OFFSET per line, or - for stdout")
    p.add_argument(
        "--params", default=None, metavar="M,X,O,E", help="match, mismatch, gap open, gap extend (e.g. 3,-1,-4,-3)"
    )
    p.add_argument(
        "--preset",
        default=None,
        type=str.upper,
        choices=PRESET_NAMES,
        help="GATK parameter set (default ORIGINAL_DEFAULT)",
    )
    p.add_argument(
        "--overhang",
        default="SOFTCLIP",
        type=str.upper,
        choices=OVERHANG_NAMES,
        help="overhang strategy (default SOFTCLIP)",
    )
    p.add_argument("--backend", choices=sorted(_native.BACKENDS), default="auto")
    p.add_argument("--threads", type=positive_int, default=None, help="CPU threads (default: all)")
    p.set_defaults(func=cmd_align)
