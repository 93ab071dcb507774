"""Command line: ``pyphmm likelihoods``, ``pyphmm align``, ``pyphmm info``
and the GATK and MPS helpers (docs/CLI.md).

This package sits above the library: it imports pyphmm's modules, and none
of them imports it.

Exit status: 0 on success; 1 when the machine failed the run (a write
error such as a full disk, out of memory); 2 for bad input or arguments, a
file that cannot be read, created or opened, or an unusable backend (one
``pyphmm: error:`` line each); 128+N for a terminating signal N (130 on
Ctrl-C, 143 on SIGTERM, 129 on SIGHUP); 141, quietly, when standard output
is a pipe that closed. No error or signal leaves a partial output file.

Only the standard library loads before `main` has installed its signal
handlers: the commands' modules (and numpy) load after.
"""

from __future__ import annotations

import os
import signal
import sys

from . import signals

# Exit status when standard output is a pipe whose reader has gone: what a
# shell reports for a program that SIGPIPE ended.
BROKEN_PIPE_STATUS = 128 + signal.SIGPIPE


def _say(text: str) -> None:
    """One line on stderr; a closed stderr does not turn it into another error."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass


def _quiet_stdout() -> None:
    """Points standard output at /dev/null, so that the interpreter's own
    flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _run(argv: list) -> int:
    from . import commands

    args = commands.build_parser(argv).parse_args(argv)
    try:
        commands.check_settings(args.command)
        rc = args.func(args)
        sys.stdout.flush()  # (a closed pipe shows here, not at exit)
        return rc
    except BrokenPipeError:
        raise
    except commands.FAILED as e:
        text = str(e) or type(e).__name__
        _say(f"pyphmm: error: {'out of memory: ' if isinstance(e, MemoryError) and 'memory' not in text else ''}{text}")
        return 1
    except commands.REFUSED as e:
        _say(f"pyphmm: error: {str(e) or type(e).__name__}")
        return 2


def main(argv=None) -> int:
    previous = signals.install()  # first: from here on a signal ends the run with 128+N
    try:
        return _run(sys.argv[1:] if argv is None else list(argv))
    except signals.Terminated as t:
        _say("pyphmm: interrupted" if t.signum == signal.SIGINT else f"pyphmm: terminated ({t.name})")
        return 128 + t.signum
    except KeyboardInterrupt:  # (not the main thread: Python's own SIGINT handler)
        _say("pyphmm: interrupted")
        return 128 + signal.SIGINT
    except BrokenPipeError:
        _quiet_stdout()
        return BROKEN_PIPE_STATUS
    finally:
        signals.restore(previous)
