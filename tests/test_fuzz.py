"""Fuzzing (hypothesis) of the record readers (one language: both take and
refuse the same files, in the same words), and of the
Python API. Every outcome must be an exception of the documented types or a
result equal to the oracle: the literal Python references of the PairHMM
recurrence (devtools/oracle/reference.py) and of GATK's Smith-Waterman rules
(devtools/oracle/sw_reference.py); never a crash.

Deterministic by default (the same examples every run, bounded to seconds);
PYPHMM_FUZZ_RANDOM=1 draws new ones, PYPHMM_FUZZ_EXAMPLES=N sets how many.
"""

import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyphmm._pyphmm import ffi, lib

import pyphmm
from devtools.oracle import TOL, reference, sw_reference
from pyphmm import _native, io, sw

EXAMPLES = int(os.environ.get("PYPHMM_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=os.environ.get("PYPHMM_FUZZ_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
API_ERRORS = (ValueError, TypeError, pyphmm.BackendUnavailableError)


# ---- the oracle -------------------------------------------------------------------


def reference_region(reads, haps) -> np.ndarray:
    return np.array(
        [
            [
                reference.log10_likelihood(
                    r.bases, r.quals.tolist(), r.ins.tolist(), r.dels.tolist(), r.gcp.tolist(), haps[h]
                )
                for h in range(len(haps))
            ]
            for r in reads
        ]
    ).reshape(len(reads), len(haps))


def assert_equals_reference(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    assert np.all(np.abs(got[fin] - want[fin]) <= TOL), np.max(np.abs(got[fin] - want[fin]))


# ---- record files -------------------------------------------------------------------

SPACES = st.sampled_from([" ", "\t", "  ", " \t"])
BASES = st.text(alphabet="ACGTNacgtx", min_size=1, max_size=7)


@st.composite
def record_text(draw) -> str:
    """A record, usually well formed, with varied separators and line ends."""
    nr, nh = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    sep, end = draw(SPACES), draw(st.sampled_from(["\n", "\n", "\r\n"]))
    lines = [draw(st.sampled_from(["", " "])) + f"{nr}{sep}{nh}"]
    for _ in range(nr):
        bases = draw(BASES)
        quals = [
            draw(
                st.text(
                    alphabet=st.characters(min_codepoint=33, max_codepoint=126),
                    min_size=len(bases),
                    max_size=len(bases),
                )
            )
            for _ in range(4)
        ]
        lines.append(sep.join([bases] + quals))
    lines += [draw(BASES) for _ in range(nh)]
    blank = draw(st.sampled_from(["", "", end]))
    return blank + end.join(lines) + end


MUTATION_BYTES = [
    b"\x00",
    b"\xff",
    b"\xc3\xa9",
    b"\x0b",
    b"\x0c",
    b"\x1f",
    b"\x7f",
    b"\r",
    b"\t",
    b" ",
    b"\n",
    b"+",
    b"-",
    b"_",
    b"x",
    b"9",
    b"!",
    b"\xef\xbb\xbf",
    b"12345678901",
]


@st.composite
def record_file(draw) -> bytes:
    data = "".join(draw(st.lists(record_text(), min_size=1, max_size=4))).encode("ascii")
    for _ in range(draw(st.integers(0, 3))):  # byte-level damage
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "replace", "delete", "truncate"]))
        piece = draw(st.sampled_from(MUTATION_BYTES))
        if kind == "insert":
            data = data[:at] + piece + data[at:]
        elif kind == "replace":
            data = data[:at] + piece + data[at + 1 :]
        elif kind == "delete":
            data = data[:at] + data[at + 1 :]
        else:
            data = data[:at]
    return data


def native_file(path: str, out: str, chunk_cells: int = 0):
    err, stats, rec = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    opts = _native.make_options("cpu")
    rc = lib.pyphmm_pairhmm_file(path.encode(), out.encode(), opts, chunk_cells, rec, stats, ffi.NULL, err)
    return rc, ffi.string(err.message).decode()


@pytest.mark.slow
@FUZZ
@given(record_file(), st.sampled_from([0, 1, 40]))
def test_record_parser_fuzz(data, chunk_cells):
    """chunk_cells 1 and 40 cut the file into chunks of one or a few records."""
    with tempfile.TemporaryDirectory() as d:
        path, out = os.path.join(d, "f.in"), os.path.join(d, "f.out")
        with open(path, "wb") as f:
            f.write(data)
        try:
            regions = list(io.read_records(path))
            py_error = None
        except io.RecordError as e:
            regions, py_error = None, str(e)
        rc, message = native_file(path, out, chunk_cells)
        event(f"native {rc}, python {'error' if py_error else 'ok'}")
        assert rc in (lib.PYPHMM_OK, lib.PYPHMM_E_INVALID), (rc, message)
        if rc == lib.PYPHMM_E_INVALID:  # a malformed file: the Python reader says the same
            assert py_error == message
            return
        assert py_error is None, py_error  # one language: what one reader takes, the other takes
        results = pyphmm.compute_regions(regions, backend="cpu")
        with open(out) as f:  # both paths write the same bytes
            assert f.read() == "".join(io.format_record(r) for r in results)
        for (reads, haps), got in zip(regions, pyphmm.compute_regions(regions, backend="cpu", double=True)):
            assert_equals_reference(got, reference_region(reads, haps))


# ---- the PairHMM API ------------------------------------------------------------------

