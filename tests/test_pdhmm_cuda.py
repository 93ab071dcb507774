"""The GPU PDHMM (native/cuda/pdhmm_*, docs/PDHMM.md "GPU") against the CPU
backend and GKL 0.9.

The GPU kernel rounds in its own order (fused multiply-adds); the host
keeps a sum where it is certified within 1e-10 of GKL's serial result in
log10 and recomputes the others in GKL's order (docs/PDHMM.md, "GPU"): GPU
results must lie within 1e-10 of the CPU backend's (itself GKL's serial
code bit for bit), with -inf at the same pairs, and within GATK's tolerance
of GKL's stored data (tests/data/: 1e-5; GKL's own test files, printed to 7
digits, 1e-4), never NaN. A pair's bits do not depend on the call it comes
in (one region or many, several threads).

Three kinds of tests:
- on a GPU (pytest.mark.gpu, skipped without one): GKL's test files, the
  stored regions and edge cases, >= 100,000 generated pairs, reads up to
  1,000 bp and haplotypes up to 2,000 bp, regions of 1 x 1 and 500 x 100,
  per-region calls from concurrent threads;
- with a C++ compiler (everywhere): the kernel's own code run on the CPU
  by an emulator (tests/native/pdhmm_cuda_emu.cc), every sum against the
  CPU reference in the kernel's operation order bit for bit, every result
  of the host's against GKL's serial one within 1e-10 (results near and
  under the certified floor included); and the host's planning (chunks,
  read rows, the screen of refusable bytes: tests/native/pdhmm_plan_check.cc);
- everywhere: the dispatch of PDHMM calls, with PYPHMM_TEST=fake_gpu=N
  stand-ins for the GPU (the CPU backend on one thread) in child processes:
  backend choice, threshold, device, fallback, refused input, statistics.
"""

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pyphmm
from devtools.child import run_python
from devtools.oracle import TOL
from devtools.pd_edges import hap, read
from devtools.pd_regions import generate, pairs_and_cells
from devtools.pd_testdata import GKL_FILES, gkl_cases, raw_pdhmm, read_edge_file, stored_regions
from pyphmm.pdhmm import PD_A, PD_DEL_END, PD_DEL_START, PD_SNP, PD_T

INFO = pyphmm.info()
needs_gpu = pytest.mark.skipif(not INFO["cuda_usable"], reason="no usable CUDA device: " + INFO["cuda_status"])
GKL_FILE_TOL = 1e-4  # GKL's test files print 7 significant digits


def flat(arrays):
    return np.concatenate([np.asarray(a, np.float64).ravel() for a in arrays]) if len(arrays) else np.zeros(0)


CPU_TOL = 1e-10  # the GPU's certified distance from GKL's serial results


def near_cpu(got, want, what):
    """|GPU - CPU| <= CPU_TOL, -inf at the same pairs, never NaN."""
    g, w = flat(got), flat(want)
    assert g.shape == w.shape, what
    assert not np.isnan(g).any(), f"{what}: NaN"
    assert np.array_equal(np.isneginf(g), np.isneginf(w)), f"{what}: -inf where the CPU has none, or not where it has"
    fin = np.isfinite(w)
    worst = float(np.abs(g[fin] - w[fin]).max()) if fin.any() else 0.0
    differ = int(np.count_nonzero(g.view(np.int64) != w.view(np.int64)))
    print(f"{what}: {g.size} pairs, max |GPU - CPU| {worst:.2g} ({differ} differ in any bit)")
    assert worst <= CPU_TOL, f"{what}: max |GPU - CPU| {worst:.3g}"


def near_gkl(got, want, what, tol=TOL):
    """|got - GKL| <= tol, -inf exactly where GKL's is."""
    g, w = flat(got), flat(want)
    assert np.array_equal(np.isneginf(g), np.isneginf(w)), f"{what}: -inf where GKL has none, or not where it has"
    fin = np.isfinite(w)
    worst = float(np.abs(g[fin] - w[fin]).max()) if fin.any() else 0.0
    print(f"{what}: max |GPU - GKL| = {worst:.3g}")
    assert worst <= tol, f"{what}: max |diff| {worst:.3g}"


