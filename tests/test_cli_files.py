"""The CLI's files: standard input, output safety (unique temporary files,
nothing left behind on any error, Ctrl-C or SIGTERM), and errors that name
the file and line, on both the native and the Python record path."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from pyphmm._pyphmm import ffi, lib

import pyphmm
from devtools.child import child_env, default_signals, run_cli
from devtools.testdata import sw_cases
from pyphmm import _native, io
from pyphmm.cli.output import OutputFile
from pyphmm.samples import sample_path

PATHS = pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
# Both paths, the Python one slow (the quick tier runs the native one)
QUICK_NATIVE_PATH = pytest.mark.parametrize(
    "native", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["native", "python"]
)
GOOD = "ACGT IIII IIII IIII ++++"


def cli(*args, native=True, **kw):
    return run_cli(*args, env={"PYPHMM_DEV": "native_reader=1" if native else "native_reader=0"}, **kw)


@pytest.fixture(scope="module")
def sample_results():
    return "".join(io.format_record(r) for r in pyphmm.compute_regions(io.read_records(sample_path()), backend="cpu"))


def listing(d):
    return sorted(os.listdir(d))


# ---- standard input and output ----------------------------------------------


def test_likelihoods_reads_stdin(tmp_path, sample_results):
    with open(sample_path(), "rb") as f:
        p = run_cli("likelihoods", "-", "-o", str(tmp_path / "o"), "--backend", "cpu", stdin=f)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o").read_text() == sample_results
    with open(sample_path(), "rb") as f:
        p = run_cli("likelihoods", "-", "-o", "-", "--backend", "cpu", stdin=f)
    assert p.returncode == 0 and p.stdout == sample_results
    assert "or - for stdin" in run_cli("likelihoods", "--help").stdout


def test_align_reads_stdin():
    rows = [r for r in sw_cases() if r[2] == (3, -1, -4, -3) and r[3] == "SOFTCLIP"]
    p = run_cli("align", "-", "-o", "-", input="".join(f"{r[0]}\t{r[1]}\n" for r in rows))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "".join(f"{r[4][0]}\t{r[4][1]}\n" for r in rows)


@pytest.mark.parametrize("how", ["file", pytest.param("stdin", marks=pytest.mark.slow)])
def test_align_skips_blank_lines_and_takes_empty_input(tmp_path, how):
    """Blank lines (spaces, tabs, CR LF) are skipped as between records of a
    record file; an empty input is an empty result (once "cannot write")."""
    rows = [r for r in sw_cases() if r[2] == (3, -1, -4, -3) and r[3] == "SOFTCLIP"]
    text = "\n" + "".join(f"{r[0]}\t{r[1]}\n \t\r\n" for r in rows) + "\n\n"
    want = "".join(f"{r[4][0]}\t{r[4][1]}\n" for r in rows)
    for content, expected in ((text, want), ("", ""), ("\n \n", "")):
        src = tmp_path / "pairs.tsv"
        src.write_text(content)
        out = tmp_path / "o.out"
        if how == "file":
            p = run_cli("align", str(src), "-o", str(out))
        else:
            p = run_cli("align", "-", "-o", str(out), input=content)
        assert p.returncode == 0, p.stderr
        assert out.read_text() == expected and listing(tmp_path) == ["o.out", "pairs.tsv"]


@QUICK_NATIVE_PATH
def test_likelihoods_takes_empty_input(tmp_path, native):
    """An empty or blank input is an empty result on every reader (the
    Python reader once said "x.out: cannot write")."""
    for content in ("", "\n\n \t\n"):
        src = tmp_path / "e.in"
        src.write_text(content)
        out = tmp_path / "x.out"
        for args, stdin in (((str(src),), None), (("-",), content)):
            p = run_cli(
                "likelihoods",
                *args,
                "-o",
                str(out),
                env={"PYPHMM_DEV": "native_reader=1" if native else "native_reader=0"},
                input=stdin,
            )
            assert p.returncode == 0 and out.read_bytes() == b"", p.stderr
            assert listing(tmp_path) == ["e.in", "x.out"]


# ---- output files -------------------------------------------------------------


def test_temporary_files_are_unique_and_private(tmp_path):
    a, b = OutputFile(str(tmp_path / "o")), OutputFile(str(tmp_path / "o"))
    assert a.path != b.path and os.path.dirname(os.path.dirname(a.path)) == str(tmp_path)
    a.write("a\n")
    b.write("b\n")
    b.commit()
    a.discard()
    assert listing(tmp_path) == ["o"] and (tmp_path / "o").read_text() == "b\n"


@QUICK_NATIVE_PATH
def test_concurrent_runs_to_one_output(tmp_path, native, sample_results):
    out = str(tmp_path / "same.out")
    env = child_env(PYPHMM_DEV="native_reader=1" if native else "native_reader=0")
    cmd = [
        sys.executable,
        "-m",
        "pyphmm",
        "likelihoods",
        sample_path(),
        "-o",
        out,
        "--backend",
        "cpu",
        "--threads",
        "1",
    ]
    procs = [subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    assert listing(tmp_path) == ["same.out"]
    assert open(out).read() == sample_results


@QUICK_NATIVE_PATH
def test_output_equal_to_input_is_refused(tmp_path, native):
    path = tmp_path / "in.txt"
    path.write_text(open(sample_path()).read())
    before = path.read_bytes()
    for out in (str(path), os.path.join(str(tmp_path), ".", "in.txt")):
        p = cli("likelihoods", str(path), "-o", out, native=native)
        assert p.returncode == 2 and "the output is the input file" in p.stderr, p.stderr
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("ACGT\tAC\n")
    p = run_cli("align", str(pairs), "-o", str(pairs))
    assert p.returncode == 2 and "the output is the input file" in p.stderr
    assert path.read_bytes() == before and pairs.read_text() == "ACGT\tAC\n"
    assert listing(tmp_path) == ["in.txt", "pairs.tsv"]


@pytest.mark.parametrize("command", ["likelihoods", "align"])
def test_directory_or_empty_output_leaves_nothing(tmp_path, command):
    src = sample_path() if command == "likelihoods" else str(tmp_path / "p.tsv")
    (tmp_path / "p.tsv").write_text("ACGT\tAC\n")
    (tmp_path / "adir").mkdir()
    p = run_cli(command, src, "-o", str(tmp_path / "adir"), cwd=str(tmp_path))
    assert p.returncode == 2 and "is a directory" in p.stderr, p.stderr
    p = run_cli(command, src, "--output", "", cwd=str(tmp_path))
    assert p.returncode == 2 and "--output must not be empty" in p.stderr, p.stderr
    assert listing(tmp_path) == ["adir", "p.tsv"] and listing(tmp_path / "adir") == []


@PATHS
def test_missing_output_directory_names_the_output(tmp_path, native):
    out = str(tmp_path / "nope" / "o.out")
    p = cli("likelihoods", sample_path(), "-o", out, native=native)
    assert p.returncode == 2 and p.stderr.startswith(f"pyphmm: error: {out}: cannot create: directory"), p.stderr
    assert "partial" not in p.stderr and listing(tmp_path) == []


# ---- signals ------------------------------------------------------------------


def slow_input(tmp_path, records=12):
    """Records of 300 reads x 20 haplotypes of 150 x 500 bp (450 M cells
    each): seconds of work on one thread."""
    rng = np.random.default_rng(1)
    hap = "".join(rng.choice(list("ACGT"), 500))
    read = f"{hap[100:250]} {'I' * 150} {'I' * 150} {'I' * 150} {'+' * 150}\n"
    rec = "300 20\n" + read * 300 + (hap + "\n") * 20
    path = tmp_path / "slow.in"
    path.write_text(rec * records)
    return path


@QUICK_NATIVE_PATH
@pytest.mark.parametrize(
    "sig",
    [
        signal.SIGTERM,
        signal.SIGINT,
        *(pytest.param(s, marks=pytest.mark.slow) for s in (signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)),
    ],
    ids=["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1"],
)
def test_signals_leave_no_file(tmp_path, native, sig):
    """Every terminating signal (SIGHUP: a dropped SSH connection) removes the
    partial output and exits 128+N."""
    src = slow_input(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = child_env(PYPHMM_DEV="native_reader=1" if native else "native_reader=0")
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyphmm",
            "likelihoods",
            str(src),
            "-o",
            str(out_dir / "r.out"),
            "--backend",
            "cpu",
            "--threads",
            "1",
            "--double",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
    deadline = time.time() + 60
    while not os.listdir(out_dir) and time.time() < deadline and p.poll() is None:
        time.sleep(0.02)  # until the temporary file exists: the run is writing
    time.sleep(0.3)
    assert p.poll() is None, "the run ended before the signal: make the input larger"
    p.send_signal(sig)
    assert p.wait(timeout=60) == 128 + sig, p.stderr.read()
    assert listing(out_dir) == []


# ---- errors name the file and line ---------------------------------------------


def native_message(path):
    err, st, rec = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *"), ffi.new("int64_t *")
    out = path.parent / "n.out"
    rc = lib.pyphmm_pairhmm_file(
        str(path).encode(), str(out).encode(), _native.make_options("cpu"), 0, rec, st, ffi.NULL, err
    )
    out.unlink()
    return rc, ffi.string(err.message).decode()


def python_message(path):
    with pytest.raises(io.RecordError) as e:
        list(io.read_records(str(path)))
    return str(e.value)


MALFORMED = {
    "bom": (b"\xef\xbb\xbf1 1\n" + GOOD.encode() + b"\nACGT\n", ":1: UTF-8 byte-order mark: not ASCII text"),
    "non-ascii late": (
        ("1 1\n" + GOOD + "\nACGT\n").encode() * 3000 + b"1 1\nAC\xc3\x89T IIII IIII IIII ++++\nACGT\n",
        ":9002: non-ASCII byte at column 3: not ASCII text",
    ),
    "binary": (b"1 1\n" + GOOD.encode() + b"\nAC\x00T\n", ":3: NUL byte at column 3: not ASCII text"),
    "header": (b"1 1 1\n", ":1: malformed record header '1 1 1' (expected two counts 'R H')"),
    "count": (b"1 x\n", ":1: malformed count 'x' in record header (expected digits 0-9)"),
    "fields": (b"1 1\nACGT IIII IIII IIII\nACGT\n", ":2: expected 5 fields (READ QUAL INS DEL GCP), found 4"),
    "lengths": (b"1 1\nACGT IIII III IIII ++++\nACGT\n", ":2: read has 4 bases but INS has 3 characters"),
    "haplotype": (b"1 1\n" + GOOD.encode() + b"\nAC GT\n", ":3: expected one haplotype, found 2 fields"),
    "truncated": (
        b"2 1\n" + GOOD.encode() + b"\n",
        ": truncated record: expected read 2 of 2 at line 3, found end of file",
    ),
    "huge": (
        b"400000 400000\n" + GOOD.encode() + b"\n",
        ":1: a record of 400000 reads x 400000 haplotypes needs "
        "about 5120.0 GB for its results, more than this machine's",
    ),
}


@pytest.mark.parametrize(
    "content,message",
    # (the quick tier takes three; tests/test_record_language.py's corpus
    # covers the others' kinds; "non-ascii late" computes 3,000 records four
    # times before the error)
    [
        pytest.param(*v, id=k, marks=[] if k in ("bom", "header", "truncated") else pytest.mark.slow)
        for k, v in MALFORMED.items()
    ],
)
def test_both_readers_report_malformed_files_alike(tmp_path, content, message):
    path = tmp_path / "bad.in"
    path.write_bytes(content)
    rc, native = native_message(path)
    assert rc == lib.PYPHMM_E_INVALID, native
    assert native == python_message(path)
    assert native.startswith(f"{path}{message}"), native
    for use_native in (True, False):
        p = cli("likelihoods", str(path), "-o", str(tmp_path / "o"), native=use_native)
        assert p.returncode == 2 and p.stderr == f"pyphmm: error: {native}\n", p.stderr
    assert listing(tmp_path) == ["bad.in"]


def test_the_issue_s_huge_record(tmp_path):
    """40,000 reads x 40,000 haplotypes in a 480 KB file: refused before
    anything is allocated where its results cannot fit in memory."""
    if 40_000 * 40_000 * io.RESULT_BYTES_PER_PAIR <= io._physical_memory():
        pytest.skip("this machine has memory for that record's results")
    path = tmp_path / "huge.in"
    path.write_text(
        "40000 40000\n" + "ACGTACGTAC IIIIIIIIII IIIIIIIIII IIIIIIIIII ++++++++++\n" * 40_000 + "ACGTACGTAC\n" * 40_000
    )
    for native in (True, False):
        p = cli("likelihoods", str(path), "-o", str(tmp_path / "o"), native=native)
        assert p.returncode == 2 and p.stderr.startswith(f"pyphmm: error: {path}:1: a record of 40000 reads"), p.stderr
        assert "Traceback" not in p.stderr
    assert listing(tmp_path) == ["huge.in"]


def test_a_file_path_in_and_out_never_runs_the_python_reader(tmp_path):
    """The native reader reports every malformed file itself: a bad record
    near the end, or text the Python reader once took alone (a sign in a
    count), never goes through the Python path."""
    path = tmp_path / "late.in"
    path.write_text(("1 1\n" + GOOD + "\nACGT\n") * 1000 + "1 1\nACGT IIII\nACGT\n")
    odd = tmp_path / "odd.in"
    odd.write_text("+1 1\n" + GOOD + "\nACGT\n")
    code = (
        "import sys; from pyphmm.cli import likelihoods as L, main\n"
        "def python_path(*a): print('PYTHON PATH'); raise ValueError('python path')\n"
        "L._python_path = python_path\n"
        "print('RC', main(['likelihoods', sys.argv[1], '-o', sys.argv[2], '--backend', 'cpu']))"
    )

    def likelihoods(src):
        return subprocess.run(
            [sys.executable, "-c", code, str(src), str(tmp_path / "o")],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
        )

    p = likelihoods(path)
    assert "RC 2" in p.stdout and "PYTHON PATH" not in p.stdout, p.stdout + p.stderr
    assert f"{path}:3002: expected 5 fields" in p.stderr
    p = likelihoods(odd)
    assert "RC 2" in p.stdout and "PYTHON PATH" not in p.stdout, p.stdout + p.stderr
    assert f"{odd}:1: malformed count '+1'" in p.stderr


@pytest.mark.slow
def test_cr_only_file_error_quotes_little(tmp_path):
    path = tmp_path / "cr.in"
    path.write_bytes(("1 1\r" + GOOD + "\rACGT\r").encode() * 100_000)  # 3.5 MB, one "line"
    for native in (True, False):
        p = cli("likelihoods", str(path), "-o", str(tmp_path / "o"), native=native)
        assert p.returncode == 2 and p.stderr == (
            f"pyphmm: error: {path}:1: carriage return at column 4: a line ends with LF or CR LF\n"
        ), p.stderr[:300]
    assert listing(tmp_path) == ["cr.in"]


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\xef\xbb\xbfACGT\tAC\n", ":1: UTF-8 byte-order mark: not ASCII text"),
        (b"ACGT\tAC\n" * 5000 + b"ACGT\tA\xff\n", ":5001: non-ASCII byte at column 7: not ASCII text"),
        (b"ACGT\tAC\nAC\x00GT\tAC\n", ":2: NUL byte at column 3: not ASCII text"),
        (b"ACGT\tAC\tX" * 1000 + b"\n", ":1: expected REF<TAB>ALT, got 2001 field(s) in 'ACGT\\tAC\\tXACGT"),
    ],
)
def test_align_errors_name_the_line(tmp_path, content, message):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(content)
    p = run_cli("align", str(path), "-o", str(tmp_path / "o"))
    assert p.returncode == 2 and p.stderr.startswith(f"pyphmm: error: {path}{message}"), p.stderr[:500]
    assert len(p.stderr) < 400
    assert listing(tmp_path) == ["pairs.tsv"]
