"""Output files of the CLI: complete or absent, never half written.

A regular file is written under a unique temporary name in a private
directory beside it and renamed into place on success, so two runs writing
the same output never share a temporary file, and a failed or interrupted
run (error, Ctrl-C, SIGTERM) leaves nothing behind. "-" is standard output;
an existing file that is not a regular file (a device such as /dev/null, a
FIFO) is written directly.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class OutputFile:
    """Context manager for one command's results file; `path` is where the
    writer writes (the temporary file, or the target itself when direct)."""

    def __init__(self, target: str, input_path: str | None = None):
        if target == "":
            raise ValueError("--output must not be empty (give a file name, or - for standard output)")
        self.target = target
        self.stdout = target == "-"
        self.direct = False
        self.path = target
        self._dir = None
        self._file = None
        if self.stdout:
            return
        if os.path.isdir(target):
            raise ValueError(f"{target}: is a directory; --output needs a file name")
        if input_path not in (None, "-") and _same_file(input_path, target):
            raise ValueError(f"{target}: the output is the input file; choose another output")
        if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
            self.direct = True  # /dev/null, a FIFO: nothing to rename
            return
        parent = os.path.dirname(os.path.abspath(target))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{target}: cannot create: directory {parent} does not exist")
        try:
            self._dir = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=".pyphmm-partial", dir=parent)
        except OSError as e:
            raise OSError(f"{target}: cannot create: {e.strerror}") from None
        self.path = os.path.join(self._dir, os.path.basename(target))

    # ---- writing from Python
    def open_text(self):
        """The text file to write (standard output for "-")."""
        if self.stdout:
            return sys.stdout
        try:
            self._file = open(self.path, "w", encoding="ascii", newline="\n")
        except OSError as e:
            raise OSError(f"{self.target}: cannot open for writing: {e.strerror}") from None
        return self._file

    def write(self, text: str) -> None:
        f = self._file or self.open_text()
        try:
            f.write(text)
        except OSError as e:
            raise OSError(f"{self.target}: write failed: {e.strerror}") from None

    def _close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            except OSError as e:
                raise OSError(f"{self.target}: write failed: {e.strerror}") from None
        elif self.stdout:
            sys.stdout.flush()

    # ---- completion
    def commit(self) -> None:
        """Closes the file and moves it into place."""
        self._close()
        if self._dir is None:
            return
        try:
            os.replace(self.path, self.target)
        except OSError as e:
            self.discard()
            raise OSError(f"{self.target}: cannot write: {e.strerror}") from None
        self._remove_dir()

    def discard(self) -> None:
        """Removes the temporary file (safe to call more than once). A native
        writer that has not opened it yet cannot bring it back: its directory
        goes too."""
        try:
            if self._file is not None:
                self._file.close()
        except OSError:
            pass
        self._file = None
        if self._dir is not None:
            self._remove_dir()

    def _remove_dir(self) -> None:
        d, self._dir = self._dir, None
        for _ in range(5):
            try:
                os.unlink(self.path)
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
