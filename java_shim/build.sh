#!/usr/bin/env bash
# Builds pyphmm's GATK shim jar: GKL's three binding classes, compiled
# against GATK's native-bindings API, with libpyphmm.so as a resource.
#   java_shim/build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="${1:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
out="${2:?usage: build.sh LIBPYPHMM OUT.jar [BINDINGS_JAR]}"
bindings="${3:-${GATK_NATIVE_BINDINGS_JAR:-/usr/share/java/gatk-native-bindings.jar}}"
build="$here/build"
rm -rf "$build"
mkdir -p "$build/classes/pyphmm"
javac -nowarn --release 8 -cp "$bindings" -d "$build/classes" \
    $(find "$here/src" -name '*.java' | sort) 2> >(grep -v 'bootstrap classpath\|^1 warning\|release 8' >&2 || true)
cp "$lib" "$build/classes/pyphmm/libpyphmm.so"
# Exactly the three shim classes plus the library: anything else would
# shadow or add classes in GATK's class path.
extra="$(cd "$build/classes" && find . -name '*.class' | sort | grep -v -x -e './com/intel/gkl/pairhmm/IntelPairHmm.class' \
    -e './com/intel/gkl/pairhmm/IntelPairHmmOMP.class' -e './com/intel/gkl/smithwaterman/IntelSmithWaterman.class' || true)"
if [ -n "$extra" ]; then echo "java_shim: unexpected classes: $extra" >&2; exit 1; fi
mkdir -p "$(dirname "$out")"
rm -f "$out.part"
jar --create --file "$out.part" -C "$build/classes" .
mv "$out.part" "$out"
echo "java_shim: wrote $out"
