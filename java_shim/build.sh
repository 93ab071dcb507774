#!/usr/bin/env bash
# Builds pyphmm's GATK shim jar: GKL's three binding classes, compiled
# against GATK's native-bindings API, with libpyphmm.so as the resource
# pyphmm/native/linux-<arch>/libpyphmm.so (arch from the library's ELF
# header: x86_64 or aarch64), where the loader looks for its os.arch.
#   java_shim/build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]
# (Without javac, setup.py assembles the same jar from prebuilt classes.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="${1:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
out="${2:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
bindings="${3:-${GATK_NATIVE_BINDINGS_JAR:-/usr/share/java/gatk-native-bindings.jar}}"
# ELF e_machine (2 bytes at offset 18, little-endian): 62 x86-64, 183 AArch64.
case "$(od -An -t u2 -j 18 -N 2 "$lib" | tr -d ' ')" in
    62) arch=x86_64 ;;
    183) arch=aarch64 ;;
    *) echo "java_shim: $lib is not an x86-64 or AArch64 ELF library" >&2; exit 1 ;;
esac
build="$here/build"
rm -rf "$build"
mkdir -p "$build/classes/pyphmm/native/linux-$arch"
bash "$here/compile.sh" "$build/classes" "$bindings"
cp "$lib" "$build/classes/pyphmm/native/linux-$arch/libpyphmm.so"
# The AArch64 library beside it when one was cross-built (setup.py passes
# scripts/build_aarch64.sh's output).
if [ -n "${PYPHMM_AARCH64_LIB:-}" ] && [ "$arch" != aarch64 ]; then
    mkdir -p "$build/classes/pyphmm/native/linux-aarch64"
    cp "$PYPHMM_AARCH64_LIB" "$build/classes/pyphmm/native/linux-aarch64/libpyphmm.so"
fi
mkdir -p "$(dirname "$out")"
rm -f "$out.part"
jar --create --file "$out.part" -C "$build/classes" .
mv "$out.part" "$out"
echo "java_shim: wrote $out"
