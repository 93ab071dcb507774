"""Record files (docs/RECORD_FORMAT.md): round trips, streaming, bad input."""

import io as pyio
import os

import numpy as np
import pytest

import pyphmm
from devtools.regions import generate, make_region
from pyphmm import io
from pyphmm.samples import sample_path

READ_FIELDS = ("bases", "quals", "ins", "dels", "gcp", "offsets")


def _same_region(a, b):
    (ra, ha), (rb, hb) = a, b
    for f in READ_FIELDS:
        np.testing.assert_array_equal(getattr(ra, f), getattr(rb, f), err_msg=f)
    np.testing.assert_array_equal(ha.bases, hb.bases)
    np.testing.assert_array_equal(ha.offsets, hb.offsets)


def test_generated_file_round_trip(tmp_path):
    regs = generate(regions=12, seed=9, underflow=1, odd_rate=0.3, n_rate=0.3)
    path = tmp_path / "g.in"
    io.write_input_records(str(path), regs)
    back = list(io.read_records(str(path)))
    assert len(back) == len(regs)
    for a, b in zip(regs, back):
        _same_region(a, b)


def test_round_trip_extreme_qualities(tmp_path):
    rng = np.random.default_rng(0)
    regs = [make_region(rng, 4, 2, preset="random", qual=(0, 93), indel_q=(0, 93), gcp_q=(0, 93)) for _ in range(3)]
    buf = pyio.StringIO()
    io.write_input_records(buf, regs)
    buf.seek(0)
    for a, b in zip(regs, io.read_records(buf)):
        _same_region(a, b)


def test_writer_rejects_unprintable_quality():
    rng = np.random.default_rng(0)
    reads, haps = make_region(rng, 1, 1, preset="random", qual=(94, 94))
    with pytest.raises(ValueError, match="ASCII"):
        io.format_input_record(reads, haps)


def test_results_round_trip_exact(tmp_path):
    rng = np.random.default_rng(1)
    arrays = [rng.normal(-50, 30, (r, h)) for r, h in ((3, 2), (1, 1), (7, 5))]
    arrays.append(np.array([[-1e-300, -123.45678901234567, -np.inf]]))
    arrays.append(np.zeros((0, 3)))
    path = tmp_path / "r.out"
    io.write_records(str(path), arrays)
    back = list(io.read_results(str(path)))
    assert len(back) == len(arrays)
    for a, b in zip(arrays, back):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # shortest repr: exact doubles


def test_sample_results_round_trip(tmp_path):
    regs = list(io.read_records(sample_path()))
    res = pyphmm.compute_regions(regs, backend="cpu")
    path = tmp_path / "s.out"
    io.write_records(str(path), res)
    for a, b in zip(res, io.read_results(str(path))):
        np.testing.assert_array_equal(a, b)


class LineOnly:
    """A file object that only offers readline(), counting calls: a reader
    that slurps the file (read()/iteration) fails here."""

    def __init__(self, text):
        self._lines = text.splitlines(keepends=True)
        self.calls = 0
        self.name = "<lines>"

    def readline(self, size=-1):
        self.calls += 1
        line = self._lines.pop(0) if self._lines else ""
        if 0 <= size < len(line):
            line, self._lines[:0] = line[:size], [line[size:]]
        return line

    def read(self, *a):  # pragma: no cover - must not be used
        raise AssertionError("read() used: the reader does not stream")


def test_reading_streams_line_by_line():
    regs = generate(regions=6, seed=4)
    text = "".join(io.format_input_record(r, h) for r, h in regs)
    src = LineOnly(text)
    it = io.read_records(src)
    first = next(it)
    _same_region(first, regs[0])
    # only the first record's lines (plus nothing beyond) were consumed
    assert src.calls == 1 + len(regs[0][0]) + len(regs[0][1])
    rest = list(it)
    assert len(rest) == len(regs) - 1


def test_blank_lines_between_records_are_skipped():
    regs = generate(regions=2, seed=4, max_reads=3)
    text = "\n" + "\n".join(io.format_input_record(r, h) for r, h in regs) + "\n\n"
    back = list(io.read_records(pyio.StringIO(text)))
    assert len(back) == 2


def test_empty_record_counts():
    back = list(io.read_records(pyio.StringIO("0 2\nACGT\nAC\n1 0\nAC !! II II ++\n")))
    assert (len(back[0][0]), len(back[0][1])) == (0, 2)
    assert (len(back[1][0]), len(back[1][1])) == (1, 0)
    res = pyphmm.compute_regions(back, backend="cpu")
    assert res[0].shape == (0, 2) and res[1].shape == (1, 0)


