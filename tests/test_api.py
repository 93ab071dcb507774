"""Python API: conversions, validation, shapes, backends, info()."""

import numpy as np
import pytest

import pyphmm
from pyphmm import HaplotypeBatch, Read, ReadBatch

Q = dict(quals=[30] * 4, ins=[45] * 4, dels=[45] * 4, gcp=[10] * 4)


def read(bases="ACGT", **kw):
    args = dict(Q)
    args.update(kw)
    return Read(bases, **args)


@pytest.mark.parametrize("bases", ["ACGT", b"ACGT", bytearray(b"ACGT"), np.frombuffer(b"ACGT", np.uint8)])
def test_read_accepts_base_types(bases):
    r = read(bases)
    assert r.bases == b"ACGT" and len(r) == 4


@pytest.mark.parametrize(
    "quals", [[30] * 4, bytes([30] * 4), np.full(4, 30, np.uint8), np.full(4, 30, np.int64), (30, 30, 30, 30)]
)
def test_read_accepts_quality_types(quals):
    r = read(quals=quals)
    assert r.quals.dtype == np.uint8 and r.quals.tolist() == [30] * 4


def test_from_phred33():
    r = Read.from_phred33("ACGT", "?5+!", "NNNN", "NNNN", "++++")
    assert r.quals.tolist() == [30, 20, 10, 0] and r.ins.tolist() == [45] * 4 and r.gcp.tolist() == [10] * 4
    with pytest.raises(ValueError, match="below '!'"):
        Read.from_phred33("A", " ", "N", "N", "+")


def test_str_qualities_are_rejected():
    with pytest.raises(TypeError, match="str"):
        read(quals="IIII")


@pytest.mark.parametrize(
    "bad,exc",
    [
        (1.5, ValueError),
        (np.array([1.0, 2.0, 3.0, 4.0]), TypeError),
        ([300, 1, 1, 1], ValueError),
        ([-1, 1, 1, 1], ValueError),
        (np.zeros((2, 2), np.uint8), ValueError),
    ],
)
def test_bad_qualities(bad, exc):
    with pytest.raises(exc):
        read(quals=bad)


def test_bad_bases():
    with pytest.raises(TypeError):
        read(1234)
    with pytest.raises(ValueError, match="ASCII"):
        read("ACGÜ")
    with pytest.raises(TypeError):
        read(np.zeros(4, np.int32))


def test_empty_read_and_haplotype_rejected():
    with pytest.raises(ValueError, match="empty"):
        Read("", [], [], [], [])
    with pytest.raises(ValueError, match="empty"):
        HaplotypeBatch.from_haplotypes(["ACGT", ""])
    with pytest.raises(ValueError, match="empty"):
        ReadBatch(np.frombuffer(b"ACGT", np.uint8), *[np.full(4, 30, np.uint8)] * 4, offsets=[0, 2, 2, 4])
    with pytest.raises(ValueError, match="empty"):
        pyphmm.compute_likelihoods([read()], ["ACGT", ""])


def test_unequal_lengths_rejected():
    with pytest.raises(ValueError, match="4 bases but 3 gcp"):
        read(gcp=[10] * 3)
    with pytest.raises(ValueError):
        ReadBatch(
            np.frombuffer(b"ACGT", np.uint8), np.full(3, 30, np.uint8), *[np.full(4, 30, np.uint8)] * 3, offsets=[0, 4]
        )
    with pytest.raises(ValueError, match="offsets"):
        ReadBatch(np.frombuffer(b"ACGT", np.uint8), *[np.full(4, 30, np.uint8)] * 4, offsets=[0, 3])
    with pytest.raises(ValueError, match="offsets"):
        HaplotypeBatch(np.frombuffer(b"ACGT", np.uint8), [1, 4])


def test_haplotypes_must_be_a_sequence():
    with pytest.raises(TypeError):
        pyphmm.compute_likelihoods([read()], "ACGT")
    with pytest.raises(TypeError):
        pyphmm.compute_likelihoods(["ACGT"], ["ACGT"])


def test_batch_conversions_and_indexing():
    reads = [read("ACGT"), Read("GG", [20, 21], [40, 41], [42, 43], [9, 8])]
    rb = ReadBatch.from_reads(reads)
    assert len(rb) == 2 and rb.lengths.tolist() == [4, 2] and rb.offsets.tolist() == [0, 4, 6]
    assert rb[1].bases == b"GG" and rb[-1].dels.tolist() == [42, 43]
    assert [r.bases for r in rb] == [b"ACGT", b"GG"]
    with pytest.raises(IndexError):
        rb[2]
    hb = HaplotypeBatch.from_haplotypes(["ACGTA", b"TT", np.frombuffer(b"CCC", np.uint8)])
    assert len(hb) == 3 and hb.lengths.tolist() == [5, 2, 3] and hb[1] == b"TT" and hb[-1] == b"CCC"
    with pytest.raises(IndexError):
        hb[3]
    with pytest.raises(TypeError):
        ReadBatch.from_reads(["ACGT"])
    # batches and lists give the same numbers
    a = pyphmm.compute_likelihoods(reads, ["ACGTA", "TT", "CCC"], backend="cpu")
    b = pyphmm.compute_likelihoods(rb, hb, backend="cpu")
    np.testing.assert_array_equal(a, b)


