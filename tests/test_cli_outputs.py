"""Every kind of output, for every command that writes a file (docs/CLI.md,
"Outputs"): a regular file (replaced atomically, its mode kept), a link (its
target written, the link kept), a name of a descriptor (/dev/stdout,
/proc/self/fd/N), a FIFO, a device (written, never replaced), "-"; and the
errors: a directory, an empty name, a missing directory, a write error
(status 1, nothing left behind). Devices are made in a temporary directory:
no test writes to the real /dev."""

import os
import resource
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass, field

import pytest

import pyphmm
from devtools.child import child_env
from devtools.testdata import sw_cases
from pyphmm import _native, io
from pyphmm.gatk import jar_path
from pyphmm.samples import sample_path


@dataclass
class Command:
    args: list  # "{out}" stands for the output
    env: dict = field(default_factory=dict)
    stdin: str | None = None
    prints_path: bool = False  # prints the output's path on stdout (gatk-jar)


def _pairs_file(tmp_path):
    rows = [r for r in sw_cases() if r[2] == (3, -1, -4, -3) and r[3] == "SOFTCLIP"][:50]
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{r[0]}\t{r[1]}\n" for r in rows))
    return path, "".join(f"{r[4][0]}\t{r[4][1]}\n" for r in rows).encode()


@pytest.fixture(scope="module")
def sample_results():
    regions = io.read_records(sample_path())
    return "".join(io.format_record(r) for r in pyphmm.compute_regions(regions, backend="cpu")).encode()


COMMANDS = ["likelihoods-native", "likelihoods-python", "likelihoods-stdin", "align", "gatk-jar"]
# (every command writes through the same output code: the quick tier takes
# the native reader's)
SLOW_COMMANDS = ("likelihoods-python", "likelihoods-stdin", "align", "gatk-jar")


@pytest.fixture(params=[pytest.param(c, marks=pytest.mark.slow) if c in SLOW_COMMANDS else c for c in COMMANDS])
def command(request, tmp_path_factory, sample_results):
    """(Command, the bytes its output must hold)."""
    name = request.param
    cpu = ["--backend", "cpu"]
    if name == "likelihoods-native":
        return Command(
            ["likelihoods", sample_path(), "-o", "{out}", *cpu], {"PYPHMM_DEV": "native_reader=1"}
        ), sample_results
    if name == "likelihoods-python":
        return Command(
            ["likelihoods", sample_path(), "-o", "{out}", *cpu], {"PYPHMM_DEV": "native_reader=0"}
        ), sample_results
    if name == "likelihoods-stdin":
        return Command(["likelihoods", "-", "-o", "{out}", *cpu], stdin=sample_path()), sample_results
    if name == "align":
        path, want = _pairs_file(tmp_path_factory.mktemp("align"))
        return Command(["align", str(path), "-o", "{out}", *cpu]), want
    if not os.path.exists(jar_path()):
        pytest.skip("this build has no shim jar (no JDK)")
    return Command(["gatk-jar", "--output", "{out}"], prints_path=True), open(jar_path(), "rb").read()


def run(cmd: Command, out, stdout=subprocess.PIPE, pass_fds=(), preexec_fn=None):
    args = [a.replace("{out}", str(out)) for a in cmd.args]
    stdin = open(cmd.stdin, "rb") if cmd.stdin else subprocess.DEVNULL
    try:
        return subprocess.run(
            [sys.executable, "-m", "pyphmm", *args],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=child_env(**cmd.env),
            pass_fds=pass_fds,
            preexec_fn=preexec_fn,
            timeout=300,
        )
    finally:
        if cmd.stdin:
            stdin.close()


def stderr_of(p):
    return p.stderr.decode(errors="replace")


def assert_ok(p):
    assert p.returncode == 0, stderr_of(p)


def listing(d):
    return sorted(os.listdir(d))


class Drain(threading.Thread):
    """Reads a descriptor (a pipe's or a FIFO's read end) to its end."""

    def __init__(self, opener):
        super().__init__(daemon=True)
        self.opener, self.data = opener, b""
        self.start()

    def run(self):
        with self.opener() as f:
            self.data = f.read()


# ---- regular files and links to them ---------------------------------------


def test_a_new_file(tmp_path, command):
    cmd, want = command
    out = tmp_path / "new.out"
    p = run(cmd, out)
    assert_ok(p)
    assert out.read_bytes() == want and listing(tmp_path) == ["new.out"]
    if cmd.prints_path:
        assert p.stdout.decode() == f"{out}\n"


