"""PDHMM regions in the shape GATK's PartiallyDeterminedHaplotypeComputationEngine
builds them, as plain tuples for the Java harnesses.

A region has one random reference and a few events (SNPs, deletions,
insertions). Each haplotype determines one locus: haplotype 0 the
reference, haplotype k the alt of event k-1; every other event stays
undetermined and is marked in the PD bytes (docs/PDHMM.md):

- an undetermined SNP keeps the reference base, PD = SNP | the alt's base
  bit (two SNPs at one position are OR-ed into one byte);
- an undetermined deletion keeps the deleted bases, DEL_START on the first
  and DEL_END on the last (both on a one-base deletion);
- an undetermined insertion contains the inserted bases, marked like a
  deletion ("these bases may be absent");
- the determined event's alt bases are written with PD 0.

Reads are windows of realised haplotypes (each undetermined event taken or
not) with sequencing errors at their base qualities, GATK's gap penalties
(flat 45/45/10, or per-base BI/BD-like values) and the occasional N.

Shapes follow HaplotypeCaller's --use-pdhmm calls (issue 41): many reads x
few haplotypes, reads 50-150 bp, haplotypes 100-400 bp; ``workload`` gives
the benchmarks' sets. A read is (bases,
quals, ins, dels, gcp) and a haplotype (bases, pd), all bytes, qualities raw
phred: the fields of gatk-native-bindings 1.1.0's holders.
"""

from __future__ import annotations

import numpy as np

ACGT = b"ACGT"
SNP, DEL_START, DEL_END = 1, 2, 4
BASE_BIT = {ord("A"): 8, ord("C"): 16, ord("G"): 32, ord("T"): 64}


def _random_bases(rng, n: int) -> bytes:
    return np.frombuffer(ACGT, np.uint8)[rng.integers(0, 4, n)].tobytes()


def _events(rng, ref_len: int, n_events: int) -> list:
    """(kind, position, payload) sorted by position, non-overlapping:
    ("snp", pos, alt base), ("del", pos, length), ("ins", pos, bases)."""
    events, taken = [], set()
    for _ in range(n_events * 4):
        if len(events) == n_events:
            break
        pos = int(rng.integers(1, ref_len - 12))
        kind = ("snp", "snp", "del", "ins")[int(rng.integers(0, 4))]
        span = int(rng.integers(1, 9)) if kind == "del" else 1
        cells = set(range(pos - 1, pos + span + 1))
        if cells & taken:
            continue
        taken |= cells
        if kind == "snp":
            ref_base = None  # filled by the caller, which knows the reference
            events.append(("snp", pos, ref_base))
        elif kind == "del":
            events.append(("del", pos, span))
        else:
            events.append(("ins", pos, _random_bases(rng, int(rng.integers(1, 7)))))
    return sorted(events, key=lambda e: e[1])


def _haplotype(ref: bytes, events: list, determined: int) -> tuple:
    """(bases, pd) with event `determined` applied as alt (-1: the
    reference) and every other event marked undetermined."""
    bases, pd = bytearray(), bytearray()
    pos = 0
    for k, (kind, at, payload) in enumerate(events):
        bases += ref[pos:at]
        pd += bytes(at - pos)
        pos = at
        if k == determined:
            if kind == "snp":
                bases.append(payload)
                pd.append(0)
                pos += 1
            elif kind == "del":
                pos += payload
            else:
                bases += payload
                pd += bytes(len(payload))
            continue
        if kind == "snp":
            bases.append(ref[at])
            pd.append(SNP | BASE_BIT[payload])
            pos += 1
        else:
            span = ref[at : at + payload] if kind == "del" else payload
            marks = bytearray(len(span))
            marks[0] |= DEL_START
            marks[-1] |= DEL_END
            bases += span
            pd += marks
            if kind == "del":
                pos += payload
    bases += ref[pos:]
    pd += bytes(len(ref) - pos)
    return bytes(bases), bytes(pd)


def _realise(rng, bases: bytes, pd: bytes, marked: list) -> bytes:
    """One sequence a haplotype stands for: each undetermined SNP takes
    one of its bases, each marked span is kept or dropped. marked: the
    positions whose PD byte is not 0."""
    out, j = bytearray(), 0
    k = 0
    while k < len(marked):
        at = marked[k]
        out += bases[j:at]
        p = pd[at]
        if p & DEL_START:
            end = at
            while not pd[end] & DEL_END:
                end += 1
            if rng.random() < 0.5:
                out += bases[at : end + 1]
            j = end + 1
            while k < len(marked) and marked[k] <= end:
                k += 1
            continue
        if p & SNP and rng.random() < 0.5:
            choices = [b for b, bit in BASE_BIT.items() if p & bit]
            out.append(choices[int(rng.integers(0, len(choices)))])
        else:
            out.append(bases[at])
        j = at + 1
        k += 1
    out += bases[j:]
    return bytes(out)


