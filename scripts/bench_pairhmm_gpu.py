#!/usr/bin/env python3
"""GPU PairHMM benchmark: peak shapes, a realistic whole workload, per-region calls.

  python3 scripts/bench_pairhmm_gpu.py [--peak-pairs 500000] [--regions 2000]
      [--seed 1] [--arith fast|exact] [--skip peak,whole,region,dispatch] [--check]

(1) peak: N pairs of one shape (128x256, 64x128, 256x512) in one call.
(2) whole workload: generated regions (1-500 reads x 1-40 haplotypes, reads
    10-151 bp, haplotypes 30-521 bp, ~20 G cells) in ONE call: GPU kernel
    time (CUDA events: the stats of a call with timing on), the native call's time
    (stats["seconds"]: packing + transfers + kernels) and end-to-end time
    including Python-side packing.
(3) per-region: the same regions, one synchronous call each (buffers packed
    beforehand, so the time is the native call): total, median and p99
    latency without the library's timers; then again with them: kernel time,
    per-call overhead = latency - kernel time, and the host phases (setup,
    pack, enqueue, wait, copy-out).
(4) dispatch: the same regions under each policy, buffers packed beforehand
    (times are the native call): the whole workload in one call GPU only
    (backend="cuda"), hybrid (auto: GPU drivers take the largest regions, CPU
    threads the smallest), hybrid with GPU drivers only (threads = drivers,
    no CPU workers: what two packing threads alone give) and CPU only; then
    one call per region CPU only, GPU only and auto (the per-call threshold,
    calibrated at first use or PYPHMM_GPU_MIN_CELLS). Each line: seconds,
    GCUPS, where the regions ran.
GCUPS = sum(read length x haplotype length) / seconds / 1e9. Run from the
repository root with it on PYTHONPATH (devtools, this checkout's pyphmm).
"""

import argparse
import os
import sys
import time

for _i, _a in enumerate(sys.argv):  # must be set before the library loads
    if _a.startswith("--arith"):
        os.environ["PYPHMM_DEV"] = "cuda_arith=" + (_a.split("=", 1)[1] if "=" in _a else sys.argv[_i + 1])

import _checkout  # noqa: E402, F401  (the repository root importable)
import numpy as np  # noqa: E402
from pyphmm._pyphmm import ffi, lib  # noqa: E402

import pyphmm  # noqa: E402
from devtools.regions import gpu_bench_region as region  # noqa: E402
from devtools.regions import gpu_bench_workload as realistic  # noqa: E402
from pyphmm import _native  # noqa: E402
from pyphmm.pairhmm import _Packed  # noqa: E402

PHASES = _native.PHASES


def timed_options(backend, **kw):
    """Options whose calls fill the stats' kernel and host-phase times."""
    opts = _native.make_options(backend, **kw)
    opts.flags |= lib.PYPHMM_FLAG_TIMING
    return opts


def cells_of(regions):
    return sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regions)


def call_packed(packed, opts, out, err, st):
    rc = lib.pyphmm_pairhmm(packed.c_regions, len(packed.shapes), ffi.from_buffer("double[]", out), opts, st, err)
    _native.raise_for_status(rc, err)


def bench_peak(rng, pairs, shapes):
    print("== (1) peak: one call of equal shapes ==")
    for m, n in shapes:
        n_haps = 100
        n_reads = pairs // n_haps
        reg = region(rng, n_reads, n_haps, np.full(n_reads, m), np.full(n_haps, n))
        packed = _Packed([reg])
        opts = timed_options("cuda")
        out = np.empty(packed.total)
        err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
        call_packed(packed, opts, out, err, st)  # warm-up: pools grow here
        best_k = best_n = 1e9
        for _ in range(3):
            call_packed(packed, opts, out, err, st)
            best_k = min(best_k, st.kernel_seconds)
            best_n = min(best_n, st.seconds)
        c = packed.cells
        print(
            f"{m}x{n}: {packed.total} pairs, {c / 1e9:.2f} G cells: kernels {best_k * 1e3:.2f} ms = "
            f"{c / best_k / 1e12:.3f} TCUPS; native call {best_n * 1e3:.2f} ms = {c / best_n / 1e12:.3f} TCUPS; "
            f"double pairs {st.double_pairs}"
        )