def test_an_existing_file_is_replaced_and_keeps_its_mode(tmp_path, command):
    cmd, want = command
    out = tmp_path / "old.out"
    out.write_text("old contents\n")
    os.chmod(out, 0o640)
    assert_ok(run(cmd, out))
    assert out.read_bytes() == want and stat.S_IMODE(out.stat().st_mode) == 0o640
    assert listing(tmp_path) == ["old.out"]


def test_a_link_to_a_file_writes_the_file_and_stays_a_link(tmp_path, command):
    cmd, want = command
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "real.out"
    target.write_text("old\n")
    os.chmod(target, 0o600)
    link = tmp_path / "link.out"
    link.symlink_to(os.path.join("data", "real.out"))
    assert_ok(run(cmd, link))
    assert link.is_symlink() and os.readlink(link) == os.path.join("data", "real.out")
    assert target.read_bytes() == want and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert listing(tmp_path) == ["data", "link.out"] and listing(tmp_path / "data") == ["real.out"]


def test_a_link_to_a_missing_name_creates_it(tmp_path, command):
    cmd, want = command
    link = tmp_path / "link.out"
    link.symlink_to("made.out")
    assert_ok(run(cmd, link))
    assert link.is_symlink() and (tmp_path / "made.out").read_bytes() == want


def test_a_long_name_fits_with_its_temporary(tmp_path, command):
    """A name as long as the file system takes: the temporary's name is
    shortened, never the user's."""
    cmd, want = command
    name = "n" * os.pathconf(tmp_path, "PC_NAME_MAX")
    assert_ok(run(cmd, tmp_path / name))
    assert (tmp_path / name).read_bytes() == want and listing(tmp_path) == [name]


# ---- descriptors, FIFOs, devices: written, never replaced -----------------------


def test_dash_is_standard_output(tmp_path, command):
    cmd, want = command
    p = run(cmd, "-")
    assert_ok(p)
    assert p.stdout == want and listing(tmp_path) == []


def test_a_link_to_dev_stdout(tmp_path, command):
    cmd, want = command
    link = tmp_path / "o"
    link.symlink_to("/dev/stdout")
    p = run(cmd, link)
    assert_ok(p)
    assert p.stdout == want and link.is_symlink() and listing(tmp_path) == ["o"]


def test_a_link_to_proc_self_fd_1_redirected_to_a_file(tmp_path, command):
    """The issue's case: `ln -s /proc/self/fd/1 o; pyphmm ... -o o > cap.txt`
    left cap.txt empty and o a regular file."""
    cmd, want = command
    link = tmp_path / "o"
    link.symlink_to("/proc/self/fd/1")
    cap = tmp_path / "cap.txt"
    with open(cap, "wb") as f:
        p = run(cmd, link, stdout=f)
    assert_ok(p)
    assert cap.read_bytes() == want and link.is_symlink() and listing(tmp_path) == ["cap.txt", "o"]


def test_a_link_to_a_descriptor_of_a_pipe(tmp_path, command):
    cmd, want = command
    r, w = os.pipe()
    drain = Drain(lambda: os.fdopen(r, "rb"))
    link = tmp_path / "o"
    link.symlink_to(f"/proc/self/fd/{w}")
    try:
        p = run(cmd, link, pass_fds=(w,))
    finally:
        os.close(w)
    drain.join(60)
    assert_ok(p)
    assert drain.data == want and link.is_symlink() and listing(tmp_path) == ["o"]


def test_a_fifo(tmp_path, command):
    cmd, want = command
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    drain = Drain(lambda: open(fifo, "rb"))
    p = run(cmd, fifo)
    drain.join(60)
    assert_ok(p)
    assert drain.data == want and stat.S_ISFIFO(os.lstat(fifo).st_mode) and listing(tmp_path) == ["fifo"]


def test_a_null_device_is_written_not_replaced(tmp_path, command, device_node):
    cmd, _ = command
    null = device_node("null", 1, 3)
    link = tmp_path / "to-null"
    link.symlink_to("null")
    for out in (null, link):
        assert_ok(run(cmd, out))
        assert stat.S_ISCHR(os.lstat(null).st_mode) and os.stat(null).st_rdev == os.makedev(1, 3)
    assert listing(tmp_path) == ["null", "to-null"]


def test_a_full_device_is_a_write_error(tmp_path, command, device_node):
    """ENOSPC (what /dev/full gives): status 1 and the output's name; the
    device stays (gatk-jar once replaced /dev/full with the jar)."""
    cmd, _ = command
    full = device_node("full", 1, 7)
    p = run(cmd, full)
    assert p.returncode == 1, stderr_of(p)
    assert stderr_of(p).endswith(f"pyphmm: error: {full}: write failed: No space left on device\n"), stderr_of(p)
    assert stat.S_ISCHR(os.lstat(full).st_mode) and listing(tmp_path) == ["full"]


