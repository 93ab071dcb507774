"""Output files of the CLI: an output never destroys what it replaces, and a
file appears complete or not at all (docs/CLI.md, "Outputs").

What an output name refers to decides how it is written:
- "-", or a name of this process's standard output (/dev/stdout,
  /dev/fd/1, /proc/self/fd/1, or a link to one of them): standard output;
  another descriptor of this process (/dev/stderr, /dev/fd/N): that
  descriptor, as the shell handed it over (its position and append mode
  kept);
- a device, FIFO or socket (also through links), and anything under /proc
  or /sys: opened and written directly, never renamed over;
- a regular file, or a name that does not exist yet: written under a unique
  temporary name in a private directory beside it and renamed onto it on
  success, so two runs writing the same output never share a temporary
  file, and a failed or interrupted run leaves nothing behind. An existing
  file keeps its permission bits. A link to a regular file writes its
  target the same way (the temporary beside the target); the link stays.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import sys
import tempfile

from . import signals

# Links followed before an output is refused (Linux's own limit).
MAX_LINKS = 40
# Characters of the output's name kept in its temporary directory's name
# (".NAME.XXXXXXXX.pyphmm-partial"): any name the file system takes then
# leaves room for the temporary.
TEMP_NAME_CHARS = 32
# The temporary file's name inside that directory.
TEMP_FILE = "out"

_PROC_FD = re.compile(r"^/proc/(\d+)(?:/task/\d+)?/fd/(\d+)$")


class WriteError(OSError):
    """An output was opened but writing it failed (disk full, an I/O error):
    the CLI exits with status 1."""


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _resolve(target: str):
    """("fd", N) for a name of this process's descriptor N or a chain of links
    ending at one; else ("path", path, stat or None): the path with every
    link followed (directories included), and its stat (None: absent)."""
    path = os.path.abspath(target)
    for _ in range(MAX_LINKS):
        head, tail = os.path.split(path)
        head = os.path.realpath(head)
        path = os.path.join(head, tail)
        m = _PROC_FD.match(path)
        if m:  # a descriptor's name: never followed to the file behind it
            if int(m.group(1)) == os.getpid():
                return ("fd", int(m.group(2)))
            return ("path", path, os.stat(path))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return ("path", path, None)
        if not stat.S_ISLNK(st.st_mode):
            return ("path", path, st)
        path = os.path.join(head, os.readlink(path))
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))


def _pseudo_file(path: str) -> bool:
    """Files of /proc and /sys: regular to stat, but not files to rename over."""
    return path.startswith(("/proc/", "/sys/"))


class OutputFile:
    """Context manager for one command's output. `native_path` is the path a
    native writer may open (the temporary file, or a device or FIFO), None
    when only this object can write the output (standard output, a
    descriptor). On an exception the partial output is removed."""

    def __init__(self, target: str, input_path: str | None = None, *, option: str = "--output", mode=None):
        if target == "":
            raise ValueError(f"{option} must not be empty (give a file name, or - for standard output)")
        self.target = target
        self.stdout = target == "-"  # standard output (also through a name of descriptor 1)
        self.native_path = None
        self._fd = None  # another descriptor of this process
        self._path = None  # a device, FIFO or pseudo file written directly
        self._final = None  # the regular file renamed onto at the end
        self._existing = None  # its stat, if it exists
        self._mode = mode  # permission bits of a new file (None: the umask's)
        self._dir = None  # the private temporary directory
        self._file = None
        self._opened = False  # a writer has opened the output
        if self.stdout:
            return
        try:
            kind = _resolve(target)
        except OSError as e:
            raise OSError(f"{target}: cannot open for writing: {e.strerror}") from None
        if kind[0] == "fd":
            self._use_descriptor(kind[1], input_path)
            return
        _, path, st = kind
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{target}: is a directory; {option} names a file")
        if input_path not in (None, "-") and st is not None and _same_file(input_path, path):
            raise ValueError(f"{target}: the output is the input file; choose another output")
        if st is not None and (not stat.S_ISREG(st.st_mode) or _pseudo_file(path)):
            self._path = path  # a device, FIFO, socket: written directly
            self.native_path = None if _PROC_FD.match(path) else path
            return
        self._final, self._existing = path, st
        self._make_temporary()

    def _use_descriptor(self, fd: int, input_path) -> None:
        try:
            st = os.fstat(fd)
        except OSError as e:
            raise OSError(f"{self.target}: cannot open for writing: {e.strerror}") from None
        if input_path not in (None, "-") and stat.S_ISREG(st.st_mode):
            try:
                same = os.path.samestat(st, os.stat(input_path))
            except OSError:
                same = False
            if same:
                raise ValueError(f"{self.target}: the output is the input file; choose another output")
        if fd == 1:
            self.stdout = True
        else:
            self._fd = fd

    def _make_temporary(self) -> None:
        parent, name = os.path.split(self._final)
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{self.target}: cannot create: directory {parent} does not exist")
        with signals.critical():  # made and remembered, or neither
            try:
                self._dir = tempfile.mkdtemp(prefix=f".{name[:TEMP_NAME_CHARS]}.", suffix=".pyphmm-partial", dir=parent)
            except OSError as e:
                raise OSError(f"{self.target}: cannot create: {e.strerror}") from None
        self.native_path = os.path.join(self._dir, TEMP_FILE)

    @property
    def path(self) -> str:
        """Where the data goes before commit (for messages and tests)."""
        return self.native_path or self.target

    # ---- writing from Python
    def opened_elsewhere(self) -> None:
        """A native writer opened native_path (and wrote what it holds)."""
        self._opened = True

    def _open(self, binary: bool):
        self._opened = True
        if self.stdout:
            if binary:
                sys.stdout.flush()
                return sys.stdout.buffer
            return sys.stdout
        try:
            if self._fd is not None:
                fd = os.dup(self._fd)
            elif self._path is not None:
                fd = os.open(self._path, os.O_WRONLY | (os.O_TRUNC if stat.S_ISREG(os.stat(self._path).st_mode) else 0))
            else:
                fd = os.open(self.native_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError as e:
            raise OSError(f"{self.target}: cannot open for writing: {e.strerror}") from None
        if binary:
            self._file = os.fdopen(fd, "wb")
        else:
            self._file = os.fdopen(fd, "w", encoding="ascii", newline="\n")
        return self._file

    def open_text(self):
        """The text file to write (standard output for "-")."""
        return self._file or self._open(binary=False)

    def open_binary(self):
        return self._file or self._open(binary=True)

    def write(self, data) -> None:
        """Writes text (or bytes). A pipe whose reader has gone raises
        BrokenPipeError (the CLI then ends quietly); any other failure is
        a WriteError naming the output."""
        f = self._file or self._open(binary=isinstance(data, bytes))
        try:
            f.write(data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise WriteError(f"{self.target}: write failed: {e.strerror}") from None

    def _close(self) -> None:
        f, self._file = self._file, None
        try:
            if f is not None:
                f.close()
            elif self.stdout:
                sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise WriteError(f"{self.target}: write failed: {e.strerror}") from None

    # ---- completion
    def commit(self) -> None:
        """Closes the output (an empty one is still created: an empty input
        has an empty result) and moves a temporary file into place."""
        if not self._opened and not self.stdout:
            self._open(binary=True)
        self._close()
        if self._dir is None:
            return
        try:
            self._keep_mode()
            with signals.critical():
                os.replace(self.native_path, self._final)
                self._remove_dir()
        except OSError as e:
            self.discard()
            raise WriteError(f"{self.target}: cannot write: {e.strerror}") from None

    def _keep_mode(self) -> None:
        """The replaced file's permission bits (and owner, where allowed), or
        the mode asked for a new file."""
        if self._existing is None:
            if self._mode is not None:
                os.chmod(self.native_path, self._mode)
            return
        os.chmod(self.native_path, stat.S_IMODE(self._existing.st_mode))
        st = os.stat(self.native_path)
        if (st.st_uid, st.st_gid) != (self._existing.st_uid, self._existing.st_gid):
            try:
                os.chown(self.native_path, self._existing.st_uid, self._existing.st_gid)
                os.chmod(self.native_path, stat.S_IMODE(self._existing.st_mode))  # (chown clears set-id bits)
            except OSError:
                pass

    def discard(self) -> None:
        """Removes the temporary file (safe to call more than once). A native
        writer that has not opened it yet cannot bring it back: its directory
        goes too."""
        try:
            if self._file is not None:  # (never sys.stdout: that is not ours to close)
                self._file.close()
        except OSError:
            pass
        self._file = None
        if self._dir is not None:
            self._remove_dir()

    def _remove_dir(self) -> None:
        d, self._dir = self._dir, None
        if d is None:
            return
        for _ in range(5):
            try:
                os.unlink(os.path.join(d, TEMP_FILE))
            except FileNotFoundError:
                pass
            try:
                os.rmdir(d)
                return
            except FileNotFoundError:
                return
            except OSError as e:  # a writer created the file meanwhile
                if e.errno != errno.ENOTEMPTY:
                    break
        shutil.rmtree(d, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is not None:
            self.discard()
        elif self._dir is not None or self._file is not None:
            self.commit()
        return False


def make_directory(directory: str, command: str) -> None:
    """An output directory: used as it is when it exists (a link to one
    included), else created with its parents; anything else is refused."""
    if os.path.isdir(directory):
        return
    if os.path.lexists(directory):
        raise ValueError(f"{directory}: exists and is not a directory; {command} needs a directory")
    try:
        os.makedirs(directory)
    except FileExistsError:
        if not os.path.isdir(directory):
            raise ValueError(f"{directory}: exists and is not a directory; {command} needs a directory") from None
    except OSError as e:
        raise OSError(f"{directory}: cannot create: {e.strerror}") from None


def replace_with_link(path: str, target: str) -> None:
    """Makes `path` a symbolic link to `target`, atomically: the link is made
    in a private temporary directory beside it and renamed onto it. An entry
    there that is a file or a link is replaced; any other (a directory, a
    device, a FIFO) is refused, never removed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not (stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise ValueError(f"{path}: exists and is not a file or a link; not replaced")
    parent, name = os.path.split(os.path.abspath(path))
    with signals.critical():
        try:
            d = tempfile.mkdtemp(prefix=f".{name[:TEMP_NAME_CHARS]}.", suffix=".pyphmm-partial", dir=parent)
        except OSError as e:
            raise OSError(f"{path}: cannot create: {e.strerror}") from None
        try:
            tmp = os.path.join(d, TEMP_FILE)
            os.symlink(target, tmp)
            os.replace(tmp, path)
        except OSError as e:
            raise OSError(f"{path}: cannot create: {e.strerror}") from None
        finally:
            shutil.rmtree(d, ignore_errors=True)
