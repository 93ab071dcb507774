"""CUDA PairHMM: agreement with GKL's expected values and with the CPU backend
(itself checked against GKL elsewhere), edge shapes, threads, fallback.

Skipped where no usable GPU exists. PYPHMM_TEST_GPU_BACKEND=cpu runs the same
checks with the CPU on both sides (a dry run of the test code itself).
"""

import os
import threading

import numpy as np
import pytest

import pyphmm
from devtools.child import run_python
from devtools.regions import make_region
from devtools.testdata import pairhmm_cases
from pyphmm.pairhmm import ReadBatch

GPU = os.environ.get("PYPHMM_TEST_GPU_BACKEND", "cuda")
TOL = 1e-5

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        GPU == "cuda" and not pyphmm.info()["cuda_usable"],
        reason="no usable CUDA device: " + pyphmm.info()["cuda_status"],
    ),
]

BASES = np.frombuffer(b"ACGT", np.uint8)


# ----------------------------------------------------------------- generators
def random_workload(seed, target_pairs):
    """Regions over every read-length bin (<=16 ... >512), N bases, other
    bytes, and underflow-forcing regions (long reads, many mismatches at high
    base quality)."""
    rng = np.random.default_rng(seed)
    bins = [(1, 16), (17, 32), (33, 64), (65, 128), (129, 256), (257, 512), (513, 800)]
    regions, pairs = [], 0
    while pairs < target_pairs:
        lo, hi = bins[len(regions) % len(bins)]
        kind = len(regions) % 5
        nr, nh = int(rng.integers(1, 60)), int(rng.integers(1, 12))
        uniform = len(regions) % 3 == 0
        if kind == 4:  # float underflow (log10 L < -64), still finite in double
            r = make_region(
                rng,
                nr,
                nh,
                (120, 400),
                (400, 600),
                mismatch=0.1,
                qual=(30, 50),
                preset="uniform_gaps" if uniform else "windows",
            )
        else:  # haplotypes at least as long as the reads (the edge tests cover the rest)
            r = make_region(
                rng,
                nr,
                nh,
                (lo, hi),
                (hi, hi + 300),
                n_rate=0.02 if kind == 1 else 0.0,
                mismatch=0.05 if hi <= 256 else 0.01,
                other_bytes=kind == 2,
                preset="uniform_gaps" if uniform else "windows",
                qual=(6, 60) if hi <= 256 else (6, 40),  # long reads: keep L > 1e-308
                indel_q=(10, 90) if hi <= 256 else (40, 90),
            )
        regions.append(r)
        pairs += nr * nh
    return regions


def compare(regions, double=False, backend=GPU, finite=True):
    st_gpu, st_cpu = {}, {}
    gpu = pyphmm.compute_regions(regions, backend=backend, double=double, stats=st_gpu)
    cpu = pyphmm.compute_regions(regions, backend="cpu", double=double, stats=st_cpu)
    g = np.concatenate([a.ravel() for a in gpu]) if gpu else np.zeros(0)
    c = np.concatenate([a.ravel() for a in cpu]) if cpu else np.zeros(0)
    if finite:
        assert np.all(np.isfinite(g)), "GPU returned inf/NaN"
    else:  # shapes whose true likelihood is below double's range: same answer as the CPU
        assert not np.isnan(g).any() and np.array_equal(np.isfinite(g), np.isfinite(c))
        g, c = g[np.isfinite(c)], c[np.isfinite(c)]
    diff = float(np.max(np.abs(g - c))) if g.size else 0.0
    return diff, st_gpu, st_cpu, gpu


# ----------------------------------------------------------------- GKL values
def _testdata():
    return [(pyphmm.Read(bases, q, i, d, g), hap, expected) for hap, bases, q, i, d, g, expected in pairhmm_cases()]


@pytest.mark.parametrize("double", [False, True])
def test_gkl_expected_values(double):
    rows = _testdata()
    regions = [([r], [h]) for r, h, _ in rows]
    st = {}
    got = pyphmm.compute_regions(regions, backend=GPU, double=double, stats=st)
    diff = max(abs(float(g[0, 0]) - e) for g, (_, _, e) in zip(got, rows))
    print(f"\nGKL expected values ({len(rows)} pairs, double={double}): max |diff| = {diff:.3g}")
    assert st["backend"] == GPU
    assert diff <= TOL


