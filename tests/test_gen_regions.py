"""devtools.regions and its CLI scripts/gen_regions.py: seeded, within GATK's shapes, CLI writes records."""

import os
import subprocess
import sys

import numpy as np
import pytest

import pyphmm
from devtools import ROOT, regions
from devtools.child import child_env
from devtools.regions import generate
from pyphmm import io


def _flat(regs):
    return [
        (
            r.bases.tobytes(),
            r.quals.tobytes(),
            r.ins.tobytes(),
            r.dels.tobytes(),
            r.gcp.tobytes(),
            r.offsets.tobytes(),
            h.bases.tobytes(),
            h.offsets.tobytes(),
        )
        for r, h in regs
    ]


@pytest.mark.slow
def test_same_seed_same_data_other_seed_other_data():
    assert _flat(generate(8, seed=3, underflow=1)) == _flat(generate(8, seed=3, underflow=1))
    assert _flat(generate(8, seed=3)) != _flat(generate(8, seed=4))


@pytest.mark.slow
def test_shapes_are_realistic():
    regs = generate(150, seed=12)
    assert len(regs) == 150
    nr = np.array([len(r) for r, _ in regs])
    nh = np.array([len(h) for _, h in regs])
    assert nr.min() >= 1 and nr.max() <= 500 and nh.min() >= 1 and nh.max() <= 40
    assert np.mean((nr >= 20) & (nr <= 200)) > 0.6
    assert np.mean((nh >= 2) & (nh <= 8)) > 0.6
    rl = np.concatenate([r.lengths for r, _ in regs])
    hl = np.concatenate([h.lengths for _, h in regs])
    assert rl.min() >= 10 and rl.max() <= 151 and hl.min() >= 30 and hl.max() <= 521
    quals = np.concatenate([r.quals for r, _ in regs])
    gaps = np.concatenate([np.concatenate([r.ins, r.dels]) for r, _ in regs])
    gcp = np.concatenate([r.gcp for r, _ in regs])
    assert quals.min() >= 6 and quals.max() <= 90 and gaps.min() >= 10 and gaps.max() <= 90
    assert gcp.min() >= 5 and gcp.max() <= 40
    # reads come from the haplotypes: most reads fit their best haplotype well
    res = pyphmm.compute_regions(regs[:20], backend="cpu")
    best = np.concatenate([x.max(axis=1) for x in res])
    assert np.median(best) > -15


def test_max_pairs_and_max_reads():
    regs = generate(100, seed=5, max_pairs=3000)
    pairs = sum(len(r) * len(h) for r, h in regs)
    assert pairs <= 3000 and pairs > 2500
    regs = generate(10, seed=5, max_reads=3, underflow=2)
    assert len(regs) == 12 and max(len(r) for r, _ in regs) <= 3


def test_underflow_regions_need_double():
    st = {}
    pyphmm.compute_regions(generate(0, seed=8, underflow=2), backend="cpu", stats=st)
    assert st["double_pairs"] > st["pairs"] // 2


def _gen_regions(*args):
    """Runs scripts/gen_regions.py ARGS in a child with this checkout importable."""
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "gen_regions.py"), *args],
        capture_output=True,
        text=True,
        env=child_env(ROOT),
        timeout=120,
    )


def test_cli_writes_a_record_file(tmp_path):
    out = tmp_path / "g.in"
    p = _gen_regions("--regions", "5", "--seed", "2", "--underflow", "1", "--odd-rate", "0.5", "--output", str(out))
    assert p.returncode == 0, p.stderr
    assert "6 regions" in p.stderr
    back = list(io.read_records(str(out)))
    assert _flat(back) == _flat(regions.generate(5, seed=2, underflow=1, odd_rate=0.5))


def test_cli_gap_quals_set_every_read_and_change_nothing_else(tmp_path):
    out = tmp_path / "u.in"
    p = _gen_regions("--regions", "4", "--seed", "7", "--preset", "typical", "--gap-quals", "45,45,10", "-o", str(out))
    assert p.returncode == 0, p.stderr
    back = list(io.read_records(str(out)))
    want = regions.generate(4, seed=7, preset="typical")
    assert len(back) == len(want) == 4
    for (r, h), (wr, wh) in zip(back, want):
        assert (r.ins == 45).all() and (r.dels == 45).all() and (r.gcp == 10).all()
        assert r.bases.tobytes() == wr.bases.tobytes() and r.quals.tobytes() == wr.quals.tobytes()
        assert r.offsets.tobytes() == wr.offsets.tobytes() and h.bases.tobytes() == wh.bases.tobytes()
    assert any((wr.ins != 45).any() for wr, _ in want)  # the option changed something


@pytest.mark.slow
def test_cli_gap_quals_rejects_bad_values(tmp_path):
    for bad in ("45,45", "45,45,x", "45,45,94", "-1,45,10"):
        p = _gen_regions("--regions", "1", f"--gap-quals={bad}", "-o", str(tmp_path / "x.in"))
        assert p.returncode == 2 and "--gap-quals wants three qualities" in p.stderr, (bad, p.stderr)


def test_cli_lengths_fix_every_read_and_haplotype(tmp_path):
    out = tmp_path / "l.in"
    p = _gen_regions("--regions", "3", "--seed", "4", "--preset", "typical", "--lengths", "90,200", "-o", str(out))
    assert p.returncode == 0, p.stderr
    back = list(io.read_records(str(out)))
    assert len(back) == 3
    for r, h in back:
        assert len(r) == 60 and len(h) == 4
        assert set(np.diff(r.offsets).tolist()) == {90} and set(np.diff(h.offsets).tolist()) == {200}
    # the preset's own lengths give the preset's regions, draw for draw
    same = regions.generate(2, seed=4, preset="typical", lengths=(150, 350))
    assert _flat(same) == _flat(regions.generate(2, seed=4, preset="typical"))


@pytest.mark.slow
def test_cli_lengths_rejects_bad_values(tmp_path):
    for bad in ("90", "90,x", "0,350", "351,350"):
        p = _gen_regions("--regions", "1", "--preset", "typical", f"--lengths={bad}", "-o", str(tmp_path / "x.in"))
        assert p.returncode == 2 and "--lengths wants READ,HAP" in p.stderr, (bad, p.stderr)
    p = _gen_regions("--regions", "1", "--lengths", "90,350", "-o", str(tmp_path / "x.in"))
    assert p.returncode == 2 and "--lengths needs --preset" in p.stderr, p.stderr
