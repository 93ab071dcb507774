"""GPU Smith-Waterman: GPU == CPU == GKL (GATK's rules) on large batches.

Skips cleanly when this build or machine has no usable GPU.
"""

import os

import numpy as np
import pytest

import pyphmm
from devtools.oracle.gkl_sw import STRATEGIES, fold_trailing_clip
from devtools.sw_pairs import hap_vs_ref, make_pairs, read_vs_hap
from pyphmm import sw

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not pyphmm.info()["cuda_usable"], reason=f"no usable GPU: {pyphmm.info()['cuda_status']}"),
]

GPU_PAIRS = int(os.environ.get("PYPHMM_SW_GPU_PAIRS", "20000"))


def _gpu_cpu(refs, alts, **kw):
    stats = {}
    gpu = sw.align_batch(refs, alts, backend="cuda", stats=stats, **kw)
    assert stats["backend"] == "cuda" and not stats["fell_back"]
    cpu = sw.align_batch(refs, alts, backend="cpu", **kw)
    return gpu, cpu


def _assert_same(gpu, cpu, refs, alts):
    bad = [i for i in range(len(refs)) if (gpu[0][i], gpu[1][i]) != (cpu[0][i], cpu[1][i])]
    assert not bad, (
        f"{len(bad)} pairs differ, first: {refs[bad[0]]!r} {alts[bad[0]]!r} "
        f"gpu {gpu[0][bad[0]]} {gpu[1][bad[0]]} cpu {cpu[0][bad[0]]} {cpu[1][bad[0]]}"
    )


@pytest.mark.parametrize("preset", list(sw.PRESETS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gpu_equals_cpu_random(preset, strategy):
    refs, alts, _ = make_pairs(GPU_PAIRS, seed=4242)
    gpu, cpu = _gpu_cpu(refs, alts, params=preset, overhang=strategy)
    _assert_same(gpu, cpu, refs, alts)


def test_gpu_per_pair_settings():
    refs, alts, _ = make_pairs(4000, seed=77, short=False)
    presets = [list(sw.PRESETS)[i % 4] for i in range(len(refs))]
    strategies = [STRATEGIES[(i // 4) % 4] for i in range(len(refs))]
    gpu, cpu = _gpu_cpu(refs, alts, params=presets, overhang=strategies)
    _assert_same(gpu, cpu, refs, alts)


@pytest.mark.jvm
def test_gpu_workloads_equal_cpu_and_gkl(gkl_jvm):
    from devtools.oracle.gkl_sw import GklSmithWaterman

    gkl = GklSmithWaterman()
    for refs, alts, params in (
        (*hap_vs_ref(3000, seed=1), sw.NEW_SW_PARAMETERS),
        (*read_vs_hap(20000, seed=2), sw.ALIGNMENT_TO_BEST_HAPLOTYPE),
    ):
        for strategy in STRATEGIES:
            gpu, cpu = _gpu_cpu(refs, alts, params=params, overhang=strategy)
            _assert_same(gpu, cpu, refs, alts)
            call = gkl.prepare(params, strategy)
            for i in range(0, len(refs), 7):  # a seventh of the pairs through GKL
                theirs = call(refs[i], alts[i])
                if strategy == "IGNORE" and theirs[0].endswith("S"):
                    theirs = (fold_trailing_clip(theirs[0]), theirs[1])
                assert (gpu[0][i], int(gpu[1][i])) == theirs


def test_gpu_long_and_edge_pairs():
    """Alts over 512 bp (several stripes of the warp fill), short refs against them, 1 bp pairs,
    exact matches, N bases."""
    rng = np.random.default_rng(5)
    rand = lambda k: bytes(rng.choice(list(b"ACGT"), k).astype(np.uint8))  # noqa: E731
    refs, alts = [], []
    for k in (851, 1200, 3000):
        r = rand(k)
        refs += [r, r, r]
        alts += [r[100:700] + b"TT" + r[700 : k - 50], rand(300), b"N" * 5 + r[k // 2 : k // 2 + 200]]
    refs += [b"A", b"A", b"ACGT", b"ACGTN", rand(5000), rand(30), rand(3)]
    alts += [b"A", b"C", b"ACGTACGT", b"NN", rand(5000), refs[-3][1000:2500], rand(1100)]
    refs, alts = refs * 60, alts * 60  # enough pairs for the GPU under any policy
    for strategy in STRATEGIES:
        for preset in sw.PRESETS:
            gpu, cpu = _gpu_cpu(refs, alts, params=preset, overhang=strategy)
            _assert_same(gpu, cpu, refs, alts)


def test_gpu_chunking(knob):
    """A batch over many sub-chunks (budget forced down to 64 MB) and over several chunks
    (20 MB: ~1,800 pairs per chunk) still matches the CPU."""
    refs, alts = hap_vs_ref(3000, seed=9, lo=300, hi=1500)  # ~4 GB of backtrack in total
    for mb in ("64", "20"):
        knob("PYPHMM_DEV", f"sw_gpu_budget_mb={mb}")
        gpu, cpu = _gpu_cpu(refs, alts, params="NEW_SW_PARAMETERS", overhang="SOFTCLIP")
        _assert_same(gpu, cpu, refs, alts)
    knob("PYPHMM_DEV", "sw_gpu_budget_mb=1")  # one pair cannot fit: CPU fallback
    stats = {}
    cig, off = sw.align_batch(refs[:300], alts[:300], params="NEW_SW_PARAMETERS", backend="cuda", stats=stats)
    assert stats["fell_back"] and cig == cpu[0][:300]


def test_auto_uses_gpu_for_large_batches_only():
    refs, alts = read_vs_hap(5000, seed=3)
    stats = {}
    sw.align_batch(refs, alts, params="ALIGNMENT_TO_BEST_HAPLOTYPE", stats=stats)
    assert stats["backend"] == "cuda"
    stats = {}
    sw.align_batch(refs[:1], alts[:1], stats=stats)
    assert stats["backend"] == "cpu"
