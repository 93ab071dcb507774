"""Seeded generator of Smith-Waterman test pairs (ref, alt) as bytes.

Covers what HaplotypeCaller meets and the edge rules: SNPs, insertions and
deletions up to 100 bp, tandem repeats with unit-count changes, N bases,
leading and trailing overhangs, alt longer and shorter than ref, exact
substrings (also with several occurrences) and unrelated sequences.
"""

from __future__ import annotations

import numpy as np

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)
KINDS = ("snp", "indel", "repeat", "n_bases", "overhang", "longer", "exact", "random", "mixed")


def _rand(rng, n):
    return BASES[rng.integers(0, 4, n)].tobytes()


def _snps(rng, s: bytes, k: int) -> bytes:
    b = bytearray(s)
    for _ in range(k):
        if not b:
            break
        i = int(rng.integers(0, len(b)))
        b[i] = int(BASES[(list(BASES).index(b[i]) + int(rng.integers(1, 4))) % 4]) if b[i] in BASES else 65
    return bytes(b)


def _indel(rng, s: bytes, max_len: int) -> bytes:
    if len(s) < 4:
        return s
    k = int(rng.integers(1, max_len + 1))
    i = int(rng.integers(1, len(s) - 1))
    if rng.random() < 0.5:
        return s[:i] + s[i + min(k, len(s) - i - 1) :]
    return s[:i] + _rand(rng, k) + s[i:]


def _repeat_ref(rng):
    unit = _rand(rng, int(rng.integers(1, 7)))
    copies = int(rng.integers(3, 15))
    left, right = _rand(rng, int(rng.integers(5, 40))), _rand(rng, int(rng.integers(5, 40)))
    return left, unit, copies, right


