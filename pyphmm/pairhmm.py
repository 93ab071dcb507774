"""PairHMM: log10 likelihoods of reads given haplotypes (GATK's forward algorithm).

Inputs are validated here, packed once into contiguous numpy buffers and
handed to the native library in one call; results come back as numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from . import _native
from ._convert import as_bases as _as_bases
from ._convert import check_stats, physical_memory
from ._pyphmm import ffi, lib

_QUAL_FIELDS = ("quals", "ins", "dels", "gcp")
_READ_FIELDS = ("bases",) + _QUAL_FIELDS


def _as_quals(value, what: str) -> np.ndarray:
    """Raw phred values as a 1-D uint8 array (no ASCII offset)."""
    if isinstance(value, str):
        raise TypeError(
            f"{what}: qualities as str are ambiguous; pass raw phred values as bytes, "
            "a uint8 array or a list of ints (Read.from_phred33 takes ASCII+33 text)"
        )
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(value), dtype=np.uint8)
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{what}: qualities must be 1-D, got shape {arr.shape}")
    if arr.dtype == np.uint8:
        return np.ascontiguousarray(arr)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{what}: qualities must be integers, not {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(f"{what}: qualities must be within 0..255")
    return arr.astype(np.uint8)


@dataclass(frozen=True, eq=False)
class Read:
    """One read: bases and four per-base raw phred arrays of the same length.

    ``bases`` accepts str, bytes or a uint8 array of ASCII codes. A, C, G, T
    and N are significant; like GKL, any other byte (lowercase too) is read
    as A. N matches every base. The qualities (base quality, insertion and
    deletion gap-open, gap continuation) accept bytes, uint8 arrays or int
    sequences of raw phred values; each is masked with ``& 127`` as GKL does.
    """

    bases: bytes
    quals: np.ndarray
    ins: np.ndarray
    dels: np.ndarray
    gcp: np.ndarray

    def __post_init__(self):
        bases = _as_bases(self.bases, "read")
        object.__setattr__(self, "bases", bases)
        if not bases:
            raise ValueError("read: empty bases")
        for field in _QUAL_FIELDS:
            arr = _as_quals(getattr(self, field), f"read {field}")
            if len(arr) != len(bases):
                raise ValueError(f"read: {len(bases)} bases but {len(arr)} {field} values")
            object.__setattr__(self, field, arr)

    @classmethod
    def from_phred33(cls, bases, quals: str, ins: str, dels: str, gcp: str) -> "Read":
        """A read whose qualities are ASCII+33 text, as in record files."""
        conv = []
        for name, text in zip(_QUAL_FIELDS, (quals, ins, dels, gcp)):
            raw = np.frombuffer(_as_bases(text, f"read {name}"), dtype=np.uint8)
            if raw.size and raw.min() < 33:
                raise ValueError(f"read {name}: character below '!' in ASCII+33 qualities")
            conv.append(raw - 33)
        return cls(bases, *conv)

    def __len__(self) -> int:
        return len(self.bases)


def _check_offsets(offsets: np.ndarray, total: int, what: str) -> None:
    """Offsets of a packed buffer of `total` bytes: 1-D, from 0 to total,
    strictly increasing (no empty sequence)."""
    if offsets.ndim != 1 or offsets.size < 1:
        raise ValueError(f"{what}: offsets must be 1-D with at least one entry")
    if offsets[0] != 0 or offsets[-1] != total:
        raise ValueError(f"{what}: offsets must start at 0 and end at the buffer length ({total})")
    lengths = np.diff(offsets)
    if lengths.size and lengths.min() <= 0:
        i = int(np.argmax(lengths <= 0))
        raise ValueError(f"{what} {i}: empty sequence (or offsets not increasing)")


def _u8(arr, what: str) -> np.ndarray:
    arr = np.ascontiguousarray(arr)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise TypeError(f"{what} must be a 1-D uint8 array")
    return arr


def _int_offsets(offsets, what: str) -> np.ndarray:
    """Offsets as int64, refusing floats (which would be truncated)."""
    arr = np.asarray(offsets)
    if arr.size and not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_):
        raise TypeError(f"{what}: offsets must be integers, not {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


class ReadBatch:
    """Reads packed for zero-copy calls.

    Five 1-D uint8 arrays (bases as ASCII, then raw phred base qualities,
    insertion gap-open, deletion gap-open and gap continuation penalties) hold
    all reads back to back; read i spans ``offsets[i]:offsets[i+1]``.
    Indexing returns ``Read`` objects (views into the buffers).

    The batch keeps the caller's arrays (zero copy). Every call checks them
    again (equal lengths, offsets from 0 to the buffer length, increasing)
    and computes on private copies, so arrays changed after construction
    give a ValueError, never a read outside them.
    """

    def __init__(self, bases, quals, ins, dels, gcp, offsets):
        self.bases = _u8(bases, "bases")
        self.quals, self.ins, self.dels, self.gcp = (_u8(a, n) for a, n in zip((quals, ins, dels, gcp), _QUAL_FIELDS))
        self.offsets = _int_offsets(offsets, "read")
        for name in _QUAL_FIELDS:
            if getattr(self, name).size != self.bases.size:
                raise ValueError(f"read batch: {self.bases.size} bases but {getattr(self, name).size} {name}")
        _check_offsets(self.offsets, self.bases.size, "read")

    @classmethod
    def from_reads(cls, reads: Iterable[Read]) -> "ReadBatch":
        reads = list(reads)
        for i, r in enumerate(reads):
            if not isinstance(r, Read):
                raise TypeError(f"read {i}: expected pyphmm.Read, not {type(r).__name__}")
        offsets = np.zeros(len(reads) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in reads], out=offsets[1:])
        bases = np.frombuffer(b"".join(r.bases for r in reads), dtype=np.uint8)

        def cat(field):
            return np.concatenate([getattr(r, field) for r in reads]) if reads else np.zeros(0, np.uint8)

        return cls(bases, cat("quals"), cat("ins"), cat("dels"), cat("gcp"), offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, i: int) -> Read:
        return self._read(_read_arrays(self, what="read batch"), i)

    def __iter__(self):
        checked = _read_arrays(self, what="read batch")  # once, for every read (as a call checks)
        return (self._read(checked, i) for i in range(len(checked[1]) - 1))

    @staticmethod
    def _read(checked, i: int) -> Read:
        """Read i of arrays and offsets checked by _read_arrays."""
        arrays, offsets = checked
        n = offsets.size - 1
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        s = slice(offsets[i], offsets[i + 1])
        return Read(*(a[s] for a in arrays))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


class HaplotypeBatch:
    """Haplotypes packed back to back: ``bases[offsets[h]:offsets[h+1]]``.

    Like ReadBatch, checked again at every call."""

    def __init__(self, bases, offsets):
        self.bases = _u8(bases, "haplotype bases")
        self.offsets = _int_offsets(offsets, "haplotype")
        _check_offsets(self.offsets, self.bases.size, "haplotype")

    @classmethod
    def from_haplotypes(cls, haplotypes: Iterable) -> "HaplotypeBatch":
        if isinstance(haplotypes, (str, bytes)):
            raise TypeError("haplotypes must be a sequence of sequences, not a single str/bytes")
        haps = [_as_bases(h, f"haplotype {i}") for i, h in enumerate(haplotypes)]
        for i, h in enumerate(haps):
            if not h:
                raise ValueError(f"haplotype {i}: empty bases")
        offsets = np.zeros(len(haps) + 1, dtype=np.int64)
        np.cumsum([len(h) for h in haps], out=offsets[1:])
        return cls(np.frombuffer(b"".join(haps), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, i: int) -> bytes:
        bases, offsets = _hap_arrays(self, what="haplotype batch")  # (as a call checks them)
        n = offsets.size - 1
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        return bases[offsets[i] : offsets[i + 1]].tobytes()

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


ReadsLike = Union[ReadBatch, Sequence[Read]]
HaplotypesLike = Union[HaplotypeBatch, Sequence[Union[str, bytes]]]


def _iterable(value) -> bool:
    return hasattr(value, "__iter__") and not isinstance(value, (str, bytes, bytearray))


def _as_read_batch(reads, what: str) -> ReadBatch:
    if isinstance(reads, ReadBatch):
        return reads
    if not _iterable(reads):
        raise TypeError(f"{what} must be a ReadBatch or a sequence of pyphmm.Read, not {type(reads).__name__}")
    return ReadBatch.from_reads(reads)


def _as_hap_batch(haps, what: str) -> HaplotypeBatch:
    if isinstance(haps, HaplotypeBatch):
        return haps
    if not _iterable(haps):
        raise TypeError(
            f"{what} must be a HaplotypeBatch or a sequence of str, bytes or uint8 arrays, not {type(haps).__name__}"
        )
    return HaplotypeBatch.from_haplotypes(haps)


def _read_arrays(batch: ReadBatch, k: int = 0, what: str | None = None):
    """The five arrays and offsets of a read batch, checked now (the batch
    keeps the caller's arrays, which may have changed since it was made)."""
    what = what or f"region {k} reads"
    arrays = [_u8(getattr(batch, f), f"{what} {f}") for f in _READ_FIELDS]
    offsets = _int_offsets(batch.offsets, what).copy()
    for name, arr in zip(_QUAL_FIELDS, arrays[1:]):
        if arr.size != arrays[0].size:
            raise ValueError(f"{what}: {arrays[0].size} bases but {arr.size} {name} values")
    _check_offsets(offsets, arrays[0].size, what)
    return arrays, offsets


def _hap_arrays(batch: HaplotypeBatch, k: int = 0, what: str | None = None):
    what = what or f"region {k} haplotypes"
    bases = _u8(batch.bases, f"{what} bases")
    offsets = _int_offsets(batch.offsets, what).copy()
    _check_offsets(offsets, bases.size, what)
    return bases, offsets


def _as_region(region, k: int, single: bool):
    if not isinstance(region, (tuple, list)) or len(region) != 2:
        raise TypeError(
            f"regions[{k}] must be a (reads, haplotypes) pair, not {type(region).__name__}"
            + (f" of length {len(region)}" if isinstance(region, (tuple, list)) else "")
        )
    where = "" if single else f"regions[{k}] "
    return _as_read_batch(region[0], f"{where}reads"), _as_hap_batch(region[1], f"{where}haplotypes")


# Bytes of a call's results: one double per pair.
RESULT_BYTES_PER_PAIR = 8


def _check_result_size(shapes) -> None:
    """Refuses a call whose results cannot fit in this machine's memory,
    before they are allocated (the CLI refuses such a record alike)."""
    pairs = sum(nr * nh for nr, nh in shapes)
    need, have = pairs * RESULT_BYTES_PER_PAIR, physical_memory()
    if have > 0 and need > have:
        what = (
            f"{shapes[0][0]} reads x {shapes[0][1]} haplotypes"
            if len(shapes) == 1
            else f"{len(shapes)} regions of {pairs} read-haplotype pairs in all"
        )
        raise ValueError(
            f"{what} need about {need / 1e9:.1f} GB for their results, "
            f"more than this machine's memory ({have / 1e9:.1f} GB)"
        )


class _Packed:
    """Several regions in one set of buffers, as one C call wants them.

    Built from private copies checked at call time: the native side reads
    only these buffers, within the offsets checked here."""

    def __init__(self, regions, single: bool = False):
        batches = [_as_region(r, k, single) for k, r in enumerate(regions)]
        reads = [_read_arrays(r, k) for k, (r, _) in enumerate(batches)]
        haps = [_hap_arrays(h, k) for k, (_, h) in enumerate(batches)]
        self.shapes = [(o.size - 1, ho.size - 1) for (_, o), (_, ho) in zip(reads, haps)]
        _check_result_size(self.shapes)
        self.cells = sum(int(o[-1]) * int(ho[-1]) for (_, o), (_, ho) in zip(reads, haps))

        def cat(arrays):
            return np.concatenate(arrays) if arrays else np.zeros(0, np.uint8)

        def shifted(offset_list):
            # Offsets of each region, moved to their place in the joined buffer.
            base, out = 0, []
            for o in offset_list:
                out.append(o[:-1] + base)
                base += int(o[-1])
            out.append(np.array([base], dtype=np.int64))
            return np.concatenate(out)

        self.buffers = [cat([arrays[i] for arrays, _ in reads]) for i in range(5)]
        self.hap_bases = cat([b for b, _ in haps])
        self.read_offsets = shifted([o for _, o in reads])
        self.hap_offsets = shifted([o for _, o in haps])
        self.c_regions = ffi.new("pyphmm_region[]", max(1, len(reads)))
        self._keep = [ffi.from_buffer("uint8_t[]", b) for b in self.buffers]
        self._keep.append(ffi.from_buffer("uint8_t[]", self.hap_bases))
        ro = ffi.from_buffer("int64_t[]", self.read_offsets)
        ho = ffi.from_buffer("int64_t[]", self.hap_offsets)
        self._keep += [ro, ho]
        r_first = h_first = 0
        for k, (nr, nh) in enumerate(self.shapes):
            c = self.c_regions[k]
            c.num_reads, c.num_haps = nr, nh
            c.read_bases, c.read_quals, c.read_ins, c.read_dels, c.read_gcp = self._keep[:5]
            c.hap_bases = self._keep[5]
            c.read_offsets = ro + r_first
            c.hap_offsets = ho + h_first
            r_first += nr
            h_first += nh
        self.total = sum(nr * nh for nr, nh in self.shapes)


def _region_list(regions) -> list:
    if isinstance(regions, (str, bytes, bytearray)) or not hasattr(regions, "__iter__"):
        raise TypeError(f"regions must be an iterable of (reads, haplotypes) pairs, not {type(regions).__name__}")
    return list(regions)


def compute_regions(
    regions: Iterable,
    *,
    double: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    stats: dict | None = None,
    hybrid: bool | None = None,
) -> list:
    """Likelihoods for many regions in one native call (whole-workload mode).

    ``regions`` is an iterable of ``(reads, haplotypes)`` pairs, each accepted
    in any form ``compute_likelihoods`` takes. Returns one (R, H) float64
    array per region. All regions are packed together so a GPU sees the whole
    batch at once. If ``stats`` is a dict it receives what the call did
    (pairs, cells, double_pairs, backend, fell_back, seconds, and regions and
    cells per side: gpu_regions, gpu_cells, cpu_regions, cpu_cells, hybrid).

    Under ``backend="auto"`` with a usable GPU and several regions the call
    runs on the GPU as one batch. ``hybrid=True`` (or PYPHMM_HYBRID=1)
    lets GPU and CPU threads share the regions (the GPU the largest, the CPU
    threads the smallest, as long as that finishes sooner than the GPU
    alone) when the CPU's predicted share of the work is at least
    PYPHMM_DEV's hybrid_min_cpu_share percent (default 5); otherwise the GPU
    computes them alone. ``hybrid=False`` overrides PYPHMM_HYBRID=1.
    ``backend="cuda"`` is always GPU only, ``"cpu"`` CPU only.
    """
    return _compute(_region_list(regions), False, double, backend, threads, stats, hybrid)


def _compute(regions: list, single: bool, double, backend, threads, stats, hybrid) -> list:
    """compute_regions; single: one region, whose arguments are named
    reads and haplotypes in messages (compute_likelihoods)."""
    check_stats(stats)
    opts = _native.make_options(backend, threads, double, hybrid)
    packed = _Packed(regions, single)
    out = np.empty(packed.total, dtype=np.float64)
    err = ffi.new("pyphmm_error *")
    st = ffi.new("pyphmm_stats *")
    rc = lib.pyphmm_pairhmm(packed.c_regions, len(packed.shapes), ffi.from_buffer("double[]", out), opts, st, err)
    _native.raise_for_status(rc, err)
    if stats is not None:
        stats.update(_native.stats_dict(st))
    results, start = [], 0
    for nr, nh in packed.shapes:
        results.append(out[start : start + nr * nh].reshape(nr, nh))
        start += nr * nh
    return results


def compute_likelihoods(
    reads: ReadsLike,
    haplotypes: HaplotypesLike,
    *,
    double: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    stats: dict | None = None,
) -> np.ndarray:
    """log10 P(read | haplotype) for every read and haplotype of one region.

    Parameters
    ----------
    reads : sequence of :class:`Read`, or a :class:`ReadBatch`
    haplotypes : sequence of str/bytes/uint8 arrays, or a :class:`HaplotypeBatch`
    double : compute every pair in double precision (GKL's
        ``useDoublePrecision``). By default pairs run in float and those whose
        float result underflows (sum < 1e-28) are recomputed in double, as
        GKL does; results then match GKL within 1e-5 in log10.
    backend : ``"auto"`` (GPU when usable and the region is large enough,
        else CPU), ``"cpu"`` or ``"cuda"``; ``PYPHMM_BACKEND`` in the
        environment overrides ``"auto"``.
    threads : CPU threads (default: all available cores).
    stats : optional dict filled with what the call did.

    Returns
    -------
    numpy.ndarray of shape (len(reads), len(haplotypes)), float64.

    Raises ValueError for invalid input (empty read or haplotype, unequal
    base and quality lengths), TypeError for wrong types, and
    BackendUnavailableError when ``backend="cuda"`` cannot run here.
    """
    return _compute([(reads, haplotypes)], True, double, backend, threads, stats, None)[0]
