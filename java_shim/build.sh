#!/usr/bin/env bash
# Builds pyphmm's GATK shim jar: GKL's three binding classes, compiled
# against GATK's native-bindings API, with libpyphmm.so as a resource.
#   java_shim/build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]
# (Without javac, setup.py assembles the same jar from prebuilt classes.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="${1:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
out="${2:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
bindings="${3:-${GATK_NATIVE_BINDINGS_JAR:-/usr/share/java/gatk-native-bindings.jar}}"
build="$here/build"
rm -rf "$build"
mkdir -p "$build/classes/pyphmm"
bash "$here/compile.sh" "$build/classes" "$bindings"
cp "$lib" "$build/classes/pyphmm/libpyphmm.so"
# The AArch64 library beside it when one was cross-built (setup.py passes
# scripts/build_aarch64.sh's output).
if [ -n "${PYPHMM_AARCH64_LIB:-}" ]; then
    mkdir -p "$build/classes/pyphmm/native/linux-aarch64"
    cp "$PYPHMM_AARCH64_LIB" "$build/classes/pyphmm/native/linux-aarch64/libpyphmm.so"
fi
mkdir -p "$(dirname "$out")"
rm -f "$out.part"
jar --create --file "$out.part" -C "$build/classes" .
mv "$out.part" "$out"
echo "java_shim: wrote $out"
