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

Nothing here builds or contains GKL or GATK code; it runs the given builds.
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


def _ints(a) -> str:
    return ",".join(map(str, np.asarray(a, np.uint8).tolist()))


def _text(b) -> str:
    return bytes(np.asarray(b, np.uint8)).decode("latin-1")


def read_fields(reads, i: int) -> list:
    """Read i of a ReadBatch as the oracle's fields."""
    s = slice(int(reads.offsets[i]), int(reads.offsets[i + 1]))
    return [_text(reads.bases[s])] + [_ints(getattr(reads, f)[s]) for f in ("quals", "ins", "dels", "gcp")]


def hap_fields(haps, h: int) -> list:
    s = slice(int(haps.offsets[h]), int(haps.offsets[h + 1]))
    return [_text(haps.bases[s]), _ints(haps.pd[s])]


def region_text(reads, haps) -> str:
    lines = ["\t".join(["R"] + read_fields(reads, i)) for i in range(len(reads))]
    lines += ["\t".join(["H"] + hap_fields(haps, h)) for h in range(len(haps))]
    return "\n".join(lines) + "\n"


def pairs_text(regions) -> str:
    """Every pair of every region, read-major, one line each."""
    lines = []
    for reads, haps in regions:
        hs = [hap_fields(haps, h) for h in range(len(haps))]
        for i in range(len(reads)):
            r = read_fields(reads, i)
            lines += ["\t".join(h + r) for h in hs]
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
