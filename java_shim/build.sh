#!/usr/bin/env bash
# Builds pyphmm's GATK shim jar around a built libpyphmm.so, with the recipe
# setup.py uses (buildtools/jar.py: the shim's classes compiled against GATK's
# native-bindings API, the library at pyphmm/native/<platform>/).
#   java_shim/build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="${1:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
out="${2:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
if [ $# -ge 3 ]; then export GATK_NATIVE_BINDINGS_JAR="$3"; fi
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m buildtools.jar "$out" "$lib"
