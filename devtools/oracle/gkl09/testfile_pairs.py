#!/usr/bin/env python3
"""GKL's PDHMM test file (hap, [pd], read, quals, ins, del, gcp as phred+33,
expected) -> pdhmm_oracle's pairs format on stdout; expected values to argv[2]."""

import sys

src, expected_out = sys.argv[1], sys.argv[2]
with open(src) as f, open(expected_out, "w") as e:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        s = line.rstrip("\n").split("\t")
        pd = [int(x) & 0xFF for x in s[1].strip("[]").split(",")]
        q = [",".join(str(ord(c) - 33) for c in s[k]) for k in range(3, 7)]
        print("\t".join([s[0], ",".join(map(str, pd)), s[2]] + q))
        e.write(s[7] + "\n")
