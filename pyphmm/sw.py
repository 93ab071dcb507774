"""Smith-Waterman with GATK's semantics: CIGAR and alignment offset of alt on ref.

Results are those of GATK's Java aligner (SmithWatermanJavaAligner), which is
also what Intel GKL's native aligner returns except for a rare IGNORE case
(see SPEC.md section 4).

>>> from pyphmm import sw
>>> sw.align("AAACCCCC", "CCCCCGGG")
('5M3S', 3)
>>> sw.align("AAACCCCC", "CCCCC", overhang="INDEL")
('3D5M', 0)
"""
from __future__ import annotations

import enum
import sys
import threading
import time
from typing import NamedTuple, Sequence, Union

import numpy as np

from . import _native
from .io import atomic_output
from ._pyphmm import ffi, lib

MAX_LENGTH = lib.PYPHMM_SW_MAX_LENGTH


class SWParameters(NamedTuple):
    """Scores of GATK's SWParameters: match, mismatch, gap open, gap extend."""
    match: int
    mismatch: int
    gap_open: int
    gap_extend: int


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
                raise ValueError(f"unknown overhang strategy {value!r}; use one of "
                                 f"{', '.join(m.name for m in cls)}") from None
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
    try:
        vals = tuple(value)
    except TypeError:
        raise TypeError(f"params must be a preset name, SWParameters or 4 ints, not {type(value).__name__}") from None
    if len(vals) != 4:
        raise ValueError(f"params needs 4 values (match, mismatch, gap_open, gap_extend), got {len(vals)}")
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"params must be integers, got {v!r}")
        if not -2**31 <= int(v) < 2**31:
            raise ValueError(f"parameter {v} does not fit int32")
    p = SWParameters(*(int(v) for v in vals))
    if p.gap_open > 0 or p.gap_extend > 0:
        raise ValueError(f"gap penalties must be <= 0 (got open {p.gap_open}, extend {p.gap_extend})")
    return p


def _as_seq(value, what: str) -> bytes:
    if isinstance(value, str):
        try:
            b = value.encode("ascii")
        except UnicodeEncodeError:
            raise ValueError(f"{what}: bases must be ASCII") from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    elif isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 1:
        b = value.tobytes()
    else:
        raise TypeError(f"{what}: sequence must be str, bytes or a 1-D uint8 array, not {type(value).__name__}")
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


def _per_pair(value, n: int, parse, what: str):
    """(values, per_pair) from one setting or a sequence of n settings."""
    if isinstance(value, (list, np.ndarray)) or (isinstance(value, tuple) and value and
                                                 not isinstance(value[0], (int, np.integer))):
        if len(value) != n:
            raise ValueError(f"{what}: {len(value)} settings for {n} pairs")
        return [parse(v) for v in value], True
    return [parse(value)], False


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


_KEEP_CIGAR_BYTES = 256 << 20   # larger CIGAR buffers are not kept for the next call


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


def align_batch(refs, alts, *, params: ParamsLike = "ORIGINAL_DEFAULT", overhang="SOFTCLIP",
                backend: str = "auto", threads: int | None = None, stats: dict | None = None):
    """Aligns alts[i] to refs[i] for every i.

    params and overhang take one setting for the whole batch or a list with
    one per pair. Returns (list of CIGAR strings, int32 numpy array of offsets).
    """
    refs = list(refs)
    alts = list(alts)
    if len(refs) != len(alts):
        raise ValueError(f"{len(refs)} refs but {len(alts)} alts")
    n = len(refs)
    plist, pp1 = _per_pair(params, n, parse_params, "params")
    slist, pp2 = _per_pair(overhang, n, OverhangStrategy.parse, "overhang")
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

    batch = ffi.new("pyphmm_sw_batch *")
    batch.num_pairs = n
    keep = [ffi.from_buffer(ref_buf), ffi.from_buffer(alt_buf)]
    batch.ref = keep[0]
    batch.alt = keep[1]
    batch.ref_offsets = ffi.cast("int64_t *", ref_off.ctypes.data)
    batch.alt_offsets = ffi.cast("int64_t *", alt_off.ctypes.data)
    batch.params = ffi.cast("pyphmm_sw_params *", par.ctypes.data)
    batch.strategies = ffi.cast("int8_t *", strat.ctypes.data)
    batch.per_pair = 1 if per_pair else 0
    err = ffi.new("pyphmm_error *")
    st = ffi.new("pyphmm_stats *")
    rc = lib.pyphmm_sw_align(batch, ffi.cast("char *", cigars.ctypes.data),
                             ffi.cast("int64_t *", cig_off.ctypes.data),
                             ffi.cast("int32_t *", offsets.ctypes.data), opts, st, err)
    _native.raise_for_status(rc, err)
    if stats is not None:
        stats.update(_native.stats_dict(st))
    used = lib.pyphmm_sw_compact_cigars(ffi.cast("char *", cigars.ctypes.data),
                                        ffi.cast("int64_t *", cig_off.ctypes.data), n)
    cig = cigars[:used].tobytes().decode("ascii").split("\0")
    cig.pop()  # after the last NUL
    return cig, offsets