# ----------------------------------------------------------------- GPU vs CPU
@pytest.fixture(scope="module")
def workload():
    return random_workload(7, 100_000)


@pytest.mark.parametrize("double", [False, True])
def test_random_vs_cpu(workload, double):
    diff, st, _, _ = compare(workload, double)
    print(
        f"\nrandom {st['pairs']} pairs, {st['cells'] / 1e9:.2f} G cells, double={double}: "
        f"max |GPU-CPU| = {diff:.3g}, double pairs {st['double_pairs']}, {st['seconds']:.3f} s"
    )
    assert st["pairs"] >= 100_000
    assert st["backend"] == GPU and not st["fell_back"]
    if not double:
        assert st["double_pairs"] > 0, "the workload must exercise the double pass"
    else:
        assert st["double_pairs"] == st["pairs"]
    assert diff <= TOL


def test_small_calls_vs_cpu(workload):
    """One call per region, as GATK makes them: small calls run the kernels'
    latency variants (a warp per pair), which must agree with the CPU too."""
    worst, n = 0.0, 0
    for rb, hb in workload[:300]:
        if rb.offsets[-1] == 0:
            continue
        st = {}
        g = pyphmm.compute_regions([(rb, hb)], backend=GPU, stats=st)[0]
        c = pyphmm.compute_regions([(rb, hb)], backend="cpu")[0]
        assert np.isfinite(g).all() and st["backend"] == GPU and not st["fell_back"]
        worst = max(worst, float(np.abs(g - c).max()))
        n += g.size
    print(f"\n300 per-region calls, {n} pairs: max |GPU-CPU| = {worst:.3g}")
    assert worst <= TOL


def test_timed_calls_with_and_without_events(knob):
    """PYPHMM_DEV=cuda_timing=1 fills the host phases of per-region calls; with
    cuda_timing_events=0 there are no CUDA events (kernel_seconds 0)
    and the call keeps watching its results. Results equal untimed ones."""
    if GPU != "cuda":
        pytest.skip("GPU only")
    rng = np.random.default_rng(5)
    calls = [make_region(rng, 20, 3, (100, 151), (200, 400)) for _ in range(6)]
    untimed = [pyphmm.compute_regions([c], backend=GPU)[0] for c in calls]
    for events in ("1", "0"):
        knob("PYPHMM_DEV", f"cuda_timing=1,cuda_timing_events={events}")
        for k, (call, ref) in enumerate(zip(calls, untimed)):
            st = {}
            out = pyphmm.compute_regions([call], backend=GPU, stats=st)[0]
            np.testing.assert_array_equal(out, ref, err_msg=f"events={events}, call {k}")
            phases = st["phase_seconds"]
            assert phases["pack"] > 0 and phases["enqueue"] > 0 and phases["wait"] > 0, phases
            assert (st["kernel_seconds"] > 0) == (events == "1"), st["kernel_seconds"]


def test_napping_waits_give_the_same_results(knob):
    """PYPHMM_CUDA_NAP: a thread watching a small call's results first sleeps
    through part of the wait it learned from its earlier calls. Results are
    those of a thread that spins throughout, for regions of other sizes than
    the ones it learned from and for a call with a pair redone in double."""
    if GPU != "cuda":
        pytest.skip("GPU only")
    rng = np.random.default_rng(8)
    calls = [make_region(rng, 30, 4, (100, 151), (200, 400)) for _ in range(6)]
    calls += [make_region(rng, 5, 2, (20, 40), (30, 60)) for _ in range(3)]  # short waits after long ones
    calls.append(make_region(rng, 6, 3, (200, 250), (400, 600), mismatch=0.1, qual=(30, 50)))  # underflows
    knob("PYPHMM_CUDA_NAP", "0")
    spinning = [pyphmm.compute_regions([c], backend=GPU)[0] for c in calls]
    knob("PYPHMM_CUDA_NAP", "90")
    for rep in range(3):
        for k, (call, ref) in enumerate(zip(calls, spinning)):
            st = {}
            out = pyphmm.compute_regions([call], backend=GPU, stats=st)[0]
            np.testing.assert_array_equal(out, ref, err_msg=f"pass {rep}, call {k}")
    assert st["double_pairs"] > 0, "the last call must exercise the double pass"


