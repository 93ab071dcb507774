#!/usr/bin/env python3
"""Instructions per cell of the CPU kernels' inner loops, from the compiler's
assembly, for x86-64 (AVX2, AVX-512, portable) and AArch64 (NEON, portable).

Compiles native/cpu/pairhmm_cpu_kernel.cc and sw_cpu_fill.cc to assembly with the library's
flags (g++ and aarch64-linux-gnu-g++), finds the innermost loops of each
kernel (a backward branch to a label with no other label in between) and
prints, per loop iteration: instructions by class, the cells it computes
and instructions per cell. A PairHMM loop's cells are its lanes times its
rows (8 vector multiplies per row of cells: M 4, X 2, Y 2); a Smith-Waterman
loop's are its lanes (one block of an anti-diagonal; int8 or int16 lanes,
native/cpu/sw_cpu_diff_kernel.h).

With --mca (needs llvm-mca from LLVM >= 17, e.g. Debian's llvm-19), each
loop also goes through llvm-mca's model of a core (--arm-cpu, default
neoverse-v2; --x86-cpu, default znver3) for cycles per iteration, which
counts issue width, pipes and the loop-carried dependency chains. That is a
model, not a measurement. --measure checks the model where it can be
checked: it times this machine's pyphmm build (PYTHONPATH picks it) on
generated regions, one call per region on 1 thread, in CPU seconds (best of
3, so other processes on a shared machine matter less), and prints cycles
per cell at the clock /proc/cpuinfo reports (or --clock-ghz).

    python3 scripts/kernel_instructions.py [--mca] [--measure] [--show]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401  (the repository root importable)

from buildtools.native import host_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The library's own compile flags (the kernels' code generation depends on them).
FLAGS = host_flags(defines=['-DPYPHMM_VERSION="x"'])
TARGETS = {"x86-64": "g++", "aarch64": "aarch64-linux-gnu-g++"}
# (target, file, function-name pattern, label, kind)
KERNELS = [
    ("x86-64", "pairhmm_cpu_kernel", r"forward_float_avx512E", "PairHMM float, avx512", "pairhmm"),
    ("x86-64", "pairhmm_cpu_kernel", r"forward_float_avx2E", "PairHMM float, avx2", "pairhmm"),
    ("x86-64", "pairhmm_cpu_kernel", r"forward_float_portableE", "PairHMM float, portable (SSE2)", "pairhmm"),
    ("aarch64", "pairhmm_cpu_kernel", r"forward_float_neonE", "PairHMM float, neon", "pairhmm"),
    ("aarch64", "pairhmm_cpu_kernel", r"forward_float_portableE", "PairHMM float, portable (AArch64)", "pairhmm"),
    ("x86-64", "sw_cpu_fill", r"6avx5122w8L9diff_fill", "Smith-Waterman, avx512 int8", "sw"),
    ("x86-64", "sw_cpu_fill", r"6avx5123w16L9diff_fill", "Smith-Waterman, avx512 int16", "sw"),
    ("x86-64", "sw_cpu_fill", r"4avx22w8L9diff_fill", "Smith-Waterman, avx2 int8", "sw"),
    ("x86-64", "sw_cpu_fill", r"4avx23w16L9diff_fill", "Smith-Waterman, avx2 int16", "sw"),
    ("x86-64", "sw_cpu_fill", r"4base3w16L9diff_fill", "Smith-Waterman, portable (SSE2) int16", "sw"),
    ("aarch64", "sw_cpu_fill", r"4neon2w8L9diff_fill", "Smith-Waterman, neon int8", "sw"),
    ("aarch64", "sw_cpu_fill", r"4neon3w16L9diff_fill", "Smith-Waterman, neon int16", "sw"),
    ("aarch64", "sw_cpu_fill", r"4base3w16L9diff_fill", "Smith-Waterman, portable (AArch64) int16", "sw"),
]


def compile_asm(target, name, out_dir):
    out = os.path.join(out_dir, f"{name}-{target}.s")
    subprocess.run(
        [TARGETS[target], *FLAGS, "-S", os.path.join(ROOT, "native", "cpu", name + ".cc"), "-o", out], check=True
    )
    return open(out).read().split("\n")


def innermost_loops(lines, pattern):
    """Bodies (instruction lines) of the innermost loops of functions whose
    symbol matches pattern."""
    loops, func, labels = [], None, {}
    for idx, line in enumerate(lines):
        m = re.match(r"^([_A-Za-z][\w.$]*):", line)
        if m:
            func, labels = m.group(1), {}
        m = re.match(r"^(\.L\w+):", line)
        if m:
            labels[m.group(1)] = idx
        m = re.match(r"\s+(b\w*|j\w+|cbn?z|tbn?z)\s+(?:[\w%]+,\s*)*(?:#\d+,\s*)?(\.L\w+)$", line)
        if m and func and re.search(pattern, func) and m.group(2) in labels:
            start = labels[m.group(2)]
            if any(re.match(r"^\.L\w+:", x) for x in lines[start + 1 : idx]):
                continue
            body = [
                x.strip() for x in lines[start + 1 : idx + 1] if x.startswith("\t") and not x.strip().startswith(".")
            ]
            loops.append(body)
    return loops


def classify(target, ins):
    op = ins.split()[0]
    if target == "aarch64":
        regs = ins[len(op) :]
        if op in ("ldr", "ldp", "ld1", "ld1r", "ldur", "ldrb", "ldrh"):
            return "load"
        if op in ("str", "stp", "st1", "stur", "strb", "strh"):
            return "store"
        if re.match(r"f(mul|add|sub|div)$", op) and re.search(r"\bv\d+\.", regs):
            return "vector fp"
        if re.search(r"\bv\d+\.", regs) or op in ("movi",):
            return "vector int/logic"
        return "scalar/branch"
    regs = ins[len(op) :]
    mem = "(" in regs
    if re.match(r"vmov(aps|ups|dqa|dqu|dqa32|dqu32|dqa64|dqu64|d|q)$", op) and mem:
        return "store" if regs.rstrip().endswith(")") else "load"
    if op.startswith("kmov") or op.startswith("k"):
        return "vector int/logic"
    op = op[1:] if op.startswith("v") else op  # VEX/EVEX and legacy SSE forms alike
    if re.match(r"mov(aps|ups|dqa|dqu|dqa32|dqu32|dqa64|dqu64)$", op) and mem:
        return "store" if regs.rstrip().endswith(")") else "load"
    if re.match(r"(mul|add|sub|div)p[sd]$", op):
        return "vector fp" + (" (+load)" if mem else "")
    if (
        re.match(r"(p\w+|\w+p[sd]|mov(aps|ups|dqa|dqu)\w*|blend\w*|insert\w*|extract\w*|broadcast\w*)$", op)
        or "mm" in regs
    ):
        return "vector int/logic" + (" (+load)" if mem else "")
    return "scalar/branch"


def lanes_of(target, body):
    if target == "aarch64":
        return 4 if any(".4s" in x for x in body) else 2
    if any("%zmm" in x for x in body):
        return 16
    if any("%ymm" in x for x in body):
        return 8
    return 4


def sw_lanes(target, body):
    """A Smith-Waterman loop's lanes: its vector bytes over its lane size
    (the width of its maxima: int8 or int16 differences)."""
    maxes = [x.split()[0] for x in body if re.match(r"(smax|v?pmaxs[bw])", x)]
    if target == "aarch64":
        return 16 if any(".16b" in x for x in body if x.startswith("smax")) else 8
    vbytes = 64 if any("%zmm" in x for x in body) else 32 if any("%ymm" in x for x in body) else 16
    return vbytes // (1 if any(op.endswith("b") for op in maxes) else 2)


def cells_of(target, kind, body):
    if kind == "sw":
        return sw_lanes(target, body)
    lanes = lanes_of(target, body)
    muls = sum(1 for x in body if classify(target, x).startswith("vector fp") and "mul" in x.split()[0])
    return lanes * max(1, muls // 8)


def mca_cycles(target, cpu, body, tool):
    """llvm-mca's cycles per iteration for the loop body on cpu (100 iterations)."""
    triple = "aarch64-linux-gnu" if target == "aarch64" else "x86_64-linux-gnu"
    text = "\n".join(body) + "\n"
    res = subprocess.run(
        [tool, f"-mtriple={triple}", f"-mcpu={cpu}", "-iterations=100"], input=text, capture_output=True, text=True
    )
    if res.returncode:
        return None
    m = re.search(r"Total Cycles:\s+(\d+)", res.stdout)
    return int(m.group(1)) / 100 if m else None


