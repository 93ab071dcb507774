"""Smith-Waterman pairs aligned on one diagonal, without a matrix
(native/cpu/sw_cpu.cc: diagonal_alignment). For SOFTCLIP and IGNORE, where
the best diagonal of the matrix scores above every gapped alignment (a
bound, match * len(alt) + open, or the single-gap alignments that could
reach it, scored), GATK's result is that diagonal's; the library then
writes it directly. Here pairs built to sit on that bound (alts taken from
ref with 0-3 substitutions or N, some with an indel, hanging off either
end, in repeats, under GATK's parameter sets and sets that allow 2 and 3
mismatches) must give what the full matrix gives, what the literal Python
rules give, and what GKL gives; and the native check program must take the
diagonal exactly for the pairs `takes_diagonal` says it should (so the
comparisons do exercise it)."""

import numpy as np
import pytest

from devtools.native_check import run_sw_check
from devtools.oracle.gkl_sw import matches_gkl
from devtools.oracle.sw_reference import align as reference_align
from pyphmm import sw

BASES = b"ACGT"


def _rand(rng, n, letters=BASES):
    return np.frombuffer(letters, dtype=np.uint8)[rng.integers(0, len(letters), n)].tobytes()


# GATK's sets (two of which allow one mismatch: ALIGNMENT_TO_BEST_HAPLOTYPE
# and STANDARD_NGS), and sets allowing 2 and 3 (kmax below) and 4 (not
# taken: more pieces than the search has).
PARAMS = list(sw.PRESETS.values()) + [(10, -10, -50, -5), (8, -2, -35, -3), (7, -3, -45, -1)]
STRATEGIES = ["SOFTCLIP", "IGNORE", "SOFTCLIP", "INDEL", "LEADING_INDEL"]
MAX_DIAGONALS, MIN_PIECE, MAX_PIECES, MAX_DELETION = 32, 8, 4, 64  # sw_cpu.cc's kNear* constants


