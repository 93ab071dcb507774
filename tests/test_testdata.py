"""GATK/GKL's own PairHMM vectors (tests/data/pairhmm-testdata.txt): every case within
1e-5 of the published expected value, in float and in double."""

import numpy as np
import pytest

import pyphmm
from devtools.oracle import TOL
from devtools.testdata import pairhmm_cases


@pytest.fixture(scope="module")
def cases():
    c = [(hap, pyphmm.Read(bases, q, i, d, g), expected) for hap, bases, q, i, d, g, expected in pairhmm_cases()]
    assert len(c) == 104, f"expected GATK's 104 cases, found {len(c)}"
    return c


@pytest.mark.parametrize("double", [False, True], ids=["float", "double"])
def test_each_case_matches_expected(cases, double):
    bad = []
    for i, (hap, read, expected) in enumerate(cases):
        got = pyphmm.compute_likelihoods([read], [hap], double=double, backend="cpu")[0, 0]
        if not abs(got - expected) <= TOL:
            bad.append((i, got, expected))
    assert not bad, f"{len(bad)} cases off by more than {TOL}: {bad[:5]}"


@pytest.mark.parametrize("double", [False, True], ids=["float", "double"])
def test_all_cases_in_one_call(cases, double):
    # The same vectors as one region per case through compute_regions.
    res = pyphmm.compute_regions([([r], [h]) for h, r, _ in cases], double=double, backend="cpu")
    got = np.array([x[0, 0] for x in res])
    expected = np.array([e for _, _, e in cases])
    assert np.max(np.abs(got - expected)) <= TOL
