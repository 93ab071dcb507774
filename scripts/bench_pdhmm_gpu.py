#!/usr/bin/env python3
"""GPU PDHMM throughput and latency, with the CPU backend and (given an
oracle build) GKL 0.9's PDHMM in the same run.

Data: seeded PD regions from devtools/pd_regions.py (``--shape hc``:
HaplotypeCaller's calls, the default; ``gatk``: issue 41's GATK-shaped
regions; ``mix``: both). The default sizes are realistic workloads: 1,000
HaplotypeCaller calls (about 1.25 M pairs, 11 G cells; issue 41's
HaplotypeCaller run made 2,383 calls, 1.70 M pairs, ~15 G cells), 200
GATK-shaped regions. More than 50 regions are generated in blocks of 50
(block b seeded from --seed and b) by worker processes. Every timed call
goes through the C ABI (``pyphmm_pdhmm``) on buffers packed once
beforehand, so Python's packing is not timed. Rows:

  GPU, whole workload, 1 call        all regions in one call (best of --repeats)
  GPU kernels only                   the same call's kernel time (CUDA events,
                                     PYPHMM_FLAG_TIMING), cells / kernel seconds
  GPU, per region, T thr             one call per region, T threads taking turns
                                     over the regions (GATK's threads): GCUPS =
                                     all cells / span; median and p99 call latency
  CPU, whole workload, T thr         the CPU backend, for scale
  GKL 0.9 <impl> OpenMP, T thr       with --gkl DIR (devtools/oracle/gkl_pdhmm.py): its
  GKL 0.9 <impl>, 1 thr              fastest code (AVX-512, else AVX2), one batch call
                                     per region, summed, on the first regions up to
                                     --gkl-cells cells (GCUPS on those cells)

Then the GPU's speed over GKL's, as issue 41 states its targets.

--phases adds where one thread's per-region calls spend their time: the
calls again with PYPHMM_FLAG_TIMING, summed over the regions in four size
classes, twice: with CUDA events around the kernels (kernel time; the
events make a call wait in CUDA rather than watch its results) and
without (PYPHMM_DEV=cuda_timing_events=0: the host phases of an untimed
call).

--lone-kernels adds, per length, the median kernel and call of one call
per region (1 thread) with the first 100 regions' reads cut to it: how a
lone region's kernel grows with its reads' rows a lane.

--read-lengths adds, per length, the whole workload of the regions' reads
cut to it (one bin each; kernel GCUPS in the notes), for tuning the bins.

--step-cost adds what a lone call's kernel costs a wavefront step: lone
synthetic regions (40 reads x 4 haplotypes, random bases, GATK's
qualities, no PD marks) of 96, 128 and 160 bp reads (32 lanes of 3, 4, 5
rows) against haplotypes of 128, 256 and 512 bases; the median kernel
(CUDA events) of each and, per read length, ns a step (the slope from 256
to 512 bases) and the rest (the kernel less its steps).

--kernel-parts adds what the kernels of one call per region (1 thread)
are made of: each region's kernel (CUDA events) as generated, without its
deletion marks, and with its longest read only (its slowest pairs alone on
the GPU), summed over quarters of the regions by pair count.

--without-deletions adds the whole workload and one thread's per-region
calls again with the PD bytes' deletion marks cleared (SNP bits kept):
what the capture and merging steps of deletion spans cost (the results
are another workload's, so no diff).

The diff column: max |GPU - CPU backend| over every pair, and how many
results differ in any bit (the GPU rounds in its own order; certified
within 1e-10, docs/PDHMM.md).

    PYTHONPATH=. python3 scripts/bench_pdhmm_gpu.py [--regions N] [--shape hc] [--threads 1,16] [--gkl DIR]
        [--gkl-cells 1e9] [--read-lengths 48,80,128,250] [--phases] [--lone-kernels 48,96,160]
        [--step-cost] [--without-deletions] [--kernel-parts]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time

import _checkout  # noqa: F401  (the repository root importable)
import numpy as np
from pyphmm._pyphmm import ffi, lib

import pyphmm
from devtools.pd_regions import SHAPES, generate, pairs_and_cells
from pyphmm import _native
from pyphmm.pairhmm import ReadBatch
from pyphmm.pdhmm import PDHaplotypeBatch, _PackedPD

DEFAULT_REGIONS = {"hc": 1000, "gatk": 200, "mix": 200}
BLOCK = 50  # regions per generated block


def _block(args):
    n, seed, shape = args
    return generate(n, seed=seed, shape=shape)


def generated(n: int, seed: int, shape: str) -> list:
    """n regions: up to BLOCK as generate(n, seed); more in blocks of BLOCK
    seeded seed * 100003 + block, by worker processes."""
    if n <= BLOCK:
        return generate(n, seed=seed, shape=shape)
    jobs = [(min(BLOCK, n - b * BLOCK), seed * 100003 + b, shape) for b in range((n + BLOCK - 1) // BLOCK)]
    with multiprocessing.get_context("fork").Pool(min(len(jobs), os.cpu_count() or 1)) as pool:
        return [r for block in pool.map(_block, jobs) for r in block]


def workload(a) -> tuple:
    if a.shape == "mix":
        regions = []
        for k in range(a.regions):
            regions += generate(1, seed=a.seed * 1000 + k, shape=SHAPES[k % 2])
        return regions, f"mix of {a.regions} regions (seed {a.seed})"
    return generated(a.regions, a.seed, a.shape), f"--shape {a.shape} --regions {a.regions} (seed {a.seed})"


class Packed:
    """The regions in native buffers, with each region's output slice."""

    def __init__(self, regions):
        self.p = _PackedPD(regions)
        self.n = len(self.p.shapes)
        self.out = np.empty(max(1, self.p.total), np.float64)
        self.first = np.concatenate([[0], np.cumsum([r * h for r, h in self.p.shapes])]).astype(np.int64)
        self.cells = [
            int(reg.read_offsets[reg.num_reads] - reg.read_offsets[0])
            * int(reg.hap_offsets[reg.num_haps] - reg.hap_offsets[0])
            for reg in (self.p.c_regions[k] for k in range(self.n))
        ]

    def call(self, k0, count, backend, threads=0, timing=False, stats=None):
        """pyphmm_pdhmm on regions [k0, k0 + count); seconds of the call."""
        opts = _native.make_options(backend, threads or None)
        if timing:
            opts.flags = lib.PYPHMM_FLAG_TIMING
        err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
        out = ffi.cast("double *", ffi.from_buffer("double[]", self.out)) + int(self.first[k0])
        t = time.perf_counter()
        rc = lib.pyphmm_pdhmm(self.p.c_regions + k0, count, out, opts, st, err)
        dt = time.perf_counter() - t
        _native.raise_for_status(rc, err)
        if stats is not None:
            stats.update(_native.stats_dict(st))
        return dt

    def caller(self):
        """A per-region caller for one thread: call(k) runs region k on the
        GPU and returns the call's seconds (what Python spends around the
        call is made once, as GATK's Java side would)."""
        opts = _native.make_options("cuda", None)
        err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
        out = ffi.cast("double *", ffi.from_buffer("double[]", self.out))
        regions, first, fn, clock = self.p.c_regions, [int(v) for v in self.first], lib.pyphmm_pdhmm, time.perf_counter

        def call(k):
            t = clock()
            rc = fn(regions + k, 1, out + first[k], opts, st, err)
            dt = clock() - t
            if rc:
                _native.raise_for_status(rc, err)
            return dt

        return call


