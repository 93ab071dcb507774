#!/usr/bin/env bash
# Builds the GKL 0.9.0 PDHMM oracle (README.md here) into DEST (default
# .bench/gkl09 at the repository root, ignored by git) from bare git mirrors
# of GKL and gatk-native-bindings: pdhmm_oracle, gkl-0.9.0.jar (+ gkl.jar
# link), gatk-native-bindings-1.1.0.jar, and the verification classes.
#
#   bash devtools/oracle/gkl09/build.sh            # build
#   bash devtools/oracle/gkl09/build.sh --verify   # build, then run verify.sh
#
# Env: GKL_MIRROR, GNB_MIRROR (bare git dirs of IntelLabs/GKL and
# broadinstitute/gatk-native-bindings), DEST, WORK (scratch dir), CXX, JAVA_HOME.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${DEST:-$HERE/../../../.bench/gkl09}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"
GKL_MIRROR="${GKL_MIRROR:-/work/.mirror/IntelLabs+GKL/repo}"
GNB_MIRROR="${GNB_MIRROR:-/work/.mirror/broadinstitute+gatk-native-bindings/repo}"
GKL_TAG=0.9.0
GKL_COMMIT=6f59c5db68e58ae2c965c5f3eb432a95cf605907
GNB_TAG=1.1.0
GNB_COMMIT=8a3f2d27c327082246d83db570f490108485ca1b
WORK="${WORK:-/tmp/gkl09-build}"
CXX="${CXX:-g++}"

if [ -z "${JAVA_HOME:-}" ]; then
    if [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/javac ]; then
        JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
    else
        JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
    fi
