"""GATK/GKL's own PairHMM vectors (pairhmm-testdata.txt): every case within
1e-5 of the published expected value, in float and in double."""
import os

import numpy as np
import pytest

import pyphmm

from helpers import TOL


def load_cases(data_dir):
    """(hap, Read, expected) per line: ASCII+33 quals, base quality floored
    at 6 after removing the offset, the other three only offset."""
    cases = []
    with open(os.path.join(data_dir, "pairhmm-testdata.txt")) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            hap, bases, qual, ins, dels, gcp, expected = line.split()
            raw = [np.frombuffer(s.encode(), np.uint8).astype(np.int64) - 33 for s in (qual, ins, dels, gcp)]
            raw[0] = np.maximum(raw[0], 6)
            cases.append((hap, pyphmm.Read(bases, *raw), float(expected)))
    return cases


@pytest.fixture(scope="module")
def cases(shared_data):
    c = load_cases(shared_data)
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