def test_exact_arithmetic_vs_gkl_and_cpu():
    """PYPHMM_DEV=cuda_arith=exact (GKL's operation order, no FMA) meets the same
    contract as the default fast arithmetic: GKL's values and the CPU's."""
    if GPU != "cuda":
        pytest.skip("GPU only")
    code = (
        "import test_cuda_pairhmm as t;"
        "t.test_gkl_expected_values(False); w = t.random_workload(7, 100_000);"
        "d, st, _, _ = t.compare(w); print('exact: max |GPU-CPU|', d, st['pairs']); assert d <= t.TOL"
    )
    p = run_python(code, env={"PYPHMM_DEV": "cuda_arith=exact"}, import_tests=True, timeout=600)
    print("\n" + p.stdout.strip())
    assert p.returncode == 0, p.stdout + p.stderr


def _first_read_varies(region):
    """The region with its first read's insertion qualities varying along
    the read, so that no call takes that read's triple as its constant one."""
    rb, hb = region
    ins = rb.ins.copy()
    a, b = rb.offsets[0], rb.offsets[1]
    ins[a:b] = 20 + np.arange(b - a) % 2
    return ReadBatch(rb.bases, rb.quals, ins, rb.dels, rb.gcp, rb.offsets), hb


@pytest.mark.parametrize("triple", [(45, 45, 10), (4, 45, 5)])
def test_region_results_do_not_depend_on_the_call(triple):
    """A region alone (a call too small to fill the GPU runs the latency
    variants, a warp per pair) and inside a call with 75 other regions (the
    throughput kernels) gets the same bits: in every read-length bin of the
    per-row and uniform-triple passes, and in the constant-triple pass for
    reads of 97-160 rows, whose two variants keep X scaled in the same
    blocks of rows (const_block in pairhmm_layout.h). Shorter reads of the
    constant pass agree within the tolerance. (With GATK's triple X is too
    small for its rounding to reach M; at insertion quality 4 it is not.)"""
    if GPU != "cuda":
        pytest.skip("GPU only")
    rng = np.random.default_rng(12)

    def region(kind, read_len, reads, haps, hap_len):
        r = make_region(rng, reads, haps, read_len, hap_len, preset="windows" if kind == "rows" else "uniform_gaps")
        return _with_triple(r, triple) if kind == "const" else _first_read_varies(r)

    # 6,000 pairs a pass: more than a latency launch covers (a warp per pair, at most 7 blocks of 4 warps on
    # each of an H100's 132 SMs). The first read of the call is the constant triple's.
    filler = [region(kind, (100, 151), 60, 4, (200, 250)) for kind in ("const", "uniform", "rows") for _ in range(25)]
    tested, same_bits = [], []
    for lo, hi in [(2, 16), (17, 32), (33, 64), (65, 96), (97, 128), (129, 160)]:
        for kind in ("const", "uniform", "rows"):
            tested.append(region(kind, (lo, hi), int(rng.integers(5, 40)), int(rng.integers(1, 8)), (hi, hi + 200)))
            same_bits.append(kind != "const" or lo >= 97)
    st = {}
    in_call = pyphmm.compute_regions(filler + tested, backend=GPU, stats=st)[len(filler) :]
    assert st["backend"] == GPU and not st["fell_back"] and st["const_pairs"] > 6000
    for k, (r, theirs, alike) in enumerate(zip(tested, in_call, same_bits)):
        alone = pyphmm.compute_regions([r], backend=GPU)[0]
        if alike:
            np.testing.assert_array_equal(alone, theirs, err_msg=f"region {k}")
        else:
            assert np.abs(alone - theirs).max() <= TOL, k
    diff, _, _, _ = compare(tested)
    assert diff <= TOL


