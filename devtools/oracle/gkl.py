"""The real peer: Intel GKL (Debian's libgkl-java/libgkl-jni) through jpype.

One JVM per process (a jpype limit), started on first use with GKL's jars
on the class path, so `com.intel.gkl.*` names resolve to GKL itself. Code that
needs pyphmm's Java shim loads it in its own class loader (see the shim
tests), never on this class path.
"""

from __future__ import annotations

import os

import numpy as np

from .. import jvm_guard

JAR_NAMES = (
    "gkl.jar",
    "gatk-native-bindings.jar",
    "commons-io.jar",
    "log4j-api.jar",
    "log4j-core.jar",
    "htsjdk.jar",
    "commons-logging.jar",
)


def jar_dir() -> str:
    return os.environ.get("GKL_JARS", "/usr/share/java")


def class_path() -> list:
    d = jar_dir()
    return [os.path.join(d, n) for n in JAR_NAMES if os.path.exists(os.path.join(d, n))]


def missing_reason():
    """None when GKL can be driven here, else a sentence saying what is missing."""
    try:
        import jpype  # noqa: F401
    except ImportError:
        return "jpype1 is not installed"
    if not os.path.exists(os.path.join(jar_dir(), "gkl.jar")):
        return f"gkl.jar not found in {jar_dir()} (apt-get install libgkl-java libgkl-jni)"
    return None


def start_jvm():
    """Starts the shared JVM (idempotent) and returns the jpype module."""
    jvm_guard.check("the shared jpype JVM with GKL")
    import jpype
    import jpype.imports  # noqa: F401

    if not jpype.isJVMStarted():
        args = []
        jni = os.environ.get("GKL_JNI")
        if jni:
            args.append(f"-Djava.library.path={jni}")
        jpype.startJVM(*args, classpath=class_path(), convertStrings=False)
    return jpype


_pairhmm_flavour = None


class GklPairHmm:
    """GKL's IntelPairHmm driven exactly as GATK drives it.

    One flavour (AVX or OMP) per process: both classes declare the same
    native methods, so the JVM binds them to whichever of
    libgkl_pairhmm.so / libgkl_pairhmm_omp.so loaded first, and a second
    flavour would silently run the first one's code."""

    def __init__(self, double: bool = False, threads: int = 1, omp: bool = False):
        global _pairhmm_flavour
        if _pairhmm_flavour is not None and _pairhmm_flavour != omp:
            raise RuntimeError(
                "GKL IntelPairHmm and IntelPairHmmOMP cannot both be used in one JVM "
                "(they share JNI symbols); use a separate process"
            )
        _pairhmm_flavour = omp
        jpype = start_jvm()
        from com.intel.gkl.pairhmm import IntelPairHmm, IntelPairHmmOMP
        from org.broadinstitute.gatk.nativebindings.pairhmm import (
            HaplotypeDataHolder,
            PairHMMNativeArguments,
            ReadDataHolder,
        )

        self._jpype = jpype
        self._Read, self._Hap = ReadDataHolder, HaplotypeDataHolder
        self.impl = IntelPairHmmOMP() if omp else IntelPairHmm()
        if not self.impl.load(None):
            raise RuntimeError("GKL PairHMM failed to load its native library")
        args = PairHMMNativeArguments()
        args.maxNumberOfThreads = threads
        args.useDoublePrecision = double
        self.impl.initialize(args)

    def _bytes(self, arr):
        return self._jpype.JArray(self._jpype.JByte)(bytes(np.asarray(arr, dtype=np.uint8)))

    def holders(self, reads, haplotypes):
        """Java holders for a ReadBatch/list of Read and haplotype sequences."""
        jr = []
        for r in reads:
            h = self._Read()
            h.readBases = self._bytes(np.frombuffer(r.bases, np.uint8))
            h.readQuals = self._bytes(r.quals)
            h.insertionGOP = self._bytes(r.ins)
            h.deletionGOP = self._bytes(r.dels)
            h.overallGCP = self._bytes(r.gcp)
            jr.append(h)
        jh = []
        for hap in haplotypes:
            h = self._Hap()
            h.haplotypeBases = self._bytes(np.frombuffer(bytes(hap), np.uint8))
            jh.append(h)
        return (self._jpype.JArray(self._Read)(jr), self._jpype.JArray(self._Hap)(jh))

    def compute(self, reads, haplotypes) -> np.ndarray:
        reads = list(reads)
        haplotypes = [h.encode() if isinstance(h, str) else bytes(h) for h in haplotypes]
        jr, jh = self.holders(reads, haplotypes)
        out = self._jpype.JArray(self._jpype.JDouble)(len(reads) * len(haplotypes))
        self.impl.computeLikelihoods(jr, jh, out)
        return np.array(out, dtype=np.float64).reshape(len(reads), len(haplotypes))

    def done(self):
        self.impl.done()


def gkl_regions(regions, double=False):
    """GKL's IntelPairHmm on each (ReadBatch, HaplotypeBatch) region, one
    computeLikelihoods per region.

    GKL's precision flag is process-global native state, so the instance is
    (re)initialised right before use."""
    g = GklPairHmm(double=double, threads=1)
    return [g.compute(list(r), [h[i] for i in range(len(h))]) for r, h in regions]
