"""The native record-file path of ``pyphmm likelihoods`` (native/frontends/records/):
the same bytes as the Python reader and writer on every file it takes, the
Python path for every file it leaves (which then computes or reports it),
and Python's repr() for every double it writes."""

import functools
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from pyphmm._pyphmm import ffi, lib

import pyphmm
from devtools.child import child_env
from devtools.regions import generate
from pyphmm import _native, io
from pyphmm.samples import sample_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = "ACGT IIII IIII IIII ++++"


@pytest.mark.slow
def test_repr_of_doubles_is_pythons(native_check_exe):
    exe = native_check_exe("repr_check", "common/repr.cc")
    rng = np.random.default_rng(1)
    vals = list(rng.integers(0, 2**64, 60_000, dtype=np.uint64).view(np.float64))  # every kind of bits
    vals += list(-rng.random(30_000) * 300)  # log10 likelihoods
    vals += [float(x) for x in range(-300, 300)] + [10.0**k for k in range(-25, 25)]
    vals += [-(10.0**k) * 1.5 for k in range(-25, 25)]
    vals += [
        0.0,
        -0.0,
        1e-5,
        1e-4,
        0.00012,
        1e15,
        1e16,
        9999999999999998.0,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        float("inf"),
        -float("inf"),
        float("nan"),
    ]
    text = "".join("%016x\n" % struct.unpack("<Q", struct.pack("<d", v))[0] for v in vals)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(vals)
    bad = [(repr(float(v)), o) for v, o in zip(vals, out) if repr(float(v)) != o]
    assert not bad, bad[:10]


def run_cli(*args, native=True):
    env = child_env(ROOT, PYPHMM_DEV="native_reader=1" if native else "native_reader=0")
    return subprocess.run([sys.executable, "-m", "pyphmm", *args], capture_output=True, text=True, env=env, timeout=300)


def both_paths(tmp_path, path, *extra):
    """Output bytes of the native and the Python path (exit codes checked)."""
    out = []
    for native in (True, False):
        o = tmp_path / f"{'n' if native else 'p'}.out"
        p = run_cli("likelihoods", str(path), "-o", str(o), "--backend", "cpu", *extra, native=native)
        assert p.returncode == 0, p.stderr
        out.append(o.read_bytes())
    return out


def tricky_file(tmp_path):
    """Generated regions (N and other bytes, an underflowing one for the
    double pass, a read whose gcp is 0 for -inf), written with blank lines,
    tabs, runs of spaces and CRLF endings, plus empty records."""
    regs = generate(regions=10, seed=4, underflow=1, odd_rate=0.3, n_rate=0.3)
    path = tmp_path / "t.in"
    io.write_input_records(str(path), regs)
    lines = path.read_text().splitlines()
    out = []
    for k, line in enumerate(lines):
        if len(line.split()) == 2 and k:  # a header: blank lines may come before it
            out += ["", " \t"]
        if " " in line and k % 3 == 0:
            line = line.replace(" ", "\t", 1).replace(" ", "   ", 1)
        out.append(line + ("\r" if k % 5 == 0 else ""))
    out += ["", "0 2", "ACGT", "AC", "1 0", GOOD, "1 1", "ACGT IIII IIII IIII !!!!", "ACGTACGT"]
    path.write_bytes(("\n".join(out) + "\n").encode("ascii"))
    return path


def test_native_and_python_paths_write_the_same_bytes(tmp_path):
    for path in (sample_path(), tricky_file(tmp_path)):
        nat, py = both_paths(tmp_path, path)
        assert nat == py, path
        assert b"-inf" in nat or path == sample_path()
    nat, py = both_paths(tmp_path, sample_path(), "--double", "--threads", "1")
    assert nat == py


@pytest.mark.slow
def test_native_path_takes_ordinary_files_in_small_chunks(tmp_path):
    """chunk_cells = 1: one record per chunk, so the reader parses while the
    previous chunk computes; the results are still the Python path's."""
    path = tricky_file(tmp_path)
    out = tmp_path / "c.out"
    opts = _native.make_options("cpu")
    err, st, rec = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    done = ffi.new("int64_t[3]")
    rc = lib.pyphmm_pairhmm_file(str(path).encode(), str(out).encode(), opts, 1, rec, st, done, err)
    assert rc == lib.PYPHMM_OK, ffi.string(err.message)
    _, py = both_paths(tmp_path, path)
    assert out.read_bytes() == py
    assert rec[0] == len(list(io.read_records(str(path)))) and st.pairs > 0
    assert list(done) == [rec[0], st.pairs, st.cells]  # the progress counters end at the totals


