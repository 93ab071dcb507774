"""One record language (docs/RECORD_FORMAT.md) for every reader: the native
reader (pyphmm_pairhmm_file), the Python reader (pyphmm.io), and the CLI
on each path (a file through native code, a file through Python, standard
input) take and refuse the same inputs, with the same message after the
file's name and the same exit status. Lines are capped and checked as their
bytes arrive: an endless stream fails at once."""

import os
import subprocess
import sys
import threading

import pytest
from pyphmm._pyphmm import ffi, lib

from devtools.child import child_env
from pyphmm import _native, io

GOOD = b"ACGT IIII IIII IIII ++++"
MiB = 1 << 20

# name: (file bytes, the message after the file's name, or None when valid)
CORPUS = {
    # valid
    "empty": (b"", None),
    "blank lines only": (b"\n\n \t\n\r\n", None),
    "blank lines around records": (b"\n1 1\n" + GOOD + b"\nACGT\n\n\n \n", None),
    "crlf and tabs": (b"1\t1\r\nACGT\tIIII IIII\tIIII ++++\r\nACGT\r\n", None),
    "no newline at the end": (b"1 1\n" + GOOD + b"\nACGT", None),
    "leading zeros": (b"01 001\n" + GOOD + b"\nACGT\n", None),
    "empty records": (b"0 2\nACGT\nAC\n1 0\n" + GOOD + b"\n0 0\n", None),
    # bytes that are not printable ASCII text
    "bom": (b"\xef\xbb\xbf1 1\n" + GOOD + b"\nACGT\n", ":1: UTF-8 byte-order mark: not ASCII text"),
    "nul": (b"1 1\n" + GOOD + b"\nAC\x00T\n", ":3: NUL byte at column 3: not ASCII text"),
    "non-ascii": (b"1 1\nAC\xc3\x89T IIII IIII IIII ++++\nACGT\n", ":2: non-ASCII byte at column 3: not ASCII text"),
    "control byte as a base": (b"1 1\nA\x01GT IIII IIII IIII ++++\nACGT\n", ":2: control character 0x01 at column 2"),
    "vertical tab as a separator": (b"1\x0b1\n" + GOOD + b"\nACGT\n", ":1: control character 0x0b at column 2"),
    "form feed line": (b"\x0c\n1 1\n" + GOOD + b"\nACGT\n", ":1: control character 0x0c at column 1"),
    "del": (b"1 1\n" + GOOD + b"\nAC\x7fT\n", ":3: control character 0x7f at column 3: not printable text"),
    "carriage return inside a line": (b"1 1\r" + GOOD + b"\n", ":1: carriage return at column 4: a line ends with LF"),
    "two carriage returns": (b"1 1\r\r\n" + GOOD + b"\nACGT\n", ":1: carriage return at column 4"),
    # counts
    "plus sign": (b"+1 1\n" + GOOD + b"\nACGT\n", ":1: malformed count '+1' in record header (expected digits 0-9)"),
    "underscore": (b"1_0 1\n" + GOOD + b"\nACGT\n", ":1: malformed count '1_0' in record header"),
    "negative": (b"1 -1\n" + GOOD + b"\n", ":1: negative count '-1' in record header"),
    "minus zero": (b"-0 1\nACGT\n", ":1: negative count '-0' in record header"),
    "lone minus": (b"- 1\nACGT\n", ":1: malformed count '-' in record header"),
    "letters": (b"1 x\n" + GOOD + b"\nACGT\n", ":1: malformed count 'x' in record header"),
    "too large": (b"2147483648 0\n", ":1: count '2147483648' in record header is too large (at most 2147483647)"),
    "far too large": (
        b"1" * 5000 + b" 0\n",
        ":1: count '111111111111111111111111111111111111111111111111111111111111'...",
    ),
    "largest count": (b"2147483647 0\n" + GOOD + b"\n", ": truncated record: expected read 2 of 2147483647 at line 3"),
    "three counts": (b"1 1 1\n", ":1: malformed record header '1 1 1' (expected two counts 'R H')"),
    "one count": (b"1\n", ":1: malformed record header '1' (expected two counts 'R H')"),
    # records
    "truncated": (b"2 1\n" + GOOD + b"\n", ": truncated record: expected read 2 of 2 at line 3, found end of file"),
    "missing haplotype": (b"1 2\n" + GOOD + b"\nACGT\n", ": truncated record: expected haplotype 2 of 2 at line 4"),
    "four fields": (b"1 1\nACGT IIII IIII IIII\nACGT\n", ":2: expected 5 fields (READ QUAL INS DEL GCP), found 4"),
    "blank read line": (b"1 1\n\nACGT\n", ":2: expected 5 fields (READ QUAL INS DEL GCP), found 0"),
    "unequal lengths": (b"1 1\nACGT IIII III IIII ++++\nACGT\n", ":2: read has 4 bases but INS has 3 characters"),
    "two haplotypes on a line": (b"1 1\n" + GOOD + b"\nAC GT\n", ":3: expected one haplotype, found 2 fields"),
    "blank haplotype line": (b"1 1\n" + GOOD + b"\n \n", ":3: expected one haplotype, found 0 fields"),
    "results beyond memory": (b"400000 400000\n" + GOOD + b"\n", ":1: a record of 400000 reads x 400000 haplotypes"),
    # line limits, and bytes checked as they arrive
    "header line over 1 MiB": (b"1" * (MiB + 1), f":1: line longer than {MiB} bytes, the limit of a header line"),
    "blank line over 1 MiB": (
        b" " * (MiB + 1) + b"\n",
        f":1: line longer than {MiB} bytes, the limit of a header line",
    ),
    "header line of 1 MiB": (b" " * (MiB - 4) + b"0 0\n", None),
    "a line of nul bytes": (b"\0" * (3 * MiB), ":1: NUL byte at column 1: not ASCII text"),
    "nul after a long start": (b"A" * (MiB - 1) + b"\0" * MiB, f":1: NUL byte at column {MiB}: not ASCII text"),
    "nul past the limit": (b"A" * (MiB + 1) + b"\0", f":1: line longer than {MiB} bytes, the limit of a header line"),
}


