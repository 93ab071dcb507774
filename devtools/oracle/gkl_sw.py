"""GKL's native Smith-Waterman (IntelSmithWaterman) through jpype.

Drives com.intel.gkl.smithwaterman.IntelSmithWaterman as GATK's
SmithWatermanIntelAligner does: one pair per call, returning the CIGAR
string and the alignment offset. Uses the shared JVM of oracle.gkl.
"""
from __future__ import annotations

from .gkl import start_jvm

STRATEGY_NAMES = {9: "SOFTCLIP", 10: "INDEL", 11: "LEADING_INDEL", 12: "IGNORE"}


class GklSmithWaterman:
    def __init__(self):
        jpype = start_jvm()
        from com.intel.gkl.smithwaterman import IntelSmithWaterman
        from org.broadinstitute.gatk.nativebindings.smithwaterman import SWOverhangStrategy, SWParameters

        self._jpype = jpype
        self._bytes = jpype.JArray(jpype.JByte)
        self._SWParameters = SWParameters
        self._strategies = {name: getattr(SWOverhangStrategy, name) for name in STRATEGY_NAMES.values()}
        self.impl = IntelSmithWaterman()
        if not self.impl.load(None):
            raise RuntimeError("GKL Smith-Waterman failed to load its native library")
        self._params = {}

    def _strategy(self, overhang):
        name = STRATEGY_NAMES.get(overhang, overhang) if isinstance(overhang, int) else str(overhang)
        name = getattr(overhang, "name", name).upper()
        return self._strategies[name]

    def _param(self, params):
        key = tuple(int(v) for v in params)
        p = self._params.get(key)
        if p is None:
            p = self._params[key] = self._SWParameters(*key)
        return p

    def prepare(self, params, overhang):
        """A fast callable (ref_bytes, alt_bytes) -> (cigar, offset) for one setting."""
        p, s, conv, impl = self._param(params), self._strategy(overhang), self._bytes, self.impl

        def call(ref: bytes, alt: bytes):
            r = impl.align(conv(ref), conv(alt), p, s)
            return str(r.cigar), int(r.alignment_offset)

        return call

    def align(self, ref, alt, params, overhang):
        ref = ref.encode() if isinstance(ref, str) else bytes(ref)
        alt = alt.encode() if isinstance(alt, str) else bytes(alt)
        return self.prepare(params, overhang)(ref, alt)
