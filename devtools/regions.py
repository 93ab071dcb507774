"""The one PairHMM region generator of the tests and scripts.

Three families, each seeded (the same arguments always give the same data):

- **Realistic workloads** (``generate``): GATK active regions. Each region
  has one random reference; its haplotypes are that reference with SNPs and
  small indels (the first is the reference itself), and its reads are
  windows of those haplotypes with sequencing errors, Illumina-like base
  qualities, GATK-like gap penalties and the occasional N. Shapes follow
  HaplotypeCaller: most regions 20-200 reads x 2-8 haplotypes, extremes
  1-500 x 1-40; reads 10-151 bp, haplotypes 30-521 bp. ``underflow=K``
  appends K regions built to underflow the float pass (long reads at high
  base quality against unrelated haplotypes, so the float sum falls below
  1e-28 and the per-pair double recompute is needed). The benchmarks and
  ``pyphmm/data/sample.in`` come from it, so its draws must not change.
- **The GPU benchmark's workload** (``gpu_bench_workload``): lognormal
  region sizes, reads mostly 151 bp, GATK's default gap penalties; the
  published GPU figures were measured on it.
- **Synthetic regions** (``make_region``): one region of chosen shape, by
  preset (``PRESETS``): reads that are windows of the haplotypes with a
  mismatch rate (``windows``, the default), unrelated random sequences
  (``random``), GATK's default gap penalties (``gatk_gaps``), one gap triple
  per read (``uniform_gaps``). Edge tests use it for exact shapes and
  quality ranges.

``as_java_holders`` turns a region into the plain tuples the JNI oracles
take. ``scripts/gen_regions.py`` is the command line of ``generate``.
"""

from __future__ import annotations

import numpy as np

from pyphmm.pairhmm import HaplotypeBatch, ReadBatch

ACGT = np.frombuffer(b"ACGT", dtype=np.uint8)
# Printable bytes other than A,C,G,T,N that GKL (and pyphmm) read as A.
ODD_BYTES = np.frombuffer(b"acgtnRYKMBDHVX.-*", dtype=np.uint8)
MIN_READ, MAX_READ = 10, 151
MIN_HAP, MAX_HAP = 30, 521


def _num_reads(rng) -> int:
    u = rng.random()
    if u < 0.75:
        return int(rng.integers(20, 201))
    if u < 0.88:
        return int(rng.integers(1, 20))
    return int(rng.integers(201, 501))


def _num_haps(rng) -> int:
    u = rng.random()
    if u < 0.78:
        return int(rng.integers(2, 9))
    if u < 0.88:
        return 1
    return int(rng.integers(9, 41))


def _random_seq(rng, n: int) -> np.ndarray:
    return ACGT[rng.integers(0, 4, n)]


def _mutate(rng, ref: np.ndarray) -> np.ndarray:
    """A haplotype: ref with a few SNPs and small insertions/deletions."""
    hap = ref.copy()
    for _ in range(int(rng.integers(1, 5))):
        kind = rng.random()
        pos = int(rng.integers(0, hap.size))
        if kind < 0.6:
            hap[pos] = ACGT[(np.searchsorted(ACGT, hap[pos]) + rng.integers(1, 4)) % 4]
        elif kind < 0.8:
            ins = _random_seq(rng, int(rng.integers(1, 11)))
            hap = np.concatenate([hap[:pos], ins, hap[pos:]])
        else:
            k = int(rng.integers(1, 11))
            hap = np.concatenate([hap[:pos], hap[pos + k :]])
    if hap.size > MAX_HAP:
        hap = hap[:MAX_HAP]
    if hap.size < MIN_HAP:
        hap = np.concatenate([hap, _random_seq(rng, MIN_HAP - hap.size)])
    return hap


def _base_quals(rng, n: int, hi: bool = False) -> np.ndarray:
    """Illumina-like: mostly 30-41 with a decaying tail, a few low runs."""
    if hi:
        return rng.integers(40, 61, n).astype(np.uint8)
    q = rng.normal(35, 6, n) - np.linspace(0, rng.uniform(0, 12), n)
    q = np.clip(np.rint(q), 6, 41)
    if rng.random() < 0.15:  # a low-quality stretch
        s = int(rng.integers(0, n))
        q[s : s + int(rng.integers(1, 20))] = rng.integers(6, 16)
    if rng.random() < 0.05:  # some pipelines emit very high values
        q[rng.random(n) < 0.1] = rng.integers(60, 91)
    return q.astype(np.uint8)