def bench_whole(regions, check):
    print("== (2) whole workload: all regions in one call ==")
    cells = cells_of(regions)
    pairs = sum(len(r) * len(h) for r, h in regions)
    pyphmm.compute_regions(regions[:50], backend="cuda")  # warm-up
    packed = _Packed(regions)
    out = np.empty(packed.total)
    err, cst = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
    call_packed(packed, timed_options("cuda"), out, err, cst)
    k = cst.kernel_seconds  # GPU kernel time of the whole workload
    best = None
    for _ in range(2):
        st = {}
        t0 = time.perf_counter()
        res = pyphmm.compute_regions(regions, backend="cuda", stats=st)
        e2e = time.perf_counter() - t0
        if best is None or e2e < best[0]:
            best = (e2e, st, k, res)
    e2e, st, k, res = best
    print(f"{len(regions)} regions, {pairs} pairs, {cells / 1e9:.2f} G cells, double pairs {st['double_pairs']}")
    print(f"GPU kernels: {k:.4f} s = {cells / k / 1e12:.3f} TCUPS")
    print(f"native call (pack+H2D+kernels+D2H): {st['seconds']:.4f} s = {cells / st['seconds'] / 1e12:.3f} TCUPS")
    print(f"end-to-end incl. Python packing: {e2e:.4f} s = {cells / e2e / 1e9:.1f} GCUPS")
    if check:
        t0 = time.perf_counter()
        cpu = pyphmm.compute_regions(regions, backend="cpu")
        tc = time.perf_counter() - t0
        d = max(float(np.max(np.abs(a - b))) for a, b in zip(res, cpu))
        fin = all(np.isfinite(a).all() for a in res)
        print(f"check vs CPU backend ({tc:.2f} s, {cells / tc / 1e9:.1f} GCUPS): max |diff| {d:.3g}, all finite {fin}")


def per_region_pass(packs, outs, opts, timed):
    """One synchronous call per region; per-call latency, and (timed) kernel
    time and host phases from the library's timers."""
    if timed:
        opts = timed_options("cuda")
    err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
    lat, ker, ph = [], [], []
    t0 = time.perf_counter()
    for p, o in zip(packs, outs):
        a = time.perf_counter()
        call_packed(p, opts, o, err, st)
        lat.append(time.perf_counter() - a)
        if timed:
            ker.append(st.kernel_seconds)
            ph.append(list(st.phase_seconds))
    total = time.perf_counter() - t0
    return total, np.array(lat), np.array(ker), np.array(ph)


def bench_regions(regions):
    print("== (3) per-region: one synchronous call per region ==")
    opts = _native.make_options("cuda")
    packs = [_Packed([r]) for r in regions]
    outs = [np.empty(p.total) for p in packs]
    err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
    for p, o in zip(packs[:50], outs):
        call_packed(p, opts, o, err, st)  # warm-up
    cells = cells_of(regions)
    # Untimed first: the library's timers (CUDA events) cost microseconds a call.
    total, lat, _, _ = per_region_pass(packs, outs, opts, timed=False)
    print(f"{len(regions)} calls, {cells / 1e9:.2f} G cells: total {total:.3f} s = {cells / total / 1e9:.1f} GCUPS")
    print(f"latency per call: median {np.median(lat) * 1e6:.1f} us, p99 {np.percentile(lat, 99) * 1e6:.1f} us")
    total, lat, ker, ph = per_region_pass(packs, outs, opts, timed=True)
    over = lat - ker
    print(f"with timers (CUDA events, host phases): total {total:.3f} s; latency median {np.median(lat) * 1e6:.1f} us")
    print(f"kernel time per call: median {np.median(ker) * 1e6:.1f} us")
    print(
        f"overhead (latency - kernels): median {np.median(over) * 1e6:.1f} us, "
        f"p99 {np.percentile(over, 99) * 1e6:.1f} us"
    )
    med = np.median(ph, axis=0) * 1e6
    print("host phases per call, median us: " + ", ".join(f"{n} {v:.1f}" for n, v in zip(PHASES, med)))


def best_native(packed, opts, out, reps):
    """Best wall time of reps native calls (after one warm-up) and its stats."""
    err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
    call_packed(packed, opts, out, err, st)
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        call_packed(packed, opts, out, err, st)
        dt = time.perf_counter() - t0
        if best is None or dt < best[0]:
            best = (dt, _native.stats_dict(st))
    return best


def sides(st):
    g, c = st["gpu_regions"], st["cpu_regions"]
    return (
        f"GPU {g} regions / {st['gpu_cells'] / 1e9:.2f} G cells, CPU {c} regions / "
        f"{st['cpu_cells'] / 1e9:.2f} G cells" + ("; GPU FAILED" if st["fell_back"] else "")
    )