def _ref(rng, m):
    """A reference of one of the shapes that make diagonals compete."""
    kind = int(rng.integers(0, 5))
    if kind == 1:  # a tandem repeat: many diagonals tie
        return (_rand(rng, int(rng.integers(1, 7))) * (m // 2 + 4))[:m]
    if kind == 2:  # a segment twice, apart
        u = _rand(rng, int(rng.integers(20, 90)))
        pad = [_rand(rng, int(rng.integers(0, 40))) for _ in range(3)]
        return pad[0] + u + pad[1] + u + pad[2]
    if kind == 3:  # two letters
        return _rand(rng, m, b"AC")
    return _rand(rng, m)


def _mutate(rng, s, k):
    b = bytearray(s)
    for _ in range(k):
        i = int(rng.integers(0, len(b)))
        b[i] = ord("N") if rng.random() < 0.1 else [c for c in BASES if c != b[i]][int(rng.integers(0, 3))]
    return bytes(b)


def diagonal_cases(n_cases, seed):
    """(ref, alt, params, strategy): alt taken from ref at offset o (off
    either end by up to 6 bases, new bases there), some with an indel, with
    0-3 changes."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < n_cases:
        ref = _ref(rng, int(rng.integers(40, 520)))
        m = len(ref)
        n = int(rng.integers(12, min(m, 200) + 1))
        o = int(rng.integers(-6, m - n + 7))
        body = ref[max(0, o) : o + n]
        alt = (_rand(rng, max(0, -o)) + body + _rand(rng, n))[:n]
        if rng.random() < 0.3:  # an indel of 1-6 bases: a gapped rival to the diagonals
            at, size = int(rng.integers(0, n)), int(rng.integers(1, 7))
            alt = (alt[:at] + _rand(rng, size) + alt[at:])[:n] if rng.random() < 0.5 else alt[:at] + alt[at + size :]
        alt = _mutate(rng, alt, int(rng.choice([0, 1, 1, 1, 2, 2, 3])))
        params = tuple(PARAMS[int(rng.integers(0, len(PARAMS)))])
        cases.append((ref, alt, params, STRATEGIES[int(rng.integers(0, len(STRATEGIES)))]))
    return cases


def _overlap(o, m, n):
    return max(0, -o), min(n, m - o)


def _run(ref, alt, o, j, step, lo, hi):
    k = 0
    while lo <= j < hi and ref[o + j] == alt[j]:
        k, j = k + 1, j + step
    return k


def _single_gap_best(ref, alt, params, diagonals, deficit):
    """The best alignment with one gap between two exact segments, one of
    them on a listed diagonal, whose gap costs at most `deficit` less its
    unpaired bases (sw_cpu.cc's single_gap_best, written again)."""
    match, _, gap_open, extend = params
    m, n = len(ref), len(alt)
    best = None

    def pair(d1, d2, ins):
        nonlocal best
        (a0, a1), (b0, b1) = _overlap(d1, m, n), _overlap(d2, m, n)
        if a0 >= a1 or b0 >= b1 or b1 - a0 <= ins:
            return
        head, tail = _run(ref, alt, d1, a0, 1, a0, a1), _run(ref, alt, d2, b1 - 1, -1, b0, b1)
        if b1 - ins - tail > a0 + head:
            return
        length = ins or d2 - d1
        score = match * (b1 - a0 - ins) + gap_open + (length - 1) * extend
        best = score if best is None else max(best, score)

    for o in diagonals:
        length = 1
        while -gap_open - (length - 1) * extend <= deficit and length <= m:
            pair(o, o + length, 0)
            pair(o - length, o, 0)
            length += 1
        length = 1
        while -gap_open - (length - 1) * extend + match * length <= deficit and length < n:
            pair(o, o - length, length)
            pair(o + length, o, length)
            length += 1
    return best


def takes_diagonal(ref, alt, params, strategy):
    """Whether sw_align_one aligns the pair on a diagonal, past GATK's
    exact-substring shortcut: the conditions of sw_cpu.cc's
    diagonal_alignment, written again from docs/SMITH_WATERMAN.md."""
    match, mismatch, gap_open, extend = params
    m, n = len(ref), len(alt)
    if strategy not in ("SOFTCLIP", "IGNORE") or n > m or match <= 0 or mismatch >= match or gap_open >= 0:
        return False
    if extend > 0 or max(abs(v) for v in params) * (m + n + 2) >= 10**8:
        return False
    miss_cost = match - mismatch
    pieces = min(MAX_PIECES, max(3, (-gap_open - 1) // miss_cost + 1))
    piece = n // pieces
    if piece < MIN_PIECE:
        return False
    found = []  # diagonals holding a piece, in no particular order
    for q in range(pieces):
        a = q * piece
        pat = alt[a : a + piece] if q + 1 < pieces else alt[a:]
        for r in range(m - len(pat) + 1):
            if ref[r : r + len(pat)] == pat and r - a not in found:
                found.append(r - a)
    if len(found) > MAX_DIAGONALS or alt in ref:
        return False
    floor = match * n - pieces * miss_cost + 1

    def score(o):
        a0, a1 = _overlap(o, m, n)
        if a1 <= a0:
            return None
        s = sum(match if ref[o + j] == alt[j] else mismatch for j in range(a0, a1))
        return s if s >= floor else None

    scores = {o: score(o) for o in found}
    best = max((v for v in scores.values() if v is not None), default=None)
    if best is None:
        return False
    diagonals = list(found)
    c = 1
    while c < n and match * (n - c) >= best:
        for o in (-c, m - n + c):
            if o not in diagonals:
                diagonals.append(o)
        if len(diagonals) > MAX_DIAGONALS:
            return False
        c += 1
    for o in diagonals[len(found) :]:
        scores[o] = score(o)
    best = max(v for v in scores.values() if v is not None)
    deficit = match * n - best
    if deficit >= -gap_open:
        if deficit >= -2 * gap_open or deficit + gap_open >= miss_cost:
            return False
        if (deficit + gap_open) // match >= piece:
            return False
        if extend == 0 or (deficit + gap_open) // -extend >= MAX_DELETION:
            return False
        rival = _single_gap_best(ref, alt, params, diagonals, deficit)
        if rival is not None and rival >= best:
            return False
    return True


def rival_cases(seed):
    """Alts A + B where ref holds A and B far apart (a deletion longer than
    alt joins them) and A + B with two mismatches elsewhere: with extend 0
    the deletion outscores the diagonal, with extend -5 it does not."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(6):
        a, b, far = _rand(rng, 60), _rand(rng, 60), _rand(rng, int(rng.integers(130, 260)))
        near = _mutate(rng, a + b, 2)
        ref = _rand(rng, 20) + a + far + b + _rand(rng, 20) + near + _rand(rng, 20)
        for params in ((10, -15, -30, 0), (10, -15, -30, -5)):
            for strategy in ("SOFTCLIP", "IGNORE"):
                cases.append((ref, a + b, params, strategy))
    return cases


CASES = diagonal_cases(1500, 2024) + rival_cases(2025)


def test_cases_exercise_the_diagonal():
    taken = sum(takes_diagonal(*c) for c in CASES)
    assert taken > len(CASES) // 10, taken


def test_same_as_full_matrix(knob):
    knob("PYPHMM_DEV", "sw_near_exact=1")
    diagonal = [sw.align(r, a, params=p, overhang=s) for r, a, p, s in CASES]
    knob("PYPHMM_DEV", "sw_near_exact=0")
    matrix = [sw.align(r, a, params=p, overhang=s) for r, a, p, s in CASES]
    differ = [(c, x, y) for c, x, y in zip(CASES, diagonal, matrix) if x != y]
    assert not differ, differ[:3]


def test_same_as_literal_rules():
    small = [c for c in CASES if len(c[0]) * len(c[1]) <= 12000 and takes_diagonal(*c)][:120]
    assert len(small) >= 60
    for r, a, p, s in small:
        assert sw.align(r, a, params=p, overhang=s) == tuple(reference_align(r, a, p, s)), (r, a, p, s)


@pytest.mark.slow
def test_native_check_takes_the_diagonal(sw_avx512_check_exe):
    """The check program (the library's CPU aligner, its AVX-512 fill
    emulated) takes the diagonal for exactly the predicted pairs, with the
    results of the full matrix."""
    runs = {}
    for flag in (1, 0):
        lines, counters = run_sw_check(sw_avx512_check_exe, CASES, f"sw_isa=avx512,sw_near_exact={flag}")
        runs[flag] = (lines, counters["diagonal_alignments"])
    assert runs[1][1] == sum(takes_diagonal(*c) for c in CASES)
    assert runs[0][1] == 0
    assert runs[1][0] == runs[0][0]
    assert runs[1][0] == ["{} {}".format(*sw.align(r, a, params=p, overhang=s)) for r, a, p, s in CASES]


@pytest.mark.jvm
@pytest.mark.slow
def test_diagonal_pairs_vs_gkl(gkl_jvm):
    from devtools.oracle.gkl_sw import GklSmithWaterman

    gkl = GklSmithWaterman()
    taken = [c for c in CASES if takes_diagonal(*c)]
    for r, a, p, s in taken:
        ours = sw.align(r, a, params=p, overhang=s)
        assert matches_gkl(tuple(ours), tuple(gkl.align(r, a, p, s)), s), (r, a, p, s)
