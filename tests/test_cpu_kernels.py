"""Every CPU PairHMM kernel (AVX-512, AVX2, portable) against GKL.

The kernel is chosen once per process, so each runs in a subprocess that
writes its results to a .npy file; the parent compares them with GKL.
"""

import numpy as np
import pytest

from devtools.child import run_python
from devtools.oracle.gkl import gkl_regions
from devtools.regions import generate

KERNELS = ["avx512", "avx2", "portable"]
SEED = 20261122


# Small realistic regions (N and other bytes included) plus one unrelated
# region at high base quality whose float sums underflow (the double pass).
REGIONS = dict(regions=11, seed=SEED, max_reads=12, underflow=1, n_rate=0.3, odd_rate=0.1)


CHILD = """
import numpy as np, pyphmm
from devtools.regions import generate
assert pyphmm.info()["cpu_kernel"] == {kernel!r}, pyphmm.info()["cpu_kernel"]
regions = generate(**{regions!r})
for double in (False, True):
    stats = {{}}
    res = pyphmm.compute_regions(regions, double=double, backend="cpu", stats=stats)
    assert stats["double_pairs"] > 0, "the underflow region must exercise the double path"
    np.save({out!r} + ("-double" if double else "-float") + ".npy", np.concatenate([r.ravel() for r in res]))
"""


def cpu_supports(kernel):
    flags = open("/proc/cpuinfo").read().split()
    need = {"avx512": ["avx512f", "avx512bw", "avx512dq", "avx512vl"], "avx2": ["avx2", "fma"], "portable": []}[kernel]
    return all(f in flags for f in need)


@pytest.fixture(scope="module")
def gkl_results(gkl_jvm):
    """GKL's results for REGIONS, float and double (the same for every kernel)."""
    regions = generate(**REGIONS)
    return {
        double: np.concatenate([g.ravel() for g in gkl_regions(regions, double=double)]) for double in (False, True)
    }


@pytest.mark.jvm
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_matches_gkl(kernel, tmp_path, gkl_results):
    if not cpu_supports(kernel):
        pytest.skip(f"this CPU cannot run the {kernel} kernel")
    out = str(tmp_path / kernel)
    p = run_python(CHILD.format(kernel=kernel, regions=REGIONS, out=out), env={"PYPHMM_DEV": f"cpu_kernel={kernel}"})
    assert p.returncode == 0, p.stdout + p.stderr
    for double in (False, True):
        expected = gkl_results[double]
        got = np.load(out + ("-double" if double else "-float") + ".npy")
        assert got.shape == expected.shape
        assert np.isfinite(got).all()
        assert np.abs(got - expected).max() <= 1e-5, (kernel, double)


IDENTITY_CHILD = """
import numpy as np, pyphmm
rng = np.random.default_rng(5)
hap = rng.choice(list(b"ACGTN"), 333).astype(np.uint8).tobytes()
reads = []
for _ in range(32):
    m = int(rng.integers(1, 152)); s = int(rng.integers(0, 333 - m))
    reads.append(pyphmm.Read(hap[s:s + m], rng.integers(6, 60, m), rng.integers(10, 90, m),
                             rng.integers(10, 90, m), rng.integers(5, 40, m)))
for double in (False, True):
    # 32 pairs fill whole lane-per-pair groups; one pair alone runs on the stripe kernel.
    grouped = pyphmm.compute_likelihoods(reads, [hap], backend="cpu", double=double)[:, 0]
    single = np.array([pyphmm.compute_likelihoods([r], [hap], backend="cpu", double=double)[0, 0]
                       for r in reads])
    assert np.array_equal(grouped, single), (double, np.abs(grouped - single).max())
    # a region larger than one thread's share, on 1 thread (whole groups) and on
    # 16 (its groups turned into single pairs to spread over the threads)
    big = [pyphmm.Read(r.bases * 4, np.tile(r.quals, 4), np.tile(r.ins, 4), np.tile(r.dels, 4),
                       np.tile(r.gcp, 4)) for r in reads[:24]]
    st1, st16 = {}, {}
    one = pyphmm.compute_likelihoods(big, [hap * 2], backend="cpu", double=double, threads=1, stats=st1)
    many = pyphmm.compute_likelihoods(big, [hap * 2], backend="cpu", double=double, threads=16, stats=st16)
    assert np.array_equal(one, many), (double, np.abs(one - many).max())
"""


@pytest.mark.parametrize("kernel", KERNELS)
def test_stripe_kernel_equals_group_kernel(kernel):
    """A pair's result must not depend on which CPU kernel computed it."""
    if not cpu_supports(kernel):
        pytest.skip(f"this CPU cannot run the {kernel} kernel")
    p = run_python(IDENTITY_CHILD, env={"PYPHMM_DEV": f"cpu_kernel={kernel}"})
    assert p.returncode == 0, p.stdout + p.stderr