def both(regions, **kw):
    """(GPU, CPU) results of raw regions ((reads, haps) tuples of bytes)."""
    st = {}
    got = raw_pdhmm(regions, backend="cuda", stats=st, **kw)
    assert st["backend"] == "cuda" and st["device"] >= 0 and not st["fell_back"], st
    return got, raw_pdhmm(regions, backend="cpu")


# ---- on a GPU: GKL's data -----------------------------------------------------------


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", GKL_FILES)
@pytest.mark.parametrize("per_region", [False, True])
def test_gkl_test_files(name, per_region):
    cases = gkl_cases(name)
    regions = [([r], [h]) for r, h, _ in cases]
    if per_region:  # one region per call, as GATK calls (here the first 100)
        regions = regions[:100]
        got = [raw_pdhmm([g], backend="cuda")[0] for g in regions]
        cpu = raw_pdhmm(regions, backend="cpu")
    else:
        got, cpu = both(regions)
    near_cpu(got, cpu, name)
    near_gkl(got, [e for _, _, e in cases[: len(regions)]], name, GKL_FILE_TOL)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("shape", ["gatk", "hc"])
def test_stored_regions(shape):
    regions, gkl = stored_regions(shape)
    st = {}
    got = pyphmm.compute_pd_regions(regions, backend="cuda", stats=st)
    assert st["backend"] == "cuda" and st["gpu_regions"] == len(regions) and st["pairs"] == flat(gkl).size
    near_cpu(got, pyphmm.compute_pd_regions(regions, backend="cpu"), f"{shape} regions")
    near_gkl(got, gkl, f"{shape} regions")
    # one call per region, as GATK calls: the same bits
    for (reads, haps), g in zip(regions[:6], got[:6]):
        assert np.array_equal(pyphmm.compute_pd_likelihoods(reads, haps, backend="cuda"), g)


@pytest.mark.gpu
@needs_gpu
def test_edge_cases():
    """Empty reads and haplotypes, qualities of 0, underflow to -inf, N,
    lowercase, SNP bytes, one-base, nested and never-closed spans, PD bit
    7, extreme qualities, other bytes, many lengths in a region, a 1,000 bp
    read against a 1,500 bp haplotype, random PD bytes."""
    cases = read_edge_file()
    got, cpu = both([(r, h) for _, r, h, _ in cases])
    for (name, _, _, want), g, c in zip(cases, got, cpu):
        near_cpu([g], [c], name)
        near_gkl([g], [want], name)
    assert np.isneginf(flat(got)).sum() >= 10


# ---- on a GPU: generated data ---------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.slow
@needs_gpu
def test_100k_generated_pairs():
    """HaplotypeCaller-shaped and GATK-shaped regions, one call for all and
    one call per region, against the CPU backend (itself GKL's serial
    results bit for bit on the stored regions)."""
    regions = generate(100, seed=41, shape="hc") + generate(60, seed=42, shape="gatk")
    pairs, cells = pairs_and_cells(regions)
    assert pairs >= 100_000, pairs
    cpu = pyphmm.compute_pd_regions(regions, backend="cpu")
    st = {}
    got = pyphmm.compute_pd_regions(regions, backend="cuda", stats=st)
    assert st["pairs"] == pairs and st["cells"] == cells and st["gpu_cells"] == cells
    near_cpu(got, cpu, f"{len(regions)} regions in one call")
    per = [pyphmm.compute_pd_likelihoods(r, h, backend="cuda") for r, h in regions[:40]]
    near_cpu(per, cpu[:40], "one call per region")
    assert all(np.array_equal(a, b) for a, b in zip(per, got[:40])), "a pair's bits depend on its call"


