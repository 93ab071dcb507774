"""The Python API's contract for bad arguments (README, Errors): ValueError
for bad values, TypeError for wrong types, messages naming the argument;
and zero-copy batches whose arrays change after construction: a clear
error at the next call, never a read outside the arrays."""

import numpy as np
import pytest

import pyphmm
from devtools.child import run_python
from pyphmm import HaplotypeBatch, ReadBatch, sw

Q = dict(quals=[30] * 4, ins=[45] * 4, dels=[45] * 4, gcp=[10] * 4)


def batches():
    rb = ReadBatch(
        np.frombuffer(b"ACGTACGT", np.uint8).copy(),
        *[np.full(8, 30, np.uint8) for _ in range(4)],
        offsets=np.array([0, 4, 8], np.int64),
    )
    hb = HaplotypeBatch(np.frombuffer(b"ACGTACGTAC", np.uint8).copy(), np.array([0, 4, 10], np.int64))
    return rb, hb


# ---- zero-copy batches changed after construction ----------------------------

# Each of these crashed the process or silently computed on inconsistent
# buffers; they run in a child so that a crash fails this test, not the run.
MUTATIONS = {
    "read offsets past the buffer": "offs[:] = [0, 4, 50_000_000]",
    "haplotype offset far past the buffer": "hb.offsets[1] = 10**9",
    "haplotype offset past a 4-byte haplotype": "hb.offsets[1] = 5",
    "offsets not starting at 0": "hb.offsets[0] = 2",
    "a quality array replaced by a shorter one": "rb.quals = rb.quals[:5].copy()",
    "offsets replaced by ones that end before the buffer": "rb.offsets = np.array([0, 4])",
}

CHILD = """
import numpy as np, pyphmm
from pyphmm import HaplotypeBatch, ReadBatch
offs = np.array([0, 4, 8], np.int64)
rb = ReadBatch(np.frombuffer(b"ACGTACGT", np.uint8).copy(), *[np.full(8, 30, np.uint8) for _ in range(4)], offs)
hb = HaplotypeBatch(np.frombuffer(b"ACGT", np.uint8).copy(), np.array([0, 4], np.int64))
assert rb.offsets is offs  # zero copy
{mutation}
try:
    pyphmm.compute_likelihoods(rb, hb, backend="cpu")
    print("RESULT computed")
except ValueError as e:
    print("RESULT ValueError", e)
"""


@pytest.mark.parametrize("mutation", list(MUTATIONS.values()), ids=list(MUTATIONS))
def test_batches_changed_after_construction_are_refused(mutation):
    p = run_python(CHILD.format(mutation=mutation), timeout=120)
    assert p.returncode == 0, f"child died ({p.returncode}): {p.stderr[-2000:]}"
    assert "RESULT ValueError" in p.stdout, p.stdout
    assert "region 0" in p.stdout and ("offsets" in p.stdout or "values" in p.stdout), p.stdout


def test_unchanged_batches_still_compute_the_same():
    rb, hb = batches()
    want = pyphmm.compute_likelihoods(list(rb), [hb[0], hb[1]], backend="cpu")
    np.testing.assert_array_equal(pyphmm.compute_likelihoods(rb, hb, backend="cpu"), want)
    rb.quals[:] = 20  # values may change: they are data, not sizes
    assert not np.array_equal(pyphmm.compute_likelihoods(rb, hb, backend="cpu"), want)


def test_float_offsets_are_refused():
    with pytest.raises(TypeError, match="offsets must be integers"):
        ReadBatch(np.frombuffer(b"ACGT", np.uint8), *[np.full(4, 30, np.uint8)] * 4, offsets=[0.0, 4.5])
    with pytest.raises(TypeError, match="offsets must be integers"):
        HaplotypeBatch(np.frombuffer(b"ACGT", np.uint8), np.array([0.0, 4.0]))
    rb, hb = batches()
    hb.offsets = np.array([0.0, 4.0, 10.0])
    with pytest.raises(TypeError, match="offsets must be integers"):
        pyphmm.compute_likelihoods(rb, hb)


# ---- argument types and values ----------------------------------------------


