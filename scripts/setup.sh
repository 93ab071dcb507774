#!/usr/bin/env bash
# Installs everything pyphmm needs on a fresh Debian machine and builds it in
# place (editable): Debian's GKL (the test oracle and GATK binding API) and a
# JDK, the Python dependencies, then the native library + cffi extension
# (+ CUDA kernels when nvcc is present, + the GATK shim jar when javac is).
# Idempotent: a second run only rebuilds what changed (objects are kept in
# build/native; an unchanged library, extension and jar are not relinked).
set -euo pipefail
cd "$(dirname "$0")/.."

# clang-format: the C/C++/CUDA style check (tests/test_style.py; its output
# is pinned to Debian 12's version 14)
APT_PACKAGES="libgkl-java libgkl-jni libgatk-native-bindings-java default-jdk-headless clang-format"
# hypothesis: the fuzz tests; pyspark: Spark's jars and launch scripts for the
# shim-in-Spark test (tests/test_spark.py); ruff: the Python style check
PIP_PACKAGES="setuptools>=61 wheel cffi>=1.15 numpy pytest jpype1 hypothesis pyspark ruff==0.17.6"

source scripts/apt_install.sh

apt_install setup $APT_PACKAGES

echo "setup: installing Python packages"
# buildtools/dist-requirements.txt: the release tools (zig's old-glibc stubs,
# auditwheel) that tests/test_packaging.py builds a wheel with.
python3 -m pip install -q --disable-pip-version-check $PIP_PACKAGES -r buildtools/dist-requirements.txt
echo "setup: building pyphmm"
python3 -m pip install -q --disable-pip-version-check --no-build-isolation -e .
python3 -m pyphmm info
