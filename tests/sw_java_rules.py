"""A small, literal transcription of GATK's SmithWatermanJavaAligner rules
(SPEC.md section 4), used to adjudicate pairs where pyphmm and GKL differ.
Slow (pure Python); only called on the few pairs that need it."""
from __future__ import annotations

SOFTCLIP, INDEL, LEADING_INDEL, IGNORE = 9, 10, 11, 12
STRATEGIES = {"SOFTCLIP": SOFTCLIP, "INDEL": INDEL, "LEADING_INDEL": LEADING_INDEL, "IGNORE": IGNORE}
CUTOFF = -100_000_000
LOW = -(2**31) // 2


def align(ref: bytes, alt: bytes, match: int, mismatch: int, gap_open: int, gap_extend: int, strategy: int):
    """(cigar, offset) as GATK's Java aligner computes them."""
    if strategy in (SOFTCLIP, IGNORE):
        idx = ref.rfind(alt)
        if idx != -1:
            return f"{len(alt)}M", idx
    n, m = len(ref) + 1, len(alt) + 1
    sw = [[0] * m for _ in range(n)]
    bt = [[0] * m for _ in range(n)]
    if strategy in (INDEL, LEADING_INDEL):
        v = gap_open
        for j in range(1, m):
            sw[0][j] = v
            v += gap_extend
        v = gap_open
        for i in range(1, n):
            sw[i][0] = v
            v += gap_extend
    best_v = [LOW] * (m + 1)
    size_v = [0] * (m + 1)
    for i in range(1, n):
        a = ref[i - 1]
        cur, last, row_bt = sw[i], sw[i - 1], bt[i]
        best_h, size_h = LOW, 0
        for j in range(1, m):
            diag = last[j - 1] + (match if a == alt[j - 1] else mismatch)
            g = last[j] + gap_open
            best_v[j] += gap_extend
            if g > best_v[j]:
                best_v[j], size_v[j] = g, 1
            else:
                size_v[j] += 1
            down, kd = best_v[j], size_v[j]
            g = cur[j - 1] + gap_open
            best_h += gap_extend
            if g > best_h:
                best_h, size_h = g, 1
            else:
                size_h += 1
            right, ki = best_h, size_h
            if diag >= down and diag >= right:
                cur[j], row_bt[j] = max(CUTOFF, diag), 0
            elif right >= down:
                cur[j], row_bt[j] = max(CUTOFF, right), -ki
            else:
                cur[j], row_bt[j] = max(CUTOFF, down), kd
    ref_len, alt_len = n - 1, m - 1
    segment = 0
    if strategy == INDEL:
        p1, p2 = ref_len, alt_len
    else:
        p2, best = alt_len, None
        for i in range(1, n):
            if best is None or sw[i][alt_len] >= best:
                p1, best = i, sw[i][alt_len]
        if strategy != LEADING_INDEL:
            for j in range(1, m):
                s = sw[ref_len][j]
                if s > best or (s == best and abs(ref_len - j) < abs(p1 - p2)):
                    p1, p2, best = ref_len, j, s
                    segment = alt_len - j
    ops = []
    if segment > 0 and strategy == SOFTCLIP:
        ops.append(["S", segment])
        segment = 0
    state = "M"
    while True:
        b = bt[p1][p2]
        if b > 0:
            new, step = "D", b
            p1 -= step
        elif b < 0:
            new, step = "I", -b
            p2 -= step
        else:
            new, step = "M", 1
            p1 -= 1
            p2 -= 1
        if new == state:
            segment += step
        else:
            ops.append([state, segment])
            segment, state = step, new
        if not (p1 > 0 and p2 > 0):
            break
    if strategy == SOFTCLIP:
        ops.append([state, segment])
        if p2 > 0:
            ops.append(["S", p2])
        offset = p1
    elif strategy == IGNORE:
        ops.append([state, segment + p2])
        offset = p1 - p2
    else:
        ops.append([state, segment])
        if p1 > 0:
            ops.append(["D", p1])
        elif p2 > 0:
            ops.append(["I", p2])
        offset = 0
    merged = []
    for op, k in reversed(ops):
        if k == 0:
            continue
        if merged and merged[-1][0] == op:
            merged[-1][1] += k
        else:
            merged.append([op, k])
    return "".join(f"{k}{op}" for op, k in merged), offset