def file_call(path, out, chunk_cells=0):
    err, st, rec = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    rc = lib.pyphmm_pairhmm_file(
        str(path).encode(), str(out).encode(), _native.make_options("cpu"), chunk_cells, rec, st, ffi.NULL, err
    )
    return rc, ffi.string(err.message).decode()


def test_a_late_malformed_record_ends_a_run_that_computed_chunks(tmp_path):
    """One record per chunk, so earlier chunks are computed and written
    while the parser goes on to the bad record: the run reports it."""
    path = tricky_file(tmp_path)
    good = path.read_text()
    bad_line = good.count("\n") + 2
    path.write_text(good + "1 1\nACGT III IIII IIII ++++\nACGT\n")
    rc, msg = file_call(path, tmp_path / "o", chunk_cells=1)
    assert rc == lib.PYPHMM_E_INVALID and f"{path}:{bad_line}: read has 4 bases but QUAL has 3" in msg, msg


@functools.lru_cache(maxsize=1)  # (the same text for every test: generating it takes seconds)
def many_parts_text(records=8000):
    """About 2.5 MB of small records: the native reader parses it as several
    parts of about 1 MB on several threads. Blank lines, tabs and CRLF
    endings here and there."""
    rng = np.random.default_rng(11)
    lines = []
    for k in range(records):
        nr, nh = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        if k % 7 == 0:
            lines.append(" \t" if k % 2 else "")
        lines.append(f"{nr}{chr(9) if k % 5 == 0 else ' '}{nh}")
        for _ in range(nr):
            m = int(rng.integers(10, 40))
            bases = "".join(rng.choice(list("ACGT"), m))
            qual = "".join(chr(33 + int(q)) for q in rng.integers(10, 41, m))
            lines.append(f"{bases} {qual} {'I' * m} {'I' * m} {'+' * m}" + ("\r" if k % 11 == 0 else ""))
        for _ in range(nh):
            lines.append("".join(rng.choice(list("ACGT"), int(rng.integers(20, 60)))))
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_a_file_of_many_parts_gives_the_python_paths_bytes(tmp_path):
    """Its parts hold 4,000-10,000 results each, which the writer formats
    as tasks of whole records of about 4,096 results (kFormatPairs in
    native/frontends/records/), two or three a part."""
    path = tmp_path / "big.in"
    path.write_text(many_parts_text())
    assert path.stat().st_size > 2 << 20
    nat, py = both_paths(tmp_path, path)
    assert nat == py
    out = tmp_path / "c.out"  # and cut into chunks of about 40 records
    rc, msg = file_call(path, out, chunk_cells=40 * 2 * 25 * 2 * 40)
    assert rc == lib.PYPHMM_OK, msg
    assert out.read_bytes() == py


