"""pyphmm's GATK shim jar driven through jpype, beside real GKL in one JVM.

The shared JVM (oracle.gkl) has GKL's jars on the class path, so
`com.intel.gkl.*` there is GKL itself. The shim is loaded through its own
URLClassLoader whose parent is the platform loader (it cannot see gkl.jar),
with URLs [shim jar, gatk-native-bindings.jar, the pdhmm declarations of
bindings 1.1.0 (devtools.oracle.pdhmm_api)]; its holders therefore come
from that loader's copy of the bindings classes.
"""

from __future__ import annotations

import os

import numpy as np

from .. import ROOT as REPO
from ..regions import as_java_holders, make_region
from . import gkl as gkl_oracle
from . import pdhmm_api

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
        paths = (SHIM_JAR, BINDINGS_JAR, pdhmm_api.api_classes())
        urls = jpype.JArray(URL)([File(p).toURI().toURL() for p in paths])
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
        cls = {
            "shim": "com.intel.gkl.pairhmm.IntelPairHmm",
            "shim-omp": "com.intel.gkl.pairhmm.IntelPairHmmOMP",
            "gkl": "com.intel.gkl.pairhmm.IntelPairHmm",
            "gkl-omp": "com.intel.gkl.pairhmm.IntelPairHmmOMP",
        }[kind]
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
    """n small regions of GATK's shape in the holders' form (see
    devtools.regions.as_java_holders): 1..max_reads reads of 10-151 bp that
    are windows of 1..max_haps haplotypes of 30-521 bp, per-base qualities."""
    rng = np.random.default_rng(seed)
    return [
        as_java_holders(
            make_region(
                rng,
                int(rng.integers(1, max_reads + 1)),
                int(rng.integers(1, max_haps + 1)),
                (10, 151),
                (30, 521),
                mismatch=0.01,
                n_rate=0.001,
            )
        )
        for _ in range(n)
    ]
