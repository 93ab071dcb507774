"""PDHMM against GKL 0.9: its probability tables, its own test files, and
its serial results on stored GATK-shaped and HaplotypeCaller-shaped regions
and edge cases (tests/data/, made with an oracle build of GKL 0.9; see
tests/data/README.md). Also the API's shapes, threads and error contract.

On the machine that made the data (gcc 12, glibc 2.36) pyphmm's tables are
GKL's bit for bit, and so are the results; elsewhere a libm may round a
table entry differently, so results are held to GATK's tolerance (1e-5)
and the largest difference is printed.
"""

import numpy as np
import pytest

import pyphmm
from devtools.oracle import TOL
from devtools.pd_regions import generate
from devtools.pd_testdata import GKL_FILES, gkl_cases, gkl_tables, raw_pdhmm, read_edge_file, stored_regions

# GKL's test files print 7 significant digits: 1e-4 covers that rounding
# (5e-5 near -500) and is GKL's own unit test's tolerance.
GKL_FILE_TOL = 1e-4


def flat(arrays):
    return np.concatenate([np.asarray(a).ravel() for a in arrays]) if arrays else np.zeros(0)


def compare(got, want, what):
    """|got - want| <= TOL, -inf exactly where want is -inf, never NaN;
    returns the largest difference and the share of bit-identical values."""
    got, want = flat(got), flat(want)
    assert got.shape == want.shape, what
    assert not np.isnan(got).any(), f"{what}: NaN"
    assert np.array_equal(np.isneginf(got), np.isneginf(want)), f"{what}: -inf where GKL has none, or not where it has"
    assert not np.isposinf(got).any()
    fin = np.isfinite(want)
    worst = float(np.abs(got[fin] - want[fin]).max()) if fin.any() else 0.0
    assert worst <= TOL, f"{what}: max |diff| {worst:.3g}"
    same = float(np.mean((got == want) | (np.isneginf(got) & np.isneginf(want))))
    print(f"{what}: {got.size} pairs, max |pyphmm - GKL| = {worst:.3g}, bit-identical {same:.2%}")
    return worst, same


# ---- tables -----------------------------------------------------------------------


def test_tables_are_gkl_s(native_check_exe):
    import subprocess

    exe = native_check_exe("pd_tables_check", "common/pd_tables.cc")
    ours = {}
    for line in subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines():
        t = line.split()
        ours[(t[0],) + tuple(int(v) for v in t[1:-1] if t[0] != "ic")] = t[1:] if t[0] == "ic" else int(t[-1], 16)
    gkl = gkl_tables()
    assert len(gkl["qe"]) == 255 and len(gkl["mm"]) == 128 * 129 // 2
    diff_qe = [q for q, b in gkl["qe"].items() if ours[("qe", q)] != b]
    diff_mm = [k for k, b in gkl["mm"].items() if ours[("mm",) + k] != b]
    assert tuple(int(v, 16) for v in ours[("ic",)]) == gkl["ic"]
    # Another libm may round a few entries by an ulp; more means a wrong formula.
    assert len(diff_qe) + len(diff_mm) <= 10, (diff_qe, diff_mm[:20])
    print(f"tables: {len(diff_qe)} error probabilities and {len(diff_mm)} match-to-match entries differ from GKL's")


# ---- GKL's test files and the stored regions ------------------------------------------


@pytest.mark.parametrize("name", GKL_FILES)
def test_gkl_test_files(name):
    cases = gkl_cases(name)
    assert len(cases) == {"pdhmm_syn_199_68_51.txt": 199, "pdhmm_syn_1412_129_223.txt": 1412}.get(name, 990)
    got = flat(raw_pdhmm([([r], [h]) for r, h, _ in cases]))
    want = np.array([e for _, _, e in cases])
    assert np.isfinite(got).all() and np.isfinite(want).all()
    worst = float(np.abs(got - want).max())
    print(f"{name}: max |pyphmm - GKL's printed value| = {worst:.3g}")
    assert worst <= GKL_FILE_TOL


@pytest.mark.parametrize("shape", ["gatk", "hc"])
def test_stored_regions_equal_gkl(shape):
    regions, gkl = stored_regions(shape)
    assert len(regions) == 24 and sum(len(r) * len(h) for r, h in regions) > 8000
    got = pyphmm.compute_pd_regions(regions, backend="cpu")
    compare(got, gkl, f"{shape} regions")