def best_whole(pk, backend, threads, repeats):
    pk.call(0, pk.n, backend, threads)  # warm-up: device, tables, buffers, thread pool
    best = min(pk.call(0, pk.n, backend, threads) for _ in range(repeats))
    return best, pk.out[: pk.p.total].copy()


def one_pass(pk, threads):
    """One call per region from `threads` threads (thread i takes regions i,
    i + T, ...) after a common start: (span, latencies)."""
    lat = [[] for _ in range(threads)]
    start = threading.Barrier(threads + 1)

    def work(i):
        call = pk.caller()
        start.wait()
        for k in range(i, pk.n, threads):
            lat[i].append(call(k))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, np.concatenate([np.array(v) for v in lat if v])


def per_region(pk, threads, passes):
    """The best of `passes` one_pass runs, after a warm-up of every
    thread's context and buffers."""
    one_pass(pk, threads)
    return min((one_pass(pk, threads) for _ in range(passes)), key=lambda r: r[0])


def clipped(regions, length):
    """The regions' reads of at least `length` bases, cut to `length` (the
    same haplotypes): a workload of one read length, so of one bin."""
    out = []
    for reads, haps in regions:
        o = reads.offsets
        keep = [(int(o[i]), int(o[i]) + length) for i in range(len(o) - 1) if o[i + 1] - o[i] >= length]
        if not keep:
            continue
        cols = [
            np.concatenate([f[a:b] for a, b in keep])
            for f in (reads.bases, reads.quals, reads.ins, reads.dels, reads.gcp)
        ]
        out.append((ReadBatch(*cols, np.arange(len(keep) + 1, dtype=np.int64) * length), haps))
    return out


