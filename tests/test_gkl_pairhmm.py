"""pyphmm against the real GKL IntelPairHmm (Debian's libgkl), driven as
GATK drives it: one computeLikelihoods call per region.

Data: realistic generated regions (variant haplotypes, sampled reads, N
bases, bytes other than ACGTN), fully random regions (random lengths from 1
base, random qualities), and underflow-forcing regions whose float pass
must fall back to double. Both precisions: GKL's default (float with the
double recompute) and useDoublePrecision.
"""

import numpy as np
import pytest

import pyphmm
from devtools.oracle import TOL, max_abs_diff
from devtools.oracle.gkl import gkl_regions
from devtools.regions import generate, make_region

PRECISIONS = pytest.mark.parametrize("double", [False, True], ids=["float", "double"])


@pytest.fixture(scope="module")
def realistic():
    regs = generate(regions=120, seed=20261122, max_pairs=12000, n_rate=0.1, odd_rate=0.2, max_reads=40)
    assert sum(len(r) * len(h) for r, h in regs) >= 2000
    return regs


@pytest.fixture(scope="module")
def random_regions():
    rng = np.random.default_rng(5)
    regs = []
    for _ in range(60):
        regs.append(
            make_region(
                rng,
                int(rng.integers(1, 12)),
                int(rng.integers(1, 6)),
                preset="random",
                alphabet=b"ACGTNacgtnRYX*\x00\xff",
                qual=(1, 90),
                indel_q=(1, 90),
                gcp_q=(1, 40),
            )
        )
    # one-base reads and haplotypes
    regs.append(make_region(rng, 3, 2, preset="random", read_len=(1, 1), hap_len=(1, 3), qual=(1, 90)))
    regs.append(make_region(rng, 2, 3, preset="random", read_len=(1, 5), hap_len=(1, 1), qual=(1, 90)))
    return regs


@pytest.fixture(scope="module")
def underflow():
    return generate(regions=0, seed=77, underflow=4)


def _has_odd_bytes(regs):
    ok = set(b"ACGTN")
    return any(set(r.bases.tobytes()) - ok for r, _ in regs) and any(set(h.bases.tobytes()) - ok for _, h in regs)


def _check(regs, double):
    ours = [pyphmm.compute_likelihoods(r, h, double=double, backend="cpu") for r, h in regs]
    gkl = gkl_regions(regs, double=double)
    for o, g in zip(ours, gkl):
        assert np.isfinite(o).all(), "pyphmm returned -inf/NaN for valid input"
        assert np.isfinite(g).all(), "GKL itself returned non-finite values: bad test data"
    worst = max_abs_diff(ours, gkl)
    assert worst <= TOL, f"max |pyphmm - GKL| = {worst}"
    return ours


@pytest.mark.jvm
@pytest.mark.slow
@PRECISIONS
def test_realistic_regions(gkl_jvm, realistic, double):
    assert any(b"N" in r.bases.tobytes() for r, _ in realistic)
    assert _has_odd_bytes(realistic)
    _check(realistic, double)


@pytest.mark.jvm
@PRECISIONS
def test_random_regions(gkl_jvm, random_regions, double):
    assert min(int(r.lengths.min()) for r, _ in random_regions) == 1
    assert min(int(h.lengths.min()) for _, h in random_regions) == 1
    _check(random_regions, double)


@pytest.mark.jvm
@PRECISIONS
def test_underflow_regions_use_double(gkl_jvm, underflow, double):
    ours = _check(underflow, double)
    for (r, h), o in zip(underflow, ours):
        # float sums below 1e-28 <=> likelihood below about -64.1
        assert o.min() < -64.2
        st = {}
        pyphmm.compute_likelihoods(r, h, double=double, backend="cpu", stats=st)
        assert st["pairs"] == len(r) * len(h)
        if double:
            assert st["double_pairs"] == st["pairs"]
        else:
            assert st["double_pairs"] > 0
            # exactly the pairs whose float sum underflowed, within rounding
            # of the threshold
            deep = int(np.sum(o < -64.2))
            assert deep <= st["double_pairs"] <= int(np.sum(o < -64.0))


