"""devtools.pd_regions and scripts/gen_pd_regions.py: seeded, GATK's rules
for PD haplotypes, the two shapes, and the CLI's record file."""

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

from devtools import ROOT
from devtools.child import child_env
from devtools.pd_regions import Event, apply_events, generate, pd_haplotype
from pyphmm import PD_A, PD_DEL_END, PD_DEL_START, PD_G, PD_SNP, PD_T, io

REF = np.frombuffer(b"ACGTACGTACGTACGTACGT", np.uint8)


def flat(regs):
    return [(r.bases.tobytes(), r.quals.tobytes(), h.bases.tobytes(), h.pd.tobytes()) for r, h in regs]


def test_seeded():
    assert flat(generate(4, seed=3, shape="hc")) == flat(generate(4, seed=3, shape="hc"))
    assert flat(generate(4, seed=3)) != flat(generate(4, seed=4))


def test_pd_haplotypes_follow_gatk_s_rules():
    snp = Event(4, b"A", b"G")
    snp2 = Event(4, b"A", b"T")
    dele = Event(8, b"ACGT", b"A")  # deletes positions 9..11
    ins = Event(14, b"G", b"GTT")  # inserts TT after position 14
    events = [snp, snp2, dele, ins]
    # the reference determined at the SNP locus: no SNP marks there, the others undetermined
    bases, pd = pd_haplotype(REF, events, None, 4)
    assert bases.tobytes() == REF[:15].tobytes() + b"TT" + REF[15:].tobytes()
    assert pd[4] == 0 and pd[9] == PD_DEL_START and pd[11] == PD_DEL_END
    assert pd[15] == PD_DEL_START and pd[16] == PD_DEL_END and pd[10] == 0
    # the deletion determined: the bases go, the SNP alleles merge into one byte
    bases, pd = pd_haplotype(REF, events, dele, None)
    assert bases.tobytes() == REF[:9].tobytes() + REF[12:15].tobytes() + b"TT" + REF[15:].tobytes()
    assert pd[4] == PD_SNP | PD_G | PD_T and PD_DEL_START not in pd[:9]
    # one SNP allele determined: its base written plainly, the other allele at its locus left out
    bases, pd = pd_haplotype(REF, events, snp, None)
    assert bases[4] == ord("G") and pd[4] == 0
    # a one-base deletion is DEL_START | DEL_END
    _, pd = pd_haplotype(REF, [Event(2, b"GT", b"G")], None, -1)
    assert pd[3] == PD_DEL_START | PD_DEL_END
    assert (
        apply_events(REF, [snp, dele]).tobytes() == REF[:4].tobytes() + b"G" + REF[5:9].tobytes() + REF[12:].tobytes()
    )
    assert pd_haplotype(REF, [Event(7, b"T", b"A")], None, -1)[1][7] == PD_SNP | PD_A


def spans_closed(pd):
    inside = False
    for b in pd:
        if b & PD_DEL_START:
            inside = True
        if b & PD_DEL_END:
            assert inside
            inside = False
    return not inside


@pytest.mark.slow
def test_shapes():
    for shape, reads, haps, read_mean, hap_mean in (
        ("gatk", (10, 60), (2, 16), (60, 220), (120, 700)),
        ("hc", (20, 250), (2, 114), (50, 90), (100, 180)),
    ):
        regs = generate(40, seed=5, shape=shape)
        nr = np.array([len(r) for r, _ in regs])
        nh = np.array([len(h) for _, h in regs])
        assert reads[0] <= nr.min() and nr.max() <= reads[1], shape
        assert haps[0] <= nh.min() and nh.max() <= haps[1], shape
        rl = np.concatenate([r.lengths for r, _ in regs])
        hl = np.concatenate([h.lengths for _, h in regs])
        assert read_mean[0] < rl.mean() < read_mean[1] and hap_mean[0] < hl.mean() < hap_mean[1], shape
        for _, h in regs:
            for a, b in zip(h.offsets[:-1], h.offsets[1:]):
                pd = h.pd[a:b]
                assert spans_closed(pd)
                snp = pd[(pd & PD_SNP) != 0]
                assert ((snp & 0x78) != 0).all()  # every SNP byte names a base
                assert set(h.bases[a:b].tobytes()) <= set(b"ACGT")


@pytest.mark.slow
def test_script_writes_records(tmp_path):
    out = tmp_path / "r.pd.gz"
    p = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "scripts", "gen_pd_regions.py"),
            "--regions",
            "3",
            "--seed",
            "2",
            "--shape",
            "hc",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=child_env(ROOT),
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    with gzip.open(out, "rt") as f:
        again = list(io.read_pd_records(f))
    assert flat(again) == flat(generate(3, seed=2, shape="hc"))
    p = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "gen_pd_regions.py"), "--edge-cases", "-o", str(tmp_path / "e")],
        capture_output=True,
        text=True,
        env=child_env(ROOT),
        timeout=120,
    )
    assert p.returncode == 2 and "--edge-cases needs --gkl" in p.stderr
