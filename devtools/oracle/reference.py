"""A small, readable PairHMM in plain Python (float64, straight loops).

It renders the recurrence of docs/ALGORITHM.md; it is slow and only used on
short cases. The oracle of the test suite is GKL itself (oracle/gkl.py).

Read i (1..m) against haplotype column j (1..n), three states:
  M  read base i aligned to haplotype base j,
  X  read base i inserted (gap in the haplotype),
  Y  haplotype base j deleted (gap in the read).
The read may start anywhere in the haplotype: row 0 holds Y = 1/n in every
column j = 0..n (scaled by a constant to keep numbers away from underflow), and the
result sums M and X over the last row.
"""

from __future__ import annotations

import math


def ph2pr(q: int) -> float:
    """phred quality -> error probability"""
    return 10.0 ** (-q / 10.0)


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def approx_log10_sum_log10(a: float, b: float) -> float:
    """log10(10^a + 10^b) the way GATK approximates it: a lookup of
    log10(1 + 10^-d) on a 1e-4 grid of d, exact beyond d >= 8."""
    big, small = max(a, b), min(a, b)
    if math.isinf(big) or math.isinf(small) or big - small >= 8.0:
        return big
    k = _round_half_away((big - small) * 1e4)
    return big + math.log10(1.0 + 10.0 ** (-k * 1e-4))


def match_to_match(ins: int, dels: int) -> float:
    """P(M -> M) = 1 - P(open insertion) - P(open deletion), computed in log
    space as GATK does (note the truncated 1/ln 10)."""
    lo, hi = min(ins, dels), max(ins, dels)
    s = approx_log10_sum_log10(-0.1 * lo, -0.1 * hi)
    p = min(1.0, 10.0**s)
    if p >= 1.0:
        return 0.0
    return 10.0 ** (math.log1p(-p) * 0.434294)


def _code(base: int) -> int:
    """A,C,G,T -> 0..3, N -> 4, any other byte -> A (as GKL does)."""
    return {ord("A"): 0, ord("C"): 1, ord("G"): 2, ord("T"): 3, ord("N"): 4}.get(base, 0)


def log10_likelihood(read: bytes, quals, ins, dels, gcp, hap: bytes, scale: float = 2.0**1020) -> float:
    """log10 P(read | hap). Quality arguments are raw phred values."""
    m, n = len(read), len(hap)
    r = [_code(b) for b in read]
    h = [_code(b) for b in hap]
    M = [[0.0] * (n + 1) for _ in range(m + 1)]
    X = [[0.0] * (n + 1) for _ in range(m + 1)]
    Y = [[0.0] * (n + 1) for _ in range(m + 1)]
    # Row 0: a deletion state in every column, including column 0, so the
    # read may begin at any haplotype base (M[1][j] reads Y[0][j-1]).
    # Column 0 of rows 1..m stays 0.
    for j in range(0, n + 1):
        Y[0][j] = scale / n
    for i in range(1, m + 1):
        q, qi, qd, qc = quals[i - 1] & 127, ins[i - 1] & 127, dels[i - 1] & 127, gcp[i - 1] & 127
        mm = match_to_match(qi, qd)
        gm = 1.0 - ph2pr(qc)
        mx, xx = ph2pr(qi), ph2pr(qc)
        my, yy = ph2pr(qd), ph2pr(qc)
        for j in range(1, n + 1):
            same = r[i - 1] == h[j - 1] or r[i - 1] == 4 or h[j - 1] == 4
            e = 1.0 - ph2pr(q) if same else ph2pr(q) / 3.0
            M[i][j] = e * (mm * M[i - 1][j - 1] + gm * X[i - 1][j - 1] + gm * Y[i - 1][j - 1])
            X[i][j] = mx * M[i - 1][j] + xx * X[i - 1][j]
            Y[i][j] = my * M[i][j - 1] + yy * Y[i][j - 1]
    total = sum(M[m][j] + X[m][j] for j in range(1, n + 1))
    return math.log10(total) - math.log10(scale) if total > 0 else -math.inf
