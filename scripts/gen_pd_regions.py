#!/usr/bin/env python3
"""Writes seeded PDHMM regions (haplotypes built as GATK's PD engine builds
them) as a PD record file: the command line of ``devtools.pd_regions``.

``--shape gatk`` gives issue 41's GATK-shaped regions (10-60 reads of
50-250 bp x 2-16 haplotypes of 100-600 bp), ``--shape hc`` the calls
HaplotypeCaller makes (many reads x few haplotypes, reads of 68 bp and
haplotypes of 136 bp on average, a long tail of large calls). An OUTPUT
ending in .gz is compressed.

With ``--gkl DIR`` (an oracle build of GKL 0.9's PDHMM, see
devtools/oracle/gkl_pdhmm.py) it also writes GKL's serial results for the
regions to ``--results FILE`` in the results format of ``pyphmm
pd-likelihoods``; ``--edge-cases`` writes the regions of
``devtools.pd_edges`` with GKL's results instead (tests/data/'s format).

Run from the repository root, which must be importable:

    PYTHONPATH=. python3 scripts/gen_pd_regions.py --regions 200 --shape hc -o hc.pd
    PYTHONPATH=. python3 scripts/gen_pd_regions.py --regions 12 --seed 7 --shape gatk \\
        -o tests/data/pdhmm-gatk-regions.pd.gz --gkl /path/to/oracle --results tests/data/pdhmm-gatk-regions.gkl.gz
"""

from __future__ import annotations

import argparse
import gzip
import sys

from devtools.oracle.gkl_pdhmm import gkl_region, missing
from devtools.pd_edges import edge_regions
from devtools.pd_regions import SHAPES, generate, pairs_and_cells
from devtools.pd_testdata import write_edge_file
from pyphmm.io import format_record, write_pd_input_records


def _open(path: str):
    return gzip.open(path, "wt", encoding="ascii", newline="\n") if path.endswith(".gz") else open(path, "w")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Seeded GATK-shaped PDHMM regions as a PD record file.")
    p.add_argument("--regions", type=int, default=20, help="regions (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shape", choices=SHAPES, default="gatk")
    p.add_argument("--max-pairs", type=int, default=None, help="stop before this many read x haplotype pairs")
    p.add_argument("--output", "-o", required=True, help="PD record file (.gz: compressed)")
    p.add_argument("--gkl", metavar="DIR", help="oracle build of GKL 0.9's PDHMM: also write its results")
    p.add_argument("--results", metavar="FILE", help="where GKL's results go (with --gkl; .gz: compressed)")
    p.add_argument("--edge-cases", action="store_true", help="write devtools.pd_edges' regions with GKL's results")
    args = p.parse_args(argv)
    if args.gkl and missing(args.gkl):
        p.error(missing(args.gkl))
    if args.edge_cases:
        if not args.gkl:
            p.error("--edge-cases needs --gkl DIR")
        regions = edge_regions()
        values = [gkl_region(args.gkl, reads, haps) for _, reads, haps in regions]
        write_edge_file(args.output, regions, values)
        print(f"{args.output}: {len(regions)} edge-case regions, {sum(v.size for v in values)} pairs", file=sys.stderr)
        return 0
    if bool(args.gkl) != bool(args.results):
        p.error("--gkl and --results go together")
    regions = generate(args.regions, seed=args.seed, shape=args.shape, max_pairs=args.max_pairs)
    with _open(args.output) as f:
        write_pd_input_records(f, regions)
    pairs, cells = pairs_and_cells(regions)
    print(f"{args.output}: {len(regions)} regions, {pairs} pairs, {cells} cells", file=sys.stderr)
    if args.gkl:
        with _open(args.results) as f:
            for reads, haps in regions:
                f.write(format_record(gkl_region(args.gkl, reads, haps)))
        print(f"{args.results}: GKL's serial results", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
