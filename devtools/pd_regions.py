"""The PDHMM region generator of the tests and scripts: regions whose
haplotypes are built the way GATK's PartiallyDeterminedHaplotypeComputationEngine
builds them (docs/PDHMM.md, "PD haplotypes in GATK").

Each region has a reference window and a list of variant events in it:
SNPs (two at one position are two alleles), deletions and insertions. A
haplotype determines one locus, either as one event's alt allele or as the
reference there; every other event is undetermined and marked in the PD
bytes: a SNP keeps the reference base with ``SNP`` and its alt base's bit
(alleles at one position OR'd together), a deletion keeps the deleted bases
marked ``DEL_START`` .. ``DEL_END`` (one base: both), an insertion adds its
bases marked the same way. The determined event's alt bases are written
plainly; events overlapping it are left out. Reads are windows of the
sample's two true haplotypes (the reference with some of the events
applied) with sequencing errors at the rate their base qualities say,
base qualities treated as HaplotypeCaller does (below 18 -> 6), and GATK's
gap penalties (45/45/10, or per-base values as BQSR's BI/BD tags give).

Two shapes, both seeded (the same arguments always give the same data):

- ``"gatk"``: issue 41's GATK-shaped regions: 10-60 reads of 50-250 bp x
  2-16 haplotypes of 100-600 bp.
- ``"hc"``: HaplotypeCaller's calls as measured on a 600 kb region at 60x:
  many reads x few haplotypes (median 90 reads, 6 haplotypes), reads of
  68 bp and haplotypes of 136 bp on average, and a long tail of large
  calls (up to ~150 x ~110). Every event but a haplotype's determined one
  is marked, so its haplotypes carry more undetermined positions than that
  run's about 4: a median of 8 (``generate(200, 41)``) to 11
  (``generate(1000, 1)``) a haplotype, with 0.9 deletion or insertion
  spans a haplotype on average.

``generate`` returns ``(ReadBatch, PDHaplotypeBatch)`` pairs;
``scripts/gen_pd_regions.py`` is its command line.
"""

from __future__ import annotations

import numpy as np

from pyphmm.pairhmm import ReadBatch
from pyphmm.pdhmm import PD_A, PD_C, PD_DEL_END, PD_DEL_START, PD_G, PD_SNP, PD_T, PDHaplotypeBatch

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)
BASE_BIT = {ord("A"): PD_A, ord("C"): PD_C, ord("G"): PD_G, ord("T"): PD_T}
SHAPES = ("gatk", "hc")


# ---- events and PD haplotypes -------------------------------------------------


class Event:
    """A variant at reference position ``pos``: ``ref`` bases replaced by
    ``alt`` (both start with the anchor base for indels)."""

    def __init__(self, pos: int, ref: bytes, alt: bytes):
        self.pos, self.ref, self.alt = pos, ref, alt

    @property
    def end(self) -> int:  # last reference position the event covers
        return self.pos + len(self.ref) - 1

    def overlaps(self, other: "Event") -> bool:
        return self.pos <= other.end and other.pos <= self.end


def _random_events(rng, ref: np.ndarray, n_snps: int, n_indels: int, max_indel: int) -> list:
    """SNPs and indels at distinct positions (a second SNP allele at a SNP
    position now and then), sorted by position."""
    events, taken = [], np.zeros(ref.size + 1, bool)
    for kind in ["snp"] * n_snps + ["indel"] * n_indels:
        for _ in range(20):  # a free place, or give up on this event
            pos = int(rng.integers(1, ref.size - 1))
            k = int(rng.integers(1, max_indel + 1))
            if kind == "snp":
                span = (pos, pos)
            else:
                span = (pos, min(pos + k, ref.size - 1))
            if taken[span[0] : span[1] + 1].any():
                continue
            taken[span[0] : span[1] + 1] = True
            r = bytes(ref[span[0] : span[1] + 1])
            if kind == "snp":
                alts = [b for b in b"ACGT" if b != r[0]]
                picks = rng.choice(alts, 2 if rng.random() < 0.1 else 1, replace=False)
                events += [Event(pos, r, bytes([int(a)])) for a in picks]
            elif rng.random() < 0.5 or span[1] == span[0]:
                ins = bytes(ACGT[rng.integers(0, 4, k)])
                events.append(Event(pos, r[:1], r[:1] + ins))
            else:
                events.append(Event(pos, r, r[:1]))
            break
    return sorted(events, key=lambda e: (e.pos, len(e.ref), e.alt))


