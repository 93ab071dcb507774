"""The peers pyphmm's results are checked against: GKL through jpype
(``gkl``, ``gkl_sw``), the shim jar beside it (``shim``), literal Python
references of the PairHMM recurrence (``reference``) and of GATK's
Smith-Waterman rules (``sw_reference``), and GKL 0.9's PDHMM and GATK's
Java PDHMM from an oracle build outside the repository (``gkl_pdhmm``)."""

import numpy as np

# GATK's own tests accept this |difference| in log10 likelihood.
TOL = 1e-5


def max_abs_diff(a_list, b_list) -> float:
    """Largest |a - b| over lists of equally shaped arrays."""
    worst = 0.0
    for a, b in zip(a_list, b_list):
        assert a.shape == b.shape
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))))
    return worst