def native_reader(path, tmp_path):
    err, st, rec = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    out = tmp_path / "raw.out"
    rc = lib.pyphmm_pairhmm_file(
        str(path).encode(), str(out).encode(), _native.make_options("cpu"), 0, rec, st, ffi.NULL, err
    )
    assert rc in (lib.PYPHMM_OK, lib.PYPHMM_E_INVALID), ffi.string(err.message)
    return None if rc == lib.PYPHMM_OK else ffi.string(err.message).decode()


def python_reader(path):
    try:
        list(io.read_records(str(path)))
    except io.RecordError as e:
        return str(e)
    return None


def cli(path, how, tmp_path):
    out = tmp_path / f"{how}.out"
    args = ["likelihoods", "-" if how == "stdin" else str(path), "-o", str(out), "--backend", "cpu"]
    with open(path, "rb") as f:
        p = subprocess.run(
            [sys.executable, "-m", "pyphmm", *args],
            stdin=f,
            capture_output=True,
            env=child_env(PYPHMM_DEV="native_reader=0" if how == "python" else "native_reader=1"),
            timeout=300,
        )
    return p, (out.read_bytes() if out.exists() else None)


# The quick tier takes five inputs through the five readers (three CLI runs
# each): an empty file, line endings, a bad byte, a bad count, a cut record;
# the rest of the corpus is slow.
QUICK_CORPUS = (
    "empty",
    "crlf and tabs",
    "control byte as a base",
    "plus sign",
    "truncated",
)


@pytest.mark.parametrize(
    "content,message",
    [pytest.param(*v, id=k, marks=() if k in QUICK_CORPUS else pytest.mark.slow) for k, v in CORPUS.items()],
)
def test_every_reader_takes_and_refuses_the_same_inputs(tmp_path, content, message):
    path = tmp_path / "f.in"
    path.write_bytes(content)
    native, python = native_reader(path, tmp_path), python_reader(path)
    assert native == python
    if message is None:
        assert native is None
    else:
        assert native is not None and native.startswith(f"{path}{message}"), native
    outputs = set()
    for how in ("native", "python", "stdin"):
        p, out = cli(path, how, tmp_path)
        name = "<stdin>" if how == "stdin" else str(path)
        if message is None:
            assert p.returncode == 0, (how, p.stderr)
            outputs.add(out)
        else:
            want = f"pyphmm: error: {name}{native[len(str(path)) :]}\n"
            assert (p.returncode, p.stderr.decode()) == (2, want), how
            assert out is None
    assert len(outputs) <= 1  # every valid input gives the same bytes on every path


def endless(fd, piece: bytes):
    """Writes piece to fd until its reader goes."""
    try:
        with os.fdopen(fd, "wb") as f:
            while True:
                f.write(piece)
    except OSError:
        pass


@pytest.mark.parametrize(
    "piece,message",
    [(b"\0" * 65536, ":1: NUL byte at column 1"), (b"A" * 65536, f":1: line longer than {MiB} bytes")],
    ids=["nul", "no-newline"],
)
@pytest.mark.parametrize("how", ["native", "python", "stdin"])
def test_an_endless_stream_fails_at_its_first_bytes(tmp_path, how, piece, message):
    """`pyphmm likelihoods /dev/zero -o x` once read forever: here a FIFO (or
    standard input) that never ends."""
    fifo = tmp_path / "endless"
    if how == "stdin":
        r, w = os.pipe()
        stdin, src = r, "-"
    else:
        os.mkfifo(fifo)
        stdin, src = subprocess.DEVNULL, str(fifo)
    p = subprocess.Popen(
        [sys.executable, "-m", "pyphmm", "likelihoods", src, "-o", str(tmp_path / "o"), "--backend", "cpu"],
        stdin=stdin,
        stderr=subprocess.PIPE,
        env=child_env(PYPHMM_DEV="native_reader=0" if how == "python" else "native_reader=1"),
    )
    if how == "stdin":
        os.close(r)
    else:
        w = os.open(fifo, os.O_WRONLY)
    feeder = threading.Thread(target=endless, args=(w, piece), daemon=True)
    feeder.start()
    try:
        assert p.wait(timeout=120) == 2
    finally:
        p.kill()
    name = "<stdin>" if how == "stdin" else str(fifo)
    assert p.stderr.read().decode().startswith(f"pyphmm: error: {name}{message}")
    feeder.join(30)
    assert sorted(os.listdir(tmp_path)) == ([] if how == "stdin" else ["endless"])


@pytest.mark.slow
def test_a_record_line_over_64_mib(tmp_path):
    """A read line longer than the 64 MiB limit: both readers refuse it in
    the same words (and one of exactly 64 MiB is read)."""
    limit = 64 * MiB
    path = tmp_path / "long.in"
    with open(path, "wb") as f:
        f.write(b"1 1\n" + b"A" * (limit + 1) + b"\nACGT\n")
    native, python = native_reader(path, tmp_path), python_reader(path)
    assert native == python == f"{path}:2: line longer than {limit} bytes, the limit of a read line"
    m = (limit - 4) // 5
    with open(path, "wb") as f:
        f.write(b"1 1\n" + b" ".join([b"A" * m] + [b"I" * m] * 4) + b"\nACGT\n")
    assert python_reader(path) is None