def pd_haplotype(ref: np.ndarray, events: list, determined: Event | None, locus: int | None):
    """GATK's PD haplotype: ``determined`` written as its alt allele, or
    (``determined`` None) the reference at position ``locus``; every other
    event that does not overlap the determined one marked undetermined.
    Returns (bases, pd) as uint8 arrays."""
    bases = [bytearray([b]) for b in ref.tolist()]  # what each reference position becomes
    pd = [[0] for _ in range(ref.size)]
    skip = np.zeros(ref.size, bool)  # deleted by the determined event
    for e in events:
        if determined is not None and e is not determined and e.overlaps(determined):
            continue
        if determined is None and e.pos == locus:
            continue
        if e is determined:
            if len(e.ref) == len(e.alt) == 1:
                bases[e.pos] = bytearray(e.alt)
            elif len(e.alt) > 1:
                bases[e.pos] += e.alt[1:]
                pd[e.pos] += [0] * (len(e.alt) - 1)
            else:
                skip[e.pos + 1 : e.end + 1] = True
        elif len(e.ref) == len(e.alt) == 1:
            pd[e.pos][0] |= PD_SNP | BASE_BIT[e.alt[0]]
        elif len(e.alt) > 1:  # undetermined insertion: its bases, marked as a span
            marks = [0] * (len(e.alt) - 1)
            marks[0] |= PD_DEL_START
            marks[-1] |= PD_DEL_END
            bases[e.pos] += e.alt[1:]
            pd[e.pos] += marks
        else:  # undetermined deletion: the deleted bases stay, marked as a span
            pd[e.pos + 1][0] |= PD_DEL_START
            pd[e.end][0] |= PD_DEL_END
    out_b, out_pd = bytearray(), []
    for p in range(ref.size):
        if not skip[p]:
            out_b += bases[p]
            out_pd += pd[p]
    return np.frombuffer(bytes(out_b), np.uint8), np.array(out_pd, np.uint8)


def apply_events(ref: np.ndarray, events: list) -> np.ndarray:
    """The reference with non-overlapping ``events`` applied (a true haplotype)."""
    out, p = bytearray(), 0
    for e in sorted(events, key=lambda e: e.pos):
        if e.pos < p:
            continue
        out += bytes(ref[p : e.pos]) + e.alt
        p = e.end + 1
    out += bytes(ref[p:])
    return np.frombuffer(bytes(out), np.uint8)


def pd_haplotypes(rng, ref: np.ndarray, events: list, n_haps: int) -> list:
    """n_haps PD haplotypes: loci in turn, alt allele(s) then the reference."""
    loci = sorted({e.pos for e in events})
    choices = []
    for pos in loci:
        choices += [(e, None) for e in events if e.pos == pos] + [(None, pos)]
    if not choices:
        choices = [(None, -1)]
    start = int(rng.integers(0, len(choices)))
    picks = [choices[(start + i) % len(choices)] for i in range(n_haps)]
    return [pd_haplotype(ref, events, det, locus) for det, locus in picks]


# ---- reads --------------------------------------------------------------------


def _base_quals(rng, n: int) -> np.ndarray:
    """Illumina-like qualities after HaplotypeCaller's treatment (below 18 -> 6)."""
    q = rng.normal(35, 6, n) - np.linspace(0, rng.uniform(0, 12), n)
    q = np.clip(np.rint(q), 2, 41)
    if rng.random() < 0.15:  # a low-quality stretch
        s = int(rng.integers(0, n))
        q[s : s + int(rng.integers(1, 20))] = rng.integers(2, 16)
    q[q < 18] = 6
    return q.astype(np.uint8)


def _gap_quals(rng, n: int, recal: bool) -> tuple:
    if not recal:
        return np.full(n, 45, np.uint8), np.full(n, 45, np.uint8), np.full(n, 10, np.uint8)
    ins = np.clip(np.rint(rng.normal(45, 8, n)), 6, 90).astype(np.uint8)
    dels = np.clip(np.rint(rng.normal(45, 8, n)), 6, 90).astype(np.uint8)
    return ins, dels, np.full(n, 10, np.uint8)


