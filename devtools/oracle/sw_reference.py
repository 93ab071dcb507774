"""A small, literal Python rendering of GATK's Java Smith-Waterman rules.

Written from the rules in docs/SMITH_WATERMAN.md (GATK's SmithWatermanJavaAligner
is the specification): used by the tests where GKL's native aligner is known
to differ from GATK's Java, and as an independent cross-check on a sample of
pairs. Slow (pure Python, O(len(ref) * len(alt))): keep inputs short.
"""

from __future__ import annotations

FLOOR = -100_000_000
LOW = -(2**31) // 2


def _consolidate(elements):
    """Drops zero-length elements and merges equal neighbours."""
    out = []
    for op, n in elements:
        if n == 0:
            continue
        if out and out[-1][0] == op:
            out[-1][1] += n
        else:
            out.append([op, n])
    return "".join(f"{n}{op}" for op, n in out)


def align(ref: bytes, alt: bytes, params, strategy: str):
    """(cigar, offset) of alt on ref under GATK's Java rules."""
    ref = ref.encode() if isinstance(ref, str) else bytes(ref)
    alt = alt.encode() if isinstance(alt, str) else bytes(alt)
    match, mismatch, w_open, w_ext = params
    strategy = strategy.upper()
    m, n = len(ref), len(alt)
    if strategy in ("SOFTCLIP", "IGNORE"):
        pos = ref.rfind(alt)
        if pos >= 0:
            return f"{n}M", pos

    sw = [[0] * (n + 1) for _ in range(m + 1)]
    bt = [[0] * (n + 1) for _ in range(m + 1)]
    if strategy in ("INDEL", "LEADING_INDEL"):
        for j in range(1, n + 1):
            sw[0][j] = w_open + (j - 1) * w_ext
        for i in range(1, m + 1):
            sw[i][0] = w_open + (i - 1) * w_ext
    best_v = [LOW] * (n + 1)
    size_v = [0] * (n + 1)
    for i in range(1, m + 1):
        best_h, size_h = LOW, 0
        up, row = sw[i - 1], sw[i]
        for j in range(1, n + 1):
            diag = up[j - 1] + (match if ref[i - 1] == alt[j - 1] else mismatch)
            opened = up[j] + w_open
            best_v[j] += w_ext
            if opened > best_v[j]:
                best_v[j], size_v[j] = opened, 1
            else:
                size_v[j] += 1
            opened = row[j - 1] + w_open
            best_h += w_ext
            if opened > best_h:
                best_h, size_h = opened, 1
            else:
                size_h += 1
            down, right = best_v[j], best_h
            if diag >= down and diag >= right:
                row[j], bt[i][j] = max(FLOOR, diag), 0
            elif right >= down:
                row[j], bt[i][j] = max(FLOOR, right), -size_h
            else:
                row[j], bt[i][j] = max(FLOOR, down), size_v[j]

    segment = 0
    if strategy == "INDEL":
        p1, p2 = m, n
    else:
        best, p1, p2 = None, 0, n
        for i in range(1, m + 1):
            if best is None or sw[i][n] >= best:
                p1, best = i, sw[i][n]
        if strategy != "LEADING_INDEL":
            for j in range(1, n + 1):
                s = sw[m][j]
                if s > best or (s == best and abs(m - j) < abs(p1 - p2)):
                    p1, p2, best, segment = m, j, s, n - j
    elements = []  # last to first
    if segment > 0 and strategy == "SOFTCLIP":
        elements.append(("S", segment))
        segment = 0
    state = "M"
    while True:
        b = bt[p1][p2]
        if b > 0:
            new, step = "D", b
            p1 -= b
        elif b < 0:
            new, step = "I", -b
            p2 += b
        else:
            new, step = "M", 1
            p1 -= 1
            p2 -= 1
        if new == state:
            segment += step
        else:
            elements.append((state, segment))
            segment, state = step, new
        if not (p1 > 0 and p2 > 0):
            break
    if strategy == "SOFTCLIP":
        elements.append((state, segment))
        if p2 > 0:
            elements.append(("S", p2))
        offset = p1
    elif strategy == "IGNORE":
        elements.append((state, segment + p2))
        offset = p1 - p2
    else:
        elements.append((state, segment))
        if p1 > 0:
            elements.append(("D", p1))
        elif p2 > 0:
            elements.append(("I", p2))
        offset = 0
    return _consolidate(reversed(elements)), offset