def test_result_shape_dtype_and_layout():
    reads = [read("ACGT"), read("TTTT"), read("ACGA")]
    haps = ["ACGT", "TTTTT"]
    res = pyphmm.compute_likelihoods(reads, haps, backend="cpu")
    assert res.shape == (3, 2) and res.dtype == np.float64
    assert np.all(res < 0) and np.isfinite(res).all()
    for i, r in enumerate(reads):
        for j, h in enumerate(haps):
            assert res[i, j] == pyphmm.compute_likelihoods([r], [h], backend="cpu")[0, 0]
    assert res[0, 0] > res[0, 1] and res[1, 1] > res[1, 0]


def test_empty_regions():
    st = {}
    assert pyphmm.compute_likelihoods([], ["ACGT", "AC"], backend="cpu", stats=st).shape == (0, 2)
    assert st["pairs"] == 0
    assert pyphmm.compute_likelihoods([read(), read()], [], backend="cpu").shape == (2, 0)
    assert pyphmm.compute_regions([], backend="cpu") == []
    res = pyphmm.compute_regions([([], ["A"]), ([read()], ["ACGT"]), ([read()], [])], backend="cpu")
    assert [r.shape for r in res] == [(0, 1), (1, 1), (1, 0)]


def test_quality_mask_127():
    # GKL masks every quality with & 127
    a = pyphmm.compute_likelihoods([read(quals=[30 + 128] * 4, ins=[45 + 128] * 4)], ["ACGT"], backend="cpu")
    b = pyphmm.compute_likelihoods([read()], ["ACGT"], backend="cpu")
    np.testing.assert_array_equal(a, b)


def test_non_acgtn_reads_as_a_and_n_matches_all():
    base = pyphmm.compute_likelihoods([read("AAGT")], ["AAGT"], backend="cpu")
    for odd in ("aAGT", "xAGT", "-AGT", "\x00AGT"):
        np.testing.assert_array_equal(pyphmm.compute_likelihoods([read(odd)], ["AAGT"], backend="cpu"), base)
    # N matches every base: an all-N read (or haplotype) sees a match in every
    # cell, exactly like a read and haplotype of one repeated base
    every = pyphmm.compute_likelihoods([read("AAAA")], ["AAAA"], backend="cpu")
    for r, h in (("NNNN", "ACGT"), ("ACGT", "NNNN"), ("NNNN", "NNNN"), ("GNGN", "NGNG")):
        np.testing.assert_array_equal(pyphmm.compute_likelihoods([read(r)], [h], backend="cpu"), every)
    assert pyphmm.compute_likelihoods([read("ACGT")], ["ACGT"], backend="cpu")[0, 0] < every[0, 0]


def test_stats():
    st = {}
    pyphmm.compute_likelihoods(
        [read(), read("AC", quals=[30, 30], ins=[45, 45], dels=[45, 45], gcp=[10, 10])],
        ["ACGTA", "TTT"],
        backend="cpu",
        stats=st,
    )
    assert st["pairs"] == 4 and st["cells"] == (4 + 2) * (5 + 3)
    assert st["backend"] == "cpu" and st["fell_back"] is False and st["seconds"] >= 0
    assert st["double_pairs"] == 0
    pyphmm.compute_likelihoods([read()], ["ACGTA", "TTT"], backend="cpu", double=True, stats=st)
    assert st["double_pairs"] == 2


@pytest.mark.parametrize("backend", ["gpu", "CPU", "", None, 1])
def test_bad_backend_name(backend):
    with pytest.raises(ValueError, match="backend"):
        pyphmm.compute_likelihoods([read()], ["ACGT"], backend=backend)


@pytest.mark.parametrize(
    "threads,exc", [(0, ValueError), (-1, ValueError), (1.5, TypeError), ("2", TypeError), (True, TypeError)]
)
def test_bad_threads(threads, exc):
    with pytest.raises(exc):
        pyphmm.compute_likelihoods([read()], ["ACGT"], threads=threads)


def test_cuda_backend_raises_where_unusable():
    inf = pyphmm.info()
    if not inf["cuda_compiled"]:
        assert not inf["cuda_usable"] and inf["cuda_status"]
    st = {}
    if inf["cuda_usable"]:  # GPU machines: it must really run there
        pyphmm.compute_likelihoods([read()], ["ACGT"], backend="cuda", stats=st)
        assert st["backend"] == "cuda"
        return
    with pytest.raises(pyphmm.BackendUnavailableError) as e:
        pyphmm.compute_likelihoods([read()], ["ACGT"], backend="cuda")
    assert str(e.value)
    assert isinstance(e.value, RuntimeError)
    # auto still works, on the CPU
    pyphmm.compute_likelihoods([read()], ["ACGT"], backend="auto", stats=st)
    assert st["backend"] == "cpu"


def test_info_keys():
    inf = pyphmm.info()
    expected = {
        "version",
        "abi_version",
        "backends",
        "cuda_compiled",
        "cuda_usable",
        "cuda_status",
        "device_count",
        "device",
        "device_name",
        "cpu_threads",
        "cpu_kernel",
        "gpu_min_cells",
        "jni_compiled",
        "library",
        "settings_error",
    }
    assert expected <= set(inf)
    assert inf["version"] == pyphmm.__version__
    assert inf["abi_version"] == 6 and inf["settings_error"] is None
    assert "cpu" in inf["backends"]
    assert inf["cpu_threads"] >= 1 and inf["cpu_kernel"]
    assert ("cuda" in inf["backends"]) == inf["cuda_usable"]