def _gap_quals(rng, n: int, mode: str) -> tuple:
    if mode == "default":
        return (np.full(n, 45, np.uint8), np.full(n, 45, np.uint8), np.full(n, 10, np.uint8))
    # BQSR-recalibrated style: per-base values around the defaults.
    ins = np.clip(np.rint(rng.normal(45, 8, n)), 10, 90).astype(np.uint8)
    dels = np.clip(np.rint(rng.normal(45, 8, n)), 10, 90).astype(np.uint8)
    gcp = np.clip(np.rint(rng.normal(10, 4, n)), 5, 40).astype(np.uint8)
    if rng.random() < 0.2:
        ins[:] = rng.integers(10, 91)
        dels[:] = rng.integers(10, 91)
        gcp[:] = rng.integers(5, 41)
    return ins, dels, gcp


def _sample_read(rng, hap: np.ndarray, length: int, quals: np.ndarray, n_rate: float) -> np.ndarray:
    length = min(length, hap.size)
    start = int(rng.integers(0, hap.size - length + 1))
    read = hap[start : start + length].copy()
    # Errors at the rate the base qualities promise (at least 0.1%).
    err = rng.random(length) < np.maximum(10.0 ** (-quals[:length].astype(np.float64) / 10.0), 1e-3)
    read[err] = ACGT[(np.searchsorted(ACGT, read[err]) + rng.integers(1, 4, err.sum())) % 4]
    if rng.random() < 0.03:  # an occasional read-level indel
        pos = int(rng.integers(1, length))
        if rng.random() < 0.5:
            read = np.concatenate([read[:pos], _random_seq(rng, 1), read[pos:-1]])
        else:
            read = np.concatenate([read[:pos], read[pos + 1 :], _random_seq(rng, 1)])
    if rng.random() < n_rate:
        read[rng.integers(0, length, int(rng.integers(1, 4)))] = ord("N")
    return read


# Benchmark shapes of generate(preset=...): read and haplotype counts
# (inclusive ranges) and, where given, the exact read and haplotype lengths
# (issue 12's typical 30x WGS region, and GATK's small regions).
SHAPES = {
    "typical": {"reads": (60, 60), "haps": (4, 4), "read_len": 150, "hap_len": 350},
    "small": {"reads": (10, 60), "haps": (2, 8)},
}


def _fit(rng, hap: np.ndarray, n: int) -> np.ndarray:
    """hap cut or extended with random bases to exactly n bases."""
    return hap[:n] if hap.size >= n else np.concatenate([hap, _random_seq(rng, n - hap.size)])


def _region(rng, n_rate: float, odd_rate: float, underflow: bool = False, shape: dict | None = None):
    if underflow:
        nr, nh = int(rng.integers(5, 40)), int(rng.integers(2, 6))
        read_len = lambda: int(rng.integers(120, 152))  # noqa: E731
        ref_len = int(rng.integers(160, MAX_HAP + 1))
    else:
        nr, nh = _num_reads(rng), _num_haps(rng)
        nominal = int(rng.choice([76, 101, 126, 150, 151], p=[0.05, 0.2, 0.1, 0.3, 0.35]))
        read_len = lambda: nominal if rng.random() < 0.6 else int(rng.integers(MIN_READ, nominal + 1))  # noqa: E731
        ref_len = int(np.clip(rng.normal(nominal + 250, 90), max(MIN_HAP, nominal), MAX_HAP))
        if rng.random() < 0.05:
            ref_len = int(rng.integers(MIN_HAP, MAX_HAP + 1))
        if shape:  # a preset's counts (and lengths) replace the drawn ones
            nr = int(rng.integers(shape["reads"][0], shape["reads"][1] + 1))
            nh = int(rng.integers(shape["haps"][0], shape["haps"][1] + 1))
            if "read_len" in shape:
                read_len = lambda: shape["read_len"]  # noqa: E731
                ref_len = shape["hap_len"]
    ref = _random_seq(rng, ref_len)
    haps = [ref] + [_mutate(rng, ref) for _ in range(nh - 1)]
    if shape and "hap_len" in shape:
        haps = [_fit(rng, h, shape["hap_len"]) for h in haps]
    if rng.random() < n_rate:
        h = haps[int(rng.integers(0, nh))]
        h[rng.integers(0, h.size, int(rng.integers(1, 3)))] = ord("N")
    gap_mode = "default" if rng.random() < 0.6 else "recal"
    reads = []
    for _ in range(nr):
        n = read_len()
        if underflow:
            quals = _base_quals(rng, n, hi=True)
            source = _random_seq(rng, max(n, MIN_HAP))  # unrelated to every haplotype
            bases = _sample_read(rng, source, n, quals, 0.0)
        else:
            src = haps[int(rng.integers(0, nh))]
            n = min(n, src.size)
            quals = _base_quals(rng, n)
            bases = _sample_read(rng, src, n, quals, n_rate)
        if odd_rate and rng.random() < odd_rate:
            bases[rng.integers(0, bases.size, int(rng.integers(1, 4)))] = rng.choice(ODD_BYTES)
        ins, dels, gcp = _gap_quals(rng, bases.size, gap_mode)
        reads.append((bases, quals[: bases.size], ins, dels, gcp))
    if odd_rate and rng.random() < odd_rate:
        h = haps[int(rng.integers(0, nh))]
        h[rng.integers(0, h.size, 2)] = rng.choice(ODD_BYTES)
    return _pack(reads, haps)


