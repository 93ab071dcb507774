#!/usr/bin/env bash
# pyphmm on AArch64, checked on an x86-64 Debian machine without ARM hardware:
# installs Debian's cross compiler and qemu-user (apt, as root or through
# sudo), cross-builds libpyphmm.so and its check program
# (scripts/build_aarch64.sh), then runs tests/test_aarch64.py, which runs
# them under qemu-aarch64 with each CPU kernel against GKL on this machine.
#
#   scripts/test_aarch64.sh [PYTEST ARGS]   all of it from a fresh machine
#                                           (scripts/setup.sh first: GKL, JDK,
#                                           the x86 build the tests compare with)
#   scripts/test_aarch64.sh --prepare       install and cross-build only; what
#                                           scripts/test.sh runs before pytest
#
# Fails, never skips, when the packages cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="g++-aarch64-linux-gnu qemu-user"
source scripts/apt_install.sh

prepare=0
if [ "${1:-}" = "--prepare" ]; then
    prepare=1
    shift
fi
[ "$prepare" = 1 ] || bash scripts/setup.sh

apt_install test_aarch64 $APT_PACKAGES
for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
    if ! command -v "$tool" >/dev/null; then
        echo "test_aarch64: $tool not found after installing$APT_PACKAGES" >&2
        exit 1
    fi
done

bash scripts/build_aarch64.sh
[ "$prepare" = 1 ] && exit 0
exec python3 -m pytest tests/test_aarch64.py -q -ra "$@"
