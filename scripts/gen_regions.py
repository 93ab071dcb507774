#!/usr/bin/env python3
"""Writes seeded realistic PairHMM regions (GATK active regions) as a record
file: the command line of ``devtools.regions.generate`` (see that module for
the shapes and the underflow-forcing regions).

``--preset typical`` gives issue 12's typical 30x WGS active region (60
reads of 150 bp x 4 haplotypes of 350 bp each), ``--preset small`` GATK's
small regions (10-60 reads x 2-8 haplotypes). ``--gap-quals 45,45,10`` gives
every read GATK's default gap qualities (what HaplotypeCaller sees in a BAM
without BQSR's BI/BD tags): the regions are otherwise the same.
``--lengths 90,350`` (with a preset) gives every read and haplotype those
lengths: the kernels' cost per read length, for instance.

Run from the repository root, which must be importable:

    python3 scripts/gen_regions.py --regions 2000 --seed 1 --output regions.in
"""

from __future__ import annotations

import argparse
import sys

import _checkout  # noqa: F401  (the repository root importable)

from devtools.regions import SHAPES, generate, pairs_and_cells
from pyphmm.io import write_input_records


def _ints(p: argparse.ArgumentParser, option: str, text: str, count: int, ok, wants: str) -> tuple:
    """TEXT as `count` comma-separated integers that satisfy ok(values), or a
    usage error saying what `option` wants."""
    try:
        vals = tuple(int(v) for v in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != count or not ok(vals):
        p.error(f"{option} wants {wants}, got {text!r}")
    return vals


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Seeded realistic PairHMM regions as a record file.")
    p.add_argument("--regions", type=int, default=100, help="realistic regions (default 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-pairs", type=int, default=None, help="cap on read x haplotype pairs")
    p.add_argument("--underflow", type=int, default=0, metavar="K", help="also append K underflow-forcing regions")
    p.add_argument("--n-rate", type=float, default=0.02, help="chance of N bases per read")
    p.add_argument("--odd-rate", type=float, default=0.0, help="chance per read of bytes other than ACGTN (read as A)")
    p.add_argument("--max-reads", type=int, default=None, help="cap on reads per region")
    p.add_argument(
        "--preset",
        choices=sorted(SHAPES),
        default=None,
        help="fixed benchmark shape (typical: 60 x 4, 150/350 bp; small: 10-60 x 2-8)",
    )
    p.add_argument(
        "--gap-quals",
        metavar="INS,DEL,GCP",
        default=None,
        help="give every read these insertion, deletion and gap-continuation qualities "
        "(45,45,10: GATK's default for reads without BI/BD tags)",
    )
    p.add_argument(
        "--lengths",
        metavar="READ,HAP",
        default=None,
        help="with --preset: every read READ bases, every haplotype HAP (typical: 150,350)",
    )
    p.add_argument("--output", "-o", default="-", help="record file, or - for stdout")
    a = p.parse_args(argv)
    if a.regions < 0 or a.underflow < 0:
        p.error("--regions and --underflow must be >= 0")
    gaps = lengths = None
    if a.gap_quals is not None:  # qualities a record file can hold
        gaps = _ints(
            p,
            "--gap-quals",
            a.gap_quals,
            3,
            lambda v: all(0 <= q <= 93 for q in v),
            "three qualities 0-93 as INS,DEL,GCP",
        )
    if a.lengths is not None:  # reads are windows of the haplotypes
        lengths = _ints(p, "--lengths", a.lengths, 2, lambda v: 1 <= v[0] <= v[1], "READ,HAP with 1 <= READ <= HAP")
    if lengths is not None and a.preset is None:
        p.error("--lengths needs --preset")
    regs = generate(a.regions, a.seed, a.max_pairs, a.underflow, a.n_rate, a.odd_rate, a.max_reads, a.preset, lengths)
    if gaps is not None:
        for reads, _ in regs:
            reads.ins[:], reads.dels[:], reads.gcp[:] = gaps
    write_input_records(sys.stdout if a.output == "-" else a.output, regs)
    pairs, cells = pairs_and_cells(regs)
    print(f"gen_regions: {len(regs)} regions, {pairs} pairs, {cells} cells", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