def test_edge_cases_equal_gkl():
    cases = read_edge_file()
    assert len(cases) >= 15
    got = raw_pdhmm([(r, h) for _, r, h, _ in cases])
    for (name, _, _, want), g in zip(cases, got):
        compare([g], [want], name)
    everything = flat([w for *_, w in cases])
    assert np.isneginf(everything).sum() >= 10 and (everything[np.isfinite(everything)] < -330).any()


def test_one_call_per_region_equals_one_call_for_all():
    regions, _ = stored_regions("gatk")
    together = pyphmm.compute_pd_regions(regions[:8], backend="cpu")
    for (reads, haps), t in zip(regions[:8], together):
        assert np.array_equal(pyphmm.compute_pd_likelihoods(reads, haps, backend="cpu"), t)


@pytest.mark.parametrize("threads", [1, 2, 3, 16])
def test_threads_give_the_same_bits(threads):
    regions = generate(6, seed=11, shape="hc") + generate(3, seed=12, shape="gatk")
    one = flat(pyphmm.compute_pd_regions(regions, backend="cpu", threads=1))
    stats = {}
    many = flat(pyphmm.compute_pd_regions(regions, backend="cpu", threads=threads, stats=stats))
    assert np.array_equal(one, many)
    assert stats["backend"] == "cpu" and stats["pairs"] == one.size
    assert stats["cells"] == sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regions)


# ---- API --------------------------------------------------------------------------


def test_haplotype_forms_and_shapes():
    reads = [
        pyphmm.Read("ACGTAC", [30] * 6, [45] * 6, [45] * 6, [10] * 6),
        pyphmm.Read(b"GTA", b"\x1e" * 3, *[[40] * 3] * 3),
    ]
    pd = [0, 0, pyphmm.PD_SNP | pyphmm.PD_A, pyphmm.PD_DEL_START | pyphmm.PD_DEL_END, 0, 0, 0, 0]
    forms = [
        [pyphmm.PDHaplotype("ACGTACGT", pd)],
        [("ACGTACGT", bytes(pd))],
        [(b"ACGTACGT", np.array(pd, np.uint8))],
        pyphmm.PDHaplotypeBatch(np.frombuffer(b"ACGTACGT", np.uint8), np.array(pd, np.uint8), [0, 8]),
    ]
    results = [pyphmm.compute_pd_likelihoods(reads, f, backend="cpu") for f in forms]
    assert results[0].shape == (2, 1) and results[0].dtype == np.float64
    for r in results[1:]:
        assert np.array_equal(r, results[0])
    batch = pyphmm.PDHaplotypeBatch.from_haplotypes([("AC", [1, 0]), ("GGT", b"\0\0\0")])
    assert len(batch) == 2 and batch[1].bases == b"GGT" and list(batch[0].pd) == [1, 0]
    empty = pyphmm.compute_pd_regions([([], [("AC", [0, 0])]), (reads, [])], backend="cpu")
    assert [e.shape for e in empty] == [(0, 1), (2, 0)]
    assert (pyphmm.PD_SNP, pyphmm.PD_DEL_START, pyphmm.PD_DEL_END) == (1, 2, 4)
    assert (pyphmm.PD_A, pyphmm.PD_C, pyphmm.PD_G, pyphmm.PD_T) == (8, 16, 32, 64)


def test_a_snp_position_takes_its_alt_bases():
    """A read base listed at a SNP position matches there: the likelihood
    with the alt's bit is (up to paths through other alignments) that of a
    haplotype carrying the alt base, and far above one with another base's bit."""
    read = pyphmm.Read("ACGTTCGA", [30] * 8, [45] * 8, [45] * 8, [10] * 8)
    with_bit = pyphmm.compute_pd_likelihoods([read], [("ACGTACGA", [0, 0, 0, 0, 1 | 64, 0, 0, 0])], backend="cpu")
    alt = pyphmm.compute_pd_likelihoods([read], [("ACGTTCGA", [0] * 8)], backend="cpu")
    other = pyphmm.compute_pd_likelihoods([read], [("ACGTACGA", [0, 0, 0, 0, 1 | 8, 0, 0, 0])], backend="cpu")
    assert abs(with_bit[0, 0] - alt[0, 0]) < 1e-5 and other[0, 0] < alt[0, 0] - 2