def test_a_file_size_limit_is_a_write_error_that_leaves_nothing(tmp_path, command):
    """EFBIG under a file-size limit (no root needed): status 1, the
    output's name, no file and no temporary left."""
    cmd, _ = command
    out = tmp_path / "o.out"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10))

    p = run(cmd, out, preexec_fn=limit)
    assert p.returncode == 1, stderr_of(p)
    assert f"pyphmm: error: {out}: write failed: File too large\n" in stderr_of(p), stderr_of(p)
    assert listing(tmp_path) == []


# ---- refused before anything is written ------------------------------------------


def test_a_directory_an_empty_name_and_a_missing_directory_are_refused(tmp_path, command):
    cmd, _ = command
    (tmp_path / "adir").mkdir()
    (tmp_path / "dirlink").symlink_to("adir")
    for out, message in (
        (tmp_path / "adir", f"{tmp_path / 'adir'}: is a directory"),
        (tmp_path / "dirlink", f"{tmp_path / 'dirlink'}: is a directory"),
        ("", "--output must not be empty"),
        (tmp_path / "nope" / "o", f"{tmp_path / 'nope' / 'o'}: cannot create: directory {tmp_path / 'nope'} does not"),
    ):
        p = run(cmd, out)
        assert p.returncode == 2 and stderr_of(p).startswith(f"pyphmm: error: {message}"), stderr_of(p)
        assert len(stderr_of(p).splitlines()) == 1 and p.stdout == b""
    assert listing(tmp_path) == ["adir", "dirlink"] and listing(tmp_path / "adir") == []


def test_gatk_jar_refuses_to_copy_the_jar_onto_itself(tmp_path):
    if not os.path.exists(jar_path()):
        pytest.skip("this build has no shim jar (no JDK)")
    link = tmp_path / "j.jar"
    link.symlink_to(jar_path())
    before = open(jar_path(), "rb").read()
    p = run(Command(["gatk-jar", "--output", "{out}"]), link)
    assert p.returncode == 2 and "the output is the input file" in stderr_of(p), stderr_of(p)
    assert open(jar_path(), "rb").read() == before


# ---- gatk-libdir: a directory of entries it owns ----------------------------------


def libdir(*args):
    return subprocess.run(
        [sys.executable, "-m", "pyphmm", "gatk-libdir", *map(str, args)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )


def test_gatk_libdir_refuses_a_file_an_empty_name_and_a_fifo(tmp_path):
    """Once a raw "[Errno 17] File exists" and "[Errno 2]"."""
    (tmp_path / "afile").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    for arg, message in (
        (tmp_path / "afile", f"{tmp_path / 'afile'}: exists and is not a directory; gatk-libdir needs a directory"),
        (tmp_path / "fifo", f"{tmp_path / 'fifo'}: exists and is not a directory"),
        ("", "gatk-libdir: the directory must not be empty"),
    ):
        p = libdir(arg)
        assert p.returncode == 2 and p.stderr.startswith(f"pyphmm: error: {message}"), p.stderr
        assert len(p.stderr.splitlines()) == 1
    assert listing(tmp_path) == ["afile", "fifo"] and (tmp_path / "afile").read_text() == "x"


def test_gatk_libdir_writes_through_a_link_and_replaces_only_files_and_links(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to("real")
    (real / "libgkl_utils.so").write_text("an older file")
    (real / "libgkl_pairhmm.so").symlink_to("/nonexistent/old.so")
    p = libdir(tmp_path / "link", "--copy")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "link").is_symlink() and listing(tmp_path) == ["link", "real"]
    for name in ("libgkl_pairhmm.so", "libgkl_pairhmm_omp.so", "libgkl_smithwaterman.so", "libgkl_utils.so"):
        assert os.readlink(real / name) == "libpyphmm.so"
    lib = real / "libpyphmm.so"
    assert lib.read_bytes() == open(_native.library_path(), "rb").read()
    assert stat.S_IMODE(lib.stat().st_mode) == 0o755
    assert not [n for n in listing(real) if "partial" in n]
    (real / "libgkl_smithwaterman.so").unlink()
    os.mkfifo(real / "libgkl_smithwaterman.so")
    p = libdir(real)
    assert p.returncode == 2, p.stderr
    assert f"{real / 'libgkl_smithwaterman.so'}: exists and is not a file or a link; not replaced" in p.stderr
    assert stat.S_ISFIFO(os.lstat(real / "libgkl_smithwaterman.so").st_mode)
