#!/usr/bin/env bash
# Checks the oracle build in DEST (default .bench/gkl09 at the repository
# root; README.md here):
#   1. pdhmm_oracle, pairs mode, each impl: GKL's test file within 1e-4 of its expected column;
#   2. pdhmm_oracle, region mode (one computeLikelihoods batch call), each impl, 1 and 2 threads,
#      and a 1 MB memory limit (several internal batches);
#   3. --mode time on a 50 reads x 8 haps region (100 bp / 300 bp);
#   4. GKL 0.9's IntelPDHMM from gkl-0.9.0.jar in a JVM (GklPdhmmCheck), each AVX level.
# TESTFILE (default GKL's file in tests/data/gkl-pdhmm), OUT (default /tmp/gkl09-verify).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$(cd "${DEST:-$HERE/../../../.bench/gkl09}" && pwd)"
TESTFILE="${TESTFILE:-$HERE/../../../tests/data/gkl-pdhmm/pdhmm_syn_199_68_51.txt}"
OUT="${OUT:-/tmp/gkl09-verify}"
mkdir -p "$OUT"
fail=0
IMPLS="serial avx2"
grep -qw avx512f /proc/cpuinfo && IMPLS="$IMPLS avx512"

echo "== ldd pdhmm_oracle"; ldd "$DEST/pdhmm_oracle"
python3 "$HERE/testfile_pairs.py" "$TESTFILE" "$OUT/expected.txt" >"$OUT/pairs.txt"
for impl in $IMPLS; do
    echo "== pairs mode, $impl"
    "$DEST/pdhmm_oracle" --api batch --impl "$impl" --threads 1 --max-mem-mb 4096 <"$OUT/pairs.txt" >"$OUT/$impl.out" 2>"$OUT/$impl.err"
    python3 "$HERE/compare.py" "$OUT/$impl.out" "$OUT/expected.txt" || fail=1
done
for impl in $IMPLS; do
    for th in 1 2; do
        for mem in 4096 1; do
            python3 "$HERE/region_check.py" "$DEST/pdhmm_oracle" "$TESTFILE" "$impl" "$th" "$mem" || fail=1
        done
    done
done
python3 "$HERE/timing_region.py" >"$OUT/region_50x8.txt"
TIMP=avx2; grep -qw avx512f /proc/cpuinfo && TIMP=avx512
echo "== --mode time, $TIMP, 50 reads x 8 haps"
"$DEST/pdhmm_oracle" --mode time --region --api batch --impl "$TIMP" --threads "$(nproc)" --reps 20 --max-mem-mb 4096 \
    <"$OUT/region_50x8.txt" 2>/dev/null || fail=1
if command -v java >/dev/null; then
    CP="$DEST/classes:$DEST/gkl-0.9.0.jar:$DEST/gatk-native-bindings-1.1.0.jar:${GKL_JARS:-/usr/share/java}/commons-logging.jar:${GKL_JARS:-/usr/share/java}/commons-io.jar"
    LEVELS="SCALAR AVX2 FASTEST_AVAILABLE"
    grep -qw avx512f /proc/cpuinfo && LEVELS="SCALAR AVX2 AVX512 FASTEST_AVAILABLE"
    for lvl in $LEVELS; do
        echo "== JVM: GKL 0.9 IntelPDHMM from gkl-0.9.0.jar, $lvl, 2 threads"
        java -cp "$CP" GklPdhmmCheck "$TESTFILE" "$lvl" 2 2>&1 | grep -v '^\[INFO\]\|^[A-Z][a-z][a-z] [0-9]' || fail=1
    done
fi
echo "== verify: $([ $fail = 0 ] && echo OK || echo FAILED)"
exit $fail
