#!/usr/bin/env python3
"""GATK's production shape: K HaplotypeCaller-like JVMs (or one JVM with T
Java threads, the Spark executor shape) sharing a node, each running GATK's
call sequence through pyphmm's shim on its own share of a record file; GKL
AVX with the same shape and one GKL OMP JVM with all cores in the same run.

  python3 scripts/bench_multiproc.py --processes K [--threads T] [--regions FILE]
        [--preset typical|small] [--count N] [--mps off|on|both] [--reps R] [--warmup W]
        [--gkl-reps R] [--gkl-warmup W] [--json OUT]

Every caller thread (java_shim/bench/BenchMultiproc.java) creates its own
com.intel.gkl.pairhmm.IntelPairHmm, calls load(null) and initialize(args)
itself (GKL turns flush-to-zero on for the initializing thread only), runs
--warmup passes over its share (GKL: --gkl-warmup), then waits at a start
barrier shared by all JVMs of the phase, so JVM start-up, parsing, CUDA
context creation, the per-process calibration and the JIT compilation of
the call path lie outside the timed span. The shim's default is 20 passes
on a GPU: after one pass, 16 JVMs under MPS still compiled during the
timed passes (p99 2-4 ms, 880-900 GCUPS against 1,380-1,440 after 20). It then makes one
computeLikelihoods call per region, --reps times, and calls done(). Caller
w of W = K x T takes regions w, w + W, w + 2W, ...

Printed per phase: each process's GCUPS (its cells / its span from the
barrier) and per-call median / p99 latency, and one line containing
`aggregate`: all cells / (last finish - barrier). Phases: the shim (MPS off
and/or on), GKL AVX (K x T callers, 1 native thread each) and GKL OMP (one
JVM, one caller, --omp-threads native threads; GKL's AVX and OMP libraries
export the same JNI symbols, so they never share a JVM). Every process's
likelihoods are compared with GKL AVX's: max |diff| printed, and the script
fails (exit 1) if any exceeds 1e-5.

Data: --regions FILE (record format of the README), else --count regions of
scripts/gen_regions.py's --preset (typical: 60 reads x 4 haplotypes, 150 /
350 bp, 18.9 G cells for 1,500 regions; small: 10-60 reads x 2-8
haplotypes).

--mps on starts an NVIDIA MPS control daemon for the shim's phase with
private CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY under /tmp (0700)
handed to the shim JVMs only, and quits it when the phase ends, on errors,
Ctrl-C and SIGTERM too (pyphmm.mps.private_daemon); it changes no device
setting. --mps both runs the shim without, then with MPS.

Without a GPU (no /dev/nvidiactl) the shim JVMs run pyphmm's CPU backend
(PYPHMM_BACKEND=cpu unless set), so the harness runs anywhere GKL does.

Needs a JRE (JAVA_HOME or java on PATH), GKL's jars (GKL_JARS, default
/usr/share/java) and native libraries (GKL_JNI, else the JVM's default
path), the shim jar (--shim-jar, $PYPHMM_GATK_JAR, default
pyphmm/pyphmm-gatk.jar) and the harness classes: --classes DIR, else
compiled here with javac, else .carry/bench_classes (made by
scripts/prepare_gpu_carry.sh). JVM options: $JAVA_OPTS.
"""

import _checkout  # noqa: F401  (the repository root importable)

from devtools.multiproc import main

if __name__ == "__main__":
    raise SystemExit(main(doc=__doc__))
