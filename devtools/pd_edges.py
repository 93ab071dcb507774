"""PDHMM regions at the edges of GKL's rules, for the stored GKL values in
tests/data/pdhmm-edge-cases.txt (docs/PDHMM.md says what each rule is).

Every region is valid input for GKL 0.9 (no error status): GKL's results
are stored for all of them. They are plain tuples of byte strings, since
some hold what pyphmm's Python classes refuse (empty reads and
haplotypes), and go to the library through ``devtools.pd_testdata.raw_pdhmm``.

A region is ``(name, reads, haps)``: reads ``(bases, quals, ins, dels,
gcp)`` and haps ``(bases, pd)``, each a bytes object.
"""

from __future__ import annotations

import numpy as np

from pyphmm.pdhmm import PD_A, PD_C, PD_DEL_END, PD_DEL_START, PD_G, PD_SNP, PD_T

S, DS, DE = PD_SNP, PD_DEL_START, PD_DEL_END
ONE = DS | DE  # a one-base span


def read(bases, q=30, ins=45, dels=45, gcp=10):
    """A read with constant (or given per-base) qualities."""
    bases = bases if isinstance(bases, bytes) else bytes(bases)
    n = len(bases)

    def col(v):
        return bytes(v) if not isinstance(v, int) else bytes([v]) * n

    return (bases, col(q), col(ins), col(dels), col(gcp))


def hap(bases, marks=None):
    """A haplotype; marks: {position: PD byte}."""
    bases = bases if isinstance(bases, bytes) else bytes(bases)
    pd = bytearray(len(bases))
    for pos, v in (marks or {}).items():
        pd[pos] = v
    return (bases, bytes(pd))


def _random_bases(rng, n, alphabet=b"ACGT"):
    return bytes(np.frombuffer(alphabet, np.uint8)[rng.integers(0, len(alphabet), n)])


def _reads_of(rng, source: bytes, count: int, lo: int, hi: int, **quals):
    out = []
    for _ in range(count):
        m = int(rng.integers(lo, hi + 1))
        m = min(m, len(source))
        s = int(rng.integers(0, len(source) - m + 1))
        out.append(read(source[s : s + m], **quals))
    return out


