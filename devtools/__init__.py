"""Developer tools shared by the tests and the scripts (not part of the
installed package).

- ``devtools.oracle``: the peers results are checked against: GKL through
  jpype (``gkl``, ``gkl_sw``), the GATK shim jar beside it (``shim``), and two
  small literal Python references (``reference`` for PairHMM,
  ``sw_reference`` for GATK's Smith-Waterman rules).
- ``devtools.regions``: the one PairHMM region generator (realistic GATK
  workloads and synthetic regions by preset); ``scripts/gen_regions.py`` is
  its command line.
- ``devtools.pd_regions``: the PDHMM region generator (GATK's PD
  haplotypes; GATK- and HaplotypeCaller-shaped regions);
  ``scripts/gen_pd_regions.py`` is its command line. ``devtools.pd_edges``:
  PDHMM edge cases; ``devtools.pd_testdata``: the stored PDHMM peer data
  and a raw call of the C ABI; ``devtools.oracle.gkl_pdhmm``: an oracle
  build of GKL 0.9's PDHMM and GATK's Java PDHMM, given its directory.
- ``devtools.sw_pairs``: Smith-Waterman (ref, alt) pairs.
- ``devtools.testdata``: GKL's PairHMM vectors and GATK's Smith-Waterman
  cases, kept in ``tests/data/``.
- ``devtools.child``: running a child Python on this checkout.
- ``devtools.java_classes``: a benchmark's Java harness classes (given,
  compiled now, or carried in ``.carry/``).
- ``devtools.native_check``: compiling a small C++ check program against
  ``native/``.
- ``devtools.gpu_hog``: another process holding nearly all of a GPU's
  memory (tests of the out-of-memory fallback).

The repository root must be importable: pytest does that through
``[tool.pytest.ini_options] pythonpath`` in pyproject.toml; scripts are run
from the root as ``PYTHONPATH=. python3 scripts/NAME.py``.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