def make_pair(rng, kind: str, short: bool = True):
    scale = 1 if short else 4
    if kind == "snp":
        ref = _rand(rng, int(rng.integers(15, 120 * scale)))
        a = int(rng.integers(0, len(ref) // 3))
        b = int(rng.integers(a + max(5, len(ref) // 3), len(ref) + 1))
        return ref, _snps(rng, ref[a:b], int(rng.integers(1, 4)))
    if kind == "indel":
        ref = _rand(rng, int(rng.integers(40, 160 * scale)))
        alt = _indel(rng, ref, 100 if rng.random() < 0.3 else 8)
        if rng.random() < 0.3:
            alt = _snps(rng, alt, 1)
        return ref, alt
    if kind == "repeat":
        left, unit, copies, right = _repeat_ref(rng)
        ref = left + unit * copies + right
        delta = int(rng.integers(-min(copies - 1, 4), 5))
        alt = left + unit * (copies + delta) + right
        if rng.random() < 0.5:
            alt = alt[int(rng.integers(0, len(left))) :]
        if rng.random() < 0.5:
            alt = alt[: len(alt) - int(rng.integers(0, len(right)))]
        return ref, alt or unit
    if kind == "n_bases":
        ref = bytearray(_rand(rng, int(rng.integers(20, 100 * scale))))
        alt = bytearray(ref[int(rng.integers(0, 5)) :])
        for seq in (ref, alt):
            for _ in range(int(rng.integers(0, 4))):
                seq[int(rng.integers(0, len(seq)))] = ord("N")
        return bytes(ref), bytes(_snps(rng, bytes(alt), int(rng.integers(0, 2))))
    if kind == "overhang":
        ref = _rand(rng, int(rng.integers(20, 120 * scale)))
        k = int(rng.integers(5, len(ref)))
        over = _rand(rng, int(rng.integers(1, 30)))
        alt = over + ref[:k] if rng.random() < 0.5 else ref[-k:] + over
        if rng.random() < 0.3:
            alt = _snps(rng, alt, 1)
        return ref, alt
    if kind == "longer":
        ref = _rand(rng, int(rng.integers(10, 80 * scale)))
        alt = _rand(rng, int(rng.integers(0, 20))) + _indel(rng, ref, 30) + _rand(rng, int(rng.integers(0, 20)))
        return ref, alt
    if kind == "exact":
        unit = _rand(rng, int(rng.integers(3, 20)))
        ref = (
            _rand(rng, int(rng.integers(0, 30))) + unit * int(rng.integers(1, 4)) + _rand(rng, int(rng.integers(0, 30)))
        )
        a = int(rng.integers(0, len(ref)))
        return ref, ref[a : a + int(rng.integers(1, len(ref) - a + 1))]
    if kind == "random":
        return _rand(rng, int(rng.integers(1, 60 * scale))), _rand(rng, int(rng.integers(1, 60 * scale)))
    if kind == "mixed":
        ref = _rand(rng, int(rng.integers(30, 150 * scale)))
        alt = ref[int(rng.integers(0, 10)) :]
        for _ in range(int(rng.integers(1, 4))):
            alt = _indel(rng, alt, 12) if rng.random() < 0.5 else _snps(rng, alt, 1)
        return ref, alt or b"A"
    raise ValueError(kind)


def make_pairs(n: int, seed: int, short: bool = True):
    """n pairs cycling through every kind; returns (refs, alts, kinds)."""
    rng = np.random.default_rng(seed)
    refs, alts, kinds = [], [], []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        r, a = make_pair(rng, kind, short)
        refs.append(r)
        alts.append(a)
        kinds.append(kind)
    return refs, alts, kinds


def hap_vs_ref(n: int, seed: int, lo: int = 300, hi: int = 520):
    """Haplotype-vs-reference pairs: ref lo..hi bp, hap with SNPs and indels."""
    rng = np.random.default_rng(seed)
    refs, alts = [], []
    for _ in range(n):
        ref = _rand(rng, int(rng.integers(lo, hi + 1)))
        alt = _snps(rng, ref, int(rng.integers(0, 6)))
        for _ in range(int(rng.integers(0, 3))):
            alt = _indel(rng, alt, 30)
        refs.append(ref)
        alts.append(alt[:hi])
    return refs, alts


def read_vs_hap(n: int, seed: int, hap_len: int = 300, lo: int = 40, hi: int = 151):
    """Read-vs-best-haplotype pairs: reads lo..hi bp taken from a hap_len haplotype with errors."""
    rng = np.random.default_rng(seed)
    refs, alts = [], []
    for _ in range(n):
        hap = _rand(rng, hap_len)
        k = int(rng.integers(lo, hi + 1))
        a = int(rng.integers(0, hap_len - k + 1))
        read = _snps(rng, hap[a : a + k], int(rng.integers(0, 4)))
        if rng.random() < 0.2:
            read = _indel(rng, read, 10)[:hi]
        refs.append(hap)
        alts.append(read)
    return refs, alts


# GATK's parameter sets (SmithWatermanAlignmentConstants) by call site.
READ_TO_HAPLOTYPE = (10, -15, -30, -5)  # ALIGNMENT_TO_BEST_HAPLOTYPE
HAPLOTYPE_TO_REFERENCE = (200, -150, -260, -11)  # NEW_SW_PARAMETERS
DANGLING_END = (25, -50, -110, -6)  # STANDARD_NGS
SW_PAD = b"N" * 10  # CigarUtils.calculateCigar pads both sequences with this


def _with_repeats(rng, n):
    """n random bases with a tandem repeat in a third of the sequences."""
    s = _rand(rng, n)
    if rng.random() < 0.33 and n > 40:
        unit = _rand(rng, int(rng.integers(1, 5)))
        rep = unit * int(rng.integers(4, 12))
        at = int(rng.integers(0, n - len(rep))) if n > len(rep) else 0
        s = (s[:at] + rep + s[at + len(rep) :])[:n]
    return s


def _read_of(rng, hap):
    """A read of 100-151 bp from hap: 1-4 substitutions, a fifth with an
    indel of 1-10 bp, one in twenty with an N."""
    k = int(rng.integers(100, min(152, len(hap) + 1)))
    a = int(rng.integers(0, len(hap) - k + 1))
    read = _snps(rng, hap[a : a + k], int(rng.integers(1, 5)))
    if rng.random() < 0.2:
        read = _indel(rng, read, 10)[:151]
    if rng.random() < 0.05:
        b = bytearray(read)
        b[int(rng.integers(0, len(b)))] = ord("N")
        read = bytes(b)
    return read


def haplotype_caller_mix(n: int, seed: int, read_share: float = 0.78, hap_share: float = 0.18):
    """HaplotypeCaller's Smith-Waterman calls, one tuple (ref, alt, params,
    strategy, kind) per call, in call order:

    - "read_vs_hap" (read_share of the calls): AlignmentUtils.createReadAlignedToRef,
      ref = the read's best haplotype (250-600 bp), alt = the read (100-151 bp,
      1-4 substitutions, a fifth with an indel of 1-10 bp, a few N bases),
      READ_TO_HAPLOTYPE, SOFTCLIP;
    - "hap_vs_ref" (hap_share): CigarUtils.calculateCigar from the assembler,
      ref window and haplotype of 250-600 bp (1-5 substitutions, 0-2 indels
      of 1-30 bp) both padded with SW_PAD, HAPLOTYPE_TO_REFERENCE, SOFTCLIP
      (a tenth INDEL: given alleles and PDHMM's realignment);
    - "dangling_end" (the rest): the assembler's dangling-head/tail recovery,
      reference and branch paths of 10-60 bp, DANGLING_END, LEADING_INDEL.
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        u = rng.random()
        if u < read_share:
            hap = _with_repeats(rng, int(rng.integers(250, 601)))
            out.append((hap, _read_of(rng, hap), READ_TO_HAPLOTYPE, "SOFTCLIP", "read_vs_hap"))
        elif u < read_share + hap_share:
            ref = _with_repeats(rng, int(rng.integers(250, 601)))
            hap = _snps(rng, ref, int(rng.integers(1, 6)))
            for _ in range(int(rng.integers(0, 3))):
                hap = _indel(rng, hap, 30)
            strategy = "INDEL" if rng.random() < 0.1 else "SOFTCLIP"
            out.append((SW_PAD + ref + SW_PAD, SW_PAD + hap + SW_PAD, HAPLOTYPE_TO_REFERENCE, strategy, "hap_vs_ref"))
        else:
            ref = _rand(rng, int(rng.integers(10, 61)))
            k = int(rng.integers(5, len(ref) + 1))
            alt = ref[:k] + _rand(rng, int(rng.integers(1, 30)))
            out.append((ref, _snps(rng, alt, int(rng.integers(0, 2))), DANGLING_END, "LEADING_INDEL", "dangling_end"))
    return out


def _region_events(rng, length):
    """A region's variant events, sorted by position: (pos, ref_len, alt_bases)."""
    lo, hi = min(75, length // 4), max(min(75, length // 4) + 1, length - 75)
    events, taken = [], set()
    for _ in range(int(rng.integers(1, 7))):
        pos = int(rng.integers(lo, hi))
        if any(abs(pos - q) < 32 for q in taken):
            continue
        taken.add(pos)
        u = rng.random()
        if u < 0.7:
            events.append((pos, 1, None))  # SNP: the base filled in by _apply
        elif u < 0.85:
            events.append((pos, int(rng.integers(1, 31)), b""))  # deletion
        else:
            events.append((pos, 0, _rand(rng, int(rng.integers(1, 31)))))  # insertion
    return sorted(events)


def _apply(ref, events, alleles):
    """ref with the events whose allele is 1 applied (left to right)."""
    out, at = [], 0
    for (pos, ref_len, alt), on in zip(events, alleles):
        if not on:
            continue
        out.append(ref[at:pos])
        if alt is None:  # SNP: the next base in ACGT order
            alt = bytes([BASES[(list(BASES).index(ref[pos]) + 1) % 4]]) if ref[pos] in BASES else b"A"
        out.append(alt)
        at = pos + ref_len
    out.append(ref[at:])
    return b"".join(out)


def haplotype_caller_regions(n: int, seed: int, read_share: float = 0.78, hap_share: float = 0.18):
    """HaplotypeCaller's Smith-Waterman calls in the order it makes them,
    region by region; tuples as haplotype_caller_mix's, n of them.

    A region is a reference window of 250-600 bp with 1-6 events (SNPs,
    deletions and insertions of 1-30 bp) at least 75 bp inside it (GATK pads
    the active region by 100 bp). Its haplotypes are the combinations of the
    events' alleles, ranked by the product of per-event allele weights, as
    the assembler's k-best path finder ranks paths by score; the reference
    itself is left out (calculateCigar does not align it). Per region, in
    call order:
    - "dangling_end": the assembler's recovery, as in haplotype_caller_mix;
    - "hap_vs_ref": ReadThreadingAssembler aligns each haplotype in rank
      order against the same padded window (SOFTCLIP; a tenth of the
      regions INDEL, as PDHMM's realignment and the given-alleles path);
    - "read_vs_hap": each read (100-151 bp, as in haplotype_caller_mix)
      against its best haplotype, the reference haplotype included.
    The calls of each kind come in the shares of haplotype_caller_mix.
    """
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        ref = _with_repeats(rng, int(rng.integers(250, 601)))
        events = _region_events(rng, len(ref))
        weights = rng.uniform(0.05, 0.95, len(events))
        combos = [tuple((k >> e) & 1 for e in range(len(events))) for k in range(1, 1 << len(events))]
        combos.sort(key=lambda c: -float(np.prod([w if a else 1 - w for w, a in zip(weights, c)])))
        haps, seen = [], {ref}
        for c in combos:
            h = _apply(ref, events, c)
            if h not in seen:
                seen.add(h)
                haps.append(h)
        if not haps:
            continue
        for _ in range(int(round(len(haps) * (1 - read_share - hap_share) / hap_share))):
            r = _rand(rng, int(rng.integers(10, 61)))
            k = int(rng.integers(5, len(r) + 1))
            alt = r[:k] + _rand(rng, int(rng.integers(1, 30)))
            out.append((r, _snps(rng, alt, int(rng.integers(0, 2))), DANGLING_END, "LEADING_INDEL", "dangling_end"))
        strategy = "INDEL" if rng.random() < 0.1 else "SOFTCLIP"
        for h in haps:
            out.append((SW_PAD + ref + SW_PAD, SW_PAD + h + SW_PAD, HAPLOTYPE_TO_REFERENCE, strategy, "hap_vs_ref"))
        pool = [ref] + haps
        for _ in range(int(round(len(haps) * read_share / hap_share))):
            hap = pool[int(rng.integers(0, len(pool)))]
            out.append((hap, _read_of(rng, hap), READ_TO_HAPLOTYPE, "SOFTCLIP", "read_vs_hap"))
    return out[:n]
