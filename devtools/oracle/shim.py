"""pyphmm's GATK shim jar driven through jpype, beside real GKL in one JVM.

The shared JVM (oracle.gkl) has GKL's jars on the class path, so
`com.intel.gkl.*` there is GKL itself. The shim is loaded through its own
URLClassLoader whose parent is the platform loader (it cannot see gkl.jar),
with URLs [shim jar, gatk-native-bindings.jar]; its holders therefore come
from that loader's copy of the bindings classes.
"""
from __future__ import annotations

import os

import numpy as np

from . import gkl as gkl_oracle

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SHIM_JAR = os.environ.get("PYPHMM_GATK_JAR", os.path.join(REPO, "pyphmm", "pyphmm-gatk.jar"))
BINDINGS_JAR = os.path.join(gkl_oracle.jar_dir(), "gatk-native-bindings.jar")

_loader = None


def shim_loader():
    """The one class loader of the shim in this JVM (a native library can be
    loaded by one class loader only)."""
    global _loader
    if _loader is None:
        jpype = gkl_oracle.start_jvm()
        URL = jpype.JClass("java.net.URL")
        File = jpype.JClass("java.io.File")
        ClassLoader = jpype.JClass("java.lang.ClassLoader")
        URLClassLoader = jpype.JClass("java.net.URLClassLoader")
        urls = jpype.JArray(URL)([File(SHIM_JAR).toURI().toURL(), File(BINDINGS_JAR).toURI().toURL()])
        _loader = URLClassLoader(urls, ClassLoader.getPlatformClassLoader())
    return _loader


def shim_class(name: str):
    import jpype
    return jpype.JClass(shim_loader().loadClass(name))


class Binding:
    """A PairHMMNativeBinding (shim or GKL) driven exactly as GATK drives it:
    new, load(null), initialize(args), computeLikelihoods per region, done()."""

    def __init__(self, kind: str, double: bool = False, threads: int = 1):
        jpype = gkl_oracle.start_jvm()
        self._jpype = jpype
        if kind.startswith("shim"):
            get = shim_class
        else:
            get = lambda n: jpype.JClass(n)  # noqa: E731
        cls = {"shim": "com.intel.gkl.pairhmm.IntelPairHmm", "shim-omp": "com.intel.gkl.pairhmm.IntelPairHmmOMP",
               "gkl": "com.intel.gkl.pairhmm.IntelPairHmm", "gkl-omp": "com.intel.gkl.pairhmm.IntelPairHmmOMP"}[kind]
        self.Read = get("org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder")
        self.Hap = get("org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder")
        Args = get("org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments")
        self.impl = get(cls)()
        if not self.impl.load(None):
            raise RuntimeError(f"{kind}: load(null) returned false")
        args = Args()
        args.maxNumberOfThreads = threads
        args.useDoublePrecision = double
        self.impl.initialize(args)

    def jbytes(self, b: bytes):
        return self._jpype.JArray(self._jpype.JByte)(b)

    def holders(self, region):
        """Java arrays for a region: (reads, haps, out). Fields may be given
        as None (null) to test error paths."""
        reads, haps = region
        jr = []
        for r in reads:
            h = self.Read()
            fields = [self.jbytes(x) if x is not None else None for x in r]
            h.readBases, h.readQuals, h.insertionGOP, h.deletionGOP, h.overallGCP = fields
            jr.append(h)
        jh = []
        for hap in haps:
            h = self.Hap()
            h.haplotypeBases = self.jbytes(hap) if hap is not None else None
            jh.append(h)
        out = self._jpype.JArray(self._jpype.JDouble)(len(reads) * len(haps))
        return self._array(self.Read, jr), self._array(self.Hap, jh), out

    def _array(self, cls, items):
        Array = self._jpype.JClass("java.lang.reflect.Array")
        arr = Array.newInstance(cls.class_, len(items))
        for i, x in enumerate(items):
            arr[i] = x
        return arr

    def compute_holders(self, jr, jh, out) -> np.ndarray:
        self.impl.computeLikelihoods(jr, jh, out)
        return np.array(out, dtype=np.float64)

    def compute(self, region) -> np.ndarray:
        return self.compute_holders(*self.holders(region))

    def done(self):
        self.impl.done()


def random_regions(n: int, seed: int, max_reads: int = 60, max_haps: int = 8):
    """Realistic regions: haplotypes are variants of one reference window,
    reads are sampled from them with sequencing errors; reads 10-151 bp,
    haplotypes 30-521 bp, base quals 6..60, ins/del GOP 10..90, GCP 5..40.
    A region is (reads, haps); a read is (bases, quals, ins, dels, gcp)."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ACGT", np.uint8)
    regions = []
    for _ in range(n):
        ref_len = int(rng.integers(30, 522))
        ref = alphabet[rng.integers(0, 4, ref_len)]
        haps = []
        for _h in range(int(rng.integers(1, max_haps + 1))):
            hap = ref.copy()
            for _v in range(int(rng.integers(0, 4))):
                pos = int(rng.integers(0, len(hap)))
                kind = rng.integers(0, 3)
                if kind == 0:
                    hap[pos] = alphabet[rng.integers(0, 4)]
                elif kind == 1 and len(hap) < 521:
                    ins = alphabet[rng.integers(0, 4, int(rng.integers(1, min(10, 522 - len(hap)) + 1)))]
                    hap = np.concatenate([hap[:pos], ins, hap[pos:]])[:521]
                elif len(hap) > 40:
                    hap = np.delete(hap, range(pos, min(len(hap), pos + int(rng.integers(1, 10)))))
            haps.append(bytes(hap[:521]))
        reads = []
        for _r in range(int(rng.integers(1, max_reads + 1))):
            src = np.frombuffer(haps[int(rng.integers(0, len(haps)))], np.uint8)
            length = int(rng.integers(10, min(151, len(src)) + 1))
            start = int(rng.integers(0, len(src) - length + 1))
            bases = src[start:start + length].copy()
            errors = rng.random(length) < 0.01
            bases[errors] = alphabet[rng.integers(0, 4, int(errors.sum()))]
            if rng.random() < 0.02:
                bases[int(rng.integers(0, length))] = ord("N")
            quals = rng.integers(6, 61, length).astype(np.uint8)
            ins = rng.integers(10, 91, length).astype(np.uint8)
            dels = rng.integers(10, 91, length).astype(np.uint8)
            gcp = rng.integers(5, 41, length).astype(np.uint8)
            reads.append((bytes(bases), quals.tobytes(), ins.tobytes(), dels.tobytes(), gcp.tobytes()))
        regions.append((reads, haps))
    return regions


def region_cells(region) -> int:
    reads, haps = region
    return sum(len(r[0]) for r in reads) * sum(len(h) for h in haps)