def _pack(reads, haps):
    offsets = np.zeros(len(reads) + 1, np.int64)
    np.cumsum([r[0].size for r in reads], out=offsets[1:])
    cols = [np.concatenate([r[i] for r in reads]).astype(np.uint8) for i in range(5)]
    hap_offsets = np.zeros(len(haps) + 1, np.int64)
    np.cumsum([h.size for h in haps], out=hap_offsets[1:])
    return (ReadBatch(*cols, offsets), HaplotypeBatch(np.concatenate(haps).astype(np.uint8), hap_offsets))


def _truncate(region, max_reads: int):
    reads, haps = region
    end = int(reads.offsets[max_reads])
    return (
        ReadBatch(
            reads.bases[:end],
            reads.quals[:end],
            reads.ins[:end],
            reads.dels[:end],
            reads.gcp[:end],
            reads.offsets[: max_reads + 1],
        ),
        haps,
    )


def generate(
    regions: int = 100,
    seed: int = 0,
    max_pairs: int | None = None,
    underflow: int = 0,
    n_rate: float = 0.02,
    odd_rate: float = 0.0,
    max_reads: int | None = None,
    preset: str | None = None,
    lengths: tuple | None = None,
) -> list:
    """``regions`` realistic regions (+ ``underflow`` underflow-forcing ones).

    Returns a list of ``(ReadBatch, HaplotypeBatch)``. The same arguments
    always give the same data. ``max_pairs`` caps reads x haplotypes over the
    realistic regions (the last region is cut to fit); ``n_rate`` is the
    chance that a read (and a region's haplotypes) carries N bases;
    ``odd_rate`` the chance that a read carries bytes other than A,C,G,T,N;
    ``max_reads`` keeps at most that many reads per region (small samples);
    ``preset`` (a key of SHAPES) fixes the realistic regions' shape;
    ``lengths`` (read, haplotype), with a preset, gives every read and every
    haplotype that many bases (typical: (150, 350)).
    """
    if preset is not None and preset not in SHAPES:
        raise ValueError(f"preset must be one of {', '.join(sorted(SHAPES))}, not {preset!r}")
    shape = SHAPES[preset] if preset else None
    if lengths is not None:
        read_len, hap_len = (int(v) for v in lengths)
        if shape is None or not 1 <= read_len <= hap_len:
            raise ValueError(f"lengths need a preset and 1 <= read <= haplotype, got {lengths!r}")
        shape = dict(shape, read_len=read_len, hap_len=hap_len)
    rng = np.random.default_rng(seed)
    out, pairs = [], 0
    for _ in range(regions):
        if max_pairs is not None and pairs >= max_pairs:
            break
        reg = _region(rng, n_rate, odd_rate, shape=shape)
        if max_reads is not None and len(reg[0]) > max_reads:
            reg = _truncate(reg, max_reads)
        nr, nh = len(reg[0]), len(reg[1])
        if max_pairs is not None and pairs + nr * nh > max_pairs:
            keep = (max_pairs - pairs) // nh
            if keep == 0:  # not even one read of this region fits
                break
            reg = _truncate(reg, keep)
            nr = len(reg[0])
        pairs += nr * nh
        out.append(reg)
    for _ in range(underflow):
        reg = _region(rng, 0.0, 0.0, underflow=True)
        if max_reads is not None and len(reg[0]) > max_reads:
            reg = _truncate(reg, max_reads)
        out.append(reg)
    return out


def pairs_and_cells(regions) -> tuple:
    pairs = sum(len(r) * len(h) for r, h in regions)
    cells = sum(int(r.lengths.sum()) * int(h.lengths.sum()) for r, h in regions)
    return pairs, cells


