#!/usr/bin/env python3
"""max |got - expected| of two one-value-per-line files; exit 1 above argv[3] (default 1e-4)."""

import math
import sys

got = [ln.split()[0] for ln in open(sys.argv[1]) if ln.strip()]
want = [ln.split()[0] for ln in open(sys.argv[2]) if ln.strip()]
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
if any(g.startswith("ERROR") for g in got) or len(got) != len(want):
    print(f"FAILED: {len(got)} values for {len(want)} expected; first line {got[:1]}")
    sys.exit(1)
d = max(abs(float(g) - float(w)) for g, w in zip(got, want))
print(f"{len(got)} pairs, max |diff| {d:.3g}", "OK" if d <= tol and not math.isnan(d) else "FAILED")
sys.exit(0 if d <= tol else 1)
