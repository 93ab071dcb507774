#!/usr/bin/env bash
# Run on a machine WITH a JDK: fills .carry/ (ignored by git, well under
# 1 MB) with what a GPU host that has only a JRE needs to build the JNI layer,
# the GATK shim jar and run scripts/bench_jni.py:
#   .carry/jni_include/    jni.h + linux/jni_md.h   (setup.py compiles native/jni with it)
#   .carry/shim_classes/   the shim's classes (setup.py zips them with the
#                          host-built libpyphmm.so into pyphmm/pyphmm-gatk.jar)
#   .carry/bench_classes/  BenchJni.class           (scripts/bench_jni.py's harness),
#                          BenchMultiproc*.class    (scripts/bench_multiproc.py's),
#                          BenchSwCalls.class       (scripts/bench_sw_calls.py's)
#   .carry/soak_classes/   ShimSoak + Records       (scripts/soak_shim.py's harness)
# Bytecode: the shim is Java 8, the harness Java 11, so any JRE >= 11 runs both.
#   scripts/prepare_gpu_carry.sh [BINDINGS_JAR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bindings="${1:-${GATK_NATIVE_BINDINGS_JAR:-/usr/share/java/gatk-native-bindings.jar}}"
carry="$root/.carry"

javac_path="$(command -v javac || true)"
if [ -z "$javac_path" ]; then echo "prepare_gpu_carry: javac not found (run this where a JDK is)" >&2; exit 1; fi
jdk="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$javac_path")")")}"
if [ ! -f "$jdk/include/jni.h" ] || [ ! -f "$jdk/include/linux/jni_md.h" ]; then
    echo "prepare_gpu_carry: $jdk/include lacks jni.h or linux/jni_md.h (set JAVA_HOME to a JDK)" >&2; exit 1
fi
if [ ! -f "$bindings" ]; then echo "prepare_gpu_carry: $bindings not found (GATK native-bindings jar)" >&2; exit 1; fi

rm -rf "$carry.part"
mkdir -p "$carry.part/jni_include/linux" "$carry.part/bench_classes"
# Only the two headers the JNI layer includes (jni.h includes jni_md.h).
cp "$jdk/include/jni.h" "$carry.part/jni_include/"
cp "$jdk/include/linux/jni_md.h" "$carry.part/jni_include/linux/"
bash "$root/java_shim/compile.sh" "$carry.part/shim_classes" "$bindings"
javac -nowarn --release 11 -d "$carry.part/bench_classes" "$root/java_shim/bench/BenchJni.java" \
    "$root/java_shim/bench/BenchSwCalls.java"
javac -nowarn --release 11 -cp "$bindings" -d "$carry.part/bench_classes" "$root/java_shim/bench/BenchMultiproc.java"
javac -nowarn --release 11 -cp "$carry.part/shim_classes:$bindings" -d "$carry.part/soak_classes" \
    "$root/tests/java/Records.java" "$root/tests/java/ShimSoak.java"
"$(dirname "$javac_path")/java" -version 2>&1 | head -1 > "$carry.part/BUILT_WITH"
rm -rf "$carry"
mv "$carry.part" "$carry"
echo "prepare_gpu_carry: wrote $carry ($(du -sh "$carry" | cut -f1)):"
(cd "$carry" && find . -type f | sort | sed 's/^/  /')