def _read(rng, source: np.ndarray, length: int, recal: bool, n_rate: float) -> tuple:
    length = max(1, min(length, source.size))
    start = int(rng.integers(0, source.size - length + 1))
    bases = source[start : start + length].copy()
    quals = _base_quals(rng, length)
    err = rng.random(length) < np.maximum(10.0 ** (-quals.astype(np.float64) / 10.0), 2e-3)
    bases[err] = ACGT[(np.searchsorted(ACGT, bases[err]) + rng.integers(1, 4, int(err.sum()))) % 4]
    if rng.random() < n_rate:
        bases[rng.integers(0, length, int(rng.integers(1, 3)))] = ord("N")
    return (bases, quals) + _gap_quals(rng, length, recal)


# ---- regions ------------------------------------------------------------------


def _shape(rng, shape: str) -> dict:
    """Counts and lengths of one region of the given shape."""
    if shape == "gatk":
        nominal = int(rng.choice([50, 76, 101, 150, 151, 250]))
        return {
            "reads": int(rng.integers(10, 61)),
            "haps": int(rng.integers(2, 17)),
            "ref_len": int(rng.integers(max(100, nominal), 601)),
            "read_len": lambda: nominal if rng.random() < 0.6 else int(rng.integers(50, nominal + 1)),
            "snps": int(rng.integers(2, 12)),
            "indels": int(rng.integers(0, 5)),
        }
    if shape == "hc":
        big = rng.random() < 0.04  # the long tail: large calls
        reads = int(np.clip(rng.lognormal(np.log(90), 0.45), 20, 250)) if not big else int(rng.integers(120, 160))
        haps = int(np.clip(rng.lognormal(np.log(6), 0.55), 2, 40)) if not big else int(rng.integers(40, 115))
        ref_len = int(np.clip(rng.lognormal(np.log(125), 0.4), 60, 365))
        return {
            "reads": reads,
            "haps": haps,
            "ref_len": ref_len,
            # reads clipped to the active region: broad, 68 bp on average
            "read_len": lambda: int(np.clip(rng.gamma(3.0, 68 / 3.0), 15, min(151, ref_len))),
            "snps": max(2, int(haps // 2) + int(rng.integers(1, 4))),
            "indels": int(rng.integers(0, 3)),
        }
    raise ValueError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}")


def make_region(rng, shape: str = "gatk", n_rate: float = 0.02):
    """One seeded region of the given shape: (ReadBatch, PDHaplotypeBatch)."""
    s = _shape(rng, shape)
    ref = ACGT[rng.integers(0, 4, s["ref_len"])]
    events = _random_events(rng, ref, s["snps"], s["indels"], max_indel=8)
    haps = pd_haplotypes(rng, ref, events, s["haps"])
    # The sample: two true haplotypes, each the reference with some events.
    truths = []
    for _ in range(2):
        chosen = [e for e in events if rng.random() < 0.3]
        truths.append(apply_events(ref, chosen))
    recal = rng.random() < 0.3
    reads = [_read(rng, truths[int(rng.integers(0, 2))], s["read_len"](), recal, n_rate) for _ in range(s["reads"])]
    return pack(reads, haps)


def pack(reads, haps):
    """(ReadBatch, PDHaplotypeBatch) from (bases, quals, ins, dels, gcp) tuples and (bases, pd) pairs."""
    offsets = np.zeros(len(reads) + 1, np.int64)
    np.cumsum([r[0].size for r in reads], out=offsets[1:])
    cols = [np.concatenate([np.asarray(r[i], np.uint8) for r in reads]) for i in range(5)]
    hap_offsets = np.zeros(len(haps) + 1, np.int64)
    np.cumsum([h[0].size for h in haps], out=hap_offsets[1:])
    bases = np.concatenate([np.asarray(h[0], np.uint8) for h in haps])
    pd = np.concatenate([np.asarray(h[1], np.uint8) for h in haps])
    return ReadBatch(*cols, offsets), PDHaplotypeBatch(bases, pd, hap_offsets)


def generate(regions: int = 20, seed: int = 0, shape: str = "gatk", max_pairs: int | None = None, n_rate=0.02) -> list:
    """``regions`` seeded regions of ``shape`` ("gatk" or "hc"), fewer if
    ``max_pairs`` (reads x haplotypes) would be passed."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}")
    rng = np.random.default_rng(seed)
    out, pairs = [], 0
    for _ in range(regions):
        reg = make_region(rng, shape, n_rate)
        n = len(reg[0]) * len(reg[1])
        if max_pairs is not None and pairs + n > max_pairs:
            break
        pairs += n
        out.append(reg)
    return out


def pairs_and_cells(regions) -> tuple:
    pairs = sum(len(r) * len(h) for r, h in regions)
    cells = sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regions)
    return pairs, cells