def by_length(a, regions, rows):
    """Whole-workload and kernel GCUPS per read length (--read-lengths)."""
    for length in (int(v) for v in a.read_lengths.split(",") if v):
        reg = clipped(regions, length)
        if not reg:
            continue
        pk = Packed(reg)
        cells = sum(pk.cells)
        s, _ = best_whole(pk, "cuda", 0, a.repeats)
        st = {}
        pk.call(0, pk.n, "cuda", timing=True, stats=st)
        ks = st["kernel_seconds"]
        note = f"{cells / 1e9:.2f} G cells, kernels " + (f"{cells / ks / 1e9:.1f} GCUPS" if ks > 0 else "n/a")
        rows.append((f"GPU, whole workload, reads of {length} bp", s, "", note, cells))


def lone_kernels(a, regions):
    """--lone-kernels: per-region calls on one thread with the first 100
    regions' reads cut to each length, timed: the median kernel (CUDA
    events) and call. A lone region's kernel lasts as long as its slowest
    pair, whose rows a lane (1 + (length - 1) // lanes) set its step."""
    print("\nlone regions, one call each on 1 thread, reads cut to one length (median us):")
    for length in (int(v) for v in a.lone_kernels.split(",") if v):
        pk = Packed(clipped(regions[:100], length))
        pk.call(0, 1, "cuda", timing=True)  # warm-up
        ks, walls = [], []
        for k in range(pk.n):
            st = {}
            walls.append(pk.call(k, 1, "cuda", timing=True, stats=st))
            ks.append(st["kernel_seconds"])
        k_us, c_us = np.median(ks) * 1e6, np.median(walls) * 1e6
        print(f"  {length:>4} bp: kernel {k_us:6.1f}, call {c_us:6.1f} ({pk.n} regions)")


def median_lone_kernel(regions, calls=25):
    """The median kernel seconds (CUDA events) of `calls` calls of the
    first region alone, after a warm-up."""
    return float(region_kernels(regions[:1], calls)[0])


def synthetic_region(rng, reads, m, haps, n):
    """reads x haps of random bases, m and n long, GATK's qualities
    (30, 45, 45, 10), no PD marks."""
    acgt = np.frombuffer(b"ACGT", np.uint8)
    size = reads * m
    rb = ReadBatch(
        acgt[rng.integers(0, 4, size)],
        np.full(size, 30, np.uint8),
        np.full(size, 45, np.uint8),
        np.full(size, 45, np.uint8),
        np.full(size, 10, np.uint8),
        np.arange(reads + 1, dtype=np.int64) * m,
    )
    hb = PDHaplotypeBatch(
        acgt[rng.integers(0, 4, haps * n)], np.zeros(haps * n, np.uint8), np.arange(haps + 1, dtype=np.int64) * n
    )
    return rb, hb