def test_latency_variants_at_their_longest_reads():
    """A per-region call runs a bin's latency variant (a warp per pair, K rows
    a lane) only while lane 0 holds padding rows alone, that is for reads of
    up to 31 * K rows; a bin with a longer read runs its throughput variant.
    Calls whose every read sits at or just past each bin's limit (31 / 32,
    62 / 63 / 64, 93 / 94 / 96, 124 / 125 / 128, 155 / 156 / 160 rows), in the
    per-row, uniform-triple and constant-triple passes, and a call that mixes
    150- and 156-row reads in one bin, agree with the CPU."""
    rng = np.random.default_rng(31)
    regions = []
    for m in (31, 32, 62, 63, 64, 93, 94, 96, 124, 125, 128, 155, 156, 160):
        for kind in ("rows", "uniform", "const"):
            preset = "windows" if kind == "rows" else "uniform_gaps"
            r = make_region(rng, 6, 3, (m, m), (m + 20, m + 250), preset=preset)
            regions.append(_with_triple(r, (45, 45, 10)) if kind == "const" else r)
    mixed = make_region(rng, 12, 3, (150, 156), (300, 400))
    lengths = np.diff(mixed[0].offsets)
    assert lengths.max() == 156 and lengths.min() <= 155, lengths
    regions.append(mixed)
    worst = 0.0
    for k, r in enumerate(regions):
        diff, st, _, _ = compare([r])
        assert st["backend"] == GPU and not st["fell_back"], k
        worst = max(worst, diff)
    print(f"\n{len(regions)} per-region calls at the latency variants' limits: max |GPU-CPU| = {worst:.3g}")
    assert worst <= TOL


def test_gap_continuation_quality_zero():
    """gcp quality 0 makes gm = 0, which the fast arithmetic cannot factor
    out: those pairs must be redone in double, and still agree with the CPU."""
    rng = np.random.default_rng(11)
    regions = []
    for k in range(40):
        rb, hb = make_region(rng, 20, 4, (30, 151), (160, 300))
        gcp = rb.gcp.copy()
        gcp[rng.random(gcp.size) < (0.02 if k % 2 else 0.0)] = 0
        gcp[rb.offsets[:-1]] = 10  # gm = 0 in a read's first row makes every path 0 (-inf, GKL too)
        regions.append((ReadBatch(rb.bases, rb.quals, rb.ins, rb.dels, gcp, rb.offsets), hb))
    diff, st, _, _ = compare(regions)
    print(f"\ngcp=0 regions: max |GPU-CPU| = {diff:.3g}, double pairs {st['double_pairs']}")
    assert st["backend"] == GPU and not st["fell_back"]
    assert diff <= TOL
    # A read whose every gcp is 0 (uniform kernels): no path survives row 1, so
    # the likelihood is log10(0) = -inf, as GKL returns; the GPU must agree.
    rb, hb = make_region(rng, 10, 3, (30, 151), (160, 300), uniform=True)
    zero = ReadBatch(rb.bases, rb.quals, rb.ins, rb.dels, np.zeros_like(rb.gcp), rb.offsets)
    diff, st, _, got = compare([(zero, hb), (rb, hb)], finite=False)
    assert np.isneginf(got[0]).all() and np.isfinite(got[1]).all()
    assert diff <= TOL


# ----------------------------------------------------------------- constant transitions
def _with_triple(region, triple):
    rb, hb = region
    n = rb.bases.size
    ins, dels, gcp = (np.full(n, v, np.uint8) for v in triple)
    return ReadBatch(rb.bases, rb.quals, ins, dels, gcp, rb.offsets), hb


def _const_expected(regions, triple):
    """Pairs the constant kernels should take: reads of <= 256 rows (the
    fused bins) whose every row carries `triple`."""
    n = 0
    for rb, hb in regions:
        for r in range(len(rb.offsets) - 1):
            a, b = rb.offsets[r], rb.offsets[r + 1]
            if 0 < b - a <= 256 and all((q[a:b] == v).all() for q, v in zip((rb.ins, rb.dels, rb.gcp), triple)):
                n += len(hb.offsets) - 1
    return n


