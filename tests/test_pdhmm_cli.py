"""PD record files and ``pyphmm pd-likelihoods``, run as a user would
(``python -m pyphmm`` in a subprocess): GKL's stored results come out, and
the error and file-safety contract of ``likelihoods`` holds (exit 2, one
``pyphmm: error:`` line naming the file and line, no output file left)."""

import gzip
import io as stdio
import os
import subprocess
import sys

import numpy as np
import pytest

import pyphmm
from devtools.child import child_env
from devtools.pd_testdata import data_path, stored_regions
from pyphmm import io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", *args], capture_output=True, text=True, env=child_env(ROOT), timeout=300, **kw
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The stored GATK-shaped regions as a plain PD record file, and GKL's results."""
    path = tmp_path_factory.mktemp("pd") / "gatk.pd"
    with gzip.open(data_path("pdhmm-gatk-regions.pd.gz"), "rb") as f:
        path.write_bytes(f.read())
    regions, gkl = stored_regions("gatk")
    return str(path), regions, gkl


def test_record_round_trip(stored):
    path, regions, _ = stored
    again = list(io.read_pd_records(path))
    text = stdio.StringIO()
    io.write_pd_input_records(text, again)
    assert text.getvalue() == open(path).read()
    for (r1, h1), (r2, h2) in zip(again, regions):
        for f in ("bases", "quals", "ins", "dels", "gcp", "offsets"):
            assert np.array_equal(getattr(r1, f), getattr(r2, f))
        for f in ("bases", "pd", "offsets"):
            assert np.array_equal(getattr(h1, f), getattr(h2, f))
    assert "ACGT" in text.getvalue() and any(" 00" in line for line in text.getvalue().splitlines())


def test_pd_likelihoods_gives_gkl_s_values(stored, tmp_path):
    path, regions, gkl = stored
    out = tmp_path / "gatk.out"
    p = run("pd-likelihoods", path, "-o", str(out), "--backend", "cpu", "--threads", "2")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and "GCUPS" in p.stderr and f"{len(regions)} records" in p.stderr
    got = list(io.read_results(str(out)))
    assert len(got) == len(gkl)
    worst = max(float(np.abs(a - b).max()) for a, b in zip(got, gkl))
    assert worst <= 1e-5
    print(f"pd-likelihoods: max |diff| to GKL {worst:.3g}")
    assert os.listdir(tmp_path) == ["gatk.out"]


def test_stdin_and_stdout(tmp_path):
    text = (
        "2 2\nACGT IIII IIII IIII ++++\nNCGA 5555 IIII IIII ++++\nACGTA 0000010600\nAGGT 00000000\n0 1\nACGT 00000000\n"
    )
    p = run("pd-likelihoods", "-", "-o", "-", "--backend", "cpu", input=text)
    assert p.returncode == 0, p.stderr
    regions = list(io.read_pd_records(stdio.StringIO(text)))
    want = pyphmm.compute_pd_regions(regions, backend="cpu")
    assert p.stdout == "".join(io.format_record(r) for r in want)
    assert p.stdout.endswith("0 1\n")


@pytest.mark.parametrize(
    "content,words",
    [
        ("1 1\nACGT IIII IIII IIII ++++\nACGT\n", "in.pd:6: expected a haplotype and its PD bytes (HAP PD), found 1"),
        ("1 1\nACGT IIII IIII IIII ++++\nACGT 000000\n", "in.pd:6: haplotype has 4 bases but PD has 6 characters"),
        ("1 1\nACGT IIII IIII IIII ++++\nACGT 000000zz\n", "in.pd:6: PD '000000zz' is not hex digits"),
        ("1 1\nACGT III IIII IIII ++++\nACGT 00000000\n", "in.pd:5: read has 4 bases but QUAL has 3 characters"),
        ("1 2\nACGT IIII IIII IIII ++++\nACGT 00000000\n", "in.pd: truncated record: expected haplotype 2 of 2"),
        # valid text GKL refuses: a read base other than ACGTN at a SNP position
        ("1 1\nACXT IIII IIII IIII ++++\nACGT 00000900\n", "in.pd:4: read 0, position 2: base 0x58"),
    ],
)
def test_errors_exit_2_without_output(tmp_path, content, words):
    bad = tmp_path / "in.pd"
    # a good record first: nothing of it may be left behind either
    bad.write_text("1 1\nACGT IIII IIII IIII ++++\nACGT 00000000\n" + content)
    out = tmp_path / "out.txt"
    p = run("pd-likelihoods", str(bad), "-o", str(out))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pyphmm: error: {tmp_path}/") and words in lines[0], lines
    assert "Traceback" not in p.stderr
    assert os.listdir(tmp_path) == ["in.pd"]


def test_file_safety_and_arguments(stored, tmp_path):
    path, _, _ = stored
    p = run("pd-likelihoods", path, "-o", path)
    assert p.returncode == 2 and "the output is the input file" in p.stderr
    p = run("pd-likelihoods", str(tmp_path / "missing.pd"), "-o", str(tmp_path / "o"))
    assert p.returncode == 2 and "missing.pd" in p.stderr and not (tmp_path / "o").exists()
    p = run("pd-likelihoods", path, "-o", str(tmp_path / "no" / "dir" / "o"))
    assert p.returncode == 2 and "does not exist" in p.stderr
    for args in (("--threads", "0"), ("--backend", "gpu"), ("--double",)):
        p = run("pd-likelihoods", path, "-o", "-", *args)
        assert p.returncode == 2 and p.stdout == "", args
    p = run("pd-likelihoods", path, "-o", str(tmp_path / "c.out"), "--backend", "cuda")
    if pyphmm.info()["cuda_usable"]:
        assert p.returncode == 0 and os.listdir(tmp_path) == ["c.out"], p.stderr
    else:  # refused, and no output file
        assert p.returncode == 2 and "CUDA backend requested but unavailable" in p.stderr, p.stderr
        assert os.listdir(tmp_path) == []
    assert "pd-likelihoods" in run("--help").stdout


def test_a_bad_setting_stops_the_run(stored, tmp_path):
    path, _, _ = stored
    env = child_env(ROOT, PYPHMM_DEV="cpu_kernel=avx2,no_such_key=1")
    p = subprocess.run(
        [sys.executable, "-m", "pyphmm", "pd-likelihoods", path, "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "no_such_key" in p.stderr and os.listdir(tmp_path) == []