GOOD_READ = "ACGT IIII IIII IIII ++++"

BAD_INPUTS = [
    # (text, line number the message must name, words it must contain)
    ("1 1 1\n" + GOOD_READ + "\nACGT\n", 1, "header"),
    ("one 1\n" + GOOD_READ + "\nACGT\n", 1, "malformed count 'one'"),
    ("1 x\n" + GOOD_READ + "\nACGT\n", 1, "malformed count 'x'"),
    ("1 -1\n" + GOOD_READ + "\n", 1, "negative"),
    ("1 1\n" + GOOD_READ + "\nACGT\n2 1\n" + GOOD_READ + "\n", 6, "truncated"),
    ("1 2\n" + GOOD_READ + "\nACGT\n", 4, "truncated"),
    ("1 1\nACGT IIII IIII IIII\nACGT\n", 2, "5 fields"),
    ("1 1\nACGT IIII IIII IIII ++++ ++++\nACGT\n", 2, "5 fields"),
    ("2 1\n" + GOOD_READ + "\nACGT III IIII IIII ++++\nACGT\n", 3, "QUAL"),
    ("1 1\nACGT IIII IIIII IIII ++++\nACGT\n", 2, "INS"),
    ("1 1\nACGT IIII IIII III ++++\nACGT\n", 2, "DEL"),
    ("1 1\nACGT IIII IIII IIII +++\nACGT\n", 2, "GCP"),
    ("1 1\nACGT II\x01I IIII IIII ++++\nACGT\n", 2, "control character 0x01 at column 8"),
    # the offending read is the third of its record: its own line is named
    ("3 1\n" + GOOD_READ + "\n" + GOOD_READ + "\nACGT IIII IIII IIII ++ +\nACGT\n", 4, "5 fields"),
    ("3 1\n" + GOOD_READ + "\n" + GOOD_READ + "\nACGT IIII IIII IIII +\x01++\nACGT\n", 4, "control character 0x01"),
    ("1 1\nACGT IIII IIII I II ++++\nACGT\n", 2, "5 fields"),
    ("1 2\n" + GOOD_READ + "\nACGT\nAC GT\n", 4, "haplotype"),
]


@pytest.mark.parametrize("text,line,words", BAD_INPUTS, ids=[f"{i}-{w}" for i, (_, _, w) in enumerate(BAD_INPUTS)])
def test_bad_input_names_the_line(tmp_path, text, line, words):
    path = tmp_path / "bad.in"
    path.write_text(text)
    with pytest.raises(io.RecordError) as e:
        list(io.read_records(str(path)))
    msg = str(e.value)
    assert words.lower() in msg.lower(), msg
    assert f"{path}:{line}:" in msg or f"line {line}" in msg, msg
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "text,line",
    [
        ("2 1\n" + GOOD_READ + "\nACGÜ IIII IIII IIII ++++\nACGT\n", 3),
        ("1 2\n" + GOOD_READ + "\nACGT\nACGÜ\n", 4),
    ],
)
def test_non_ascii_names_the_line(text, line):
    with pytest.raises(io.RecordError, match=rf":{line}: non-ASCII"):
        list(io.read_records(pyio.StringIO(text)))


def test_bad_record_after_good_ones_yields_the_good_ones_first(tmp_path):
    path = tmp_path / "bad.in"
    path.write_text("1 1\n" + GOOD_READ + "\nACGT\n1 1\nACGT IIII\nACGT\n")
    it = io.read_records(str(path))
    assert len(next(it)[0]) == 1
    with pytest.raises(io.RecordError, match=r":5:"):
        next(it)


def test_bad_results_file(tmp_path):
    path = tmp_path / "bad.out"
    path.write_text("2 2\n-1.0 -2.0\n-3.0\n")
    with pytest.raises(io.RecordError, match=r":3:.*expected 2 values"):
        list(io.read_results(str(path)))


def test_sample_is_small_and_varied():
    path = sample_path()
    assert os.path.getsize(path) < 100_000
    regs = list(io.read_records(path))
    pairs = sum(len(r) * len(h) for r, h in regs)
    assert 10 <= len(regs) <= 20 and 200 <= pairs <= 600
    st = {}
    pyphmm.compute_regions(regs, backend="cpu", stats=st)
    assert st["double_pairs"] > 0  # it includes an underflow-forcing region
    with pytest.raises(FileNotFoundError):
        sample_path("no-such-sample.in")