@pytest.mark.slow
def test_realistic_regions_rarely_need_double(realistic):
    st = {}
    pyphmm.compute_regions(realistic, backend="cpu", stats=st)
    assert st["double_pairs"] < 0.05 * st["pairs"]


@pytest.mark.jvm
def test_quality_zero_gives_identical_neg_inf(gkl_jvm):
    """Quality 0 makes some likelihoods legitimately -inf (all gap-open
    penalties 0: P(M->M) = 0). Both must agree exactly on where, and within
    tolerance elsewhere."""
    rng = np.random.default_rng(3)
    regs = [
        make_region(
            rng, 12, 3, preset="random", read_len=(1, 40), hap_len=(1, 60), qual=(0, 3), indel_q=(0, 3), gcp_q=(0, 3)
        )
        for _ in range(8)
    ]
    zero = make_region(
        rng, 3, 2, preset="random", read_len=(5, 20), hap_len=(5, 30), qual=(0, 0), indel_q=(0, 0), gcp_q=(0, 0)
    )
    regs.append(zero)
    for double in (False, True):
        ours = [pyphmm.compute_likelihoods(r, h, double=double, backend="cpu") for r, h in regs]
        gkl = gkl_regions(regs, double=double)
        assert np.isneginf(ours[-1]).all() and np.isneginf(gkl[-1]).all()
        n_inf = 0
        for o, g in zip(ours, gkl):
            assert not np.isnan(o).any()
            np.testing.assert_array_equal(np.isneginf(o), np.isneginf(g))
            fin = np.isfinite(g)
            n_inf += int((~fin).sum())
            assert np.all(np.abs(o[fin] - g[fin]) <= TOL)
        assert n_inf > zero[0].offsets.size  # -inf beyond the all-zero region too


@pytest.mark.slow
def test_threads_do_not_change_results(realistic, underflow):
    regs = realistic + underflow
    one = pyphmm.compute_regions(regs, backend="cpu", threads=1)
    two = pyphmm.compute_regions(regs, backend="cpu", threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@PRECISIONS
def test_compute_regions_equals_per_region_calls(realistic, underflow, random_regions, double):
    regs = realistic + underflow + random_regions
    together = pyphmm.compute_regions(regs, backend="cpu", double=double)
    assert len(together) == len(regs)
    for (r, h), t in zip(regs, together):
        assert t.shape == (len(r), len(h))
        np.testing.assert_array_equal(t, pyphmm.compute_likelihoods(r, h, backend="cpu", double=double))


@pytest.mark.jvm
def test_neg_inf_exactly_where_gkl_gives_it(gkl_jvm):
    """The README's contract: -inf exactly where GKL gives -inf, never NaN.
    A 3 kb read that mismatches its haplotype everywhere underflows even
    GKL's double recompute; a short read beside it stays finite."""
    rng = np.random.default_rng(30)
    hap = rng.choice(list(b"ACGT"), 3000).astype(np.uint8)
    bad = np.where(hap == ord("A"), ord("C"), ord("A")).astype(np.uint8)  # differs at every base
    reads = [
        pyphmm.Read(bad.tobytes(), [40] * 3000, [45] * 3000, [45] * 3000, [10] * 3000),
        pyphmm.Read(hap[:100].tobytes(), [30] * 100, [45] * 100, [45] * 100, [10] * 100),
    ]
    regs = [(pyphmm.ReadBatch.from_reads(reads), pyphmm.HaplotypeBatch.from_haplotypes([hap.tobytes()]))]
    for double in (False, True):
        ours = pyphmm.compute_likelihoods(*regs[0], double=double, backend="cpu")
        gkl = gkl_regions(regs, double=double)[0]
        assert not np.isnan(ours).any()
        np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(gkl))
        assert np.isneginf(ours[0, 0]) and np.isfinite(ours[1, 0])
        assert abs(ours[1, 0] - gkl[1, 0]) <= TOL
