#!/usr/bin/env python3
"""pyphmm's PDHMM against the live peers on freshly generated regions.

Generates seeded regions (HaplotypeCaller-shaped and GATK-shaped, see
devtools/pd_regions.py, plus the edge cases of devtools/pd_edges.py) until
at least ``--pairs`` read x haplotype pairs, computes them with pyphmm
(``--backend``: the CPU backend, the kernel PYPHMM_DEV's cpu_kernel names,
else the best; or the GPU, ``cuda``, all regions in one call and the first
``--per-region`` regions again one call each), and compares with:

- GKL 0.9's serial PDHMM (always): one batch call per region, as GATK's
  computeLikelihoods makes it; pyphmm follows this code path;
- GKL 0.9's AVX2 PDHMM (``--avx2``), which resets the deletion state every
  row and adds the match terms in another order (docs/PDHMM.md);
- GATK's Java LoglessPDPairHMM (``--java``), whose tables come from Java's
  libm.

Prints, per peer, the pairs compared, the largest |difference| of the
log10 likelihoods, the share of bit-identical results and -inf agreement.
Exits 1 if pyphmm is farther than 1e-5 from GKL's serial results, gives NaN,
or gives -inf elsewhere than GKL.

``--gkl DIR`` is an oracle build of GKL 0.9 and GATK (see
devtools/oracle/gkl_pdhmm.py). Run from anywhere (scripts/_checkout.py
makes this checkout importable):

    python3 scripts/check_pdhmm_oracle.py --gkl /path/to/oracle --pairs 100000 --avx2 --java
    python3 scripts/check_pdhmm_oracle.py --gkl /path/to/oracle --pairs 100000 --backend cuda
"""

from __future__ import annotations

import argparse
import sys
import time

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np

import pyphmm
from devtools.oracle.gkl_pdhmm import as_tuples, gatk_java_pairs, gkl_region, missing
from devtools.pd_edges import edge_regions
from devtools.pd_regions import generate
from devtools.pd_testdata import raw_pdhmm

TOL = 1e-5


def workload(pairs: int, seed: int) -> list:
    """Regions as tuples of bytes: the edge cases, then HaplotypeCaller-
    and GATK-shaped regions alternately until `pairs` pairs."""
    regions = [as_tuples(r, h) for _, r, h in edge_regions()]
    count, k = sum(len(r) * len(h) for r, h in regions), 0
    while count < pairs:
        shape = "hc" if k % 3 else "gatk"
        for reads, haps in generate(1, seed=seed * 1000 + k, shape=shape):
            regions.append(as_tuples(reads, haps))
            count += len(reads) * len(haps)
        k += 1
    return regions


def compare(name: str, got: np.ndarray, want: np.ndarray) -> dict:
    both_inf = np.isneginf(got) & np.isneginf(want)
    fin = np.isfinite(got) & np.isfinite(want)
    diff = float(np.abs(got[fin] - want[fin]).max()) if fin.any() else 0.0
    row = {
        "peer": name,
        "pairs": int(got.size),
        "max_abs_diff": diff,
        "bit_identical": float(np.mean((got == want) | both_inf)),
        "inf_mismatch": int(np.sum(np.isneginf(got) != np.isneginf(want))),
        "nan": int(np.isnan(got).sum()),
        "neg_inf": int(np.isneginf(want).sum()),
    }
    print(
        f"{name:28s} {row['pairs']:8d} pairs  max |diff| {diff:.3g}  bit-identical {row['bit_identical']:.4%}  "
        f"-inf {row['neg_inf']} (mismatched {row['inf_mismatch']})  NaN {row['nan']}",
        flush=True,
    )
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="pyphmm's PDHMM against GKL 0.9 and GATK's Java PDHMM, live.")
    p.add_argument("--gkl", required=True, metavar="DIR", help="oracle build of GKL 0.9 (and GATK)")
    p.add_argument("--pairs", type=int, default=100_000, help="at least this many pairs (default 100000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--avx2", action="store_true", help="also compare with GKL's AVX2 code")
    p.add_argument("--java", action="store_true", help="also compare with GATK's LoglessPDPairHMM")
    p.add_argument("--backend", choices=("cpu", "cuda"), default="cpu", help="pyphmm's backend (default cpu)")
    p.add_argument("--per-region", type=int, default=200, help="cuda: regions also computed one call each")
    args = p.parse_args(argv)
    if missing(args.gkl):
        p.error(missing(args.gkl))
    if args.java and missing(args.gkl, "GatkPdhmmOracle"):
        p.error(missing(args.gkl, "GatkPdhmmOracle"))

    regions = workload(args.pairs, args.seed)
    total = sum(len(r) * len(h) for r, h in regions)
    cells = sum(sum(len(x[0]) for x in r) * sum(len(x[0]) for x in h) for r, h in regions)
    print(f"{len(regions)} regions, {total} pairs, {cells / 1e9:.2f} G cells", flush=True)
    t = time.perf_counter()
    ours = np.concatenate([v.ravel() for v in raw_pdhmm(regions, backend=args.backend)])
    print(f"pyphmm {args.backend}: {time.perf_counter() - t:.2f} s", flush=True)
    if args.backend == "cuda":  # GATK's way too: one call per region, the same bits
        each = [raw_pdhmm([g], backend="cuda")[0].ravel() for g in regions[: args.per_region]]
        head = ours[: sum(v.size for v in each)]
        same = bool(each) and np.array_equal(np.concatenate(each), head)
        print(f"pyphmm cuda, {len(each)} regions one call each: {'the same bits' if same else 'DIFFERENT'}")
        if not same:
            return 1
    t = time.perf_counter()
    serial = np.concatenate([gkl_region(args.gkl, r, h, "serial").ravel() for r, h in regions])
    print(f"GKL serial: {time.perf_counter() - t:.2f} s (one oracle process per region)", flush=True)
    rows = [compare("pyphmm vs GKL serial", ours, serial)]
    if args.avx2:
        avx2 = np.concatenate([gkl_region(args.gkl, r, h, "avx2").ravel() for r, h in regions])
        rows.append(compare("pyphmm vs GKL AVX2", ours, avx2))
        compare("(GKL AVX2 vs GKL serial)", avx2, serial)
    if args.java:
        java = gatk_java_pairs(args.gkl, regions)
        rows.append(compare("pyphmm vs GATK Java", ours, java))
        compare("(GATK Java vs GKL serial)", java, serial)
    first = rows[0]
    ok = first["max_abs_diff"] <= TOL and first["inf_mismatch"] == 0 and first["nan"] == 0
    print(f"pyphmm {pyphmm.__version__}: {'OK' if ok else 'FAILED'} (GKL serial, tolerance {TOL})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