fi
JAVAC="$JAVA_HOME/bin/javac"
JAR="$JAVA_HOME/bin/jar"
JNI_INC=(-I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux")
CP_LOGGING="${CP_LOGGING:-/usr/share/java/commons-logging.jar}"
CP_IO="${CP_IO:-/usr/share/java/commons-io.jar}"

say() { echo "== $*"; }

# ------------------------------------------------------------------ sources
check_commit() {  # mirror tag expected
    local got
    got="$(git -C "$1" rev-parse "$2^{commit}")"
    [ "$got" = "$3" ] || { echo "build.sh: $1 tag $2 is $got, expected $3" >&2; exit 1; }
}
check_commit "$GKL_MIRROR" "$GKL_TAG" "$GKL_COMMIT"
check_commit "$GNB_MIRROR" "$GNB_TAG" "$GNB_COMMIT"

rm -rf "$WORK"
mkdir -p "$WORK/gkl" "$WORK/gnb" "$WORK/obj" "$WORK/lib" "$WORK/classes-gnb" "$WORK/classes-gkl"
say "extracting GKL $GKL_TAG ($GKL_COMMIT) and gatk-native-bindings $GNB_TAG ($GNB_COMMIT) into $WORK"
git -C "$GKL_MIRROR" archive "$GKL_COMMIT" LICENSE CMakeLists.txt src/main/native/common src/main/native/pdhmm \
    src/main/native/utils src/main/java/com/intel/gkl/NativeLibraryLoader.java \
    src/main/java/com/intel/gkl/IntelGKLUtils.java src/main/java/com/intel/gkl/pdhmm | tar -x -C "$WORK/gkl"
git -C "$GNB_MIRROR" archive "$GNB_COMMIT" LICENSE.TXT src/main/java | tar -x -C "$WORK/gnb"

# ------------------------------------------------------------------ GKL native, as GKL's CMake builds it
# CMakeLists.txt (top): -std=gnu++11 (CMAKE_CXX_STANDARD 11), -fPIC, and CMAKE_CXX_FLAGS below;
# src/main/native/pdhmm/CMakeLists.txt: per-file flags, OpenMP (-fopenmp) on the target.
GKL_CXXFLAGS=(-std=gnu++11 -fPIC -D_FORTIFY_SOURCE=2 -O3 -Wformat -Werror=format-security -Wconversion
    -Wfloat-conversion -Wbool-compare -fstack-protector-all -fno-strict-overflow
    -fno-delete-null-pointer-checks -fwrapv -fopenmp)
PD="$WORK/gkl/src/main/native/pdhmm"
INC=(-I"$WORK/gkl/src/main/native/common" -I"$PD" "${JNI_INC[@]}")
declare -A FILE_FLAGS=(
    [IntelPDHMM.cc]=""
    [MathUtils.cc]=""
    [pdhmm-serial.cc]=""
    [avx2_impl.cc]="-mavx -mavx2 -msse2 -msse4.1"
    [avx512_impl.cc]="-mavx -mavx2 -mavx512f -mavx512dq -mavx512vl -mavx512bw"
)
OBJS=()
for f in IntelPDHMM.cc avx2_impl.cc avx512_impl.cc MathUtils.cc pdhmm-serial.cc; do
    say "compile $f ${FILE_FLAGS[$f]}"
    # shellcheck disable=SC2086
    "$CXX" "${GKL_CXXFLAGS[@]}" ${FILE_FLAGS[$f]} "${INC[@]}" -c "$PD/$f" -o "$WORK/obj/${f%.cc}.o" 2>"$WORK/obj/${f%.cc}.warnings" \
        || { cat "$WORK/obj/${f%.cc}.warnings"; exit 1; }
    OBJS+=("$WORK/obj/${f%.cc}.o")
done
"$CXX" "${GKL_CXXFLAGS[@]}" -I"$WORK/gkl/src/main/native/common" "${JNI_INC[@]}" \
    -c "$WORK/gkl/src/main/native/utils/utils.cc" -o "$WORK/obj/utils.o"

# Static libgomp: its archive, linked without -fopenmp's -lgomp (needs libpthread/libdl: in glibc >= 2.34).
LIBGOMP_A="$("$CXX" -print-file-name=libgomp.a)"
[ -f "$LIBGOMP_A" ] || { echo "build.sh: no libgomp.a" >&2; exit 1; }

# Hidden arc4random for the static libstdc++ (see src/glibc235_compat.c): glibc 2.35 suffices.
gcc -O2 -fPIC -c "$HERE/glibc235_compat.c" -o "$WORK/obj/glibc235_compat.o"
COMPAT="$WORK/obj/glibc235_compat.o"
max_glibc() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1; }
check_glibc() {
    local v; v="$(max_glibc "$1")"
    echo "   $(basename "$1") needs $v"
    [ "$(printf '%s\nGLIBC_2.35\n' "$v" | sort -V | tail -1)" = "GLIBC_2.35" ] \
        || { echo "build.sh: $1 needs $v > GLIBC_2.35" >&2; exit 1; }
}

# ------------------------------------------------------------------ pdhmm_oracle
say "pdhmm_oracle"
"$CXX" -std=gnu++11 -O2 -fopenmp "${INC[@]}" -c "$HERE/pdhmm_oracle.cc" -o "$WORK/obj/pdhmm_oracle.o"
"$CXX" -o "$WORK/pdhmm_oracle" "$WORK/obj/pdhmm_oracle.o" "${OBJS[@]}" "$COMPAT" \
    -static-libstdc++ -static-libgcc -Wl,-z,now "$LIBGOMP_A" -lpthread -ldl -lm
strip "$WORK/pdhmm_oracle"
check_glibc "$WORK/pdhmm_oracle"
install -m 755 "$WORK/pdhmm_oracle" "$DEST/pdhmm_oracle"

