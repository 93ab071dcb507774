"""Makes this checkout importable for a script run as ``python3
scripts/NAME.py`` from anywhere: Python puts scripts/ on sys.path, not the
repository root that holds pyphmm, devtools and buildtools. Every script
that imports them imports this module first (tests/test_layout.py checks
it; it is the one sys.path edit that test allows).

A caller that already made devtools importable (PYTHONPATH=., the tests'
child processes, scripts/verify_dist.sh testing an installed wheel) keeps
its path as it is; otherwise the root goes first, so that the scripts use
this checkout's pyphmm rather than an installed one.
"""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if importlib.util.find_spec("devtools") is None:
    sys.path.insert(0, ROOT)
