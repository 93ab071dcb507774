#!/usr/bin/env bash
# The test command: sets up everything (scripts/setup.sh), then runs pytest.
# Extra arguments go to pytest (e.g. scripts/test.sh -k gkl -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# AArch64 cross compiler, qemu and the cross-built library (tests/test_aarch64.py)
bash scripts/test_aarch64.sh --prepare
exec python3 -m pytest tests -q -ra "$@"
