"""Whether the running test may start a JVM.

A test that starts one (the shared jpype JVM, or a java, javac, javap, jar
or spark-submit process) carries ``@pytest.mark.jvm``: ``-m "not jvm"``
then runs where there is no Java, and the quick tier knows what it costs.
The helpers here that start a JVM call ``check`` first; tests/conftest.py
installs, around each test without the marker, a checker that fails it.
Outside pytest (the scripts) nothing is installed and ``check`` does
nothing.

A JVM started some other way (a child process, a build) is caught by
``REFUSING_OPTIONS``: the conftest puts them in JAVA_TOOL_OPTIONS, which
every JVM reads at start, for the tests without the marker, and such a JVM
then exits at once naming the missing marker."""

from __future__ import annotations

# An option no JVM knows: a JVM started with it prints "Unrecognized VM
# option 'ThisTestLacksPytestMarkJvm'" and exits with status 1.
REFUSING_OPTIONS = "-XX:+ThisTestLacksPytestMarkJvm"

_checker = None


def install(checker) -> None:
    """checker(what) is called before a helper starts a JVM (None: nothing is)."""
    global _checker
    _checker = checker


def check(what: str) -> None:
    """Called by a helper about to start a JVM; what: which one, for the message."""
    if _checker is not None:
        _checker(what)
