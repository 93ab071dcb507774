"""The shim's com.intel.gkl.pdhmm.IntelPDHMM through jpype (in the shim's
own class loader, devtools.oracle.shim), and the stored GKL 0.9 results it
is checked against (devtools.pdhmm_head_data)."""

from __future__ import annotations

import numpy as np

from .. import pdhmm_head_data
from . import shim

PKG = "org.broadinstitute.gatk.nativebindings.pdhmm."


def stored_regions() -> list:
    """tests/data/pdhmm-gatk-head.in as (reads, haps) tuples."""
    return read_pd_regions(pdhmm_head_data.REGIONS)


def stored_results() -> dict:
    """{region: GKL 0.9's likelihoods} of tests/data/pdhmm-gatk-head.gkl09.txt."""
    with open(pdhmm_head_data.RESULTS) as f:
        values, _ = pdhmm_head_data.parse("".join(ln for ln in f if not ln.startswith("#")))
    return {k: np.array(v) for k, v in values.items()}


def read_pd_regions(path) -> list:
    """The inverse of java_harness.write_pd_regions."""
    out = []
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    i = 0
    while i < len(lines):
        nr, nh = map(int, lines[i].split())
        reads = []
        for ln in lines[i + 1 : i + 1 + nr]:
            f = ln.split()
            reads.append((f[0].encode(),) + tuple(bytes(c - 33 for c in x.encode()) for x in f[1:]))
        haps = []
        for ln in lines[i + 1 + nr : i + 1 + nr + nh]:
            bases, pd = ln.split()
            haps.append((bases.encode(), bytes(int(v) & 0xFF for v in pd.split(","))))
        out.append((reads, haps))
        i += 1 + nr + nh
    return out


class PdBinding:
    """The shim's IntelPDHMM as GATK's VectorLoglessPairPDHMM drives it: new,
    load(null), initialize(args) (GATK's defaults unless given; args=None
    passes null), computeLikelihoods per region, done()."""

    def __init__(self, threads=8, avx="FASTEST_AVAILABLE", omp="FASTEST_AVAILABLE", memory_mb=1024, null_args=False):
        import jpype

        self._jpype = jpype
        get = shim.shim_class
        self.Read = get(PKG + "ReadDataHolder")
        self.Hap = get(PKG + "HaplotypeDataHolder")
        self.Args = get(PKG + "PDHMMNativeArguments")
        self.impl = get("com.intel.gkl.pdhmm.IntelPDHMM")()
        if not self.impl.load(None):
            raise RuntimeError("shim IntelPDHMM.load(null) returned false")
        self.impl.initialize(None if null_args else self.arguments(threads, avx, omp, memory_mb))

    def arguments(self, threads=8, avx="FASTEST_AVAILABLE", omp="FASTEST_AVAILABLE", memory_mb=1024):
        a = self.Args()
        a.maxNumberOfThreads = threads
        a.avxLevel = None if avx is None else getattr(self.Args.AVXLevel, avx)
        a.openMPSetting = None if omp is None else getattr(self.Args.OpenMPSetting, omp)
        if memory_mb:
            a.setMaxMemoryInMB(memory_mb)
        return a

    def jbytes(self, b):
        return None if b is None else self._jpype.JArray(self._jpype.JByte)(b)

    def holders(self, region):
        """(reads, haps, out) Java arrays; a None field or holder is null."""
        reads, haps = region
        jr = []
        for r in reads:
            if r is None:
                jr.append(None)
                continue
            h = self.Read()
            h.readBases, h.readQuals, h.insertionGOP, h.deletionGOP, h.overallGCP = [self.jbytes(x) for x in r]
            jr.append(h)
        jh = []
        for hap in haps:
            if hap is None:
                jh.append(None)
                continue
            h = self.Hap()
            h.haplotypeBases, h.haplotypePDBases = self.jbytes(hap[0]), self.jbytes(hap[1])
            jh.append(h)
        out = self._jpype.JArray(self._jpype.JDouble)(len(reads) * len(haps))
        return self._array(self.Read, jr), self._array(self.Hap, jh), out

    def _array(self, cls, items):
        Array = self._jpype.JClass("java.lang.reflect.Array")
        arr = Array.newInstance(cls.class_, len(items))
        for i, x in enumerate(items):
            arr[i] = x
        return arr

    def compute(self, region) -> np.ndarray:
        jr, jh, out = self.holders(region)
        self.impl.computeLikelihoods(jr, jh, out)
        return np.array(out, dtype=np.float64)

    def legacy_arrays(self, pairs):
        """GKL's legacy layout for [(read, hap)]: 7 byte arrays in slots of
        the longest read / haplotype, the two length arrays, the sizes."""
        max_r = max(1, max(len(r[0]) for r, _ in pairs))
        max_h = max(1, max(len(h[0]) for _, h in pairs))
        n = len(pairs)
        hap = [bytearray(n * max_h) for _ in range(2)]
        read = [bytearray(n * max_r) for _ in range(5)]
        for i, (r, h) in enumerate(pairs):
            for k in range(2):
                hap[k][i * max_h : i * max_h + len(h[k])] = h[k]
            for k in range(5):
                read[k][i * max_r : i * max_r + len(r[k])] = r[k]
        JLong = self._jpype.JArray(self._jpype.JLong)
        hl = JLong([len(h[0]) for _, h in pairs])
        rl = JLong([len(r[0]) for r, _ in pairs])
        return [self.jbytes(bytes(a)) for a in hap + read] + [hl, rl, n, max_h, max_r]

    def legacy(self, pairs) -> np.ndarray:
        return np.array(self.impl.computePDHMM(*self.legacy_arrays(pairs)), dtype=np.float64)

    def done(self):
        self.impl.done()


def region_pairs(region) -> list:
    """A region's (read, hap) pairs, read-major (computeLikelihoods' order)."""
    reads, haps = region
    return [(r, h) for r in reads for h in haps]
