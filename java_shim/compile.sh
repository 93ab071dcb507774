#!/usr/bin/env bash
# Compiles the shim's classes: GKL's binding classes and pyphmm's loader (Java 8 bytecode, against
# GATK's native-bindings API) into OUTDIR. Used by buildtools/jar.py and by
# scripts/prepare_gpu_carry.sh (prebuilt classes for hosts without javac).
#   java_shim/compile.sh OUTDIR [BINDINGS_JAR] [API_OUTDIR]
# gatk-native-bindings 1.1.0's pdhmm types, which IntelPDHMM implements, are
# declared in java_shim/api/ and compiled into API_OUTDIR (default: a
# temporary directory) for the compile class path only: they never join
# OUTDIR, because GATK's own 1.1.0 jar provides them at run time (and an
# older GATK, without them, never loads IntelPDHMM).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: compile.sh OUTDIR [BINDINGS_JAR] [API_OUTDIR]}"
bindings="${2:-${GATK_NATIVE_BINDINGS_JAR:-/usr/share/java/gatk-native-bindings.jar}}"
api="${3:-}"
if [ -z "$api" ]; then
    api="$(mktemp -d)"
    trap 'rm -rf "$api"' EXIT
fi
mkdir -p "$out" "$api"
quiet() { grep -v 'bootstrap classpath\|^1 warning\|release 8' >&2 || true; }
javac -nowarn --release 8 -cp "$bindings" -d "$api" $(find "$here/api" -name '*.java' | sort) 2> >(quiet)
javac -nowarn --release 8 -cp "$bindings:$api" -d "$out" \
    $(find "$here/src" -name '*.java' | sort) 2> >(quiet)
# Exactly the shim's classes (buildtools/jar.py's SHIM_CLASSES): anything else
# would shadow or add classes in GATK's class path.
extra="$(cd "$out" && find . -name '*.class' | sort | grep -v -x -e './com/intel/gkl/pairhmm/IntelPairHmm.class' \
    -e './com/intel/gkl/pairhmm/IntelPairHmmOMP.class' -e './com/intel/gkl/smithwaterman/IntelSmithWaterman.class' \
    -e './com/intel/gkl/pdhmm/IntelPDHMM.class' -e './pyphmm/shim/LibraryLoader.class' || true)"
if [ -n "$extra" ]; then echo "java_shim: unexpected classes: $extra" >&2; exit 1; fi
