"""pyphmm: GATK's PairHMM and Smith-Waterman kernels on GPU and CPU.

Results follow Intel GKL (what GATK's HaplotypeCaller runs): PairHMM log10
likelihoods within 1e-5 of GKL's, Smith-Waterman CIGARs identical to GATK's.

>>> import pyphmm
>>> read = pyphmm.Read("ACGT", quals=[30] * 4, ins=[45] * 4, dels=[45] * 4, gcp=[10] * 4)
>>> pyphmm.compute_likelihoods([read], ["ACGTACGT"]).shape
(1, 1)
"""

import importlib

from ._version import __version__

# The API loads on first use (PEP 562): `python -m pyphmm` runs this file
# before the CLI can handle signals, so it imports nothing that takes time,
# and a record file, which runs in native code, starts without numpy.
_LAZY = {name: ".pairhmm" for name in ("HaplotypeBatch", "Read", "ReadBatch", "compute_likelihoods", "compute_regions")}
_LAZY.update({"BackendUnavailableError": "._native", "info": "._native"})
_LAZY.update(
    {
        name: ".sw"
        for name in (
            "ALIGNMENT_TO_BEST_HAPLOTYPE",
            "NEW_SW_PARAMETERS",
            "ORIGINAL_DEFAULT",
            "STANDARD_NGS",
            "OverhangStrategy",
            "SWParameters",
            "align",
            "align_batch",
        )
    }
)


def __getattr__(name):
    if name == "sw":
        return importlib.import_module(".sw", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "__version__",
    "info",
    "BackendUnavailableError",
    "Read",
    "ReadBatch",
    "HaplotypeBatch",
    "compute_likelihoods",
    "compute_regions",
    "sw",
    "align",
    "align_batch",
    "SWParameters",
    "OverhangStrategy",
    "ORIGINAL_DEFAULT",
    "STANDARD_NGS",
    "NEW_SW_PARAMETERS",
    "ALIGNMENT_TO_BEST_HAPLOTYPE",
]