# ---- command line: pyphmm align ------------------------------------------------

CHUNK_PAIRS = 100_000


def _read_pairs(path: str):
    """Yields (line number, ref, alt) from a REF<TAB>ALT file; errors name file:line."""
    f = sys.stdin if path == "-" else open(path, "r", encoding="ascii", errors="strict", newline=None)
    name = "<stdin>" if path == "-" else path
    try:
        lineno = 0
        while True:
            try:
                line = f.readline()
            except UnicodeDecodeError:
                raise ValueError(f"{name}:{lineno + 1}: not ASCII text") from None
            if not line:
                break
            lineno += 1
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2:
                raise ValueError(f"{name}:{lineno}: expected REF<TAB>ALT, got {len(fields)} field(s)")
            ref, alt = fields
            for what, seq in (("ref", ref), ("alt", alt)):
                if not seq:
                    raise ValueError(f"{name}:{lineno}: empty {what}")
                if len(seq) > MAX_LENGTH:
                    raise ValueError(f"{name}:{lineno}: {what} is {len(seq)} bp, longer than {MAX_LENGTH}")
                if not seq.isprintable() or " " in seq:
                    raise ValueError(f"{name}:{lineno}: {what} holds whitespace or control characters")
            yield lineno, ref, alt
    finally:
        if f is not sys.stdin:
            f.close()


def cmd_align(args) -> int:
    if args.params is not None and args.preset is not None:
        raise ValueError("give --params or --preset, not both")
    if args.params is not None:
        try:
            vals = [int(x) for x in args.params.split(",")]
        except ValueError:
            raise ValueError(f"--params must be M,X,O,E integers, not {args.params!r}") from None
        params = parse_params(vals)
    else:
        params = parse_params(args.preset or "ORIGINAL_DEFAULT")
    overhang = OverhangStrategy.parse(args.overhang)
    start = time.perf_counter()
    total = cells = 0
    refs, alts = [], []
    with atomic_output(args.output) as out:

        def flush():
            nonlocal cells
            st = {}
            cig, off = align_batch(refs, alts, params=params, overhang=overhang, backend=args.backend,
                                   threads=args.threads, stats=st)
            cells += st.get("cells", 0)
            out.write("".join(f"{c}\t{o}\n" for c, o in zip(cig, off.tolist())))
            refs.clear()
            alts.clear()

        for _, ref, alt in _read_pairs(args.input):
            refs.append(ref)
            alts.append(alt)
            total += 1
            if len(refs) >= CHUNK_PAIRS:
                flush()
        if refs:
            flush()
    print(f"pyphmm: {total} alignments, {cells} cells, {time.perf_counter() - start:.3f} s", file=sys.stderr)
    return 0


def add_align_parser(sub) -> None:
    """Registers ``pyphmm align`` on an argparse subparsers object."""
    from .cli import _positive_int
    p = sub.add_parser("align", help="Smith-Waterman (GATK semantics) for REF<TAB>ALT pairs")
    p.add_argument("input", help="one REF<TAB>ALT pair per line, or - for stdin")
    p.add_argument("--output", "-o", required=True, help="CIGAR<TAB>OFFSET per line, or - for stdout")
    p.add_argument("--params", default=None, metavar="M,X,O,E",
                   help="match, mismatch, gap open, gap extend (e.g. 3,-1,-4,-3)")
    p.add_argument("--preset", default=None, type=str.upper, choices=sorted(PRESETS),
                   help="GATK parameter set (default ORIGINAL_DEFAULT)")
    p.add_argument("--overhang", default="SOFTCLIP", type=str.upper,
                   choices=[m.name for m in OverhangStrategy], help="overhang strategy (default SOFTCLIP)")
    p.add_argument("--backend", choices=sorted(_native.BACKENDS), default="auto")
    p.add_argument("--threads", type=_positive_int, default=None, help="CPU threads (default: all)")
    p.set_defaults(func=cmd_align)