def step_cost():
    """--step-cost: lone kernels by read length (rows a lane) and
    haplotype length (steps)."""
    rng = np.random.default_rng(5)
    lengths = (128, 256, 512)
    print("\nlone synthetic regions (40 reads x 4 haplotypes), median kernel us by haplotype length:")
    print(f"{'read bp':>8} {'rows':>5} " + " ".join(f"{n:>7}" for n in lengths) + f" {'ns/step':>8} {'rest us':>8}")
    for m, rows in ((96, 3), (128, 4), (160, 5)):
        ks = [median_lone_kernel([synthetic_region(rng, 40, m, 4, n)]) * 1e6 for n in lengths]
        per_step = (ks[2] - ks[1]) / (lengths[2] - lengths[1])
        rest = ks[2] - per_step * (lengths[2] + 31)  # (steps: columns + 31 lanes of pipeline)
        print(f"{m:>8} {rows:>5} " + " ".join(f"{k:7.1f}" for k in ks) + f" {per_step * 1e3:8.1f} {rest:8.1f}")


def deletion_marks_cleared(regions):
    """The regions with the DEL_START and DEL_END bits of their PD bytes
    cleared (SNP bits kept): another workload, without deletion spans."""
    keep = 0xFF & ~(pyphmm.PD_DEL_START | pyphmm.PD_DEL_END)
    return [(r, PDHaplotypeBatch(h.bases, h.pd & keep, h.offsets)) for r, h in regions]


def without_deletions(a, regions):
    """--without-deletions: the workload as generated and with its
    deletion marks cleared, whole (kernels) and one call per region on one
    thread."""
    print("\nthe workload with and without its deletion marks (SNP bits kept):")
    for label, workload in (("as generated", regions), ("without deletion marks", deletion_marks_cleared(regions))):
        pk = Packed(workload)
        cells = sum(pk.cells)
        s, _ = best_whole(pk, "cuda", 0, a.repeats)
        st = {}
        pk.call(0, pk.n, "cuda", timing=True, stats=st)
        span, lat = per_region(pk, 1, a.repeats)
        print(
            f"  {label:<24} whole {cells / s / 1e9:6.1f} GCUPS, kernels {cells / st['kernel_seconds'] / 1e9:6.1f};"
            f" a region a call {cells / span / 1e9:6.1f} GCUPS, median {np.median(lat) * 1e6:.1f} us"
        )


def phases(pk):
    """--phases: per-region calls on one thread with timing, with and
    without CUDA events, each summed by region size (quartiles of cells):
    wall, kernel (with events) and host phases."""
    saved = os.environ.get("PYPHMM_DEV")
    try:
        for events in (1, 0):
            os.environ["PYPHMM_DEV"] = ",".join(v for v in (saved, f"cuda_timing_events={events}") if v)
            _native.reload_config()
            timed_pass(pk, "with CUDA events" if events else "without CUDA events (kernel not timed)")
    finally:
        if saved is None:
            os.environ.pop("PYPHMM_DEV", None)
        else:
            os.environ["PYPHMM_DEV"] = saved
        _native.reload_config()


def timed_pass(pk, label):
    pk.call(0, 1, "cuda", timing=True)  # warm-up
    recs = []
    for k in range(pk.n):
        st = {}
        wall = pk.call(k, 1, "cuda", timing=True, stats=st)
        recs.append((pk.cells[k], wall, st["kernel_seconds"], st["phase_seconds"]))
    recs.sort(key=lambda r: r[0])
    q = len(recs) // 4 or 1
    print(f"\nper-region calls, 1 thread, timed {label} (sums over each size class, ms):")
    print(
        f"{'regions':>8} {'cells/region':>13} {'wall':>8} {'kernel':>8} " + " ".join(f"{p:>8}" for p in _native.PHASES)
    )
    for i in range(0, len(recs), q):
        part = recs[i : i + q]
        ph = {p: sum(r[3][p] for r in part) for p in _native.PHASES}
        print(
            f"{len(part):>8} {sum(r[0] for r in part) / len(part):>13.3g} {sum(r[1] for r in part) * 1e3:>8.1f}"
            f" {sum(r[2] for r in part) * 1e3:>8.1f} " + " ".join(f"{ph[p] * 1e3:>8.1f}" for p in _native.PHASES)
        )


def region_kernels(regions, calls=5):
    """The median kernel seconds (CUDA events) of `calls` calls of each
    region alone, one thread, after a warm-up call."""
    pk = Packed(regions)
    out = []
    for k in range(pk.n):
        pk.call(k, 1, "cuda", timing=True)
        ks = []
        for _ in range(calls):
            st = {}
            pk.call(k, 1, "cuda", timing=True, stats=st)
            ks.append(st["kernel_seconds"])
        out.append(float(np.median(ks)))
    return np.array(out)


