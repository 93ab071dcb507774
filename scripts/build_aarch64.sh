#!/usr/bin/env bash
# Cross-builds pyphmm's native library for Linux AArch64 on an x86-64 Debian
# machine: the CPU kernels (NEON and portable), the C ABI and, when jni.h is
# found, GKL's JNI entry points; then the check program that
# tests/test_aarch64.py runs under qemu-aarch64.
#
#   scripts/build_aarch64.sh [OUTDIR]        (default: build/aarch64)
#
# Writes OUTDIR/libpyphmm.so (setup.py embeds it in the GATK shim jar as
# pyphmm/native/linux-aarch64/libpyphmm.so when present) and
# OUTDIR/aarch64_check. Incremental: a source is recompiled when it or any
# header under native/ is newer than its object.
#
# Needs g++-aarch64-linux-gnu (scripts/test_aarch64.sh installs it).
# CXX_AARCH64 names another cross compiler, PYPHMM_JNI_INCLUDE a directory
# with jni.h and linux/jni_md.h (the JNI headers do not depend on the CPU).
# No CUDA: cross-compiling the CUDA kernels needs NVIDIA's aarch64 ("sbsa")
# target libraries, which this machine does not have; on an AArch64 host
# with nvcc (GH200), setup.py builds them natively (see README, "ARM").
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
out="${1:-build/aarch64}"
cxx="${CXX_AARCH64:-aarch64-linux-gnu-g++}"
jobs="${PYPHMM_BUILD_JOBS:-$(nproc)}"

if ! command -v "$cxx" >/dev/null; then
    echo "build_aarch64: $cxx not found (apt-get install g++-aarch64-linux-gnu, or run scripts/test_aarch64.sh)" >&2
    exit 1
fi

version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' pyphmm/_version.py)"

# JNI headers, looked up as setup.py does.
jni_inc=""
for d in "${PYPHMM_JNI_INCLUDE:-}" ${JAVA_HOME:+"$JAVA_HOME/include"} /usr/lib/jvm/default-java/include \
         /usr/lib/jvm/*/include "$root/.carry/jni_include"; do
    if [ -n "$d" ] && [ -f "$d/jni.h" ] && [ -f "$d/linux/jni_md.h" ]; then jni_inc="$d"; break; fi
done

# The flags of setup.py's C++ build (keep in step with it): no FMA
# contraction, so float results round as GKL's (GCC contracts by default on
# AArch64).
flags=(-std=c++17 -O3 -fPIC -pthread -fvisibility=hidden -ffp-contract=off -Wall -Wextra -Wno-psabi
       "-I$root/native/include" "-I$root/native" "-DPYPHMM_VERSION=\"$version\"")
sources=(native/frontends/records/*.cc native/common/*.cc native/cpu/*.cc native/dispatch/*.cc native/cuda/cuda_absent.cc)
if [ -n "$jni_inc" ]; then
    flags+=(-DPYPHMM_WITH_JNI "-I$jni_inc" "-I$jni_inc/linux")
    sources+=(native/frontends/jni/*.cc)
    echo "build_aarch64: JNI headers from $jni_inc"
else
    echo "build_aarch64: no jni.h found: building without GKL's JNI entry points"
fi

mkdir -p "$out/obj"
stamp="$out/obj/.flags"
# A change of flags (JNI found or not, version) rebuilds everything.
if [ "$(cat "$stamp" 2>/dev/null)" != "${flags[*]}" ]; then rm -f "$out"/obj/*.o; fi
printf '%s' "${flags[*]}" > "$stamp"

objs=()
pids=()
for src in "${sources[@]}"; do
    obj="$out/obj/$(echo "${src#native/}" | tr / _).o"
    objs+=("$obj")
    stale=0
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
        stale=1
    elif [ -n "$(find native -name '*.h' -newer "$obj" -print -quit)" ]; then
        stale=1
    fi
    [ "$stale" = 1 ] || continue
    echo "build_aarch64: compiling $src"
    "$cxx" "${flags[@]}" -c "$src" -o "$obj.part" && mv "$obj.part" "$obj" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done

lib="$out/libpyphmm.so"
# Linked as setup.py links: against Debian 12's glibc and libstdc++, so the
# library needs glibc >= 2.34 and GCC 12's libstdc++ (Ubuntu 22.04 and later).
# (Linking libstdc++ statically would raise the glibc floor to 2.36.)
"$cxx" -shared -o "$lib.part" "${objs[@]}" -pthread -Wl,--exclude-libs,ALL
mv "$lib.part" "$lib"
echo "build_aarch64: wrote $lib"

check="$out/aarch64_check"
"$cxx" -std=c++17 -O2 -Wall -Wextra "-I$root/native/include" tests/native/aarch64_check.cc -o "$check.part" \
    -L"$out" -lpyphmm -Wl,-rpath,'$ORIGIN' -pthread
mv "$check.part" "$check"
echo "build_aarch64: wrote $check"