def measure(regions, clock_ghz):
    """CPU seconds of pyphmm's CPU backend on generated regions, one call per region, 1 thread."""
    import time

    import pyphmm
    from devtools.regions import generate, pairs_and_cells

    data = generate(regions, seed=1)
    _, cells = pairs_and_cells(data)
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        for region in data:
            pyphmm.compute_regions([region], backend="cpu", threads=1)
        best = min(best, time.process_time() - t)
    if not clock_ghz:
        mhz = [float(x.split(":")[1]) for x in open("/proc/cpuinfo") if x.startswith("cpu MHz")]
        clock_ghz = mhz[0] / 1000 if mhz else 0
    print(
        f"measured: pyphmm {pyphmm.info()['cpu_kernel']} kernel from {os.path.dirname(pyphmm.__file__)}, "
        f"{regions} regions, {cells / 1e9:.2f} G cells in {best:.3f} CPU s = {cells / best / 1e9:.2f} G cells "
        f"per CPU second"
        + (f" = {best * clock_ghz * 1e9 / cells:.3f} cycles/cell at {clock_ghz:.2f} GHz" if clock_ghz else "")
    )


def find_mca():
    for name in ("llvm-mca-19", "llvm-mca-18", "llvm-mca-17", "llvm-mca"):
        path = shutil.which(name)
        if path:
            out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
            m = re.search(r"version (\d+)", out)
            if m and int(m.group(1)) >= 17:
                return path
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mca", action="store_true", help="also model cycles per iteration with llvm-mca")
    ap.add_argument("--arm-cpu", default="neoverse-v2")
    ap.add_argument("--x86-cpu", default="znver3")
    ap.add_argument("--show", action="store_true", help="print each loop's instructions")
    ap.add_argument("--measure", action="store_true", help="time this machine's build for comparison")
    ap.add_argument("--regions", type=int, default=60, help="generated regions for --measure (default 60)")
    ap.add_argument("--clock-ghz", type=float, default=0.0, help="clock for --measure's cycles (default: cpuinfo)")
    args = ap.parse_args(argv)
    tool = find_mca() if args.mca else None
    if args.mca and not tool:
        sys.exit("kernel_instructions: --mca needs llvm-mca from LLVM >= 17 (apt-get install llvm-19)")
    for cxx in TARGETS.values():
        if not shutil.which(cxx):
            sys.exit(f"kernel_instructions: {cxx} not found (scripts/test_aarch64.sh --prepare installs it)")
    print(
        f"compilers: {subprocess.run(['g++', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}; "
        f"{subprocess.run([TARGETS['aarch64'], '--version'], capture_output=True, text=True).stdout.splitlines()[0]}"
    )
    if tool:
        print(f"llvm-mca: {tool}, cores {args.x86_cpu} (x86-64) and {args.arm_cpu} (aarch64)")
    with tempfile.TemporaryDirectory() as tmp:
        asm = {}
        for target, name, pattern, label, kind in KERNELS:
            key = (target, name)
            if key not in asm:
                asm[key] = compile_asm(target, name, tmp)
            loops = innermost_loops(asm[key], pattern)
            # the loops that compute cells: PairHMM ones multiply, SW ones take maxima
            hot = [
                b
                for b in loops
                if (kind == "pairhmm" and cells_of(target, kind, b) > 0 and sum("mul" in x.split()[0] for x in b) >= 8)
                or (kind == "sw" and any(re.match(r"(smax|v?pmaxs[bw])", x) for x in b))
            ]
            seen = set()
            for body in hot:
                classes = {}
                for x in body:
                    c = classify(target, x)
                    classes[c] = classes.get(c, 0) + 1
                sig = tuple(sorted(classes.items()))  # copies of one loop (versions, template instances)
                if sig in seen:
                    continue
                seen.add(sig)
                cells = cells_of(target, kind, body)
                line = (
                    f"{label:36s} {len(body):3d} instructions / {cells:2d} cells = "
                    f"{len(body) / cells:5.2f} per cell  ["
                    + ", ".join(f"{k} {v}" for k, v in sorted(classes.items()))
                    + "]"
                )
                if tool:
                    cyc = mca_cycles(target, args.arm_cpu if target == "aarch64" else args.x86_cpu, body, tool)
                    if cyc:
                        line += f"  mca: {cyc:.2f} cycles/iteration, {cyc / cells:.3f} cycles/cell"
                print(line)
                if args.show:
                    print("\n".join("    " + x for x in body))
    if args.measure:
        measure(args.regions, args.clock_ghz)


if __name__ == "__main__":
    main()
