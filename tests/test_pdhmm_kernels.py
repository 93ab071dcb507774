"""Every CPU PDHMM kernel (AVX-512, AVX2, NEON, portable) equals the scalar
reference (GKL's serial algorithm) bit for bit, lane by lane, and GKL's
stored results within GATK's tolerance.

The kernel is chosen once per process (PYPHMM_DEV's cpu_kernel), so each
runs in a child that saves its results; the parent compares them. The
inputs mix lanes of every shape: stored GATK- and HaplotypeCaller-shaped
regions (one call for all, and one call per region: other lane-mates),
the edge cases (empty reads and haplotypes, underflow, open and nested
deletion spans ...), and one of GKL's own test files.
"""

import os
import platform

import numpy as np
import pytest

from devtools.child import run_python
from devtools.oracle import TOL
from devtools.pd_testdata import read_edge_file, stored_regions

pytestmark = pytest.mark.slow

KERNELS = ["avx512", "avx2", "neon", "portable"]

CHILD = """
import numpy as np, pyphmm
from devtools.pd_testdata import gkl_cases, raw_pdhmm, read_edge_file, stored_regions
parts = []
for shape in ("gatk", "hc"):
    regions, _ = stored_regions(shape)
    parts += pyphmm.compute_pd_regions(regions, backend="cpu", threads=2)
    parts += [pyphmm.compute_pd_likelihoods(r, h, backend="cpu", threads=1) for r, h in regions[:6]]
parts += raw_pdhmm([(r, h) for _, r, h, _ in read_edge_file()])
parts += raw_pdhmm([([r], [h]) for r, h, _ in gkl_cases("pdhmm_syn_199_68_51.txt")])
np.save({out!r}, np.concatenate([p.ravel() for p in parts]))
"""


def cpu_runs(kernel):
    """None if this CPU runs the kernel, else why not."""
    if kernel == "neon":
        if platform.machine() != "aarch64":
            return "NEON is AArch64's (tests/test_aarch64.py runs it under qemu)"
        return None
    if platform.machine() not in ("x86_64", "AMD64"):
        return None if kernel == "portable" else f"{kernel} is an x86-64 kernel"
    flags = open("/proc/cpuinfo").read().split()
    need = {"avx512": ["avx512f", "avx512bw", "avx512dq", "avx512vl"], "avx2": ["avx2", "fma"], "portable": []}[kernel]
    missing = [f for f in need if f not in flags]
    return f"this CPU lacks {', '.join(missing)} for the {kernel} kernel" if missing else None


def run_kernel(kernel, tmp_path):
    out = str(tmp_path / f"{kernel}.npy")
    p = run_python(CHILD.format(out=out), env={"PYPHMM_DEV": f"cpu_kernel={kernel}"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "warning" not in p.stderr, p.stderr  # a kernel the CPU cannot run is refused with a warning
    return np.load(out)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run_kernel("scalar", tmp_path_factory.mktemp("scalar"))


@pytest.fixture(scope="module")
def gkl_values():
    """GKL's stored values in the order of CHILD's output (NaN: no stored value)."""
    parts = []
    for shape in ("gatk", "hc"):
        regions, gkl = stored_regions(shape)
        parts += gkl + gkl[:6]
    parts += [w for *_, w in read_edge_file()]
    parts.append(np.full(199, np.nan))  # GKL's printed values: test_pdhmm.py checks them
    return np.concatenate([p.ravel() for p in parts])


def test_scalar_reference_is_gkl(reference, gkl_values):
    known = ~np.isnan(gkl_values)
    got, want = reference[known], gkl_values[known]
    assert np.array_equal(np.isneginf(got), np.isneginf(want)) and not np.isnan(reference).any()
    fin = np.isfinite(want)
    worst = float(np.abs(got[fin] - want[fin]).max())
    print(f"scalar reference: {got.size} pairs, max |diff| to GKL {worst:.3g}")
    assert worst <= TOL


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_equals_the_reference(kernel, tmp_path, reference, gkl_values):
    why = cpu_runs(kernel)
    if why:
        pytest.skip(why)
    got = run_kernel(kernel, tmp_path)
    assert got.shape == reference.shape
    same = (got == reference) | (np.isneginf(got) & np.isneginf(reference))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{kernel}: {bad.size} results differ from the scalar reference, first at {bad[:5]}"
    print(f"{kernel}: {got.size} results, bit-identical to the scalar reference")


def test_every_kernel_was_available_somewhere():
    """The x86 machines the suite runs on have AVX2 at least (CI's and the
    GPU host); a skip of every vector kernel would hide a broken build."""
    if platform.machine() == "x86_64" and os.path.exists("/proc/cpuinfo"):
        assert cpu_runs("avx2") is None