def test_regions_must_be_pairs():
    with pytest.raises(TypeError, match="regions must be an iterable of"):
        pyphmm.compute_regions("abc")
    with pytest.raises(TypeError, match="regions must be an iterable of"):
        pyphmm.compute_regions(5)
    rb, hb = batches()
    with pytest.raises(TypeError, match=r"regions\[1\] must be a \(reads, haplotypes\) pair"):
        pyphmm.compute_regions([(rb, hb), (rb,)])
    with pytest.raises(TypeError, match=r"regions\[0\]"):
        pyphmm.compute_regions([rb])


@pytest.mark.parametrize(
    "threads,exc,match",
    [
        (2**31, ValueError, "threads must be within 1..2147483647"),
        (0, ValueError, "threads"),
        (-1, ValueError, "threads"),
        (2.0, TypeError, "threads must be an integer"),
        ("2", TypeError, "threads must be an integer"),
        (True, TypeError, "threads must be an integer, not bool"),
    ],
)
def test_bad_threads(threads, exc, match):
    rb, hb = batches()
    with pytest.raises(exc, match=match):
        pyphmm.compute_likelihoods(rb, hb, threads=threads)
    with pytest.raises(exc, match=match):
        sw.align_batch(["ACGT"], ["AC"], threads=threads)


def test_numpy_integer_threads_are_accepted():
    rb, hb = batches()
    a = pyphmm.compute_likelihoods(rb, hb, backend="cpu", threads=np.int64(2))
    np.testing.assert_array_equal(a, pyphmm.compute_likelihoods(rb, hb, backend="cpu", threads=2))
    assert sw.align_batch(["AAACCCCC"], ["CCCCCGGG"], threads=np.int32(1))[0] == ["5M3S"]


def test_stats_must_be_a_dict():
    rb, hb = batches()
    for call in (
        lambda: pyphmm.compute_likelihoods(rb, hb, stats=[]),
        lambda: pyphmm.compute_regions([(rb, hb)], stats=[]),
        lambda: sw.align_batch(["ACGT"], ["AC"], stats=[]),
    ):
        with pytest.raises(TypeError, match="stats must be a dict or None, not list"):
            call()


@pytest.mark.parametrize(
    "args,exc,match",
    [
        ((2**40, -1, -4, -3), ValueError, "match = 1099511627776 does not fit int32"),
        ((3, -1, -4, -(2**40)), ValueError, "gap_extend"),
        ((3.5, -1, -4, -3), TypeError, "params must be integers, got 3.5 .float. for match"),
        ((3, "x", -4, -3), TypeError, "for mismatch"),
        ((3, -1, 4, -3), ValueError, "gap penalties must be <= 0"),
    ],
)
def test_sw_parameters_are_checked_when_made(args, exc, match):
    with pytest.raises(exc, match=match):
        sw.SWParameters(*args)
    with pytest.raises(exc, match=match):
        sw.align("ACGT", "AC", params=args)


def test_sw_parameters_accept_numpy_integers():
    p = sw.SWParameters(*np.array([10, -15, -30, -5], np.int64))
    assert p == sw.ALIGNMENT_TO_BEST_HAPLOTYPE and all(type(v) is int for v in p)


def test_align_batch_reads_four_ints_as_one_setting_like_align():
    refs, alts = ["AAACCCCC", "AAAGACTACTG", "ACGTTGCA", "TTTTACGT"], ["CCCCCGGG", "AACGGACACTG", "GTTG", "ACG"]
    want = [sw.align(r, a, params=(10, -15, -30, -5)) for r, a in zip(refs, alts)]
    for params in (
        [10, -15, -30, -5],
        (10, -15, -30, -5),
        np.array([10, -15, -30, -5]),
        sw.ALIGNMENT_TO_BEST_HAPLOTYPE,
        "alignment_to_best_haplotype",
    ):
        cig, off = sw.align_batch(refs, alts, params=params)
        assert list(zip(cig, off.tolist())) == want, params
        assert sw.align(refs[0], alts[0], params=params) == want[0]
    # per-pair settings: a sequence of settings, one per pair
    per = [(10, -15, -30, -5), "ORIGINAL_DEFAULT", sw.STANDARD_NGS, [10, -15, -30, -5]]
    cig, off = sw.align_batch(refs, alts, params=per)
    assert list(zip(cig, off.tolist())) == [sw.align(r, a, params=p) for r, a, p in zip(refs, alts, per)]
    with pytest.raises(ValueError, match="params: 3 settings for 4 pairs"):
        sw.align_batch(refs, alts, params=[(10, -15, -30, -5)] * 3)