# ---- the GPU benchmark's workload ---------------------------------------------
# scripts/bench_pairhmm_gpu.py's "realistic set" (2,000 regions, seed 2), on
# which the published GPU figures were measured: its draws must not change.


def gpu_bench_region(rng, n_reads, n_haps, read_lens, hap_lens):
    """A region of exact read and haplotype lengths: haplotypes are variants
    of one reference (1% of bases redrawn), reads pieces of them with 1%
    errors, base qualities 6-40, GATK's default gap penalties."""
    ref = ACGT[rng.integers(0, 4, int(max(hap_lens)) + 1)]
    haps = []
    for L in hap_lens:
        h = ref[:L].copy()
        v = rng.random(L) < 0.01
        h[v] = ACGT[rng.integers(0, 4, int(v.sum()))]
        haps.append(h)
    reads = []
    for L in read_lens:
        src = haps[rng.integers(0, n_haps)]
        if L <= len(src):
            s = rng.integers(0, len(src) - L + 1)
            r = src[s : s + L].copy()
        else:
            r = ACGT[rng.integers(0, 4, L)]
        e = rng.random(L) < 0.01
        r[e] = ACGT[rng.integers(0, 4, int(e.sum()))]
        reads.append(r)
    offs = np.zeros(n_reads + 1, np.int64)
    np.cumsum(read_lens, out=offs[1:])
    t = int(offs[-1])
    rb = ReadBatch(
        np.concatenate(reads),
        rng.integers(6, 41, t).astype(np.uint8),
        np.full(t, 45, np.uint8),
        np.full(t, 45, np.uint8),
        np.full(t, 10, np.uint8),
        offs,
    )
    hoffs = np.zeros(n_haps + 1, np.int64)
    np.cumsum(hap_lens, out=hoffs[1:])
    return rb, HaplotypeBatch(np.concatenate(haps), hoffs)


def gpu_bench_workload(rng, n_regions):
    """The GPU benchmark's GATK-like active regions: read counts and haplotype counts skewed low,
    most reads 151 bp (trimmed ones shorter), haplotypes of a region of
    similar length (one base length 30-521, +-10 bp of indels)."""
    out = []
    for _ in range(n_regions):
        nr = int(np.clip(rng.lognormal(3.5, 1.0), 1, 500))
        nh = int(np.clip(rng.lognormal(1.4, 0.8), 1, 40))
        base = int(rng.integers(30, 522))
        hl = np.clip(base + rng.integers(-10, 11, nh), 30, 521)
        rl = np.where(rng.random(nr) < 0.7, 151, rng.integers(10, 152, nr))
        rl = np.minimum(rl, hl.min())  # reads lie within the region's haplotypes
        out.append(gpu_bench_region(rng, nr, nh, rl, hl))
    return out


# ---- synthetic regions ------------------------------------------------------

# Presets of make_region: each names the kind of region a test needs.
PRESETS = {
    # reads are windows of the haplotypes (variants of one reference) with a
    # mismatch rate: realistic likelihoods
    "windows": {},
    # reads and haplotypes of unrelated random sequence
    "random": {"related": False},
    # GATK's default gap penalties (45, 45, 10) on every base
    "gatk_gaps": {"indel_q": (45, 45), "gcp_q": (10, 10)},
    # one insertion/deletion/gap-continuation value per read (GATK without
    # BQSR's per-base tags), the GPU's constant-transition kernels' input
    "uniform_gaps": {"uniform": True, "gcp_q": (8, 12)},
}


