"""GKL 0.9's PDHMM and GATK's Java LoglessPDPairHMM, the peers of pyphmm's
PDHMM, driven through an oracle build outside the repository.

The oracle directory (``--gkl DIR`` of the scripts) holds GKL 0.9.0 and
GATK built from their sources, with three command-line drivers:

- ``pdhmm_oracle``: GKL's native library called as its JNI layer calls it
  (``--api batch``: ``computeLikelihoods``' batch entry point, one region
  per call; ``--impl serial|avx2|avx512``; ``--threads N`` with OpenMP;
  ``--mode time`` prints GCUPS of the best of ``--reps`` runs);
- ``GatkPdhmmOracle``: GATK's ``LoglessPDPairHMM`` (``--impl java``);
- ``gkl_jni_oracle``: GKL's Java class and JNI.

Input is text: a region as ``R`` lines (read bases, then base, insertion,
deletion and gap continuation qualities as comma-separated ints) and ``H``
lines (haplotype bases, PD bytes as ints); pairs as one line each
(``HAP PD READ QUALS INS DEL GCP``). Output: one ``%.17g`` value per pair, or
``ERROR`` and the exception GKL would throw.

Nothing here contains GKL or GATK code; it runs the given builds
(devtools/oracle/gkl09/build.sh makes GKL's from its source).
"""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np


def missing(oracle_dir: str, tool: str = "pdhmm_oracle") -> str | None:
    """None if the oracle directory has `tool`, else why not."""
    path = os.path.join(oracle_dir, tool)
    if not os.access(path, os.X_OK):
        return f"{path} not found (an oracle build of GKL 0.9's PDHMM is needed)"
    return None


def as_tuples(reads, haps) -> tuple:
    """A region as tuples of bytes: reads (bases, quals, ins, dels, gcp),
    haps (bases, pd); batches (ReadBatch, PDHaplotypeBatch) are converted,
    lists of tuples kept."""
    if hasattr(reads, "offsets"):
        o = reads.offsets.tolist()
        cols = [np.asarray(getattr(reads, f), np.uint8) for f in ("bases", "quals", "ins", "dels", "gcp")]
        reads = [tuple(c[a:b].tobytes() for c in cols) for a, b in zip(o[:-1], o[1:])]
    if hasattr(haps, "offsets"):
        o = haps.offsets.tolist()
        haps = [(haps.bases[a:b].tobytes(), haps.pd[a:b].tobytes()) for a, b in zip(o[:-1], o[1:])]
    return list(reads), list(haps)


def _ints(b: bytes) -> str:
    return ",".join(map(str, b))


def _read_fields(r) -> list:
    return [r[0].decode("latin-1")] + [_ints(q) for q in r[1:]]


def _hap_fields(h) -> list:
    return [h[0].decode("latin-1"), _ints(h[1])]


def region_text(reads, haps) -> str:
    reads, haps = as_tuples(reads, haps)
    lines = ["\t".join(["R"] + _read_fields(r)) for r in reads]
    lines += ["\t".join(["H"] + _hap_fields(h)) for h in haps]
    return "\n".join(lines) + "\n"


def pairs_text(regions) -> str:
    """Every pair of every region, read-major, one line each."""
    lines = []
    for reads, haps in regions:
        reads, haps = as_tuples(reads, haps)
        hs = [_hap_fields(h) for h in haps]
        for r in reads:
            fields = _read_fields(r)
            lines += ["\t".join(h + fields) for h in hs]
    return "\n".join(lines) + "\n"


def parse_values(text: str, count: int, what: str) -> np.ndarray:
    """count values (%.17g, -inf) of an oracle's output; ValueError naming
    the first ERROR line."""
    values = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("ERROR"):
            raise ValueError(f"{what}: {line.strip()}")
        values.append(float(line.split()[0].replace("Infinity", "inf")))
    if len(values) != count:
        raise ValueError(f"{what}: expected {count} values, got {len(values)}")
    return np.array(values, dtype=np.float64)


def gkl_region(oracle_dir: str, reads, haps, impl: str = "serial", threads: int = 1) -> np.ndarray:
    """GKL's results for one region, as GATK's computeLikelihoods gets them: (R, H)."""
    cmd = [os.path.join(oracle_dir, "pdhmm_oracle"), "--region", "--api", "batch", "--impl", impl]
    cmd += ["--threads", str(threads), "--max-mem-mb", "4096"]
    p = subprocess.run(cmd, input=region_text(reads, haps), capture_output=True, text=True, encoding="latin-1")
    if p.returncode != 0:
        raise RuntimeError(f"pdhmm_oracle failed ({p.returncode}): {p.stdout[-500:]}{p.stderr[-500:]}")
    return parse_values(p.stdout, len(reads) * len(haps), "GKL").reshape(len(reads), len(haps))


def gatk_java_pairs(oracle_dir: str, regions) -> np.ndarray:
    """GATK's LoglessPDPairHMM on every pair of every region (read-major), one JVM."""
    cmd = [os.path.join(oracle_dir, "GatkPdhmmOracle"), "--impl", "java"]
    p = subprocess.run(cmd, input=pairs_text(regions), capture_output=True, text=True, encoding="latin-1")
    if p.returncode != 0:
        raise RuntimeError(f"GatkPdhmmOracle failed ({p.returncode}): {p.stderr[-1000:]}")
    count = sum(len(r) * len(h) for r, h in regions)
    return parse_values(p.stdout, count, "GATK Java")


_TIME = re.compile(r"threads=(\d+) pairs=(\d+) cells=(\d+) best_s=([0-9.]+)")


def gkl_seconds(oracle_dir: str, reads, haps, impl: str, threads: int, reps: int = 3) -> dict:
    """GKL's best time of `reps` runs on one region, one batch call per run
    (what GATK's computeLikelihoods makes), single-threaded and, if
    threads > 1, with OpenMP on `threads` threads: {threads: seconds}."""
    cmd = [os.path.join(oracle_dir, "pdhmm_oracle"), "--mode", "time", "--region", "--api", "batch"]
    cmd += ["--impl", impl, "--threads", str(threads), "--reps", str(reps), "--max-mem-mb", "4096"]
    p = subprocess.run(cmd, input=region_text(reads, haps), capture_output=True, text=True, encoding="latin-1")
    out = {}
    for m in _TIME.finditer(p.stdout):
        out[int(m.group(1))] = float(m.group(4))
    if p.returncode != 0 or not out:
        raise RuntimeError(f"pdhmm_oracle --mode time failed: {p.stdout[-500:]}{p.stderr[-500:]}")
    return out