def kernel_parts(regions):
    """--kernel-parts: what the kernels of one call per region are made of.
    Each region alone (CUDA events, median of 5 calls): as generated,
    without its deletion marks (what the capture and merging blocks of
    deletion spans cost), and with its longest read only (its slowest pairs
    alone on the GPU: what the region's other pairs add by sharing the
    GPU's SMs), summed over quarters of the regions by pair count."""
    longest = []
    for r, h in regions:
        i = int(np.argmax(r.lengths))
        a, z = int(r.offsets[i]), int(r.offsets[i + 1])
        cols = [f[a:z] for f in (r.bases, r.quals, r.ins, r.dels, r.gcp)]
        longest.append((ReadBatch(*cols, np.array([0, z - a], np.int64)), h))
    parts = (
        ("as generated", region_kernels(regions)),
        ("no deletion marks", region_kernels(deletion_marks_cleared(regions))),
        ("longest read only", region_kernels(longest)),
    )
    pairs = np.array([len(r) * len(h) for r, h in regions])
    order = np.argsort(pairs, kind="stable")
    print("\nkernels of one call per region, 1 thread (CUDA events, sums in ms over quarters by pairs):")
    print(f"{'pairs':>12} " + " ".join(f"{name:>18}" for name, _ in parts))
    for q in np.array_split(order, 4):
        if q.size:
            span = f"{pairs[q].min()}-{pairs[q].max()}"
            print(f"{span:>12} " + " ".join(f"{ks[q].sum() * 1e3:18.2f}" for _, ks in parts))
    print(f"{'all':>12} " + " ".join(f"{ks.sum() * 1e3:18.2f}" for _, ks in parts))


def diff(x, y) -> str:
    if not (np.isneginf(x) == np.isneginf(y)).all() or np.isnan(x).any():
        return "-inf/NaN differ"
    fin = np.isfinite(x)
    worst = float(np.abs(x[fin] - y[fin]).max()) if fin.any() else 0.0
    bits = int(np.count_nonzero(x.view(np.int64) != y.view(np.int64)))
    return f"{worst:.1e} ({bits} differ)"


def gkl_impl() -> str:
    """GKL's fastest implementation on this CPU."""
    try:
        have = set(open("/proc/cpuinfo").read().split())
    except OSError:
        have = set()
    return "avx512" if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= have else "avx2"