@pytest.mark.slow
@pytest.mark.parametrize("chunk_cells", [0, 1])
def test_the_first_bad_record_of_many_parts_is_reported(tmp_path, chunk_cells):
    """Bad reads in a middle part and in the last: the run reports the
    first, at its line, in the Python reader's words."""
    lines = many_parts_text().split("\n")
    reads = [k for k, line in enumerate(lines) if len(line.split()) == 5]
    first, last = reads[len(reads) // 2], reads[-1]
    lines[first] = "ACGT III IIII IIII ++++"
    lines[last] = "ACGT IIII IIII IIII"
    path = tmp_path / "bad.in"
    path.write_text("\n".join(lines))
    with pytest.raises(io.RecordError) as want:
        list(io.read_records(str(path)))
    assert f":{first + 1}: read has 4 bases but QUAL has 3" in str(want.value)
    rc, msg = file_call(path, tmp_path / "o", chunk_cells=chunk_cells)
    assert rc == lib.PYPHMM_E_INVALID and msg == str(want.value), msg


@pytest.mark.slow
def test_a_record_of_more_text_than_a_chunk_is_read_line_by_line(tmp_path):
    """A record of over 64 MB of text (deep amplicon regions come close) is
    too large for the parsers that work on a chunk's text in memory: it is
    read line by line, and computed like any other."""
    reads, bases = 660_000, "ACGTACGTACGTACGTACGT"
    haps = [bases, "ACGTACGAACGTACGTACGT"]
    path = tmp_path / "deep.in"
    with open(path, "w") as f:
        f.write(f"1 1\n{GOOD}\nACGT\n{reads} 2\n")
        f.write(f"{bases} {'I' * 20} {'I' * 20} {'I' * 20} {'+' * 20}\n" * reads)
        f.write("\n".join(haps) + "\n1 1\nAC\tII\tII\tII\t++\nAC\n")
    assert path.stat().st_size > 64 << 20
    out = tmp_path / "deep.out"
    rc, msg = file_call(path, out)
    assert rc == lib.PYPHMM_OK, msg

    def one(b, hs):
        q = [40] * len(b)
        read = pyphmm.Read(b, quals=q, ins=q, dels=q, gcp=[10] * len(b))
        return pyphmm.compute_likelihoods([read], hs, backend="cpu")[0]

    with open(out) as f:
        assert f.readline() == "1 1\n" and float(f.readline()) == one("ACGT", ["ACGT"])[0]
        assert f.readline() == f"{reads} 2\n"
        line = " ".join(repr(float(v)) for v in one(bases, haps)) + "\n"
        for k in range(reads):
            got = f.readline()
            if got != line:
                raise AssertionError((k, got, line))
        assert f.readline() == "1 1\n" and float(f.readline()) == one("AC", ["AC"])[0] and f.readline() == ""


@pytest.mark.slow
def test_a_failed_write_stops_the_parser(tmp_path, device_node):
    """Writing a chunk fails (disk full) while the next one parses: the run
    ends with the write error."""
    full = device_node("full", 1, 7)
    regs = generate(regions=200, seed=5)
    path = tmp_path / "w.in"
    io.write_input_records(str(path), regs)
    rc, msg = file_call(path, full, chunk_cells=1)
    assert rc == lib.PYPHMM_E_IO and msg.startswith(f"{full}: write failed: No space left on device"), msg


@pytest.mark.parametrize(
    "text,message",
    [
        ("1 1\n" + GOOD + "\nACGT\n1 1\nA\x01GT IIII IIII IIII ++++\nACGT\n", ":5: control character 0x01 at column 2"),
        ("+1 1\n" + GOOD + "\nACGT\n", ":1: malformed count '+1' in record header (expected digits 0-9)"),
        ("1_0 1\n" + GOOD + "\nACGT\n", ":1: malformed count '1_0' in record header (expected digits 0-9)"),
        ("1 1\n" + GOOD + "\nAC\x7fT\n", ":3: control character 0x7f at column 3: not printable text"),
        ("1 1\n" + GOOD + "\nAC\x0bT\n", ":3: control character 0x0b at column 3: not printable text"),
    ],
)
def test_text_the_python_reader_once_took_alone_is_an_error_in_both(tmp_path, text, message):
    """The native reader once left these to the Python reader, which took
    some of them (a sign or '_' in a count, control bytes as bases or
    separators): both readers now refuse them in the same words."""
    path = tmp_path / "odd.in"
    path.write_bytes(text.encode("ascii"))
    rc, msg = file_call(path, tmp_path / "x")
    assert rc == lib.PYPHMM_E_INVALID and msg.startswith(f"{path}{message}"), msg
    with pytest.raises(io.RecordError) as e:
        list(io.read_records(str(path)))
    assert str(e.value) == msg


def test_missing_file_is_an_error_not_a_crash(tmp_path):
    err, st, rec = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    rc = lib.pyphmm_pairhmm_file(
        str(tmp_path / "nope.in").encode(),
        str(tmp_path / "o").encode(),
        _native.make_options("cpu"),
        0,
        rec,
        st,
        ffi.NULL,
        err,
    )
    assert rc == lib.PYPHMM_E_IO and b"nope.in" in ffi.string(err.message)
    rc = lib.pyphmm_pairhmm_file(ffi.NULL, str(tmp_path / "o").encode(), ffi.NULL, 0, ffi.NULL, ffi.NULL, ffi.NULL, err)
    assert rc == lib.PYPHMM_E_INVALID


def test_native_path_starts_without_numpy(tmp_path):
    """The record-file path runs in native code: the CLI loads no numpy for
    it (on a 16-core host numpy's import alone took ~0.4 s)."""
    code = (
        "import sys; from pyphmm import cli; "
        f"rc = cli.main(['likelihoods', {sample_path()!r}, '-o', {str(tmp_path / 'o')!r}, '--backend', 'cpu']); "
        "print(rc, 'numpy' in sys.modules)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(ROOT), timeout=120)
    assert p.returncode == 0 and p.stdout.split() == ["0", "False"], p.stdout + p.stderr
