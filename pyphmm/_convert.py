"""Argument conversions shared by the PairHMM and Smith-Waterman APIs, so
both accept the same forms and name the argument in the same words."""

from __future__ import annotations

import operator
import sys

INT32_MAX = 2**31 - 1


def as_bases(value, what: str) -> bytes:
    """Bases as bytes from str (ASCII), bytes-like or a 1-D uint8 array of
    ASCII codes; TypeError for any other type, ValueError for non-ASCII str."""
    if isinstance(value, str):
        try:
            return value.encode("ascii")
        except UnicodeEncodeError:
            raise ValueError(f"{what}: bases must be ASCII") from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    np = sys.modules.get("numpy")  # (no numpy loaded: value cannot be an array)
    if np is not None and isinstance(value, np.ndarray):
        if value.dtype != np.uint8 or value.ndim != 1:
            raise TypeError(f"{what}: bases array must be 1-D uint8 (ASCII codes), not {value.dtype} {value.ndim}-D")
        return value.tobytes()
    raise TypeError(f"{what}: a sequence of bases must be str, bytes or a 1-D uint8 array, not {type(value).__name__}")


def as_int(value, what: str, lo: int, hi: int) -> int:
    """An integer argument (Python or numpy int, not bool: numpy's bool has
    no __index__) within lo..hi."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{what} must be within {lo}..{hi}, not {v}")
    return v


def check_stats(stats) -> None:
    if stats is not None and not isinstance(stats, dict):
        raise TypeError(f"stats must be a dict or None, not {type(stats).__name__}")


def physical_memory() -> float:
    """This machine's memory in bytes (0 if unknown)."""
    import os

    try:
        return float(os.sysconf("SC_PHYS_PAGES")) * float(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0.0
