#!/usr/bin/env python3
"""Region-mode check of pdhmm_oracle on GKL's test file: one region of every
distinct read x every distinct haplotype of the file, computed in ONE
computeLikelihoods batch call (--region --api batch); each of the file's pairs
is looked up in the (R, H) result and compared with its expected value.

  region_check.py ORACLE TESTFILE IMPL THREADS MAXMEM [TOL]"""

import subprocess
import sys

oracle, path, impl, threads, maxmem = sys.argv[1:6]
tol = float(sys.argv[6]) if len(sys.argv) > 6 else 1e-4
reads, haps, pairs = {}, {}, []
for line in open(path):
    if line.startswith("#") or not line.strip():
        continue
    s = line.rstrip("\n").split("\t")
    hap = (s[0], ",".join(str(int(x) & 0xFF) for x in s[1].strip("[]").split(",")))
    read = (s[2],) + tuple(",".join(str(ord(c) - 33) for c in s[k]) for k in range(3, 7))
    hi = haps.setdefault(hap, len(haps))
    ri = reads.setdefault(read, len(reads))
    pairs.append((ri, hi, float(s[7])))
text = "".join("R\t" + "\t".join(r) + "\n" for r in reads) + "".join("H\t" + "\t".join(h) + "\n" for h in haps)
cmd = [oracle, "--region", "--api", "batch", "--impl", impl, "--threads", threads, "--max-mem-mb", maxmem]
p = subprocess.run(cmd, input=text, capture_output=True, text=True)
vals = [float(v) for v in p.stdout.split()] if not p.stdout.startswith("ERROR") else []
R, H = len(reads), len(haps)
if p.returncode or len(vals) != R * H:
    print(f"FAILED rc={p.returncode}: {p.stdout[:300]} {p.stderr[-300:]}")
    sys.exit(1)
d = max(abs(vals[ri * H + hi] - e) for ri, hi, e in pairs)
ok = d <= tol
print(
    f"region {R} reads x {H} haps = {R * H} pairs in one call (impl {impl}, threads {threads}, "
    f"max-mem-mb {maxmem}): {len(pairs)} file pairs, max |diff| {d:.3g} {'OK' if ok else 'FAILED'}"
)
sys.exit(0 if ok else 1)