def make_region(
    rng, n_reads: int, n_haps: int, read_len=(1, 160), hap_len=(1, 300), *, preset: str = "windows", **options
):
    """One region of n_reads x n_haps; read_len/hap_len are inclusive (lo,
    hi) ranges. ``preset`` picks the defaults (``PRESETS``), ``options``
    override them:

    - related (True): reads are windows of the haplotypes with ``mismatch``
      (0.05) of their bases redrawn; False: every sequence is random over
      ``alphabet`` (b"ACGT").
    - n_rate (0): share of bases set to N; other_bytes (False): 1% of bases
      set to 'x' (GKL reads it as A).
    - qual (6, 60), indel_q (10, 90), gcp_q (5, 40): inclusive ranges of the
      base quality, the insertion and deletion gap-open and the gap
      continuation values; uniform (False): one gap value per read.
    """
    unknown = set(options) - set(_DEFAULTS)
    if preset not in PRESETS or unknown:
        raise ValueError(f"unknown preset {preset!r} or options {sorted(unknown)}")
    o = dict(_DEFAULTS, **PRESETS[preset], **options)
    if o["related"]:
        reads, haps = _window_sequences(rng, n_reads, n_haps, read_len, hap_len, o)
    else:
        reads, haps = _random_sequences(rng, n_reads, n_haps, read_len, hap_len, o)
    lens = np.array([len(r) for r in reads], np.int64)
    offs = np.zeros(n_reads + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    total = int(offs[-1])

    def draw(lo_hi, per_read):
        lo, hi = lo_hi
        if not per_read:
            return rng.integers(lo, hi + 1, total).astype(np.uint8)
        return np.repeat(rng.integers(lo, hi + 1, n_reads), lens).astype(np.uint8)

    uniform = o["uniform"]
    rb = ReadBatch(
        np.concatenate(reads) if reads else np.zeros(0, np.uint8),
        draw(o["qual"], False),
        draw(o["indel_q"], uniform),
        draw(o["indel_q"], uniform),
        draw(o["gcp_q"], uniform),
        offs,
    )
    hoffs = np.zeros(n_haps + 1, np.int64)
    np.cumsum([len(h) for h in haps], out=hoffs[1:])
    return rb, HaplotypeBatch(np.concatenate(haps) if haps else np.zeros(0, np.uint8), hoffs)


_DEFAULTS = {
    "related": True,
    "mismatch": 0.05,
    "n_rate": 0.0,
    "other_bytes": False,
    "alphabet": b"ACGT",
    "qual": (6, 60),
    "indel_q": (10, 90),
    "gcp_q": (5, 40),
    "uniform": False,
}


def _window_sequences(rng, n_reads, n_haps, read_len, hap_len, o):
    hap_lens = rng.integers(hap_len[0], hap_len[1] + 1, n_haps)
    ref = ACGT[rng.integers(0, 4, int(hap_lens.max()))]
    haps = []  # haplotypes of a region are variants of one reference, as in GATK
    for length in hap_lens:
        h = ref[:length].copy()
        var = rng.random(length) < 0.02
        h[var] = ACGT[rng.integers(0, 4, int(var.sum()))]
        haps.append(h)
    reads = []
    for length in rng.integers(read_len[0], read_len[1] + 1, n_reads):
        src = haps[rng.integers(0, n_haps)]
        if length <= len(src):  # inside every haplotype where possible (overhangs can underflow double)
            start = rng.integers(0, (hap_lens.min() if length <= hap_lens.min() else len(src)) - length + 1)
            seq = src[start : start + length].copy()
        else:
            seq = ACGT[rng.integers(0, 4, length)].copy()
        flip = rng.random(length) < o["mismatch"]
        seq[flip] = ACGT[rng.integers(0, 4, int(flip.sum()))]
        reads.append(seq)
    for arrs in (reads, haps):
        for a in arrs:
            if o["n_rate"]:
                a[rng.random(len(a)) < o["n_rate"]] = ord("N")
            if o["other_bytes"]:
                a[rng.random(len(a)) < 0.01] = ord("x")
    return reads, haps


def _random_sequences(rng, n_reads, n_haps, read_len, hap_len, o):
    alpha = np.frombuffer(o["alphabet"], np.uint8)

    def seq(lo_hi):
        return alpha[rng.integers(0, alpha.size, int(rng.integers(lo_hi[0], lo_hi[1] + 1)))]

    return [seq(read_len) for _ in range(n_reads)], [seq(hap_len) for _ in range(n_haps)]


def as_java_holders(region):
    """(reads, haps) as plain bytes: a read is (bases, quals, ins, dels, gcp),
    a haplotype its bases (the fields of GATK's ReadDataHolder and
    HaplotypeDataHolder)."""
    reads, haps = region
    out = []
    for s, e in zip(reads.offsets[:-1].tolist(), reads.offsets[1:].tolist()):
        out.append(tuple(getattr(reads, f)[s:e].tobytes() for f in ("bases", "quals", "ins", "dels", "gcp")))
    return out, [haps[h] for h in range(len(haps))]


def region_cells(region) -> int:
    """Sum of read lengths x sum of haplotype lengths of a region in either form."""
    reads, haps = region
    if isinstance(reads, ReadBatch):
        return int(reads.lengths.sum()) * int(haps.lengths.sum())
    return sum(len(r[0]) for r in reads) * sum(len(h) for h in haps)