def _long_and_wide():
    """Reads up to 1,000 bp against haplotypes up to 2,000 bp (several
    stripes), regions of 1 x 1 and 500 x 100, and spans never closed."""
    rng = np.random.default_rng(7)
    acgt = np.frombuffer(b"ACGT", np.uint8)

    def bases(n):
        return bytes(acgt[rng.integers(0, 4, n)])

    def marks(n, unclosed=False):
        m = {int(k): PD_SNP | PD_A | PD_T for k in rng.integers(0, n, max(1, n // 60))}
        for s in rng.integers(0, max(1, n - 12), max(1, n // 200)):
            m[int(s)] = m.get(int(s), 0) | PD_DEL_START
            if not unclosed:
                m[int(s) + 5] = m.get(int(s) + 5, 0) | PD_DEL_END
        return m

    regions = []
    ref = bases(2000)
    reads = [read(ref[s : s + m]) for m, s in ((1000, 300), (999, 0), (513, 1400), (129, 7), (1, 5), (0, 0))]
    haps = [hap(ref, marks(2000)), hap(ref[:1200], marks(1200, unclosed=True)), hap(ref[:64]), hap(b"")]
    regions.append((reads, haps))
    regions.append(([read(ref[10:70])], [hap(ref[:140], {60: PD_DEL_START})]))  # 1 x 1, never closed
    ref2 = bases(400)
    reads = [read(ref2[s : s + m]) for s, m in zip(rng.integers(0, 250, 500), rng.integers(40, 151, 500))]
    regions.append((reads, [hap(ref2[: int(n)], marks(int(n))) for n in rng.integers(150, 401, 100)]))
    return regions


@pytest.mark.gpu
@pytest.mark.slow
@needs_gpu
def test_long_reads_large_regions_unclosed_spans():
    regions = _long_and_wide()
    got, cpu = both(regions)
    near_cpu(got, cpu, "long and wide")
    assert np.isneginf(got[0][5]).all() and np.isneginf(got[0][:, 3]).all()  # empty read, empty haplotype
    assert np.isfinite(got[2]).all() and got[2].shape == (500, 100)


@pytest.mark.gpu
@needs_gpu
def test_results_near_the_certified_floor():
    """Random reads of 590-650 bases against random haplotypes: log10
    likelihoods around -590 to -630 and -inf, where the kernel's sums meet
    the certified floor and GKL's are subnormal; the host recomputes those
    in GKL's order."""
    rng = np.random.default_rng(11)
    acgt = np.frombuffer(b"ACGT", np.uint8)
    reads = [read(bytes(acgt[rng.integers(0, 4, int(m))])) for m in rng.integers(590, 651, 24)]
    haps = [hap(bytes(acgt[rng.integers(0, 4, int(n))])) for n in rng.integers(100, 201, 6)]
    got, cpu = both([(reads, haps)])
    low = flat(cpu)
    assert (low < -600).sum() >= 20 and np.isfinite(low).sum() >= 20, np.sort(low)
    near_cpu(got, cpu, "near the floor")


def _refuse_late(regions, k):
    """regions with region k's second read given a gap continuation
    penalty of 200 at position 3 (GKL refuses it)."""
    reads, haps = regions[k]
    reads = [reads[i] for i in range(len(reads))]
    r = reads[1]
    gcp = np.array(r.gcp, np.uint8)
    gcp[3] = 200
    reads[1] = pyphmm.Read(r.bases, r.quals, r.ins, r.dels, gcp)
    return regions[:k] + [(reads, haps)] + regions[k + 1 :]


def _exotic_base(regions, k):
    """regions with region k's second read given the base 'R' at position 3
    and its haplotypes no SNP position (GKL accepts the base there)."""
    reads, haps = regions[k]
    bases = np.array(reads.bases, np.uint8)
    bases[int(reads.offsets[1]) + 3] = ord("R")
    reads = pyphmm.ReadBatch(bases, reads.quals, reads.ins, reads.dels, reads.gcp, reads.offsets)
    haps = pyphmm.PDHaplotypeBatch(haps.bases, np.array(haps.pd, np.uint8) & 0x06, haps.offsets)
    return regions[:k] + [(reads, haps)] + regions[k + 1 :]


@pytest.mark.gpu
@needs_gpu
def test_refused_input_in_any_chunk():
    """The GPU path screens each chunk's bytes as it packs them, while the
    GPU computes the earlier chunks, and checks a chunk with a suspect byte
    in full before its launch: a refused byte in the first or the last chunk
    is the call's ValueError (no CPU fallback), a suspect byte GKL accepts
    (a base other than ACGTN where no SNP position is) computes on the GPU,
    and the next call runs on the GPU as usual."""
    regions = generate(24, seed=5, shape="hc")
    _, cells = pairs_and_cells(regions)
    assert cells > 3 * 2**26, cells  # several chunks (pdhmm_plan.h)
    # (a process checks the bytes as chunks go once it uses a GPU; before, first)
    before = pyphmm.compute_pd_regions(regions, backend="cuda")
    for k in (0, len(regions) - 1):
        with pytest.raises(ValueError, match=rf"region {k}, read 1, position 3: gap continuation penalty 200"):
            pyphmm.compute_pd_regions(_refuse_late(regions, k), backend="cuda")
    accepted = _exotic_base(regions, len(regions) - 1)
    st = {}
    got = pyphmm.compute_pd_regions(accepted, backend="cuda", stats=st)
    assert st["backend"] == "cuda" and not st["fell_back"], st
    near_cpu(got, pyphmm.compute_pd_regions(accepted, backend="cpu"), "a base GKL accepts off SNP positions")
    st = {}
    got = pyphmm.compute_pd_regions(regions, backend="cuda", stats=st)
    assert st["backend"] == "cuda" and not st["fell_back"], st
    assert all(np.array_equal(a, b) for a, b in zip(got, before))
    near_cpu(got, pyphmm.compute_pd_regions(regions, backend="cpu"), "after refused calls")


@pytest.mark.gpu
@needs_gpu
def test_timed_calls_with_and_without_events(knob):
    """PYPHMM_DEV=cuda_timing=1 fills the host phases of per-region calls;
    with cuda_timing_events=0 there are no CUDA events (kernel_seconds 0)
    and the call keeps watching its results. Results equal untimed ones."""
    regions = generate(6, seed=9, shape="hc")
    untimed = [pyphmm.compute_pd_regions([g], backend="cuda")[0] for g in regions]
    for events in ("1", "0"):
        knob("PYPHMM_DEV", f"cuda_timing=1,cuda_timing_events={events}")
        for k, (g, ref) in enumerate(zip(regions, untimed)):
            st = {}
            out = pyphmm.compute_pd_regions([g], backend="cuda", stats=st)[0]
            assert np.array_equal(out, ref), f"events={events}, region {k}"
            phases = st["phase_seconds"]
            assert phases["pack"] > 0 and phases["enqueue"] > 0 and phases["wait"] > 0, phases
            assert (st["kernel_seconds"] > 0) == (events == "1"), st["kernel_seconds"]


@pytest.mark.gpu
@needs_gpu
def test_concurrent_per_region_calls():
    """16 threads calling one region at a time share the GPU (pooled
    contexts, the device's streams): every result as one call alone."""
    regions = generate(32, seed=5, shape="hc")
    alone = [pyphmm.compute_pd_likelihoods(r, h, backend="cuda") for r, h in regions]
    with ThreadPoolExecutor(16) as pool:
        shared = list(pool.map(lambda g: pyphmm.compute_pd_likelihoods(*g, backend="cuda"), regions * 3))
    assert all(np.array_equal(a, b) for a, b in zip(shared, alone * 3)), "16 threads: bits differ from calls alone"
    # every fourth call refused (its bytes checked in the pipeline, its
    # streams drained): its own ValueError, the others' bits unchanged
    refused = {k: _refuse_late(regions, k)[k] for k in range(0, len(regions), 4)}

    def call(k):
        if k not in refused:
            return pyphmm.compute_pd_likelihoods(*regions[k], backend="cuda")
        with pytest.raises(ValueError, match=r"region 0, read 1, position 3: gap continuation penalty 200"):
            pyphmm.compute_pd_likelihoods(*refused[k], backend="cuda")
        return None

    with ThreadPoolExecutor(16) as pool:
        mixed = list(pool.map(call, list(range(len(regions))) * 3))
    for i, got in enumerate(mixed):
        k = i % len(regions)
        assert (got is None) == (k in refused) and (got is None or np.array_equal(got, alone[k])), k


# ---- everywhere: the kernel's code on the CPU -------------------------------------------


@pytest.mark.slow
def test_host_planning(native_check_exe):
    """How the GPU backend cuts a call into chunks (every read once, in
    order, within the bounds, growing targets, no chunk going back a
    region), the read rows it packs and its screen of the bytes GKL may
    refuse, compiled with the host compiler: tests/native/pdhmm_plan_check.cc."""
    exe = native_check_exe(
        "pdhmm_plan_check", "cuda/pdhmm_plan.cc", "common/pd_tables.cc", "common/thread_pool.cc", "common/config.cc"
    )
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout[-2000:] + res.stderr[-2000:]


@pytest.mark.slow
def test_kernel_emulated_on_cpu(native_check_exe):
    """The kernel's code (pdhmm_kernels.cuh) on the host plans of the GPU
    backend (pdhmm_plan.cc), lanes as fibers, against the CPU reference bit
    for bit in the kernel's operation order, and the host's results within
    1e-10 of GKL's serial code (random reads of 590-650 bases included:
    results under the certified floor, recomputed): regions of every bin (1
    to 170 bp reads, 8 to 32 lanes a pair),
    long reads in stripes, random and GATK-shaped PD bytes (spans never
    closed included), per-row and uniform gap qualities; the capture and
    merging steps taken where no lane needs them 0%, 30% and 100% of the
    time (their result may not depend on it); half the runs with the
    kernel making the results (log10 and certification), as on the GPU."""
    exe = native_check_exe(
        "pdhmm_cuda_emu",
        "cuda/pdhmm_plan.cc",
        "cpu/pdhmm_cpu_scalar.cc",
        "common/pd_tables.cc",
        "common/thread_pool.cc",
        "common/config.cc",
        opt="-O1",
    )
    for args in ((1, 120, 0, 3, 0, 0), (2, 120, 30, 3, 0, 1), (3, 80, 100, 2, 0, 0), (5, 4, 0, 0, 6, 1)):
        res = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)
        print(res.stdout.strip())
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        assert " 0 mismatches, 0 results off GKL's" in res.stdout and "0 bad entries" in res.stdout
    recomputed = int(res.stdout.rsplit(", ", 1)[1].split()[0])  # the deep regions': under the floor
    assert recomputed >= 50, res.stdout


# ---- everywhere: dispatch with stand-in GPUs --------------------------------------------

# A child: region results with `kwargs` under its environment, compared with
# the CPU backend's; prints one JSON line.
CHILD = r"""
import json
import numpy as np
import pyphmm
from devtools.pd_regions import generate
regions = generate(3, seed=9, shape="hc")
kwargs = {kwargs!r}
cpu = pyphmm.compute_pd_regions(regions, backend="cpu")
runs = []
for _ in range({calls}):
    st = {{}}
    got = pyphmm.compute_pd_regions(regions, stats=st, **kwargs)
    st["same"] = all(np.array_equal(a, b) for a, b in zip(got, cpu))
    runs.append(st)
print(json.dumps({{"runs": runs, "info": pyphmm.info()}}))
"""


def child(runtime_dir, test_env: str, calls: int = 1, env=None, **kwargs):
    """The child's JSON and stderr, under PYPHMM_TEST=test_env, with a
    private registry of GPU processes (devices.h) in runtime_dir."""
    e = dict(env or {}, PYPHMM_TEST=test_env, XDG_RUNTIME_DIR=str(runtime_dir))
    unset = [v for v in ("PYPHMM_BACKEND", "PYPHMM_DEVICE", "PYPHMM_GPU_MIN_CELLS") if v not in e]
    res = run_python(CHILD.format(kwargs=kwargs, calls=calls), env=e, unset=unset)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def test_fake_gpu_runs_cuda_calls(tmp_path):
    out, _ = child(tmp_path, "fake_gpu=1", backend="cuda")
    st = out["runs"][0]
    assert st["same"] and st["backend"] == "cuda" and st["device"] == 0 and not st["fell_back"]
    assert st["gpu_regions"] == 3 and st["cpu_regions"] == 0 and st["gpu_cells"] == st["cells"]


def test_auto_goes_by_the_calibrated_threshold(tmp_path):
    # a threshold above the call: the CPU; at 0: the GPU (PYPHMM_GPU_MIN_CELLS)
    for min_cells, side in (("1000000000000", "cpu"), ("0", "cuda")):
        out, err = child(
            tmp_path, "fake_gpu=1", env={"PYPHMM_GPU_MIN_CELLS": min_cells, "PYPHMM_LOG": "debug"}, backend="auto"
        )
        st = out["runs"][0]
        assert st["same"] and st["backend"] == side, (min_cells, st)
        assert "PDHMM dispatch: 3 regions" in err
    # unset: calibrated on PD regions at the first PDHMM call under AUTO
    _, err = child(tmp_path, "fake_gpu=1", env={"PYPHMM_LOG": "debug"}, backend="auto")
    assert "pyphmm: PDHMM calibration: GPU call" in err, err[-2000:]


def test_gpu_failure_falls_back_to_the_cpu_once_said(tmp_path):
    out, err = child(tmp_path, "fake_gpu=1,gpu_failure=always", calls=3, backend="cuda")
    for st in out["runs"]:
        assert st["same"] and st["fell_back"] and st["backend"] == "cpu" and st["device"] == -1
        assert st["cpu_regions"] == 3 and st["gpu_regions"] == 0
    assert err.count("GPU PDHMM failed") == 1, err  # one warning per process
    out, _ = child(tmp_path, "fake_gpu=1,gpu_failure=alternate", calls=4, backend="cuda")
    assert [st["fell_back"] for st in out["runs"]] == [False, True, False, True]
    assert all(st["same"] for st in out["runs"])


def test_fake_gpu_refuses_what_the_cpu_refuses(tmp_path):
    """Input GKL refuses is the call's error on the GPU path too (checked
    as its chunks go once the process uses a GPU, here after a first call):
    the first refused region's, and no fallback."""
    code = (
        "import pyphmm\n"
        "good = pyphmm.Read('ACGTACGT', [30] * 8, [45] * 8, [45] * 8, [10] * 8)\n"
        "pyphmm.compute_pd_regions([([good], [('ACGTACGT', [0] * 8)])], backend='cuda')\n"
        "bad = pyphmm.Read('ACGTACGT', [30] * 8, [45] * 8, [45] * 8, [10, 10, 200] + [10] * 5)\n"
        "hap = [('ACGTACGT', [0] * 8)]\n"
        "regions = [([good], hap)] * 100\n"
        "regions[70] = ([good, bad], hap)\n"
        "regions[90] = ([pyphmm.Read('ACGTACGT', [255] * 8, [45] * 8, [45] * 8, [10] * 8)], hap)\n"
        "try:\n    pyphmm.compute_pd_regions(regions, backend='cuda')\n"
        "except ValueError as e:\n    print('refused:', e)\n"
    )
    res = run_python(code, env={"PYPHMM_TEST": "fake_gpu=1", "XDG_RUNTIME_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "refused: region 70, read 1, position 2: gap continuation penalty 200 is above 127" in res.stdout, res.stdout
    assert "failed" not in res.stderr, res.stderr


def test_device_choice_with_several_gpus(tmp_path):
    out, _ = child(tmp_path, "fake_gpu=2", env={"PYPHMM_DEVICE": "1"}, backend="cuda")
    assert out["runs"][0]["device"] == 1 and out["runs"][0]["same"]
    # the process's GPU is the least loaded one (other processes on GPU 0)
    out, _ = child(tmp_path, "fake_gpu=2,gpu_load=3:0", backend="cuda")
    assert out["runs"][0]["device"] == 1 and out["info"]["device"] == 1


def test_cuda_without_a_gpu_is_refused():
    res = run_python(
        "import pyphmm\nfrom devtools.pd_regions import generate\n"
        "r, h = generate(1, seed=1, shape='hc')[0]\n"
        "try:\n    pyphmm.compute_pd_likelihoods(r, h, backend='cuda')\nexcept pyphmm.BackendUnavailableError as e:\n"
        "    print('refused:', e)\n",
        env={"CUDA_VISIBLE_DEVICES": ""},
        unset=("PYPHMM_TEST", "PYPHMM_BACKEND"),
    )
    assert res.returncode == 0 and "refused: CUDA backend requested but unavailable" in res.stdout, res
