"""PDHMM: GKL 0.9's partially determined PairHMM (GATK's ``--use-pdhmm``).

A PD haplotype carries one PD byte per base (docs/PDHMM.md): ``PD_SNP``
with the bits of the other bases a position may be (``PD_A``, ``PD_C``,
``PD_G``, ``PD_T``), and ``PD_DEL_START`` / ``PD_DEL_END`` on the first and
last base of a span that may be absent. Reads are the PairHMM's
:class:`pyphmm.Read`. Results are GKL's serial PDHMM in double.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from . import _native
from ._convert import as_bases as _as_bases
from ._convert import check_stats
from ._pyphmm import ffi, lib
from .pairhmm import (
    _as_read_batch,
    _check_offsets,
    _check_result_size,
    _int_offsets,
    _iterable,
    _read_arrays,
    _region_list,
    _u8,
)

PD_SNP = lib.PYPHMM_PD_SNP
PD_DEL_START = lib.PYPHMM_PD_DEL_START
PD_DEL_END = lib.PYPHMM_PD_DEL_END
PD_A = lib.PYPHMM_PD_A
PD_C = lib.PYPHMM_PD_C
PD_G = lib.PYPHMM_PD_G
PD_T = lib.PYPHMM_PD_T


def _as_pd(value, what: str) -> np.ndarray:
    """PD bytes as a 1-D uint8 array: bytes-like, a uint8 array or ints 0..255."""
    if isinstance(value, str):
        raise TypeError(f"{what}: PD bytes as str are ambiguous; pass bytes, a uint8 array or a list of ints")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(value), dtype=np.uint8)
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{what}: PD bytes must be 1-D, got shape {arr.shape}")
    if arr.dtype == np.uint8:
        return np.ascontiguousarray(arr)
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise TypeError(f"{what}: PD bytes must be integers, not {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(f"{what}: PD bytes must be within 0..255")
    return arr.astype(np.uint8)


@dataclass(frozen=True, eq=False)
class PDHaplotype:
    """A haplotype and its PD bytes, one per base.

    ``bases`` accepts str, bytes or a uint8 array of ASCII codes (compared
    as raw bytes: N matches everything, lowercase is not uppercase); ``pd``
    bytes, a uint8 array or a sequence of ints 0..255.
    """

    bases: bytes
    pd: np.ndarray

    def __post_init__(self):
        bases = _as_bases(self.bases, "haplotype")
        if not bases:
            raise ValueError("haplotype: empty bases")
        pd = _as_pd(self.pd, "haplotype pd")
        if len(pd) != len(bases):
            raise ValueError(f"haplotype: {len(bases)} bases but {len(pd)} PD bytes")
        object.__setattr__(self, "bases", bases)
        object.__setattr__(self, "pd", pd)

    def __len__(self) -> int:
        return len(self.bases)


class PDHaplotypeBatch:
    """PD haplotypes packed back to back: haplotype h is
    ``bases[offsets[h]:offsets[h+1]]`` with its PD bytes at the same
    offsets of ``pd``. Like ReadBatch, checked again at every call."""

    def __init__(self, bases, pd, offsets):
        self.bases = _u8(bases, "haplotype bases")
        self.pd = _u8(pd, "haplotype pd")
        self.offsets = _int_offsets(offsets, "haplotype")
        if self.pd.size != self.bases.size:
            raise ValueError(f"haplotype batch: {self.bases.size} bases but {self.pd.size} PD bytes")
        _check_offsets(self.offsets, self.bases.size, "haplotype")

    @classmethod
    def from_haplotypes(cls, haplotypes: Iterable) -> "PDHaplotypeBatch":
        if isinstance(haplotypes, (str, bytes, PDHaplotype)):
            raise TypeError("haplotypes must be a sequence of PDHaplotype or (bases, pd) pairs")
        haps = [_as_pd_haplotype(h, i) for i, h in enumerate(haplotypes)]
        offsets = np.zeros(len(haps) + 1, dtype=np.int64)
        np.cumsum([len(h) for h in haps], out=offsets[1:])
        bases = np.frombuffer(b"".join(h.bases for h in haps), dtype=np.uint8)
        pd = np.concatenate([h.pd for h in haps]) if haps else np.zeros(0, np.uint8)
        return cls(bases, pd, offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, i: int) -> PDHaplotype:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        s = slice(self.offsets[i], self.offsets[i + 1])
        return PDHaplotype(self.bases[s].tobytes(), self.pd[s])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def _as_pd_haplotype(value, i: int) -> PDHaplotype:
    if isinstance(value, PDHaplotype):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        try:
            return PDHaplotype(*value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"haplotype {i}: {e}") from None
    raise TypeError(f"haplotype {i}: expected pyphmm.PDHaplotype or a (bases, pd) tuple, not {type(value).__name__}")


def _as_pd_hap_batch(haps, what: str) -> PDHaplotypeBatch:
    if isinstance(haps, PDHaplotypeBatch):
        return haps
    if not _iterable(haps) or isinstance(haps, PDHaplotype):
        raise TypeError(
            f"{what} must be a PDHaplotypeBatch or a sequence of PDHaplotype or (bases, pd) pairs, "
            f"not {type(haps).__name__}"
        )
    return PDHaplotypeBatch.from_haplotypes(haps)


def _pd_hap_arrays(batch: PDHaplotypeBatch, k: int):
    """Bases, PD bytes and offsets of a batch, checked now (the caller's
    arrays may have changed since the batch was made)."""
    what = f"region {k} haplotypes"
    bases = _u8(batch.bases, f"{what} bases")
    pd = _u8(batch.pd, f"{what} pd")
    offsets = _int_offsets(batch.offsets, what).copy()
    if pd.size != bases.size:
        raise ValueError(f"{what}: {bases.size} bases but {pd.size} PD bytes")
    _check_offsets(offsets, bases.size, what)
    return bases, pd, offsets


def _as_pd_region(region, k: int, single: bool):
    if not isinstance(region, (tuple, list)) or len(region) != 2:
        raise TypeError(
            f"regions[{k}] must be a (reads, haplotypes) pair, not {type(region).__name__}"
            + (f" of length {len(region)}" if isinstance(region, (tuple, list)) else "")
        )
    where = "" if single else f"regions[{k}] "
    return _as_read_batch(region[0], f"{where}reads"), _as_pd_hap_batch(region[1], f"{where}haplotypes")


def _cat(arrays) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, np.uint8)


def _joined_offsets(offset_list) -> np.ndarray:
    """Each region's offsets moved to their place in the joined buffer."""
    base, out = 0, []
    for o in offset_list:
        out.append(o[:-1] + base)
        base += int(o[-1])
    out.append(np.array([base], dtype=np.int64))
    return np.concatenate(out)


