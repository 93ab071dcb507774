"""The CLI under memory limits (docs/CLI.md, "Errors and exit status"): memory that runs
out is one `pyphmm: error:` line with status 1, naming the record's line
when a record passed the size estimate but its allocation failed; never a
traceback, whatever fails (numpy's import included)."""

import resource
import subprocess
import sys

import pytest

from devtools.child import child_env, run_cli, run_python
from devtools.testdata import sw_cases
from pyphmm import io
from pyphmm.samples import sample_path


def limited(kib):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))

    return set_limit


def run_limited(args, kib, stdin_path=None, **env):
    with open(stdin_path or "/dev/null", "rb") as f:
        return subprocess.run(
            [sys.executable, "-m", "pyphmm", *args],
            stdin=f,
            capture_output=True,
            text=True,
            env=child_env(**env),
            preexec_fn=limited(kib),
            timeout=300,
        )


@pytest.mark.parametrize("kib", [150_000, 250_000])
@pytest.mark.parametrize("command", ["likelihoods", "align"])
def test_a_small_address_space_is_one_line_or_a_result(tmp_path, command, kib):
    """`ulimit -v 150000` once died with a SyntaxError or ImportError
    traceback while numpy loaded (the Python path and align need it)."""
    if command == "likelihoods":
        src, args = sample_path(), ["likelihoods", "-", "-o", str(tmp_path / "o"), "--backend", "cpu"]
    else:
        src = tmp_path / "pairs.tsv"
        src.write_text("".join(f"{r[0]}\t{r[1]}\n" for r in sw_cases()[:20]))
        args = ["align", "-", "-o", str(tmp_path / "o"), "--backend", "cpu"]
    p = run_limited(args, kib, stdin_path=src)
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    if p.returncode != 0:
        assert p.returncode == 1 and p.stderr.startswith("pyphmm: error: "), p.stderr[-3000:]
        assert len(p.stderr.splitlines()) == 1, p.stderr


@pytest.mark.parametrize(
    "kib",
    [k if k in (168_000, 232_000) else pytest.param(k, marks=pytest.mark.slow) for k in range(160_000, 260_000, 8_000)],
)
def test_a_16_core_pool_under_a_small_address_space_is_one_line_or_a_result(tmp_path, kib):
    """On a 16-core host, 15 workers under `ulimit -v` ended the process
    inside glibc (std::terminate, or "cannot allocate memory for
    thread-local data"); the pool now starts only the workers that fit."""
    args = ["likelihoods", "-", "-o", str(tmp_path / "o"), "--backend", "cpu"]
    p = run_limited(args, kib, stdin_path=sample_path(), PYPHMM_TEST="cores=16")
    assert p.returncode in (0, 1), p.stderr[-3000:]
    if p.returncode == 1:
        assert p.stderr.startswith("pyphmm: error: ") and len(p.stderr.splitlines()) == 1, p.stderr


@pytest.mark.parametrize("native", ["native_reader=1", "native_reader=0"], ids=["native", "python"])
def test_a_record_whose_allocation_fails_names_its_line(tmp_path, native):
    """A record that passes the estimate (its results fit in this machine's
    memory) but not the process's address-space limit: status 1 and the
    line of the first record being computed."""
    n = 20_000
    if n * n * io.RESULT_BYTES_PER_PAIR > io._physical_memory():
        pytest.skip("this machine's memory is below the record's estimate: it is refused before")
    path = tmp_path / "big.in"
    with open(path, "w") as f:
        f.write(f"{n} {n}\n" + "ACGTACGTAC IIIIIIIIII IIIIIIIIII IIIIIIIIII ++++++++++\n" * n + "ACGTACGTAC\n" * n)
    out = tmp_path / "big.out"
    args = ["likelihoods", str(path), "-o", str(out), "--backend", "cpu", "--threads", "1"]
    p = run_limited(args, 2_000_000, PYPHMM_DEV=native)  # 3.2 GB of results do not fit in 2 GB
    assert p.returncode == 1, p.stderr[-3000:]
    assert p.stderr.startswith(f"pyphmm: error: {path}:1: out of memory computing 1 record(s) from this line on")
    assert len(p.stderr.splitlines()) == 1 and not out.exists()


# A CPU worker thread whose allocation fails (PYPHMM_TEST=pool_throw=1: every
# pool worker throws std::bad_alloc on the items it takes) once ended the
# process in std::terminate on a 16-core host under `ulimit -v`: the
# failure reaches the caller as out-of-memory instead.
POOL_THROW_API = """
import pyphmm
from pyphmm import io
from pyphmm.samples import sample_path
try:
    for reads, haps in io.read_records(sample_path()):
        pyphmm.compute_likelihoods(reads, haps, backend="cpu", threads=4)
except MemoryError as e:
    print("MemoryError", e)
"""


@pytest.mark.parametrize("native", ["native_reader=1", "native_reader=0"], ids=["native", "python"])
def test_a_worker_thread_out_of_memory_is_an_error_not_an_abort(tmp_path, native):
    out = tmp_path / "o"
    args = ["likelihoods", str(sample_path()), "-o", str(out), "--backend", "cpu", "--threads", "4"]
    p = run_cli(*args, env={"PYPHMM_TEST": "pool_throw=1", "PYPHMM_DEV": native})
    assert p.returncode == 1, p.stderr[-3000:]
    assert p.stderr.startswith(f"pyphmm: error: {sample_path()}:1: out of memory computing")
    assert len(p.stderr.splitlines()) == 1 and not out.exists()


def test_a_worker_thread_out_of_memory_raises_memoryerror():
    p = run_python(POOL_THROW_API, env={"PYPHMM_TEST": "pool_throw=1"})
    assert p.returncode == 0 and p.stdout.startswith("MemoryError"), p.stderr[-3000:]
