#!/usr/bin/env python3
"""Instructions per cell of the GPU PDHMM kernel's step loops, from its
machine code (SASS), per bin of read lengths.

Compiles native/cuda/pdhmm_cuda.cu for one architecture (--arch, default
90) with the library's nvcc flags, prints ptxas' registers and spills of
the kernel, disassembles it (cuobjdump, or --cuobjdump PATH) and finds the
loops over 4-step blocks (innermost loops with double-precision multiplies).
A loop's bin: its lanes per pair from the width of its shuffles, its rows
per lane from its multiplies (3 per row and step, beside 3 fused
multiply-adds), the striped bin by its
asynchronous copies. For each loop, three paths from the loop's head to
its back edge, through the basic blocks of the loop:

  plain    no capture or merging instructions (shared-memory stores and
           loads, DSETP), then every multiply (the lanes compute), then the
           fewest FSELs: the block where no lane is at a deletion mark and
           every lane has started
  gated    the same but the most FSELs: a block before every lane has
           started (priors of 0 before column 1)
  general  the most shared-memory stores (the captures, predicated per
           lane), then as plain: a block with a mark where every lane has
           started and no lane is exotic (its merges are predicated loads
           and maxima, on every path through such a block)

Among paths that tie, the longest (a lane's side path, as the last lane's
scratch store, is issued by the whole warp). A block computes 4 steps of K
rows for each of a warp's 32 lanes: instructions per cell = per block / 4K
(a warp instruction counts once per lane's cell). DP: DMUL, DFMA, DADD, DSETP.

    PYTHONPATH=. python3 scripts/pdhmm_gpu_instructions.py [--arch 90] [--show plain|gated|general]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401  (the repository root importable)

from buildtools.native import find_nvcc, nvcc_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "native", "cuda", "pdhmm_cuda.cu")
WIDTH = {"0x1800": 8, "0x1000": 16, "RZ": 32, "0x0": 32}  # SHFL.UP's segment operand -> lanes per pair


def compile_sass(arch: str, out_dir: str, cuobjdump: str | None) -> tuple[str, str]:
    nvcc = find_nvcc()
    if not nvcc:
        sys.exit("nvcc not found")
    os.environ["PYPHMM_CUDA_ARCHS"] = arch
    flags = [f for f in nvcc_flags() if not f.startswith("-gencode") and not f.startswith("arch=")]
    cubin = os.path.join(out_dir, "pdhmm.cubin")
    cmd = [nvcc, *flags, f"-arch=sm_{arch}", "-cubin", "-Xptxas", "-v", SOURCE, "-o", cubin]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    ptxas = "; ".join(
        re.sub(r"^ptxas info\s*:\s*", "", line.strip())
        for line in p.stderr.splitlines()
        if "Used" in line or "spill" in line
    )
    tool = cuobjdump or shutil.which("cuobjdump") or os.path.join(os.path.dirname(nvcc), "cuobjdump")
    sass = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True, check=True).stdout
    return ptxas, sass


def parse(sass: str) -> list:
    """(address, predicate, opcode, text) per instruction."""
    out = []
    for line in sass.splitlines():
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if not m:
            continue
        text, pred = m.group(2).strip(), None
        if text.startswith("@"):
            pred, text = text.split(None, 1)
        out.append((int(m.group(1), 16), pred, text.split()[0], text))
    return out


def target(text: str) -> int | None:
    m = re.search(r"0x([0-9a-f]+)", text)
    return int(m.group(1), 16) if m else None


def step_loops(ins: list) -> list:
    """(head, back edge) of the innermost loops that multiply doubles."""
    loops = [(target(t), a) for a, _, op, t in ins if op.startswith("BRA") and (target(t) or a + 1) <= a]
    inner = [
        (lo, hi) for lo, hi in loops if not any(lo <= l2 and h2 <= hi and (l2, h2) != (lo, hi) for l2, h2 in loops)
    ]
    return [(lo, hi) for lo, hi in inner if any(lo <= a <= hi and op == "DMUL" for a, _, op, _ in ins)]


def blocks_of(body: list) -> list:
    lead = {body[0][0]}
    for i, (_, _, op, t) in enumerate(body):
        if op.startswith(("BRA", "EXIT", "BSYNC")):
            if op.startswith("BRA") and target(t) is not None:
                lead.add(target(t))
            if i + 1 < len(body):
                lead.add(body[i + 1][0])
    blocks, cur = [], []
    for x in body:
        if x[0] in lead and cur:
            blocks.append(cur)
            cur = []
        cur.append(x)
    return blocks + [cur]


def count(block: list, *prefixes) -> int:
    return sum(1 for x in block if x[2].startswith(prefixes))


def path(ins: list, lo: int, hi: int, mode: str) -> list:
    """The instructions of the loop's path of the given mode (see above)."""
    bl = blocks_of([x for x in ins if lo <= x[0] <= hi])
    start = {b[0][0]: i for i, b in enumerate(bl)}
    succ = []
    for i, b in enumerate(bl):
        _, pred, op, t = b[-1]
        s = []
        if op.startswith("BRA.DIV"):
            s.append(i + 1)  # (a converged warp falls through)
        elif op.startswith("BRA"):
            tgt = target(t)
            s.append("end" if tgt == lo else start.get(tgt))
            if pred is not None:
                s.append(i + 1)
        else:
            s.append(i + 1 if i + 1 < len(bl) else "end")
        s = ["end" if j == len(bl) else j for j in s]
        succ.append([j for j in s if j == "end" or (j is not None and j > i)])

    def key(b: list) -> tuple:
        fsel, dmul, sts = count(b, "FSEL"), count(b, "DMUL"), count(b, "STS")
        merge = count(b, "DSETP", "LDS")
        if mode == "plain":
            return (sts + merge, 0, -dmul, fsel, -len(b))
        if mode == "gated":
            return (sts + merge, 0, -dmul, -fsel, -len(b))
        return (-sts, merge, -dmul, fsel, -len(b))

    memo: dict = {}

    def best(i):
        if i == "end":
            return ((0,) * 5, [])
        if i not in memo:
            opts = [best(j) for j in succ[i]] or [((0,) * 5, [])]
            k, p = min(opts, key=lambda o: o[0])
            memo[i] = (tuple(x + y for x, y in zip(key(bl[i]), k)), [i] + p)
        return memo[i]

    sys.setrecursionlimit(100000)
    return [x for i in best(0)[1] for x in bl[i]]