class _PackedPD:
    """Several regions in one set of private buffers, as pyphmm_pdhmm wants
    them. Regions without reads or haplotypes (whose results are empty) are
    left out: the C ABI refuses them, as GKL does."""

    def __init__(self, regions, single: bool = False):
        batches = [_as_pd_region(r, k, single) for k, r in enumerate(regions)]
        reads = [_read_arrays(r, k) for k, (r, _) in enumerate(batches)]
        haps = [_pd_hap_arrays(h, k) for k, (_, h) in enumerate(batches)]
        self.all_shapes = [(o.size - 1, ho.size - 1) for (_, o), (_, _, ho) in zip(reads, haps)]
        self.kept = [k for k, (nr, nh) in enumerate(self.all_shapes) if nr and nh]
        reads, haps = [reads[k] for k in self.kept], [haps[k] for k in self.kept]
        self.shapes = [self.all_shapes[k] for k in self.kept]
        if self.shapes:
            _check_result_size(self.shapes)
        self.total = sum(nr * nh for nr, nh in self.shapes)
        buffers = [_cat([arrays[i] for arrays, _ in reads]) for i in range(5)]
        buffers += [_cat([b for b, _, _ in haps]), _cat([p for _, p, _ in haps])]
        self._keep = [ffi.from_buffer("uint8_t[]", b) for b in buffers]
        ro = ffi.from_buffer("int64_t[]", _joined_offsets([o for _, o in reads]))
        ho = ffi.from_buffer("int64_t[]", _joined_offsets([o for _, _, o in haps]))
        self._keep += [ro, ho]
        self.c_regions = ffi.new("pyphmm_pd_region[]", max(1, len(self.shapes)))
        r_first = h_first = 0
        for k, (nr, nh) in enumerate(self.shapes):
            c = self.c_regions[k]
            c.num_reads, c.num_haps = nr, nh
            c.read_bases, c.read_quals, c.read_ins, c.read_dels, c.read_gcp = self._keep[:5]
            c.hap_bases, c.hap_pd = self._keep[5:7]
            c.read_offsets = ro + r_first
            c.hap_offsets = ho + h_first
            r_first += nr
            h_first += nh


