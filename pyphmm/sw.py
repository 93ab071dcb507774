"""Smith-Waterman with GATK's semantics: CIGAR and alignment offset of alt on ref.

Results are those of GATK's Java aligner (SmithWatermanJavaAligner), which is
also what Intel GKL's native aligner returns except for a rare IGNORE case
(see docs/SMITH_WATERMAN.md).

>>> from pyphmm import sw
>>> sw.align("AAACCCCC", "CCCCCGGG")
('5M3S', 3)
>>> sw.align("AAACCCCC", "CCCCC", overhang="INDEL")
('3D5M', 0)
"""

from __future__ import annotations

import enum
import threading
from typing import NamedTuple, Sequence, Union

import numpy as np

from . import _native
from ._convert import as_bases, check_stats
from ._pyphmm import ffi, lib

MAX_LENGTH = lib.PYPHMM_SW_MAX_LENGTH
_FIELDS = ("match", "mismatch", "gap_open", "gap_extend")


class _Scores(NamedTuple):
    match: int
    mismatch: int
    gap_open: int
    gap_extend: int


class SWParameters(_Scores):
    """Scores of GATK's SWParameters: match, mismatch, gap open, gap extend.

    Checked when made: integers (Python or numpy) within int32, gap
    penalties <= 0 (TypeError / ValueError naming the field), so every
    SWParameters is a setting the aligner takes."""

    __slots__ = ()

    def __new__(cls, match, mismatch, gap_open, gap_extend):
        vals = []
        for v, name in zip((match, mismatch, gap_open, gap_extend), _FIELDS):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"params must be integers, got {v!r} ({type(v).__name__}) for {name}")
            if not -(2**31) <= int(v) < 2**31:
                raise ValueError(f"parameter {name} = {v} does not fit int32")
            vals.append(int(v))
        if vals[2] > 0 or vals[3] > 0:
            raise ValueError(f"gap penalties must be <= 0 (got open {vals[2]}, extend {vals[3]})")
        return super().__new__(cls, *vals)


ORIGINAL_DEFAULT = SWParameters(3, -1, -4, -3)
STANDARD_NGS = SWParameters(25, -50, -110, -6)
NEW_SW_PARAMETERS = SWParameters(200, -150, -260, -11)
ALIGNMENT_TO_BEST_HAPLOTYPE = SWParameters(10, -15, -30, -5)

PRESETS = {
    "ORIGINAL_DEFAULT": ORIGINAL_DEFAULT,
    "STANDARD_NGS": STANDARD_NGS,
    "NEW_SW_PARAMETERS": NEW_SW_PARAMETERS,
    "ALIGNMENT_TO_BEST_HAPLOTYPE": ALIGNMENT_TO_BEST_HAPLOTYPE,
}