def _read(rng, source: bytes, length: int, flat_gaps: bool) -> tuple:
    length = min(length, len(source))
    start = int(rng.integers(0, len(source) - length + 1))
    q = np.clip(
        np.rint(rng.normal(34, 6, length) - np.arange(length) * (rng.uniform(0, 10) / max(1, length - 1))), 6, 41
    )
    quals = q.astype(np.uint8)
    read = bytearray(source[start : start + length])
    err = rng.random(length) < np.maximum(10.0 ** (-q / 10.0), 1e-3)
    for i in np.flatnonzero(err):
        read[i] = ACGT[(ACGT.index(read[i]) + int(rng.integers(1, 4))) % 4] if read[i] in ACGT else ord("A")
    if rng.random() < 0.02:
        read[int(rng.integers(0, length))] = ord("N")
    if flat_gaps:
        ins, dels, gcp = bytes([45] * length), bytes([45] * length), bytes([10] * length)
    else:
        ins = np.clip(np.rint(rng.normal(44, 6, length)), 6, 60).astype(np.uint8).tobytes()
        dels = np.clip(np.rint(rng.normal(44, 6, length)), 6, 60).astype(np.uint8).tobytes()
        gcp = bytes([10] * length)
    return bytes(read), quals.tobytes(), ins, dels, gcp


def make_pd_region(rng, n_reads: int, n_haps: int, read_len=(50, 150), ref_len=(100, 400)):
    """One region: (reads, haps) in the holders' tuple form."""
    ref = _random_bases(rng, int(rng.integers(ref_len[0], ref_len[1] + 1)))
    events = _events(rng, len(ref), max(n_haps - 1, int(rng.integers(2, 7))))
    events = [
        (k, at, ACGT[(ACGT.index(ref[at]) + int(rng.integers(1, 4))) % 4] if k == "snp" else p) for k, at, p in events
    ]
    haps = [_haplotype(ref, events, h - 1) for h in range(n_haps)]
    flat = rng.random() < 0.6
    nominal = int(rng.integers(read_len[0], read_len[1] + 1))
    marks = [[i for i, p in enumerate(pd) if p] for _, pd in haps]
    reads = []
    for _ in range(n_reads):
        h = int(rng.integers(0, n_haps))
        length = nominal if rng.random() < 0.7 else int(rng.integers(read_len[0], nominal + 1))
        reads.append(_read(rng, _realise(rng, *haps[h], marks[h]), length, flat))
    return reads, haps


def gatk_regions(n: int, seed: int, reads=(10, 60), haps=(2, 8), read_len=(50, 150), ref_len=(100, 400)) -> list:
    """n regions of GATK's --use-pdhmm shape (seeded: the same arguments
    always give the same regions)."""
    rng = np.random.default_rng(seed)
    return [
        make_pd_region(
            rng, int(rng.integers(reads[0], reads[1] + 1)), int(rng.integers(haps[0], haps[1] + 1)), read_len, ref_len
        )
        for _ in range(n)
    ]


def _hc_haps(rng) -> int:
    u = rng.random()
    if u < 0.75:
        return int(rng.integers(2, 9))
    if u < 0.95:
        return int(rng.integers(9, 25))
    return int(rng.integers(25, 115))


def workload(shape: str, n: int, seed: int) -> list:
    """Benchmark workloads (seeded):
    - "hc": HaplotypeCaller --use-pdhmm's calls as measured in issue 41 (a
      median of 90 reads, 46-203, x 6 haplotypes, 2-114 with a long tail;
      reads 50-100 bp, haplotypes 100-365 bp);
    - "issue": issue 41's GKL scale figure (10-60 reads of 100-150 bp x
      2-16 haplotypes of 250-500 bp)."""
    rng = np.random.default_rng(seed)
    if shape == "issue":
        return gatk_regions(n, seed, reads=(10, 60), haps=(2, 16), read_len=(100, 150), ref_len=(250, 500))
    if shape != "hc":
        raise ValueError(f"unknown workload shape {shape!r} (hc, issue)")
    out = []
    for _ in range(n):
        reads = int(np.clip(np.rint(rng.lognormal(np.log(90), 0.45)), 10, 250))
        out.append(make_pd_region(rng, reads, _hc_haps(rng), (50, 100), (100, 365)))
    return out


def region_cells(region) -> int:
    reads, haps = region
    return sum(len(r[0]) for r in reads) * sum(len(h[0]) for h in haps)