QUALS = st.one_of(
    st.lists(st.integers(-3, 300), min_size=0, max_size=7),
    st.binary(min_size=0, max_size=7),
    st.lists(st.integers(0, 127), min_size=1, max_size=7).map(lambda v: np.array(v, np.uint8)),
    st.lists(st.integers(0, 90), min_size=1, max_size=7).map(lambda v: np.array(v, np.int64)),
    st.lists(st.floats(0, 90), min_size=1, max_size=7).map(np.array),
    st.text(max_size=7),
)
GOOD_SEQ = st.text(alphabet="ACGTNacgt-x", min_size=1, max_size=7)
BAD_SEQ = st.one_of(
    st.text(alphabet="ACGT\u00e9", min_size=0, max_size=7), st.binary(min_size=0, max_size=7), st.integers(0, 9)
)
SEQ = st.one_of(GOOD_SEQ, GOOD_SEQ, GOOD_SEQ, GOOD_SEQ, BAD_SEQ)  # mostly valid, so results get checked too


@st.composite
def read_args(draw):
    bases = draw(SEQ)
    n = len(bases) if isinstance(bases, (str, bytes)) else 1
    same = st.lists(st.integers(0, 93), min_size=n, max_size=n)
    return bases, [draw(st.one_of(same, same, same, same, same, QUALS)) for _ in range(4)]


@st.composite
def pairhmm_call(draw):
    """Arguments of compute_likelihoods: half the time all valid (so that
    results are checked against the reference), else anything."""
    if draw(st.booleans()):
        reads = []
        for _ in range(draw(st.integers(0, 3))):
            bases = draw(GOOD_SEQ)
            q = st.lists(st.integers(0, 93), min_size=len(bases), max_size=len(bases))
            reads.append((bases, [draw(q) for _ in range(4)]))
        return dict(
            reads=reads,
            haps=draw(st.lists(GOOD_SEQ, max_size=3)),
            double=draw(st.booleans()),
            backend="cpu",
            threads=draw(st.sampled_from([None, 1, 2, np.int64(2)])),
            stats={},
        )
    return dict(
        reads=draw(st.lists(read_args(), max_size=3)),
        haps=draw(st.lists(SEQ, max_size=3)),
        double=draw(st.booleans()),
        backend=draw(st.sampled_from(["cpu", "auto", "cuda", "gpu", None])),
        threads=draw(
            st.one_of(st.none(), st.integers(-2, 3), st.just(2**31), st.just(np.int64(2)), st.just(1.5), st.just(True))
        ),
        stats=draw(st.sampled_from([None, {}, []])),
    )


@pytest.mark.slow
@FUZZ
@given(pairhmm_call())
def test_pairhmm_api_fuzz(call):
    reads, haps, stats = call["reads"], call["haps"], call["stats"]
    double, backend, threads = call["double"], call["backend"], call["threads"]
    try:
        objs = [pyphmm.Read(b, *q) for b, q in reads]
        got = pyphmm.compute_likelihoods(objs, haps, double=double, backend=backend, threads=threads, stats=stats)
    except API_ERRORS as e:
        event(type(e).__name__)
        return
    event("computed")
    hb = pyphmm.HaplotypeBatch.from_haplotypes(haps)
    assert_equals_reference(got, reference_region(objs, hb))
    assert isinstance(stats, dict) or stats is None


# ---- Smith-Waterman API -------------------------------------------------------------------

GOOD_SW_SEQ = st.text(alphabet="ACGTN", min_size=1, max_size=9)
SW_SEQ = st.one_of(
    GOOD_SW_SEQ,
    GOOD_SW_SEQ,
    GOOD_SW_SEQ,
    GOOD_SW_SEQ,
    st.text(alphabet="ACGTa\u00e9 ", max_size=9),
    st.binary(max_size=9),
    st.integers(0, 3),
)
GOOD_PARAMS = st.one_of(
    st.sampled_from(list(sw.PRESETS)),
    st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(-60, 0), st.integers(-60, 0)),
)
PARAMS = st.one_of(
    GOOD_PARAMS,
    GOOD_PARAMS,
    GOOD_PARAMS,
    st.sampled_from(["original_default", "NOPE"]),
    st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(-60, 5), st.integers(-60, 5)),
    st.lists(st.integers(-(2**40), 2**40), min_size=3, max_size=5),
    st.tuples(st.floats(-5, 5), st.integers(-5, 0), st.integers(-5, 0), st.integers(-5, 0)),
)
OVERHANG = st.one_of(
    st.sampled_from(["SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE", "softclip", "CLIP"]),
    st.sampled_from(list(sw.OverhangStrategy)),
    st.integers(8, 13),
    st.none(),
)


@st.composite
def sw_call(draw):
    """(ref, alt, params, overhang): half the time all valid, else anything."""
    if draw(st.booleans()):
        return (
            draw(GOOD_SW_SEQ),
            draw(GOOD_SW_SEQ),
            draw(GOOD_PARAMS),
            draw(st.sampled_from(["SOFTCLIP", "INDEL", "LEADING_INDEL", "IGNORE"])),
        )
    return draw(SW_SEQ), draw(SW_SEQ), draw(PARAMS), draw(OVERHANG)


@FUZZ
@given(sw_call())
def test_align_api_fuzz(call):
    ref, alt, params, overhang = call
    try:
        got = sw.align(ref, alt, params=params, overhang=overhang)
    except (ValueError, TypeError) as e:
        event(type(e).__name__)
        return
    event("aligned")
    p = sw.parse_params(params)
    name = sw.OverhangStrategy.parse(overhang).name
    assert got == sw_reference.align(ref, alt, p, name)
    cig, off = sw.align_batch([ref], [alt], params=params, overhang=overhang, backend="cpu")
    assert (cig[0], int(off[0])) == got


def test_fuzz_settings_are_bounded():
    """CI time: the three fuzz tests above draw a bounded number of examples."""
    assert FUZZ.max_examples == EXAMPLES and not math.isinf(EXAMPLES)
