"""pyphmm: GATK's PairHMM and Smith-Waterman kernels on GPU and CPU.

Results follow Intel GKL (what GATK's HaplotypeCaller runs): PairHMM log10
likelihoods within 1e-5 of GKL's, Smith-Waterman CIGARs identical to GATK's.

>>> import pyphmm
>>> read = pyphmm.Read("ACGT", quals=[30] * 4, ins=[45] * 4, dels=[45] * 4, gcp=[10] * 4)
>>> pyphmm.compute_likelihoods([read], ["ACGTACGT"]).shape
(1, 1)
"""
from ._native import BackendUnavailableError, info
from ._version import __version__
from .pairhmm import (HaplotypeBatch, Read, ReadBatch, compute_likelihoods,
                      compute_regions)
from . import sw
from .sw import (ALIGNMENT_TO_BEST_HAPLOTYPE, NEW_SW_PARAMETERS, ORIGINAL_DEFAULT, STANDARD_NGS,
                 OverhangStrategy, SWParameters, align, align_batch)

__all__ = [
    "__version__", "info", "BackendUnavailableError",
    "Read", "ReadBatch", "HaplotypeBatch", "compute_likelihoods", "compute_regions",
    "sw", "align", "align_batch", "SWParameters", "OverhangStrategy", "ORIGINAL_DEFAULT",
    "STANDARD_NGS", "NEW_SW_PARAMETERS", "ALIGNMENT_TO_BEST_HAPLOTYPE",
]
