#!/usr/bin/env python3
"""A seeded region for `pdhmm_oracle --mode time`: R reads of RL bp x H
haplotypes of HL bp (default 50 x 100 bp, 8 x 300 bp), written in the
oracle's region format. Haplotypes: one reference with a few PD events
(SNPs: SNP + alt-base bit; deletions: DEL_START .. DEL_END) plus determined
variants; reads: windows of the haplotypes with ~1% errors, base quals
10..40, insertion/deletion GOP 45, GCP 10.

  timing_region.py [R RL H HL SEED] > region.txt"""

import random
import sys

defaults = [50, 100, 8, 300, 9]
args = [int(a) for a in sys.argv[1:6]]
R, RL, H, HL, SEED = args + defaults[len(args) :]
rng = random.Random(SEED)
SNP, DEL_START, DEL_END = 1, 2, 4
BIT = {"A": 8, "C": 16, "G": 32, "T": 64}
ref = [rng.choice("ACGT") for _ in range(HL)]
pd = [0] * HL
for pos in rng.sample(range(10, HL - 10), 6):  # SNP sites
    pd[pos] |= SNP | BIT[rng.choice([b for b in "ACGT" if b != ref[pos]])]
start = rng.randrange(20, HL - 30)  # one deletion span
pd[start] |= DEL_START
pd[start + 3] |= DEL_END
haps = []
for h in range(H):
    bases = list(ref)
    for pos in rng.sample(range(HL), h):  # determined differences between haplotypes
        bases[pos] = rng.choice("ACGT")
    haps.append(("".join(bases), pd))
out = []
for _ in range(R):
    src = rng.choice(haps)[0]
    s = rng.randrange(0, HL - RL + 1)
    read = [b if rng.random() > 0.01 else rng.choice("ACGT") for b in src[s : s + RL]]
    quals = [rng.randint(10, 40) for _ in range(RL)]
    out.append(
        "\t".join(
            [
                "R",
                "".join(read),
                ",".join(map(str, quals)),
                ",".join(["45"] * RL),
                ",".join(["45"] * RL),
                ",".join(["10"] * RL),
            ]
        )
    )
for bases, p in haps:
    out.append("\t".join(["H", bases, ",".join(map(str, p))]))
print("\n".join(out))