def compute_pd_regions(regions: Iterable, *, backend: str = "auto", threads: int | None = None, stats=None) -> list:
    """PDHMM likelihoods for many regions in one native call.

    ``regions`` is an iterable of ``(reads, haplotypes)`` pairs, each in a
    form :func:`compute_pd_likelihoods` takes. Returns one (R, H) float64
    array per region. If ``stats`` is a dict it receives what the call did
    (pairs, cells, backend, seconds, ...).
    """
    return _compute(_region_list(regions), False, backend, threads, stats)


def _compute(regions: list, single: bool, backend, threads, stats) -> list:
    """compute_pd_regions; single: one region, whose arguments are named
    reads and haplotypes in messages (compute_pd_likelihoods)."""
    check_stats(stats)
    opts = _native.make_options(backend, threads)
    packed = _PackedPD(regions, single)
    out = np.empty(packed.total, dtype=np.float64)
    err = ffi.new("pyphmm_error *")
    st = ffi.new("pyphmm_stats *")
    rc = lib.pyphmm_pdhmm(packed.c_regions, len(packed.shapes), ffi.from_buffer("double[]", out), opts, st, err)
    if rc != lib.PYPHMM_OK:
        # the library numbers the regions it was given: name the caller's
        message = ffi.string(err.message).decode("utf-8", "replace")
        message = re.sub(r"^region (\d+)", lambda m: f"region {packed.kept[int(m.group(1))]}", message)
        _native.raise_status(rc, message)
    if stats is not None:
        stats.update(_native.stats_dict(st))
    results, start = [], 0
    for nr, nh in packed.all_shapes:
        size = nr * nh
        results.append(out[start : start + size].reshape(nr, nh) if size else np.empty((nr, nh)))
        start += size
    return results


def compute_pd_likelihoods(
    reads, haplotypes, *, backend: str = "auto", threads: int | None = None, stats=None
) -> np.ndarray:
    """log10 P(read | PD haplotype) for every read and haplotype of one region.

    Parameters
    ----------
    reads : sequence of :class:`Read`, or a :class:`ReadBatch`
    haplotypes : sequence of :class:`PDHaplotype` or ``(bases, pd)``
        tuples, or a :class:`PDHaplotypeBatch`
    backend : ``"auto"`` (the GPU for calls above the calibrated
        threshold when one is usable), ``"cpu"`` or ``"cuda"`` (raises
        BackendUnavailableError without a usable GPU).
    threads : CPU threads (default: all available cores).
    stats : optional dict filled with what the call did.

    Returns a (len(reads), len(haplotypes)) float64 array, -inf where the
    likelihood is 0 (as GKL). Raises ValueError for input GKL refuses (a gap
    quality above 127, a base quality of 255, a read base other than
    A/C/G/T/N at a SNP position; the message names region, read and
    position), empty reads or haplotypes and unequal lengths, TypeError for
    wrong types.
    """
    return _compute([(reads, haplotypes)], True, backend, threads, stats)[0]