def test_align_batch_refuses_single_strings():
    with pytest.raises(TypeError, match="refs must be a sequence of sequences, not str"):
        sw.align_batch("ACGT", "AC")
    with pytest.raises(TypeError, match="alts must be a sequence of sequences, not bytes"):
        sw.align_batch(["ACGT"], b"AC")


# ---- arguments that are not batches name themselves (issue 39) -----------------


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda R, H: pyphmm.compute_likelihoods(None, H),
            "reads must be a ReadBatch or a sequence of pyphmm.Read, not NoneType",
        ),
        (lambda R, H: pyphmm.compute_likelihoods(R, None), "haplotypes must be a HaplotypeBatch or a sequence of str"),
        (
            lambda R, H: pyphmm.compute_likelihoods(5, H),
            "reads must be a ReadBatch or a sequence of pyphmm.Read, not int",
        ),
        (lambda R, H: pyphmm.compute_likelihoods(R, 5), "haplotypes must be a HaplotypeBatch .* not int"),
        (lambda R, H: pyphmm.compute_regions([[None, None]]), r"regions\[0\] reads must be a ReadBatch"),
        (lambda R, H: pyphmm.compute_regions([(R, H), (R, None)]), r"regions\[1\] haplotypes must be"),
        (lambda R, H: sw.align_batch(None, None), "refs must be a sequence of sequences, not NoneType"),
        (lambda R, H: sw.align_batch(["ACGT"], None), "alts must be a sequence of sequences, not NoneType"),
    ],
)
def test_arguments_that_are_not_batches_are_named(call, message):
    R, H = [pyphmm.Read("ACGT", **Q)], ["ACGT"]
    with pytest.raises(TypeError, match=message):
        call(R, H)


@pytest.mark.parametrize("double", ["yes", [], None, 1, np.bool_(True)])
def test_double_takes_only_a_bool(double):
    rb, hb = batches()
    with pytest.raises(TypeError, match=f"double must be True or False, not {type(double).__name__}"):
        pyphmm.compute_likelihoods(rb, hb, double=double)
    with pytest.raises(TypeError, match="double must be True or False"):
        pyphmm.compute_regions([(rb, hb)], double=double)


def test_item_access_checks_the_arrays_as_a_call_does():
    rb, hb = batches()
    assert rb[1].bases == b"ACGT" and hb[1] == b"ACGTAC"
    rb.offsets[1] = -3
    with pytest.raises(ValueError, match="offsets not increasing"):
        rb[1]
    with pytest.raises(ValueError, match="offsets not increasing"):
        list(rb)
    hb.offsets[1] = 20
    with pytest.raises(ValueError, match="offsets not increasing"):
        hb[0]
    rb, hb = batches()
    rb.quals = rb.quals[:5].copy()
    with pytest.raises(ValueError, match="8 bases but 5 quals"):
        rb[0]


def test_a_call_whose_results_cannot_fit_in_memory_is_refused():
    """Results of more than this machine's memory: a ValueError naming the
    sizes before anything is allocated (numpy's MemoryError otherwise)."""
    from pyphmm._convert import physical_memory

    n = int((physical_memory() / 8) ** 0.5) * 2  # 4x the memory in doubles
    reads = ReadBatch(np.full(n, 65, np.uint8), *[np.full(n, 30, np.uint8)] * 4, offsets=np.arange(n + 1))
    haps = HaplotypeBatch(np.full(n, 65, np.uint8), np.arange(n + 1))
    with pytest.raises(ValueError, match=rf"^{n} reads x {n} haplotypes need about [0-9.]+ GB for their results, more"):
        pyphmm.compute_likelihoods(reads, haps, backend="cpu")
    with pytest.raises(ValueError, match=r"^2 regions of \d+ read-haplotype pairs in all need about"):
        pyphmm.compute_regions([(reads, haps), (reads, haps)], backend="cpu")