def bench_dispatch(regions, reps, driver_counts):
    print("== (4) dispatch: whole workload and per-region calls, by policy ==")
    inf = pyphmm.info()  # runs the threshold calibration (first use)
    cal = inf["calibration"]
    how = (
        f"calibrated: GPU call {cal['gpu_call_us']:.1f} us + {cal['gpu_gcups']:.1f} GCUPS, CPU "
        f"{cal['cpu_gcups']:.2f} GCUPS"
        if cal
        else inf["gpu_min_cells_source"]
    )
    print(
        f"threshold {inf['gpu_min_cells']} cells ({how}); {inf['cpu_threads']} CPU threads; "
        f"hybrid {inf['hybrid']} with {inf['hybrid_gpu_threads']} GPU driver threads"
    )
    packed = _Packed(regions)
    cells = packed.cells
    drivers = inf["hybrid_gpu_threads"]
    ref = np.empty(packed.total)
    force = "hybrid_min_cpu_share=0"  # share even where the predicted CPU share is tiny
    whole = [
        ("GPU only (backend=cuda, one call)", _native.make_options("cuda"), reps, ""),
        ("hybrid GPU+CPU (auto: decides by predicted CPU share)", _native.make_options("auto", hybrid=True), reps, ""),
        (f"hybrid, sharing forced, {drivers} GPU drivers", _native.make_options("auto", hybrid=True), reps, force),
        ("CPU only", _native.make_options("cpu"), 1, ""),
    ]
    # PYPHMM_DEV's hybrid_gpu_threads and hybrid_min_cpu_share apply to every
    # call after a configuration reload: the same hybrid call with other driver counts.
    whole += [
        (
            f"hybrid, sharing forced, {d} GPU drivers",
            _native.make_options("auto", hybrid=True),
            reps,
            f"{force},hybrid_gpu_threads={d}",
        )
        for d in driver_counts
        if d != drivers
    ]
    times = {}
    saved = os.environ.get("PYPHMM_DEV")  # (--arith's cuda_arith)
    for k, (name, opts, n, dev) in enumerate(whole):
        out = ref if k == 0 else np.empty(packed.total)
        os.environ["PYPHMM_DEV"] = ",".join(x for x in (saved, dev) if x)
        _native.reload_config()
        dt, st = best_native(packed, opts, out, n)
        os.environ.pop("PYPHMM_DEV") if saved is None else os.environ.update(PYPHMM_DEV=saved)
        _native.reload_config()
        times[name] = dt
        diff = float(np.max(np.abs(out - ref))) if k else 0.0
        print(
            f"whole, {name}: {dt:.4f} s = {cells / dt / 1e9:.1f} GCUPS; {sides(st)}; max |diff| vs GPU only {diff:.3g}"
        )
    print(
        f"whole: hybrid (auto) / GPU only time = {times[whole[1][0]] / times[whole[0][0]]:.3f}; "
        f"sharing forced / GPU only = {times[whole[2][0]] / times[whole[0][0]]:.3f}"
    )

    packs = [_Packed([r]) for r in regions]
    outs = [np.empty(p.total) for p in packs]
    err, st = ffi.new("pyphmm_error *"), ffi.new("pyphmm_stats *")
    for name, backend in (
        ("CPU only", "cpu"),
        ("GPU only", "cuda"),
        (f"auto (threshold {inf['gpu_min_cells']})", "auto"),
    ):
        opts = _native.make_options(backend)
        for p, o in zip(packs[:50], outs):
            call_packed(p, opts, o, err, st)  # warm-up
        lat, on_gpu = [], 0
        t0 = time.perf_counter()
        for p, o in zip(packs, outs):
            a = time.perf_counter()
            call_packed(p, opts, o, err, st)
            lat.append(time.perf_counter() - a)
            on_gpu += st.gpu_regions
        total = time.perf_counter() - t0
        print(
            f"per-region, {name}: {total:.3f} s = {cells / total / 1e9:.1f} GCUPS; {on_gpu}/{len(packs)} calls "
            f"on the GPU; median latency {np.median(lat) * 1e6:.1f} us"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peak-pairs", type=int, default=500_000)
    ap.add_argument("--regions", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--arith",
        choices=["fast", "exact"],
        default="fast",
        help="float arithmetic of the kernels (PYPHMM_DEV's cuda_arith)",
    )
    ap.add_argument("--skip", default="", help="comma list of peak,whole,region,dispatch")
    ap.add_argument("--reps", type=int, default=3, help="(4): best of this many whole-workload calls")
    ap.add_argument(
        "--drivers",
        default="1,3,4",
        help="(4): also run hybrid with these GPU driver counts (PYPHMM_DEV's hybrid_gpu_threads)",
    )
    ap.add_argument("--check", action="store_true", help="compare the whole workload with the CPU backend")
    a = ap.parse_args()
    info = pyphmm.info()
    if not info["cuda_usable"]:
        sys.exit(f"no usable GPU: {info['cuda_status']}")
    print(f"pyphmm {info['version']} on {info['cuda_status']}; arithmetic {a.arith}")
    skip = set(a.skip.split(","))
    rng = np.random.default_rng(a.seed)
    if "peak" not in skip:
        bench_peak(rng, a.peak_pairs, [(128, 256), (64, 128), (256, 512)])
    if not {"whole", "region", "dispatch"} <= skip:
        t0 = time.perf_counter()
        regions = realistic(np.random.default_rng(a.seed + 1), a.regions)
        print(f"(generated {len(regions)} regions in {time.perf_counter() - t0:.1f} s)")
        if "whole" not in skip:
            bench_whole(regions, a.check)
        if "region" not in skip:
            bench_regions(regions)
        if "dispatch" not in skip:
            bench_dispatch(regions, a.reps, [int(x) for x in a.drivers.split(",") if x])


if __name__ == "__main__":
    main()
