"""Sample inputs shipped with the package.

``sample.in`` is a small record file (16 regions, 284 pairs, one of them an
underflow-forcing region) made by ``scripts/gen_regions.py --regions 15
--seed 2026 --max-reads 4 --underflow 1 --odd-rate 0.05``; handy for trying
the CLI and the API without any data of your own.
"""

from __future__ import annotations

import os

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def sample_path(name: str = "sample.in") -> str:
    """Path of a bundled sample file (default: the PairHMM record sample)."""
    path = os.path.join(_DATA, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no bundled sample named {name!r} in {_DATA}")
    return path