@pytest.mark.parametrize(
    "triple,accepted",
    [
        ((45, 45, 10), True),
        ((30, 70, 10), True),
        ((30, 12, 5), True),
        ((90, 12, 25), True),
        ((20, 70, 10), False),
        ((90, 12, 30), False),
    ],
)
def test_constant_transition_kernels(triple, accepted):
    """A call's reads that all carry the triple of its first read (GATK's
    default data: 45, 45, 10) run in kernels with per-launch constants and X
    kept scaled by up to cc^-4, which the host allows while mx * cc^-4 / gm
    <= 64: (30, 70, 10) gives 11, (90, 12, 25) 10; (20, 70, 10) gives 111 and
    (90, 12, 30) 1000, so those calls' constant triple is GATK's default. Every read-length bin, the latency
    variants (small calls), the double pass and mixed triples in one call:
    all must agree with the CPU."""
    rng = np.random.default_rng(sum(triple))
    bins = [(1, 16), (17, 32), (33, 64), (65, 96), (97, 128), (129, 160), (161, 256), (257, 400)]
    regions = [
        _with_triple(make_region(rng, int(rng.integers(5, 40)), int(rng.integers(1, 8)), b, (b[1], b[1] + 200)), triple)
        for b in bins
    ]
    # float underflow: long reads, many mismatches at high quality
    regions.append(_with_triple(make_region(rng, 20, 4, (150, 256), (400, 500), mismatch=0.1, qual=(30, 50)), triple))
    mixed = make_region(rng, 30, 5, (50, 151), (160, 300), preset="uniform_gaps")  # other triples in the same call
    diff, st, _, _ = compare(regions + [mixed])
    chosen = triple if accepted else (45, 45, 10)
    expected = _const_expected(regions + [mixed], chosen)
    assert (expected > 0) == accepted
    print(f"\ntriple {triple}: {st['pairs']} pairs, max |GPU-CPU| = {diff:.3g}, double pairs {st['double_pairs']}")
    assert diff <= TOL and st["backend"] == GPU and not st["fell_back"]
    if GPU == "cuda":
        assert st["const_pairs"] == expected
        if expected:
            assert st["double_pairs"] > 0, "the underflow region must take the double pass"
    for r in regions[:6]:  # per-region calls: latency variants
        diff, st, _, _ = compare([r])
        assert diff <= TOL
        if GPU == "cuda":
            assert st["const_pairs"] == _const_expected([r], chosen)


