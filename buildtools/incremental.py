"""Up-to-date checks for build steps.

A step's output is current when it exists, its recorded signature (the exact
command plus the tool's identity) equals the one it would be built with now,
and no input is newer than it. Inputs are the files named explicitly plus, for
compiles, the headers the compiler listed in its depfile (-MMD -MF), so a
changed source or header rebuilds only the objects that include it, and a
changed flag, define or compiler rebuilds every object it affects.
"""

from __future__ import annotations

import hashlib
import json
import os


def stamp_for(output: str, stamp_dir: str | None = None) -> str:
    """Where an output's signature is kept: beside it (objects), or in
    stamp_dir for outputs that live in a package directory, where a stray
    file would be shipped."""
    if stamp_dir is None:
        return output + ".sig"
    tag = hashlib.sha1(os.path.abspath(output).encode()).hexdigest()[:16]
    return os.path.join(stamp_dir, f"{os.path.basename(output)}.{tag}.sig")


def read_depfile(path: str) -> list | None:
    """The prerequisites listed in a Make-style depfile (g++ / nvcc -MMD), or
    None when the file is missing or unreadable (then the output is rebuilt)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    text = text.replace("\\\n", " ")
    _, sep, deps = text.partition(": ")
    if not sep:
        return None
    out, word, escaped = [], [], False
    for ch in deps.split("\n", 1)[0]:
        if escaped:
            word.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch.isspace():
            if word:
                out.append("".join(word))
                word = []
        else:
            word.append(ch)
    if word:
        out.append("".join(word))
    return out


def is_current(output: str, signature, inputs=(), depfile: str | None = None, stamp: str | None = None) -> bool:
    """True when `output` need not be rebuilt (see the module docstring);
    `stamp` is where its signature is kept (default: stamp_for(output))."""
    try:
        built = os.path.getmtime(output)
        with open(stamp or stamp_for(output)) as f:
            if json.load(f) != signature:
                return False
    except (OSError, ValueError):
        return False
    deps = list(inputs)
    if depfile is not None:
        listed = read_depfile(depfile)
        if listed is None:
            return False
        deps += listed
    try:
        return all(os.path.getmtime(d) <= built for d in deps)
    except OSError:  # an input vanished (e.g. a header was renamed): rebuild
        return False


def forget(output: str, stamp: str | None = None) -> None:
    """Drops the signature before rebuilding, so an interrupted build is
    never mistaken for a current one."""
    try:
        os.unlink(stamp or stamp_for(output))
    except FileNotFoundError:
        pass


def record(output: str, signature, stamp: str | None = None) -> None:
    path = stamp or stamp_for(output)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(signature, f)