class OverhangStrategy(enum.IntEnum):
    """GATK's SWOverhangStrategy; values are GKL's byte codes."""

    SOFTCLIP = lib.PYPHMM_SW_SOFTCLIP
    INDEL = lib.PYPHMM_SW_INDEL
    LEADING_INDEL = lib.PYPHMM_SW_LEADING_INDEL
    IGNORE = lib.PYPHMM_SW_IGNORE

    @classmethod
    def parse(cls, value) -> "OverhangStrategy":
        """Accepts a member, a GATK name (any case) or a GKL code."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(
                    f"unknown overhang strategy {value!r}; use one of {', '.join(m.name for m in cls)}"
                ) from None
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            try:
                return cls(int(value))
            except ValueError:
                raise ValueError(f"unknown overhang strategy code {value}") from None
        raise TypeError(f"overhang must be an OverhangStrategy, a name or a code, not {type(value).__name__}")


ParamsLike = Union[str, SWParameters, Sequence[int]]


def parse_params(value: ParamsLike) -> SWParameters:
    """A preset name (any case), an SWParameters or four ints (match, mismatch, open, extend)."""
    if isinstance(value, str):
        try:
            return PRESETS[value.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown parameter preset {value!r}; use one of {', '.join(PRESETS)}") from None
    if isinstance(value, SWParameters):
        return value
    try:
        vals = tuple(value)
    except TypeError:
        raise TypeError(f"params must be a preset name, SWParameters or 4 ints, not {type(value).__name__}") from None
    if len(vals) != 4:
        raise ValueError(f"params needs 4 values (match, mismatch, gap_open, gap_extend), got {len(vals)}")
    return SWParameters(*vals)


def _as_seq(value, what: str) -> bytes:
    b = as_bases(value, what)
    if not b:
        raise ValueError(f"{what}: empty sequence")
    if len(b) > MAX_LENGTH:
        raise ValueError(f"{what}: {len(b)} bp is longer than the {MAX_LENGTH} bp limit")
    return b


class _Scratch(threading.local):
    """Per-thread output buffers reused by align(), so a single call allocates little."""

    def __init__(self):
        self.offset = ffi.new("int32_t *")
        self.error = ffi.new("pyphmm_error *")
        self.cigar = ffi.new("char[]", 4096)
        self.cap = 4096


_scratch = _Scratch()
# align() is called once per pair in GATK-style loops, where parsing the same
# settings every call costs as much as a short alignment: settings seen
# before are looked up here (bounded: user-chosen parameters could vary).
_STRATEGY_CODES = {**{m.name: int(m) for m in OverhangStrategy}, **{int(m): int(m) for m in OverhangStrategy}}
_PARAMS_C: dict = {}
_PARAMS_C_MAX = 64


def _params_c(p: SWParameters):
    c = _PARAMS_C.get(p)
    if c is None:
        if len(_PARAMS_C) >= _PARAMS_C_MAX:
            _PARAMS_C.clear()
        c = _PARAMS_C[p] = ffi.new("pyphmm_sw_params *", tuple(p))
    return c


def align(ref, alt, *, params: ParamsLike = "ORIGINAL_DEFAULT", overhang="SOFTCLIP") -> tuple:
    """Aligns alt to ref; returns (cigar, alignment offset) exactly as GATK.

    Runs on the CPU (one pair never pays for a GPU round trip).
    """
    r = ref if type(ref) is bytes and ref else _as_seq(ref, "ref")
    a = alt if type(alt) is bytes and alt else _as_seq(alt, "alt")
    p = params if type(params) is SWParameters else parse_params(params)
    s = _STRATEGY_CODES.get(overhang) if type(overhang) in (str, int) else None
    if s is None:
        s = int(OverhangStrategy.parse(overhang))
    sc = _scratch
    need = 2 * (len(r) + len(a)) + 1
    if need > sc.cap:
        sc.cigar = ffi.new("char[]", need)
        sc.cap = need
    rc = lib.pyphmm_sw_align_one(r, len(r), a, len(a), _params_c(p), s, sc.cigar, sc.cap, sc.offset, sc.error)
    if rc:
        _native.raise_for_status(rc, sc.error)
    return ffi.string(sc.cigar).decode("ascii"), sc.offset[0]


def _is_one_params(value) -> bool:
    """A single parameter setting (as align takes it): a name, an
    SWParameters, or a sequence of four numbers; per-pair settings are a
    sequence of such settings (or an (n, 4) array)."""
    if isinstance(value, (str, SWParameters)):
        return True
    if isinstance(value, np.ndarray):
        return value.ndim <= 1
    if isinstance(value, (list, tuple)):
        return bool(value) and isinstance(value[0], (int, float, np.number))
    return True


def _is_one_overhang(value) -> bool:
    return not isinstance(value, (list, tuple, np.ndarray))


def _per_pair(value, n: int, one: bool, parse, what: str):
    """(values, per_pair) from one setting or a sequence of n settings."""
    if one:
        return [parse(value)], False
    if len(value) != n:
        raise ValueError(f"{what}: {len(value)} settings for {n} pairs")
    return [parse(v) for v in value], True


def _pack_seqs(seqs: list, what: str):
    """(concatenated bytes, int64 lengths) of a batch's sequences.

    Lists of only str or only bytes (the usual batches) are checked and joined
    in bulk; anything else, or any invalid sequence, goes through _as_seq one
    at a time, which also names the offending pair.
    """
    n = len(seqs)
    kinds = set(map(type, seqs))
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind is str or kind is bytes:
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=n)
        if lens.min() >= 1 and lens.max() <= MAX_LENGTH:
            if kind is bytes:
                return b"".join(seqs), lens
            try:
                return "".join(seqs).encode("ascii"), lens
            except UnicodeEncodeError:
                pass
    packed = [_as_seq(x, f"{what} {i}") for i, x in enumerate(seqs)]
    return b"".join(packed), np.fromiter(map(len, packed), dtype=np.int64, count=n)


_KEEP_CIGAR_BYTES = 256 << 20  # larger CIGAR buffers are not kept for the next call


class _BatchScratch(threading.local):
    """align_batch's CIGAR buffer, reused by the thread's next call: it is
    read back into str before the call returns, and a fresh one of 2*(m+n)+1
    bytes a pair would be page-faulted in on every call."""

    cigars = np.zeros(0, dtype=np.uint8)

    def cigar_buffer(self, nbytes: int) -> np.ndarray:
        buf = self.cigars
        if len(buf) < nbytes:
            buf = np.zeros(nbytes, dtype=np.uint8)
            self.cigars = buf if nbytes <= _KEEP_CIGAR_BYTES else self.cigars
        return buf


_batch_scratch = _BatchScratch()


def align_batch(
    refs,
    alts,
    *,
    params: ParamsLike = "ORIGINAL_DEFAULT",
    overhang="SOFTCLIP",
    backend: str = "auto",
    threads: int | None = None,
    stats: dict | None = None,
):
    """Aligns alts[i] to refs[i] for every i.

    params and overhang take one setting for the whole batch, in any form
    ``align`` takes (four integers included), or a list with one per pair.
    Returns (list of CIGAR strings, int32 numpy array of offsets).
    """
    check_stats(stats)
    for name, value in (("refs", refs), ("alts", alts)):
        if isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__iter__"):
            raise TypeError(f"{name} must be a sequence of sequences, not {type(value).__name__}")
    refs = list(refs)
    alts = list(alts)
    if len(refs) != len(alts):
        raise ValueError(f"{len(refs)} refs but {len(alts)} alts")
    n = len(refs)
    plist, pp1 = _per_pair(params, n, _is_one_params(params), parse_params, "params")
    slist, pp2 = _per_pair(overhang, n, _is_one_overhang(overhang), OverhangStrategy.parse, "overhang")
    opts = _native.make_options(backend, threads)
    if n == 0:
        return [], np.zeros(0, dtype=np.int32)
    ref_buf, rl = _pack_seqs(refs, "ref")
    alt_buf, al = _pack_seqs(alts, "alt")
    ref_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rl, out=ref_off[1:])
    alt_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(al, out=alt_off[1:])
    cig_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(2 * (rl + al) + 1, out=cig_off[1:])
    per_pair = pp1 or pp2
    if per_pair:
        if not pp1:
            plist = plist * n
        if not pp2:
            slist = slist * n
    par = np.array(plist, dtype=np.int32).reshape(-1, 4)
    strat = np.array([int(s) for s in slist], dtype=np.int8)
    cigars = _batch_scratch.cigar_buffer(int(cig_off[-1]))
    offsets = np.zeros(n, dtype=np.int32)

    # cdata views of the buffers (ffi.from_buffer keeps each one alive while
    # its view is referenced; all are locals until the calls return)
    c_ref, c_alt = ffi.from_buffer("uint8_t[]", ref_buf), ffi.from_buffer("uint8_t[]", alt_buf)
    c_ref_off, c_alt_off = ffi.from_buffer("int64_t[]", ref_off), ffi.from_buffer("int64_t[]", alt_off)
    c_cig, c_cig_off = ffi.from_buffer("char[]", cigars), ffi.from_buffer("int64_t[]", cig_off)
    batch = ffi.new("pyphmm_sw_batch *")
    batch.num_pairs = n
    batch.ref, batch.alt = c_ref, c_alt
    batch.ref_offsets, batch.alt_offsets = c_ref_off, c_alt_off
    batch.params = c_par = ffi.from_buffer("pyphmm_sw_params[]", par)
    batch.strategies = c_strat = ffi.from_buffer("int8_t[]", strat)
    batch.per_pair = 1 if per_pair else 0
    err = ffi.new("pyphmm_error *")
    st = ffi.new("pyphmm_stats *")
    rc = lib.pyphmm_sw_align(batch, c_cig, c_cig_off, ffi.from_buffer("int32_t[]", offsets), opts, st, err)
    _native.raise_for_status(rc, err)
    del c_par, c_strat
    if stats is not None:
        stats.update(_native.stats_dict(st))
    used = lib.pyphmm_sw_compact_cigars(c_cig, c_cig_off, n)
    cig = cigars[:used].tobytes().decode("ascii").split("\0")
    cig.pop()  # after the last NUL
    return cig, offsets