# ------------------------------------------------------------------ libgkl_pdhmm.so / libgkl_utils.so
# GKL's link: -shared -static-libstdc++ -static-libgcc -Wl,-z,now -Wl,--no-as-needed -fopenmp;
# here libgomp.a too where it links (it must be PIC), else the shared libgomp.so.1 as GKL's own build.
LDSO=(-shared -static-libstdc++ -static-libgcc -Wl,-z,now -Wl,--no-as-needed)
link_so() {  # out objs...
    local out="$1"; shift
    if "$CXX" "${LDSO[@]}" -o "$out" "$@" "$COMPAT" "$LIBGOMP_A" -lpthread -ldl -lm 2>"$out.static.log"; then
        echo "   $(basename "$out"): libgomp linked statically"
    else
        echo "   $(basename "$out"): static libgomp failed ($(grep -m1 -o 'relocation R_X86_64_[A-Z0-9_]*' "$out.static.log" || true)); linking libgomp.so"
        "$CXX" "${LDSO[@]}" -fopenmp -o "$out" "$@" "$COMPAT"
    fi
    strip --strip-unneeded "$out"
    check_glibc "$out"
}
say "libgkl_pdhmm.so, libgkl_utils.so"
link_so "$WORK/lib/libgkl_pdhmm.so" "${OBJS[@]}"
link_so "$WORK/lib/libgkl_utils.so" "$WORK/obj/utils.o"

# ------------------------------------------------------------------ Java
say "gatk-native-bindings-$GNB_TAG.jar"
find "$WORK/gnb/src/main/java" -name '*.java' | sort >"$WORK/gnb.sources"
"$JAVAC" -nowarn --release 8 -d "$WORK/classes-gnb" @"$WORK/gnb.sources" 2>&1 | grep -v '^warning: \[options\]' || true
cp "$WORK/gnb/LICENSE.TXT" "$WORK/classes-gnb/"
rm -f "$DEST/gatk-native-bindings-$GNB_TAG.jar"
"$JAR" --create --file "$DEST/gatk-native-bindings-$GNB_TAG.jar" --date=2024-01-01T00:00:00Z -C "$WORK/classes-gnb" . 2>/dev/null \
    || "$JAR" --create --file "$DEST/gatk-native-bindings-$GNB_TAG.jar" -C "$WORK/classes-gnb" .

say "gkl-$GKL_TAG.jar (PDHMM only: IntelPDHMM, IntelGKLUtils, NativeLibraryLoader + native/libgkl_{pdhmm,utils}.so)"
find "$WORK/gkl/src/main/java" -name '*.java' | sort >"$WORK/gkl.sources"
"$JAVAC" -nowarn --release 8 -cp "$DEST/gatk-native-bindings-$GNB_TAG.jar:$CP_LOGGING:$CP_IO" \
    -d "$WORK/classes-gkl" @"$WORK/gkl.sources" 2>&1 | grep -v '^warning: \[options\]' || true
# build.gradle: native libraries into build/classes/java/main/com/intel/gkl/native
# (NativeLibraryLoader: NativeLibraryLoader.class.getResource("native/" + System.mapLibraryName(name)))
mkdir -p "$WORK/classes-gkl/com/intel/gkl/native"
cp "$WORK/lib/libgkl_pdhmm.so" "$WORK/lib/libgkl_utils.so" "$WORK/classes-gkl/com/intel/gkl/native/"
cp "$WORK/gkl/LICENSE" "$WORK/classes-gkl/"
rm -f "$DEST/gkl-$GKL_TAG.jar" "$DEST/gkl.jar"
"$JAR" --create --file "$DEST/gkl-$GKL_TAG.jar" --date=2024-01-01T00:00:00Z -C "$WORK/classes-gkl" . 2>/dev/null \
    || "$JAR" --create --file "$DEST/gkl-$GKL_TAG.jar" -C "$WORK/classes-gkl" .
ln -s "gkl-$GKL_TAG.jar" "$DEST/gkl.jar"

# ------------------------------------------------------------------ verification program
say "verification classes (src/GklPdhmmCheck.java)"
rm -rf "$DEST/classes"
mkdir -p "$DEST/classes"
"$JAVAC" -nowarn --release 8 -cp "$DEST/gkl-$GKL_TAG.jar:$DEST/gatk-native-bindings-$GNB_TAG.jar" \
    -d "$DEST/classes" "$HERE/GklPdhmmCheck.java" 2>&1 | grep -v '^warning: \[options\]' || true

say "done"
ls -la "$DEST"
if [ "${1:-}" = "--verify" ]; then
    bash "$HERE/verify.sh"
fi