def gkl_rows(a, regions, threads, gpu_gcups):
    """GKL's fastest code on the first regions up to --gkl-cells cells, one
    batch call per region: with OpenMP on `threads` threads and on one
    thread (the same runs). Rows, and the lines of the GPU's speed over it."""
    from devtools.oracle.gkl_pdhmm import gkl_seconds, missing

    if missing(a.gkl):
        print(f"GKL: {missing(a.gkl)}")
        return [], []
    subset, cells = [], 0
    for r, h in regions:
        if subset and cells >= a.gkl_cells:
            break
        subset.append((r, h))
        cells += int(r.lengths.sum()) * int(h.lengths.sum())
    per = [gkl_seconds(a.gkl, r, h, gkl_impl(), threads, a.gkl_repeats) for r, h in subset]
    note = f"first {len(subset)} regions, {cells / 1e9:.2f} G cells; one call per region"
    rows, ratios = [], []
    for t in sorted({threads, 1}, reverse=True):
        s = sum(p[t] for p in per)
        name = f"GKL 0.9 {gkl_impl()} OpenMP, {t} thr" if t > 1 else f"GKL 0.9 {gkl_impl()}, 1 thr"
        rows.append((name, s, "", note, cells))
        for what, g in gpu_gcups:
            ratios.append(f"{what} / {name}: {g / (cells / s / 1e9):,.0f}x")
    return rows, ratios


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="GPU PDHMM throughput and latency")
    ap.add_argument("--regions", type=int, help="regions (default: hc 1000, gatk 200, mix 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shape", choices=SHAPES + ("mix",), default="hc")
    ap.add_argument("--threads", default="1,16", help="thread counts of the per-region rows")
    ap.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--read-lengths", default="", help="also whole workloads of reads cut to each length (e.g. 48,80,128)"
    )
    ap.add_argument("--phases", action="store_true", help="also where 1-thread per-region calls spend their time")
    ap.add_argument("--lone-kernels", default="", help="also lone regions' kernels by read length (e.g. 48,96,160)")
    ap.add_argument("--step-cost", action="store_true", help="also a lone kernel's cost a step, by rows a lane")
    ap.add_argument(
        "--without-deletions", action="store_true", help="also the workload without its deletion marks (their cost)"
    )
    ap.add_argument(
        "--kernel-parts", action="store_true", help="also what one call per region's kernels are made of (1 thread)"
    )
    ap.add_argument("--gkl", metavar="DIR", help="oracle build of GKL 0.9's PDHMM: its OpenMP and 1-thread rows too")
    ap.add_argument("--gkl-cells", type=float, default=1e9, help="GKL runs on the first regions up to these cells")
    ap.add_argument("--gkl-repeats", type=int, default=2)
    a = ap.parse_args(argv)
    if a.regions is None:
        a.regions = DEFAULT_REGIONS[a.shape]
    t = time.perf_counter()
    regions, source = workload(a)  # (before the GPU is touched: the generator forks)
    pairs, cells = pairs_and_cells(regions)
    pk = Packed(regions)
    inf = pyphmm.info()
    if not inf["cuda_usable"]:
        print(f"no usable GPU: {inf['cuda_status']}")
        return 1
    print(f"data: {source}: {len(regions)} regions, {pairs} pairs, {cells / 1e9:.3f} G cells", end="")
    print(f" (prepared in {time.perf_counter() - t:.1f} s)")
    print(
        f"pyphmm {inf['version']} from {os.path.dirname(pyphmm.__file__)}: {inf['device_name']}; {os.cpu_count()} cores"
    )

    rows = []
    cpu_s, cpu = best_whole(pk, "cpu", a.cpu_threads, 1)
    gpu_s, gpu = best_whole(pk, "cuda", 0, a.repeats)
    rows.append(("GPU, whole workload, 1 call", gpu_s, diff(gpu, cpu), "", cells))
    st = {}
    pk.call(0, pk.n, "cuda", timing=True, stats=st)
    ph = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in st["phase_seconds"].items())
    rows.append(
        ("GPU kernels only (CUDA events)", st["kernel_seconds"], diff(pk.out[: pk.p.total], cpu), f"ms: {ph}", cells)
    )
    gpu_gcups = [("GPU whole workload", cells / gpu_s / 1e9)]
    for threads in (int(v) for v in a.threads.split(",")):
        span, lat = per_region(pk, threads, a.repeats)
        note = f"call median {np.median(lat) * 1e6:.0f} us, p99 {np.percentile(lat, 99) * 1e6:.0f} us"
        rows.append((f"GPU, per region, {threads} thr", span, diff(pk.out[: pk.p.total], cpu), note, cells))
        gpu_gcups.append((f"GPU per region {threads} thr", cells / span / 1e9))
    rows.append((f"CPU backend, whole workload, {a.cpu_threads} thr", cpu_s, "", "", cells))
    ratios = []
    if a.gkl:
        gkl, ratios = gkl_rows(a, regions, a.cpu_threads, gpu_gcups)
        rows += gkl
    by_length(a, regions, rows)
    if a.phases:
        phases(pk)
    if a.lone_kernels:
        lone_kernels(a, regions)
    if a.step_cost:
        step_cost()
    if a.without_deletions:
        without_deletions(a, regions)
    if a.kernel_parts:
        kernel_parts(regions)

    print()
    print(f"| {'system':<40} | {'seconds':>8} | {'GCUPS':>8} | {'max |GPU - CPU|':>22} | notes")
    print(f"| {'-' * 40} | {'-' * 8} | {'-' * 8} | {'-' * 22} | -----")
    for name, s, d, note, c in rows:
        gcups = f"{c / s / 1e9:8.1f}" if s > 0 else "     n/a"
        print(f"| {name:<40} | {s:8.4f} | {gcups} | {d:>22} | {note}")
    for line in ratios:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