def test_constant_transitions_first_read_decides():
    """The first read's triple is the call's constant one; when that read's
    qualities vary per row, GATK's defaults are."""
    rng = np.random.default_rng(8)
    default = _with_triple(make_region(rng, 20, 3, (30, 151), (160, 200)), (45, 45, 10))
    other = _with_triple(make_region(rng, 20, 3, (30, 151), (160, 200)), (40, 40, 9))
    per_row = make_region(rng, 5, 3, (30, 151), (160, 200))  # varying per row
    for regions, chosen in (
        ([other, default], (40, 40, 9)),
        ([default, other], (45, 45, 10)),
        ([per_row, other, default], (45, 45, 10)),
    ):
        diff, st, _, _ = compare(regions)
        assert diff <= TOL
        if GPU == "cuda":
            assert st["const_pairs"] == _const_expected(regions, chosen) > 0
    code = (
        "import test_cuda_pairhmm as t, numpy as np;"
        "r = t._with_triple(t.make_region(np.random.default_rng(1), 20, 3, (30, 151), (160, 200)), (45, 45, 10));"
        "d, st, _, _ = t.compare([r]); print(d); assert d <= t.TOL;"
        "assert t.GPU != 'cuda' or st['const_pairs'] == 0"
    )
    p = run_python(code, env={"PYPHMM_DEV": "cuda_const_gaps=0"}, import_tests=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


# ----------------------------------------------------------------- edge shapes
def _read(rng, L, q=(6, 60), src=None, gcp=(5, 40)):
    """A random read, or (src given) a copy of src's start with 2% mismatches
    (reads longer than src continue with random bases)."""
    seq = BASES[rng.integers(0, 4, L)]
    if src is not None:
        k = min(L, len(src))
        seq[:k] = np.frombuffer(src[:k], np.uint8)
        flip = rng.random(L) < 0.02
        seq[flip] = BASES[rng.integers(0, 4, int(flip.sum()))]
    return pyphmm.Read(
        seq.tobytes(),
        rng.integers(q[0], q[1] + 1, L),
        rng.integers(10, 91, L),
        rng.integers(10, 91, L),
        rng.integers(gcp[0], gcp[1] + 1, L),
    )


def _hap(rng, L):
    return BASES[rng.integers(0, 4, L)].tobytes()


@pytest.mark.parametrize("double", [False, True])
def test_edge_shapes(double):
    rng = np.random.default_rng(3)
    h300, h50, h1500, h2500, h1100 = (_hap(rng, L) for L in (300, 50, 1500, 2500, 1100))
    cases = [
        ([_read(rng, 1)], [_hap(rng, 1)]),  # 1 x 1
        ([_read(rng, 1)], [h300]),  # read length 1
        ([_read(rng, 20)], [_hap(rng, 1)]),  # hap length 1
        ([_read(rng, 200, src=h50, gcp=(5, 10))], [h50]),  # read longer than hap
        ([_read(rng, 1200, q=(20, 40), src=h1500)], [h1500]),  # read of 1,000+ bp
        ([_read(rng, 150, src=h2500[1000:])], [h2500]),  # hap of 2,000+ bp
        (
            [
                _read(rng, L, src=h1100)
                for L in (16, 17, 32, 33, 64, 65, 96, 97, 128, 129, 160, 161, 256, 257, 512, 513, 1024)
            ],
            [h1100[:L] for L in (1, 2, 3, 4, 5, 31, 32, 33, 255, 256, 257, 1025)],
        ),  # bin edges
    ]
    for reads, haps in cases:
        diff, st, _, _ = compare([(reads, haps)], double, finite=False)
        assert st["backend"] == GPU
        assert diff <= TOL, (len(reads[0]), len(haps[0]), diff)


def test_one_pair_region_and_large_region():
    rng = np.random.default_rng(11)
    diff, st, _, _ = compare([([_read(rng, 100)], [_hap(rng, 300)])])
    assert st["pairs"] == 1 and diff <= TOL
    big = make_region(rng, 2500, 40, (10, 151), (30, 521))  # one region of 100,000 pairs
    diff, st, _, _ = compare([big])
    assert st["pairs"] == 100_000 and diff <= TOL


def test_empty_region_list():
    assert pyphmm.compute_regions([], backend=GPU) == []
    rng = np.random.default_rng(1)
    out = pyphmm.compute_regions([([], [_hap(rng, 10)]), ([_read(rng, 5)], [_hap(rng, 7)])], backend=GPU)
    assert out[0].shape == (0, 1) and out[1].shape == (1, 1) and np.isfinite(out[1]).all()


def test_no_inf_for_extreme_underflow():
    """Every read base mismatching at Q60 against a long haplotype: the float
    sum is 0, the double pass must answer."""
    rng = np.random.default_rng(5)
    L = 60
    read = pyphmm.Read(b"A" * L, [60] * L, [45] * L, [45] * L, [10] * L)
    st = {}
    haps = [b"C" * 400, _hap(rng, 400)]
    v = pyphmm.compute_likelihoods([read], haps, backend=GPU, stats=st)
    c = pyphmm.compute_likelihoods([read], haps, backend="cpu")
    assert np.isfinite(v).all() and st["double_pairs"] >= 1
    assert np.max(np.abs(v - c)) <= TOL


def test_uniform_reads_join_the_per_row_pass():
    """A small call with per-base gap values and uniform reads runs them all
    in the per-row pass, one launch instead of two: the uniform reads'
    results equal, bit for bit, those of a call of the uniform reads alone
    (the uniform pass)."""
    rng = np.random.default_rng(12)
    rb, hb = make_region(rng, 24, 3, (90, 151), (200, 350))
    ins, dels, gcp = rb.ins.copy(), rb.dels.copy(), rb.gcp.copy()
    # reads 0-15 uniform, read 0's triple outside the constant kernels' range
    # (so no read takes them), reads 16-23 keep their per-base values
    triples = [(10, 40, 10)] + [(int(rng.integers(20, 60)), int(rng.integers(20, 60)), 8) for _ in range(15)]
    for r, (i, d, g) in enumerate(triples):
        lo, hi = rb.offsets[r], rb.offsets[r + 1]
        ins[lo:hi], dels[lo:hi], gcp[lo:hi] = i, d, g
    mixed = ReadBatch(rb.bases, rb.quals, ins, dels, gcp, rb.offsets)
    alone = ReadBatch.from_reads(list(mixed)[:16])
    st_mixed, st_alone = {}, {}
    got = pyphmm.compute_regions([(mixed, hb)], backend=GPU, stats=st_mixed)[0]
    ref = pyphmm.compute_regions([(alone, hb)], backend=GPU, stats=st_alone)[0]
    assert st_mixed["const_pairs"] == st_alone["const_pairs"] == 0
    np.testing.assert_array_equal(got[:16], ref)
    cpu = pyphmm.compute_regions([(mixed, hb)], backend="cpu")[0]
    assert np.abs(got - cpu).max() <= TOL


def test_two_pass_call_watched_with_underflow():
    """A per-region call whose reads need two float passes (the call's
    constant triple, then per-row values) is watched through its result
    slots, which both launches write; pairs that underflow float are then
    redone in double. Every pair agrees with the CPU backend, and both
    passes and the double pass ran."""
    rng = np.random.default_rng(17)
    gatk = _with_triple(make_region(rng, 6, 3, (120, 151), (200, 300)), (45, 45, 10))
    under = make_region(rng, 6, 3, (200, 250), (400, 600), mismatch=0.1, qual=(30, 50))  # per-row, underflows
    # the 45/45/10 reads first: theirs is the call's triple
    region = (ReadBatch.from_reads([*gatk[0], *under[0]]), under[1])
    diff, st, _, _ = compare([region])
    assert diff <= TOL
    if GPU == "cuda":
        assert st["const_pairs"] == 6 * 3 and st["double_pairs"] > 0, st


# ----------------------------------------------------------------- threads
def test_threads_match_serial():
    rng = np.random.default_rng(21)
    sets = [
        [make_region(rng, int(rng.integers(5, 80)), int(rng.integers(1, 20)), (10, 151), (30, 521)) for _ in range(12)]
        for _ in range(8)
    ]
    serial = [[a.copy() for a in pyphmm.compute_regions(s, backend=GPU)] for s in sets]
    results = [None] * 8
    errors = []

    def work(i):
        try:
            out = []
            for _ in range(3):
                for region in sets[i]:  # per-region calls, interleaved across threads
                    out.append(pyphmm.compute_likelihoods(*region, backend=GPU))
            results[i] = out
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(8):
        for rep in range(3):
            for k in range(12):
                np.testing.assert_array_equal(results[i][rep * 12 + k], serial[i][k])


# ----------------------------------------------------------------- fallback
_FALLBACK = """
import numpy as np, pyphmm
from devtools.regions import make_region
rng = np.random.default_rng(2)
regions = [make_region(rng, 30, 5, (10, 151), (30, 521)) for _ in range(3)]
st = {}
got = pyphmm.compute_regions(regions, backend="auto", stats=st)
cpu = pyphmm.compute_regions(regions, backend="cpu")
d = max(float(np.max(np.abs(a - b))) for a, b in zip(got, cpu))
print("RESULT", st["backend"], st["fell_back"], d)
"""


@pytest.mark.parametrize("env", [{"PYPHMM_DEVICE": "99"}, {"PYPHMM_TEST": "gpu_failure=always"}])
def test_fallback_to_cpu(env):
    if GPU != "cuda":
        pytest.skip("GPU only")
    p = run_python(_FALLBACK, env=dict(env, PYPHMM_GPU_MIN_CELLS="0"), unset=("PYPHMM_BACKEND",), timeout=300)
    assert p.returncode == 0, p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT")][0].split()
    assert line[1] == "cpu" and float(line[3]) == 0.0
    assert "pyphmm:" in p.stderr and ("CPU" in p.stderr), p.stderr
    if "PYPHMM_TEST" in env:
        assert line[2] == "True" and "GPU PairHMM failed" in p.stderr
