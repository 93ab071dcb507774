"""The readable Python reference (devtools/oracle/reference.py) agrees with GKL and
with pyphmm on short cases, so it documents the algorithm actually run."""

import numpy as np
import pytest

import pyphmm
from devtools.oracle import TOL, reference
from devtools.oracle.gkl import gkl_regions
from devtools.regions import make_region


def _reference(region):
    reads, haps = region
    return np.array(
        [
            [
                reference.log10_likelihood(
                    r.bases, r.quals.tolist(), r.ins.tolist(), r.dels.tolist(), r.gcp.tolist(), haps[h]
                )
                for h in range(len(haps))
            ]
            for r in reads
        ]
    )


@pytest.fixture(scope="module")
def short_regions():
    rng = np.random.default_rng(11)
    regs = [
        make_region(rng, 3, 2, preset="random", read_len=(1, 12), hap_len=(1, 20), alphabet=b"ACGTN") for _ in range(4)
    ]
    regs.append(
        make_region(
            rng, 2, 2, preset="random", read_len=(5, 10), hap_len=(8, 16), qual=(6, 90), indel_q=(10, 90), gcp_q=(5, 40)
        )
    )
    # read identical to the haplotype, GATK default gap penalties
    regs.append(
        (
            pyphmm.ReadBatch.from_reads([pyphmm.Read("ACGTTGCA", [30] * 8, [45] * 8, [45] * 8, [10] * 8)]),
            pyphmm.HaplotypeBatch.from_haplotypes(["ACGTTGCA"]),
        )
    )
    return regs


@pytest.mark.jvm
def test_reference_matches_gkl(gkl_jvm, short_regions):
    for double in (False, True):
        gkl = gkl_regions(short_regions, double=double)
        for reg, g in zip(short_regions, gkl):
            assert np.max(np.abs(_reference(reg) - g)) <= TOL


def test_reference_matches_pyphmm(short_regions):
    for reg in short_regions:
        ours = pyphmm.compute_likelihoods(*reg, double=True, backend="cpu")
        assert np.max(np.abs(_reference(reg) - ours)) <= TOL


def test_match_to_match_limits():
    # Both gap-open penalties at 0 leave no probability for staying in M.
    assert reference.match_to_match(0, 0) == 0.0
    assert abs(reference.match_to_match(45, 45) - (1 - 2 * 10**-4.5)) < 1e-6