def edge_regions() -> list:
    """The edge cases, in a fixed order (their names say what they hold)."""
    rng = np.random.default_rng(41)
    ref = _random_bases(rng, 120)
    plain = [read(ref[10:60]), read(ref[30:110], q=20), read(ref[0:25])]
    regions = []

    # Empty reads and haplotypes: -inf, no error.
    regions.append(("empty read and haplotype", [read(b""), read(ref[5:40])], [hap(ref), hap(b"")]))
    # Qualities of 0: match-to-match 0 and 1 - 10^0 = 0 make every likelihood 0.
    zeros = read(ref[20:70], q=0, ins=0, dels=0, gcp=0)
    gaps0 = read(ref[20:70], q=30, ins=0, dels=0, gcp=0)
    regions.append(("qualities of 0", [zeros, gaps0, read(ref[20:70], q=0)], [hap(ref), hap(ref, {30: S | PD_T})]))
    # Underflow: unrelated reads with costly gaps, from about -300 (denormal
    # sums) to below -620 (the sum underflows to 0, -inf).
    reads = []
    for m in (60, 120, 180, 240, 300, 360, 420):
        reads.append(read(_random_bases(rng, m), q=40, ins=40, dels=40, gcp=int(rng.integers(20, 45))))
    regions.append(("underflow to -inf", reads, [hap(_random_bases(rng, 200)), hap(ref, {50: ONE, 60: S | PD_A})]))
    # N on either side, also at a SNP position, and in both.
    nref = bytearray(ref)
    nref[15] = nref[44] = ord("N")
    nread = bytearray(ref[10:70])
    nread[3] = nread[20] = nread[34] = ord("N")
    regions.append(
        (
            "N bases",
            [read(bytes(nread)), read(b"N" * 40), read(ref[40:90])],
            [hap(bytes(nref), {15: S | PD_C, 44: S | PD_G | PD_T, 50: S | PD_A}), hap(b"N" * 60)],
        )
    )
    # Lowercase: raw bytes differ, but a SNP position takes acgt too.
    lower = ref[10:80].lower()
    regions.append(
        (
            "lowercase bases",
            [read(lower), read(ref[10:80]), read(lower[:30] + ref[40:80])],
            [hap(ref, {k: S | PD_A | PD_C | PD_G | PD_T for k in range(10, 80, 7)}), hap(ref.lower(), {20: S | PD_A})],
        )
    )
    # SNP bytes: several bases, none (SNP alone), base bits without SNP (ignored).
    marks = {
        12: S | PD_A | PD_T,
        20: S | PD_A | PD_C | PD_G | PD_T,
        28: S,
        36: PD_A | PD_C | PD_G | PD_T,
        44: S | PD_G,
        45: S | PD_C,
    }
    regions.append(("SNP bytes", plain, [hap(ref, marks), hap(ref, {k: S | PD_A for k in range(0, 120, 3)})]))
    # One-base spans (DEL_START | DEL_END), alone, side by side and at the ends.
    regions.append(
        (
            "one-base spans",
            plain,
            [
                hap(ref, {30: ONE}),
                hap(ref, {30: ONE, 31: ONE, 32: ONE}),
                hap(ref, {0: ONE, 119: ONE}),
                hap(ref, {25: ONE, 26: S | PD_G, 70: ONE}),
            ],
        )
    )
    # Spans nested, adjacent, holding a SNP, starting at the first base.
    regions.append(
        (
            "nested and adjacent spans",
            plain,
            [
                hap(ref, {20: DS, 24: DS, 30: DE, 36: DE}),
                hap(ref, {20: DS, 25: DE, 26: DS, 31: DE}),
                hap(ref, {20: DS, 25: DE | DS, 31: DE}),
                hap(ref, {20: DS, 23: S | PD_A | PD_T, 27: DE}),
                hap(ref, {0: DS, 6: DE, 40: DS | S | PD_C, 44: DE | S | PD_A}),
                hap(ref, {20: DE, 30: DS, 35: DE}),
            ],
        )
    )
    # A span never closed: the deletion state carries into the next rows.
    regions.append(
        (
            "DEL_START never closed",
            plain + [read(ref[100:120]), read(ref[90:120] + ref[:20])],
            [
                hap(ref, {60: DS}),
                hap(ref, {119: DS}),
                hap(ref, {10: DS, 15: DE, 90: DS}),
                hap(ref, {30: DS, 60: DS}),
                hap(ref, {119: DE}),
            ],
        )
    )
    # PD bytes with bit 7 set (a negative Java byte): only the named bits count.
    regions.append(("PD bit 7", plain, [hap(ref, {20: 0x80 | S | PD_A, 40: 0x80 | ONE, 50: 0xFF, 51: 0x80})]))
    # Base qualities 128..254 are GKL table entries; low and high gap values.
    q = bytes(rng.integers(128, 255, 50).astype(np.uint8))
    regions.append(
        (
            "extreme qualities",
            [
                read(ref[30:80], q=q),
                read(ref[30:80], q=1, ins=1, dels=127, gcp=127),
                read(ref[30:80], q=93, ins=127, dels=1, gcp=1),
            ],
            [hap(ref, {40: ONE, 55: S | PD_T})],
        )
    )
    # Bytes other than ACGTN: plain mismatches off SNP positions; at a SNP
    # position only where the haplotype has the same byte or N.
    odd = bytearray(ref[10:60])
    odd[5], odd[15], odd[25] = ord("X"), ord("."), ord("x")
    regions.append(("other bytes", [read(bytes(odd)), read(ref[10:60])], [hap(ref, {40: ONE}), hap(ref.lower())]))
    odd = bytearray(ref[10:60])
    odd[5] = odd[15] = ord("X")
    oddhap = bytearray(ref)
    oddhap[15], oddhap[25] = ord("X"), ord("N")
    regions.append(
        (
            "other bytes at SNP positions",
            [read(bytes(odd)), read(ref[10:60])],
            [hap(bytes(oddhap), {15: S | PD_A, 25: S | PD_C, 40: ONE}), hap(bytes(oddhap))],
        )
    )
    # Lanes of many shapes in one region: reads 1..40 bp, haplotypes 1..60 bp.
    src = _random_bases(rng, 80)
    haps = [hap(src[:n], {k: (S | PD_G) if k % 2 else ONE for k in range(1, n, 9)}) for n in (1, 2, 7, 33, 60)]
    reads = [read(src[s : s + m]) for m, s in ((1, 0), (2, 5), (3, 3), (9, 10), (17, 20), (31, 1), (40, 30))]
    regions.append(("lanes of many lengths", reads, haps))
    # Reads longer than haplotypes, and one long pair.
    long_hap = _random_bases(rng, 1500)
    regions.append(
        (
            "long and short",
            [read(long_hap[100:1100], gcp=10), read(long_hap[:200])],
            [hap(long_hap, {500: DS, 509: DE, 700: S | PD_C}), hap(long_hap[:20])],
        )
    )
    # Random PD bytes (GKL's own test style, valid read bases only).
    rref = _random_bases(rng, 90)
    haps = [hap(rref, {k: int(v) for k, v in enumerate(rng.integers(0, 256, 90))}) for _ in range(4)]
    reads = _reads_of(rng, rref, 6, 20, 70)
    regions.append(("random PD bytes", reads, haps))
    return regions