# ---- errors -----------------------------------------------------------------------


def _read(bases, **q):
    n = len(bases)
    return pyphmm.Read(
        bases, q.get("q", [30] * n), q.get("ins", [45] * n), q.get("dels", [45] * n), q.get("gcp", [10] * n)
    )


@pytest.mark.parametrize(
    "field,value,words",
    [
        ("ins", 200, "insertion quality 200 is above 127"),
        ("dels", 128, "deletion quality 128 is above 127"),
        ("gcp", 255, "gap continuation penalty 255 is above 127"),
        ("q", 255, "base quality 255 is above 254"),
    ],
)
def test_qualities_gkl_refuses(field, value, words):
    good = _read("ACGTACGT")
    q = {field: [30, 30, 30, value, 30, 30, 30, 30] if field == "q" else [45, 45, 45, value, 45, 45, 45, 45]}
    bad = _read("ACGTACGT", **q)
    hap = [("ACGTACGT", [0] * 8)]
    with pytest.raises(ValueError) as e:
        pyphmm.compute_pd_regions([([good], hap), ([good, bad], hap)], backend="cpu")
    assert f"region 1, read 1, position 3: {words}" in str(e.value)


@pytest.mark.parametrize("threads", [1, 4])
def test_many_regions_report_the_first_refused(threads):
    """A call of many regions checks them in parallel; the error is still
    the first refused region's."""
    good, hap = _read("ACGTACGT"), [("ACGTACGT", [0] * 8)]
    regions = [([good], hap) for _ in range(100)]
    regions[70] = ([good, _read("ACGTACGT", gcp=[10, 10, 200, 10, 10, 10, 10, 10])], hap)
    regions[90] = ([_read("ACGTACGT", q=[255] * 8)], hap)
    with pytest.raises(ValueError) as e:
        pyphmm.compute_pd_regions(regions, backend="cpu", threads=threads)
    assert "region 70, read 1, position 2: gap continuation penalty 200 is above 127" in str(e.value)


@pytest.mark.parametrize("base", [b"X", b"n", b".", b"a"])
def test_read_bases_at_snp_positions(base):
    """GKL refuses a read base other than A, C, G, T (either case) or N at a
    SNP position it does not equal, wherever the read and position are."""
    read = _read(b"AC" + base + b"T")
    snp = [("GGGG", [0, 0, 1 | 8, 0])]
    if base == b"a":
        pyphmm.compute_pd_likelihoods([read], snp, backend="cpu")
        return
    with pytest.raises(
        ValueError, match=r"region 0, read 0, position 2: base 0x.. is not A, C, G, T or N .*position 2"
    ):
        pyphmm.compute_pd_likelihoods([read], snp, backend="cpu")
    # the same byte in the haplotype, or N there, or no SNP bit: accepted
    for hap in ([("G" + base.decode() + "GG", [0, 1 | 8, 0, 0])], [("GNGG", [0, 1, 0, 0])], [("GGGG", [0, 8, 2, 4])]):
        assert np.isfinite(pyphmm.compute_pd_likelihoods([read], hap, backend="cpu")).all()


def test_python_argument_errors():
    read = _read("ACGT")
    with pytest.raises(TypeError, match="PD bytes as str"):
        pyphmm.PDHaplotype("ACGT", "0000")
    with pytest.raises(ValueError, match="4 bases but 3 PD bytes"):
        pyphmm.PDHaplotype("ACGT", [0, 0, 0])
    with pytest.raises(ValueError, match="within 0..255"):
        pyphmm.PDHaplotype("ACGT", [0, 0, 0, 256])
    with pytest.raises(ValueError, match="empty bases"):
        pyphmm.PDHaplotype("", [])
    with pytest.raises(TypeError, match="haplotype 1: expected pyphmm.PDHaplotype"):
        pyphmm.compute_pd_likelihoods([read], [("ACGT", [0] * 4), "ACGT"])
    with pytest.raises(ValueError, match="haplotype 0: haplotype: 4 bases but 2 PD bytes"):
        pyphmm.compute_pd_likelihoods([read], [("ACGT", [0, 0])])
    with pytest.raises(TypeError, match="regions must be an iterable"):
        pyphmm.compute_pd_regions(5)
    with pytest.raises(ValueError, match="backend must be one of"):
        pyphmm.compute_pd_likelihoods([read], [("ACGT", [0] * 4)], backend="gpu")
    with pytest.raises(TypeError, match="stats must be a dict"):
        pyphmm.compute_pd_likelihoods([read], [("ACGT", [0] * 4)], stats=[])


