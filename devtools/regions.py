#!/usr/bin/env python3
"""Seeded generator of realistic PairHMM regions (GATK active regions).

Each region has one random reference; its haplotypes are that reference
with SNPs and small indels (the first is the reference itself), and its
reads are windows of those haplotypes with sequencing errors, Illumina-like
base qualities, GATK-like gap penalties and the occasional N. Shapes follow
HaplotypeCaller: most regions 20-200 reads x 2-8 haplotypes, extremes
1-500 x 1-40; reads 10-151 bp, haplotypes 30-521 bp.

``--underflow K`` appends K regions built to underflow the float pass (long
reads at high base quality against unrelated haplotypes, so the float sum
falls below 1e-28 and the per-pair double recompute is needed).

Importable: ``generate(...)`` returns a list of ``(ReadBatch,
HaplotypeBatch)``; files are written with ``pyphmm.io.write_input_records``.

    python3 scripts/gen_regions.py --regions 2000 --seed 1 --output regions.in
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # last, so PYTHONPATH can pick another pyphmm build
    sys.path.append(ROOT)

from pyphmm.io import write_input_records  # noqa: E402
from pyphmm.pairhmm import HaplotypeBatch, ReadBatch  # noqa: E402

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)
# Printable bytes other than A,C,G,T,N that GKL (and pyphmm) read as A.
ODD_BYTES = np.frombuffer(b"acgtnRYKMBDHVX.-*", dtype=np.uint8)
MIN_READ, MAX_READ = 10, 151
MIN_HAP, MAX_HAP = 30, 521


def _num_reads(rng) -> int:
    u = rng.random()
    if u < 0.75:
        return int(rng.integers(20, 201))
    if u < 0.88:
        return int(rng.integers(1, 20))
    return int(rng.integers(201, 501))


def _num_haps(rng) -> int:
    u = rng.random()
    if u < 0.78:
        return int(rng.integers(2, 9))
    if u < 0.88:
        return 1
    return int(rng.integers(9, 41))


def _random_seq(rng, n: int) -> np.ndarray:
    return ACGT[rng.integers(0, 4, n)]


def _mutate(rng, ref: np.ndarray) -> np.ndarray:
    """A haplotype: ref with a few SNPs and small insertions/deletions."""
    hap = ref.copy()
    for _ in range(int(rng.integers(1, 5))):
        kind = rng.random()
        pos = int(rng.integers(0, hap.size))
        if kind < 0.6:
            hap[pos] = ACGT[(np.searchsorted(ACGT, hap[pos]) + rng.integers(1, 4)) % 4]
        elif kind < 0.8:
            ins = _random_seq(rng, int(rng.integers(1, 11)))
            hap = np.concatenate([hap[:pos], ins, hap[pos:]])
        else:
            k = int(rng.integers(1, 11))
            hap = np.concatenate([hap[:pos], hap[pos + k:]])
    if hap.size > MAX_HAP:
        hap = hap[:MAX_HAP]
    if hap.size < MIN_HAP:
        hap = np.concatenate([hap, _random_seq(rng, MIN_HAP - hap.size)])
    return hap


def _base_quals(rng, n: int, hi: bool = False) -> np.ndarray:
    """Illumina-like: mostly 30-41 with a decaying tail, a few low runs."""
    if hi:
        return rng.integers(40, 61, n).astype(np.uint8)
    q = rng.normal(35, 6, n) - np.linspace(0, rng.uniform(0, 12), n)
    q = np.clip(np.rint(q), 6, 41)
    if rng.random() < 0.15:  # a low-quality stretch
        s = int(rng.integers(0, n))
        q[s:s + int(rng.integers(1, 20))] = rng.integers(6, 16)
    if rng.random() < 0.05:  # some pipelines emit very high values
        q[rng.random(n) < 0.1] = rng.integers(60, 91)
    return q.astype(np.uint8)


def _gap_quals(rng, n: int, mode: str) -> tuple:
    if mode == "default":
        return (np.full(n, 45, np.uint8), np.full(n, 45, np.uint8), np.full(n, 10, np.uint8))
    # BQSR-recalibrated style: per-base values around the defaults.
    ins = np.clip(np.rint(rng.normal(45, 8, n)), 10, 90).astype(np.uint8)
    dels = np.clip(np.rint(rng.normal(45, 8, n)), 10, 90).astype(np.uint8)
    gcp = np.clip(np.rint(rng.normal(10, 4, n)), 5, 40).astype(np.uint8)
    if rng.random() < 0.2:
        ins[:] = rng.integers(10, 91)
        dels[:] = rng.integers(10, 91)
        gcp[:] = rng.integers(5, 41)
    return ins, dels, gcp


def _sample_read(rng, hap: np.ndarray, length: int, quals: np.ndarray, n_rate: float) -> np.ndarray:
    length = min(length, hap.size)
    start = int(rng.integers(0, hap.size - length + 1))
    read = hap[start:start + length].copy()
    # Errors at the rate the base qualities promise (at least 0.1%).
    err = rng.random(length) < np.maximum(10.0 ** (-quals[:length].astype(np.float64) / 10.0), 1e-3)
    read[err] = ACGT[(np.searchsorted(ACGT, read[err]) + rng.integers(1, 4, err.sum())) % 4]
    if rng.random() < 0.03:  # an occasional read-level indel
        pos = int(rng.integers(1, length))
        if rng.random() < 0.5:
            read = np.concatenate([read[:pos], _random_seq(rng, 1), read[pos:-1]])
        else:
            read = np.concatenate([read[:pos], read[pos + 1:], _random_seq(rng, 1)])
    if rng.random() < n_rate:
        read[rng.integers(0, length, int(rng.integers(1, 4)))] = ord("N")
    return read


def _region(rng, n_rate: float, odd_rate: float, underflow: bool = False):
    if underflow:
        nr, nh = int(rng.integers(5, 40)), int(rng.integers(2, 6))
        read_len = lambda: int(rng.integers(120, 152))  # noqa: E731
        ref_len = int(rng.integers(160, MAX_HAP + 1))
    else:
        nr, nh = _num_reads(rng), _num_haps(rng)
        nominal = int(rng.choice([76, 101, 126, 150, 151], p=[0.05, 0.2, 0.1, 0.3, 0.35]))
        read_len = lambda: nominal if rng.random() < 0.6 else int(rng.integers(MIN_READ, nominal + 1))  # noqa: E731
        ref_len = int(np.clip(rng.normal(nominal + 250, 90), max(MIN_HAP, nominal), MAX_HAP))
        if rng.random() < 0.05:
            ref_len = int(rng.integers(MIN_HAP, MAX_HAP + 1))
    ref = _random_seq(rng, ref_len)
    haps = [ref] + [_mutate(rng, ref) for _ in range(nh - 1)]
    if rng.random() < n_rate:
        h = haps[int(rng.integers(0, nh))]
        h[rng.integers(0, h.size, int(rng.integers(1, 3)))] = ord("N")
    gap_mode = "default" if rng.random() < 0.6 else "recal"
    reads = []
    for _ in range(nr):
        n = read_len()
        if underflow:
            quals = _base_quals(rng, n, hi=True)
            source = _random_seq(rng, max(n, MIN_HAP))  # unrelated to every haplotype
            bases = _sample_read(rng, source, n, quals, 0.0)
        else:
            src = haps[int(rng.integers(0, nh))]
            n = min(n, src.size)
            quals = _base_quals(rng, n)
            bases = _sample_read(rng, src, n, quals, n_rate)
        if odd_rate and rng.random() < odd_rate:
            bases[rng.integers(0, bases.size, int(rng.integers(1, 4)))] = rng.choice(ODD_BYTES)
        ins, dels, gcp = _gap_quals(rng, bases.size, gap_mode)
        reads.append((bases, quals[:bases.size], ins, dels, gcp))
    if odd_rate and rng.random() < odd_rate:
        h = haps[int(rng.integers(0, nh))]
        h[rng.integers(0, h.size, 2)] = rng.choice(ODD_BYTES)
    return _pack(reads, haps)


def _pack(reads, haps):
    offsets = np.zeros(len(reads) + 1, np.int64)
    np.cumsum([r[0].size for r in reads], out=offsets[1:])
    cols = [np.concatenate([r[i] for r in reads]).astype(np.uint8) for i in range(5)]
    hap_offsets = np.zeros(len(haps) + 1, np.int64)
    np.cumsum([h.size for h in haps], out=hap_offsets[1:])
    return (ReadBatch(*cols, offsets),
            HaplotypeBatch(np.concatenate(haps).astype(np.uint8), hap_offsets))


def _truncate(region, max_reads: int):
    reads, haps = region
    end = int(reads.offsets[max_reads])
    return (ReadBatch(reads.bases[:end], reads.quals[:end], reads.ins[:end], reads.dels[:end],
                      reads.gcp[:end], reads.offsets[:max_reads + 1]), haps)


def generate(regions: int = 100, seed: int = 0, max_pairs: int | None = None, underflow: int = 0,
             n_rate: float = 0.02, odd_rate: float = 0.0, max_reads: int | None = None) -> list:
    """``regions`` realistic regions (+ ``underflow`` underflow-forcing ones).

    Returns a list of ``(ReadBatch, HaplotypeBatch)``. The same arguments
    always give the same data. ``max_pairs`` caps reads x haplotypes over the
    realistic regions (the last region is cut to fit); ``n_rate`` is the
    chance that a read (and a region's haplotypes) carries N bases;
    ``odd_rate`` the chance that a read carries bytes other than A,C,G,T,N;
    ``max_reads`` keeps at most that many reads per region (small samples).
    """
    rng = np.random.default_rng(seed)
    out, pairs = [], 0
    for _ in range(regions):
        if max_pairs is not None and pairs >= max_pairs:
            break
        reg = _region(rng, n_rate, odd_rate)
        if max_reads is not None and len(reg[0]) > max_reads:
            reg = _truncate(reg, max_reads)
        nr, nh = len(reg[0]), len(reg[1])
        if max_pairs is not None and pairs + nr * nh > max_pairs:
            keep = (max_pairs - pairs) // nh
            if keep == 0:  # not even one read of this region fits
                break
            reg = _truncate(reg, keep)
            nr = len(reg[0])
        pairs += nr * nh
        out.append(reg)
    for _ in range(underflow):
        reg = _region(rng, 0.0, 0.0, underflow=True)
        if max_reads is not None and len(reg[0]) > max_reads:
            reg = _truncate(reg, max_reads)
        out.append(reg)
    return out


def pairs_and_cells(regions) -> tuple:
    pairs = sum(len(r) * len(h) for r, h in regions)
    cells = sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regions)
    return pairs, cells


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--regions", type=int, default=100, help="realistic regions (default 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-pairs", type=int, default=None, help="cap on read x haplotype pairs")
    p.add_argument("--underflow", type=int, default=0, metavar="K",
                   help="also append K underflow-forcing regions")
    p.add_argument("--n-rate", type=float, default=0.02, help="chance of N bases per read")
    p.add_argument("--odd-rate", type=float, default=0.0,
                   help="chance per read of bytes other than ACGTN (read as A)")
    p.add_argument("--max-reads", type=int, default=None, help="cap on reads per region")
    p.add_argument("--output", "-o", default="-", help="record file, or - for stdout")
    a = p.parse_args(argv)
    if a.regions < 0 or a.underflow < 0:
        p.error("--regions and --underflow must be >= 0")
    regs = generate(a.regions, a.seed, a.max_pairs, a.underflow, a.n_rate, a.odd_rate,
                    a.max_reads)
    write_input_records(sys.stdout if a.output == "-" else a.output, regs)
    pairs, cells = pairs_and_cells(regs)
    print(f"gen_regions: {len(regs)} regions, {pairs} pairs, {cells} cells", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