def bin_of(plain: list, loop: list) -> str:
    widths = {WIDTH.get(t.split(",")[-1].strip(), 0) for _, _, op, t in plain if op.startswith("SHFL.UP")}
    rows = count(plain, "DMUL") // 12  # (3 a row and step, 4 steps; 1 a step for the edge)
    striped = " striped" if count(loop, "LDGSTS") else ""
    return f"{max(widths) if widths else '?'} x {rows}{striped}", rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="90")
    ap.add_argument("--cuobjdump", help="cuobjdump to use (default: PATH, then nvcc's directory)")
    ap.add_argument("--show", choices=("plain", "gated", "general"), help="print that path of every loop")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        ptxas, sass = compile_sass(a.arch, tmp, a.cuobjdump)
    ins = parse(sass)
    print(f"sm_{a.arch}, pdhmm_kernel: {ptxas}")
    head = f"| {'bin (lanes x rows)':<20} | {'path':<8} | {'instr/block':>11} | {'instr/cell':>10} | {'DP/cell':>7}"
    print(head + " | classes")
    print(f"| {'-' * 20} | {'-' * 8} | {'-' * 11} | {'-' * 10} | {'-' * 7} | -------")
    seen = set()
    for lo, hi in step_loops(ins):
        plain = path(ins, lo, hi, "plain")
        name, rows = bin_of(plain, [x for x in ins if lo <= x[0] <= hi])
        if name in seen or rows == 0:
            continue
        seen.add(name)
        for mode in ("plain", "gated", "general"):
            p = plain if mode == "plain" else path(ins, lo, hi, mode)
            cells = 4 * rows
            dp = count(p, "DMUL", "DFMA", "DADD", "DSETP")
            classes = collections.Counter(x[2].split(".")[0] for x in p).most_common(8)
            print(
                f"| {name:<20} | {mode:<8} | {len(p):>11} | {len(p) / cells:>10.1f} | {dp / cells:>7.1f} | "
                + ", ".join(f"{k} {v}" for k, v in classes)
            )
            if a.show == mode:
                for adr, pred, _, t in p:
                    print(f"    {adr:#07x} {pred or '':6} {t}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
