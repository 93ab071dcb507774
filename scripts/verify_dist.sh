#!/usr/bin/env bash
# Checks the release artifacts of scripts/build_dist.sh as a user gets them,
# on a GPU host where only the NVIDIA driver is needed (nothing of pyphmm is
# compiled there):
#   1. pip installs dist/pyphmm-*.whl (no index, binary only) into a fresh
#      directory and checks that its library carries the CUDA runtime inside;
#   2. runs the GPU tests against that installation (a copy of tests/ with no
#      pyphmm/ source tree beside it, so nothing else can be imported);
#   3. runs the standalone jar dist/pyphmm-gatk-*.jar behind GATK's binding
#      API against GKL in one JVM (tests/test_shim.py's comparisons).
# The tests' oracle needs numpy, cffi, pytest, jpype1, a JRE and Debian's GKL
# (on the project's GPU host: `source .gpuhost/activate.sh` first).
#
#   scripts/verify_dist.sh [DIST_DIR] [-- PYTEST_ARGS...]
# Default PYTEST_ARGS: the GPU test files and the shim's GKL comparisons.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="$root/dist"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then dist="$(cd "$1" && pwd)"; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
wheel="$(ls "$dist"/pyphmm-*.whl)"
jar="$(ls "$dist"/pyphmm-gatk-*.jar)"

work="$(mktemp -d /tmp/pyphmm-verify.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export PIP_ROOT_USER_ACTION=ignore
echo "verify_dist: installing $(basename "$wheel") into $work/site"
python3 -m pip install -q --disable-pip-version-check --no-deps --no-index --only-binary=:all: --no-compile \
    --target "$work/site" "$wheel"
lib="$work/site/pyphmm/libpyphmm.so"
if ldd "$lib" | grep -E 'libcudart|libstdc\+\+'; then
    echo "verify_dist: $lib needs a shared CUDA runtime or libstdc++" >&2; exit 1
fi
bash "$root/scripts/list_gpu_code.sh" "$lib"

mkdir -p "$work/src"
for d in tests devtools scripts native buildtools; do cp -r "$root/$d" "$work/src/"; done
[ -d "$root/../shared" ] && ln -s "$root/../shared" "$work/shared"
# devtools (the tests' oracles) from the copied tree; pyphmm only from the wheel
export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}:$work/src"
cd "$work/src"
python3 -c "import sys, pyphmm; sys.exit(not pyphmm.__file__.startswith('$work/site/'))" \
    || { echo "verify_dist: pyphmm is not imported from the installation" >&2; exit 1; }
python3 -m pyphmm info

if [ $# -eq 0 ]; then
    set -- tests/test_cuda_pairhmm.py tests/test_sw_cuda.py tests/test_dispatch.py \
        tests/test_shim.py::test_pairhmm_shim_matches_gkl tests/test_shim.py::test_pairhmm_omp_class_and_null_arguments
fi
echo "verify_dist: pytest $* (shim jar: $jar)"
PYPHMM_GATK_JAR="$jar" python3 -m pytest -q -ra -p no:cacheprovider "$@"