def test_cuda_backend_without_a_gpu():
    if pyphmm.info()["cuda_usable"]:
        pytest.skip("a GPU is usable here (tests/test_pdhmm_cuda.py covers the CUDA backend)")
    with pytest.raises(pyphmm.BackendUnavailableError, match="CUDA backend requested but unavailable"):
        pyphmm.compute_pd_likelihoods([_read("ACGT")], [("ACGT", [0] * 4)], backend="cuda")


def test_c_abi_checks():
    """What only C callers (the JNI layer) can pass: empty regions, bad
    offsets, NULL buffers."""
    from pyphmm._pyphmm import ffi, lib

    from pyphmm import _native

    hap = (b"ACGT", bytes(4))
    r = (b"ACGT", b"\x1e" * 4, b"\x2d" * 4, b"\x2d" * 4, b"\x0a" * 4)
    with pytest.raises(ValueError, match=r"region 1: 0 reads and 1 haplotypes \(GKL needs at least one each\)"):
        raw_pdhmm([([r], [hap]), ([], [hap])])
    with pytest.raises(ValueError, match=r"region 0: 1 reads and 0 haplotypes"):
        raw_pdhmm([([r], [])])
    # empty reads and haplotypes are not errors: -inf
    assert np.isneginf(raw_pdhmm([([(b"",) * 5, r], [(b"", b""), hap])])[0][[0, 0, 1], [0, 1, 0]]).all()

    def call(mutate):
        region = ffi.new("pyphmm_pd_region *")
        keep = [ffi.new("uint8_t[]", b"ACGT") for _ in range(7)]
        region.num_reads, region.num_haps = 1, 1
        region.read_bases, region.read_quals, region.read_ins, region.read_dels, region.read_gcp = keep[:5]
        region.hap_bases, region.hap_pd = keep[5:]
        region.read_offsets = ro = ffi.new("int64_t[]", [0, 4])
        region.hap_offsets = ho = ffi.new("int64_t[]", [0, 4])
        out, err = ffi.new("double[1]"), ffi.new("pyphmm_error *")
        mutate(region, ro, ho)
        rc = lib.pyphmm_pdhmm(region, 1, out, ffi.NULL, ffi.NULL, err)
        return rc, ffi.string(err.message).decode(), keep

    assert call(lambda g, ro, ho: None)[0] == lib.PYPHMM_OK
    for mutate, words in (
        (lambda g, ro, ho: ro.__setitem__(1, -1), "region 0, read 0: invalid offsets"),
        (lambda g, ro, ho: ho.__setitem__(0, -2), "region 0, haplotype 0: invalid offsets"),
        (lambda g, ro, ho: setattr(g, "hap_pd", ffi.NULL), "region 0: NULL haplotype buffer"),
        (lambda g, ro, ho: setattr(g, "read_gcp", ffi.NULL), "region 0: NULL read buffer"),
    ):
        rc, message, _ = call(mutate)
        assert rc == lib.PYPHMM_E_INVALID and words in message, message
    err = ffi.new("pyphmm_error *")
    assert lib.pyphmm_pdhmm(ffi.NULL, -1, ffi.NULL, ffi.NULL, ffi.NULL, err) == lib.PYPHMM_E_INVALID
    assert lib.pyphmm_pdhmm(ffi.NULL, 0, ffi.NULL, ffi.NULL, ffi.NULL, err) == lib.PYPHMM_OK
    opts = _native.make_options("cpu")
    opts.backend = 7
    assert lib.pyphmm_pdhmm(ffi.NULL, 0, ffi.NULL, opts, ffi.NULL, err) == lib.PYPHMM_E_INVALID
