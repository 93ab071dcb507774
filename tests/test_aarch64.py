"""pyphmm on AArch64, checked on this x86-64 machine.

scripts/build_aarch64.sh cross-builds libpyphmm.so for AArch64 with the
check program tests/native/aarch64_check.cc; qemu-aarch64 runs it, through
the C ABI only, once per CPU kernel (neon and portable, forced with
PYPHMM_DEV's cpu_kernel and sw_isa). What it computes is compared here with
GKL (the x86 library, through jpype, in this same run) and with the x86
build of pyphmm:

- PairHMM: GATK/GKL's test vectors and generated regions (N and non-ACGTN
  bases, qualities with bit 7 set, reads of 1 bp to 600 bp, a region whose
  float sums underflow so the double fallback runs), float and all-double,
  one call per region (small regions go pair by pair to the stripe kernel)
  and one call for all (lane-per-pair groups): within 1e-5 of GKL, and
  neon, portable and both call shapes bit-identical.
- Smith-Waterman: seeded pairs of every kind under GATK's four parameter
  sets and four overhang strategies, batch and single-pair entry points:
  CIGAR and offset identical to the x86 CPU backend (which test_sw.py ties
  to GKL and GATK's rules) and to GKL itself where GKL follows GATK.
- PDHMM: GKL 0.9's stored serial results (tests/data/: edge cases, GATK-
  and HaplotypeCaller-shaped regions) and one of GKL's test files, one call
  per region and one for all: within 1e-5 of GKL (bit-identical where the
  AArch64 libm builds the tables as x86's does, which is printed), -inf
  where GKL has it, and neon, portable and both call shapes bit-identical
  to each other and to the x86 build.
- GKL's utility natives: flush-to-zero through the FPCR, restored around
  pyphmm's kernels; isAvx/isAvx2 true, isAvx512 false. PDHMM keeps
  denormals under a caller's flush-to-zero (as GKL's PDHMM computes).

The cross toolchain and qemu are test dependencies (scripts/test_aarch64.sh
installs them); when they are missing these tests fail, because CI installs
them. PYPHMM_ALLOW_NO_AARCH64=1 turns that into a skip where they cannot
exist (a machine without package access).
"""

import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

import pyphmm
from devtools.oracle import TOL
from devtools.oracle.gkl import GklPairHmm
from devtools.oracle.gkl_pdhmm import as_tuples
from devtools.oracle.gkl_sw import GklSmithWaterman
from devtools.pd_testdata import gkl_cases, raw_pdhmm, read_edge_file, stored_regions
from devtools.regions import generate, make_region
from devtools.sw_pairs import hap_vs_ref, haplotype_caller_mix, haplotype_caller_regions, make_pairs, read_vs_hap
from devtools.testdata import pairhmm_cases
from pyphmm import sw

# Every test needs the cross-built library (scripts/build_aarch64.sh, ~1 min).
pytestmark = [pytest.mark.aarch64, pytest.mark.slow]

SEED = 20261122

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "aarch64")
CXX = os.environ.get("CXX_AARCH64", "aarch64-linux-gnu-g++")
QEMU = os.environ.get("PYPHMM_QEMU_AARCH64") or shutil.which("qemu-aarch64") or "qemu-aarch64-static"
SYSROOT = os.environ.get("PYPHMM_AARCH64_SYSROOT", "/usr/aarch64-linux-gnu")
KERNELS = ["neon", "portable"]
STRATEGIES = {"SOFTCLIP": 9, "INDEL": 10, "LEADING_INDEL": 11, "IGNORE": 12}
EM_AARCH64 = 183


def missing_tools():
    missing = [t for t in (CXX, QEMU) if not shutil.which(t)]
    if not os.path.exists(os.path.join(SYSROOT, "lib", "ld-linux-aarch64.so.1")):
        missing.append(f"{SYSROOT}/lib/ld-linux-aarch64.so.1")
    return missing


class Arm:
    """The cross-built check program, run under qemu with a forced kernel."""

    def __init__(self, build):
        self.exe = os.path.join(build, "aarch64_check")
        self.lib = os.path.join(build, "libpyphmm.so")

    def run(self, kernel, *args):
        env = dict(os.environ)
        env.pop("PYPHMM_DEV", None)
        if kernel:
            env.update(PYPHMM_DEV=f"cpu_kernel={kernel},sw_isa={kernel}")
        res = subprocess.run(
            [QEMU, "-L", SYSROOT, self.exe, *map(str, args)], env=env, capture_output=True, text=True, timeout=600
        )
        assert res.returncode == 0, f"aarch64_check {args} ({kernel}): {res.stdout[-2000:]}{res.stderr[-2000:]}"
        assert "warning" not in res.stderr, res.stderr  # a refused kernel name would be a warning
        return res.stdout


@pytest.fixture(scope="module")
def arm():
    missing = missing_tools()
    if missing:
        msg = (
            f"AArch64 cross toolchain or qemu missing: {', '.join(missing)} "
            "(scripts/test_aarch64.sh --prepare installs g++-aarch64-linux-gnu and qemu-user)"
        )
        if os.environ.get("PYPHMM_ALLOW_NO_AARCH64") == "1":
            pytest.skip(msg)
        pytest.fail(msg)
    res = subprocess.run(
        ["bash", os.path.join(ROOT, "scripts", "build_aarch64.sh"), BUILD], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return Arm(BUILD)


# ---- inputs ------------------------------------------------------------------


def reads_haps(rb, hb):
    """A region's batches as Read objects and haplotype bytes (what GKL's oracle takes)."""
    reads = [
        pyphmm.Read(rb.bases[a:b], rb.quals[a:b], rb.ins[a:b], rb.dels[a:b], rb.gcp[a:b])
        for a, b in zip(rb.offsets[:-1], rb.offsets[1:])
    ]
    return reads, [bytes(hb.bases[a:b]) for a, b in zip(hb.offsets[:-1], hb.offsets[1:])]


def realistic_regions(seed):
    """Small realistic regions, plus one built to underflow the float pass."""
    return [reads_haps(*r) for r in generate(12, seed=seed, underflow=1, max_reads=24)]


def extra_regions(seed):
    """Edges the realistic set lacks: 1-3 bp reads, 300-600 bp reads against
    haplotypes up to 1 kb (many stripes), non-ACGTN and lowercase bases,
    qualities with bit 7 set (GKL masks them with & 127), and reads of
    every length side by side so lanes of a group end on odd and even rows."""
    rng = np.random.default_rng(seed)
    regions = []
    regions.append(reads_haps(*make_region(rng, 6, 2, read_len=(1, 3), hap_len=(1, 12), preset="random")))
    hap = rng.choice(list(b"ACGT"), 1000).astype(np.uint8)
    long_reads = []
    for m in (300, 451, 600):  # drawn from the haplotype, so no value underflows double
        s = int(rng.integers(0, 1000 - m))
        bases = hap[s : s + m].copy()
        bases[rng.integers(0, m, 6)] = rng.choice(list(b"ACGT"), 6)
        long_reads.append(
            pyphmm.Read(
                bases.tobytes(),
                rng.integers(6, 60, m),
                rng.integers(10, 90, m),
                rng.integers(10, 90, m),
                rng.integers(5, 40, m),
            )
        )
    regions.append((long_reads, [hap.tobytes(), hap[100:700].tobytes()]))
    regions.append(
        reads_haps(
            *make_region(rng, 9, 3, read_len=(20, 90), hap_len=(40, 160), preset="random", alphabet=b"ACGTNacgtX")
        )
    )
    regions.append(
        reads_haps(
            *make_region(
                rng,
                7,
                2,
                read_len=(30, 120),
                hap_len=(60, 200),
                preset="random",
                qual=(134, 187),
                indel_q=(138, 200),
                gcp_q=(133, 160),
            )
        )
    )
    regions.append(reads_haps(*make_region(rng, 40, 2, read_len=(1, 80), hap_len=(60, 120), preset="random")))
    return regions


def write_regions(path, regions):
    with open(path, "w") as f:
        f.write(f"{len(regions)}\n")
        for reads, haps in regions:
            f.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                f.write(
                    " ".join(
                        bytes(np.asarray(x, np.uint8)).hex() if not isinstance(x, bytes) else x.hex()
                        for x in (r.bases, r.quals, r.ins, r.dels, r.gcp)
                    )
                    + "\n"
                )
            for h in haps:
                f.write(bytes(h).hex() + "\n")


def run_pairhmm(arm, tmp_path, regions, kernel, double, calls):
    inp = tmp_path / "regions.txt"
    if not inp.exists():
        write_regions(inp, regions)
    out = tmp_path / f"{kernel}-{int(double)}-{calls}.txt"
    arm.run(kernel, "pairhmm", inp, out, int(double), calls, 2)
    lines = out.read_text().split("\n")
    _, pairs, double_pairs = lines[0].split()
    values = np.array([float(v) for v in lines[1:] if v])
    assert values.size == int(pairs) == sum(len(r) * len(h) for r, h in regions)
    return values, int(double_pairs)


def gkl_values(regions, double):
    g = GklPairHmm(double=double)
    return np.concatenate([g.compute(r, h).ravel() for r, h in regions])


def check_pairhmm(arm, tmp_path, regions, expect_double_fallback):
    """Every kernel x precision x call shape against GKL; returns the worst difference."""
    worst = 0.0
    for double in (False, True):
        gkl = gkl_values(regions, double)
        reference = None
        for kernel in KERNELS:
            for calls in ("each", "all"):
                got, double_pairs = run_pairhmm(arm, tmp_path, regions, kernel, double, calls)
                assert np.isfinite(got).all()
                diff = float(np.abs(got - gkl).max())
                assert diff <= TOL, (kernel, double, calls, diff)
                worst = max(worst, diff)
                if expect_double_fallback and not double:
                    assert double_pairs > 0, "the underflow region must take the double fallback"
                if reference is None:
                    reference = got
                else:  # which kernel, and which of its two layouts, must not matter
                    assert np.array_equal(got, reference), (kernel, double, calls)
    return worst


# ---- tests -------------------------------------------------------------------


def test_library_is_aarch64_with_the_x86_exports(arm):
    with open(arm.lib, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF" and struct.unpack_from("<H", head, 18)[0] == EM_AARCH64
    nm = CXX.replace("g++", "nm")

    def exports(path, tool):
        out = subprocess.run([tool, "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
        return {
            line.split()[-1]
            for line in out.splitlines()
            if line.split() and line.split()[-1].startswith(("pyphmm_", "Java_"))
        }

    arm_syms = exports(arm.lib, nm)
    x86_syms = exports(os.path.join(os.path.dirname(pyphmm.__file__), "libpyphmm.so"), "nm")
    assert {s for s in arm_syms if s.startswith("Java_com_intel_gkl_IntelGKLUtils_")}, "JNI layer missing"
    assert arm_syms == x86_syms, arm_syms ^ x86_syms


def test_kernels_are_chosen_at_run_time(arm):
    assert "cpu_kernel=neon " in arm.run(None, "info")
    for kernel in KERNELS:
        out = arm.run(kernel, "info")
        assert f"cpu_kernel={kernel} " in out and "jni=1" in out, out


@pytest.mark.jvm
def test_pairhmm_gkl_test_vectors(arm, tmp_path, gkl_jvm):
    cases = [(hap, pyphmm.Read(bases, q, i, d, g), expected) for hap, bases, q, i, d, g, expected in pairhmm_cases()]
    assert len(cases) == 104
    regions = [([read], [hap.encode()]) for hap, read, _ in cases]
    check_pairhmm(arm, tmp_path, regions, expect_double_fallback=False)
    expected = np.array([e for _, _, e in cases])
    got, _ = run_pairhmm(arm, tmp_path, regions, "neon", False, "each")
    assert np.abs(got - expected).max() <= TOL


@pytest.mark.jvm
def test_pairhmm_generated_regions(arm, tmp_path, gkl_jvm):
    regions = realistic_regions(SEED) + extra_regions(SEED + 1)
    worst = check_pairhmm(arm, tmp_path, regions, expect_double_fallback=True)
    print(f"max |aarch64 - GKL| = {worst:.3g}")


def pd_workload():
    """(regions as tuples of bytes, GKL's values flattened; NaN where only
    a printed 7-digit value exists): edge cases, a few stored regions of
    each shape, GKL's smallest test file."""
    regions, want = [], []
    for _, reads, haps, values in read_edge_file():
        regions.append((reads, haps))
        want.append(values.ravel())
    for shape in ("gatk", "hc"):
        stored, gkl = stored_regions(shape)
        regions += [as_tuples(r, h) for r, h in stored[:3]]
        want += [g.ravel() for g in gkl[:3]]
    cases = gkl_cases("pdhmm_syn_199_68_51.txt")
    regions += [([r], [h]) for r, h, _ in cases]
    want.append(np.full(len(cases), np.nan))
    return regions, np.concatenate(want), np.array([e for *_, e in cases])


def write_pd_regions(path, regions):
    def hx(b):
        return b.hex() if b else "-"

    with open(path, "w") as f:
        f.write(f"{len(regions)}\n")
        for reads, haps in regions:
            f.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                f.write(" ".join(hx(x) for x in r) + "\n")
            for h in haps:
                f.write(" ".join(hx(x) for x in h) + "\n")


def test_pdhmm_equals_gkl_and_x86(arm, tmp_path):
    regions, gkl, printed = pd_workload()
    inp = tmp_path / "pd.txt"
    write_pd_regions(inp, regions)
    x86 = np.concatenate([v.ravel() for v in raw_pdhmm(regions)])
    known = ~np.isnan(gkl)
    reference = None
    for kernel in KERNELS:
        for calls in ("each", "all"):
            out = tmp_path / f"pd-{kernel}-{calls}.txt"
            arm.run(kernel, "pdhmm", inp, out, calls, 2)
            lines = out.read_text().split()
            assert lines[0] == "stats" and int(lines[1]) == x86.size
            got = np.array([float(v) for v in lines[2:]])
            assert got.size == x86.size and not np.isnan(got).any()
            assert np.array_equal(np.isneginf(got[known]), np.isneginf(gkl[known])), (kernel, calls)
            fin = known & np.isfinite(gkl)
            worst = float(np.abs(got[fin] - gkl[fin]).max())
            assert worst <= TOL, (kernel, calls, worst)
            assert float(np.abs(got[~known] - printed).max()) <= 1e-4
            if reference is None:
                reference = got
                same = (got == x86) | (np.isneginf(got) & np.isneginf(x86))
                print(
                    f"PDHMM on AArch64: {got.size} pairs, max |diff| to GKL {worst:.3g}, "
                    f"bit-identical to x86: {same.mean():.2%}"
                )
                assert same.all()
            else:
                assert np.array_equal(got, reference), (kernel, calls)


# Parameters at the bounds of the NEON kernel's lane types (int8 up to a low
# end of -127 and a high end of 127, int16 from -128 or 128, the int32
# absolute fill past int16's; diff_lane_bytes in sw_cpu_fill.cc).
EDGE_PARAMS = [
    (12, -15, -40, -5),
    (13, -15, -40, -5),
    (21, -30, -40, -33),
    (22, -30, -40, -33),
    (6000, -6000, -9000, -1000),
    (10000, -10000, -11000, -2000),
]


def sw_settings(n_short, n_hap, n_read, n_mix=0):
    refs, alts, _ = make_pairs(n_short, 16)
    r2, a2 = hap_vs_ref(n_hap, 17)
    r3, a3 = read_vs_hap(n_read, 18)
    refs, alts = refs + r2 + r3, alts + a2 + a3
    rows = []
    for params in sw.PRESETS.values():
        for name, code in STRATEGIES.items():
            rows += [(r, a, params, name, code) for r, a in zip(refs, alts)]
    mix = haplotype_caller_mix(n_mix, 19)
    for params in EDGE_PARAMS:
        for name, code in STRATEGIES.items():
            rows += [(r, a, params, name, code) for r, a, *_ in mix]
    return rows


def region_rows(n):
    """Haplotypes against their region's window, in HaplotypeCaller's order:
    pairs that resume from an earlier one's columns (prefix reuse)."""
    return [(r, a, p, s, STRATEGIES[s]) for r, a, p, s, k in haplotype_caller_regions(n, 20) if k == "hap_vs_ref"]


@pytest.mark.jvm
def test_smith_waterman_identical_to_x86_and_gkl(arm, tmp_path, gkl_jvm):
    rows = sw_settings(240, 6, 24, 12)
    regions = region_rows(300)
    rows += regions
    inp, out = tmp_path / "sw.txt", tmp_path / "sw-out.txt"
    with open(inp, "w") as f:
        f.write(f"{len(rows)}\n")
        for r, a, p, _, code in rows:
            f.write(f"{r.hex()} {a.hex()} {p[0]} {p[1]} {p[2]} {p[3]} {code}\n")
    cigars, offsets = sw.align_batch(
        [r[0] for r in rows],
        [r[1] for r in rows],
        params=[r[2] for r in rows],
        overhang=[r[3] for r in rows],
        backend="cpu",
    )
    x86 = [f"{c} {o}" for c, o in zip(cigars, offsets.tolist())]
    gkl = GklSmithWaterman()
    compared = 0
    for (r, a, p, name, _), want in zip(rows, x86):
        if name != "IGNORE":  # GKL's IGNORE deviates from GATK (see test_sw.py)
            assert "{} {}".format(*gkl.align(r, a, p, name)) == want, (r, a, p, name)
            compared += 1
    assert compared == (len(rows) - len(regions)) * 3 // 4 + len(regions)
    for kernel in KERNELS:
        reused = arm.run(kernel, "sw", inp, out, 2)
        assert int(reused.split("reused_cells")[1]) > 0, (kernel, reused)
        lines = out.read_text().splitlines()
        assert len(lines) == len(rows)
        for line, want, row in zip(lines, x86, rows):
            c, o, c1, o1 = line.split()
            assert f"{c} {o}" == want and f"{c1} {o1}" == want, (kernel, row, line, want)


def test_flush_to_zero_through_fpcr(arm):
    out = arm.run(None, "fpmode")
    facts = dict(kv.split("=") for kv in out.split())
    # The process starts without FTZ, and denormals exist.
    assert facts["initial_ftz"] == "0" and facts["denormal_without_ftz"] == "1"
    # GKL's setFlushToZero(true) sets FPCR.FZ; a denormal product is then 0.
    assert facts["ftz_after_set"] == "1" and facts["fpcr_fz"] == "1" and facts["denormal_with_ftz"] == "0"
    # pyphmm's kernels restore the caller's mode, whichever it was.
    assert facts["ftz_after_call_without_ftz"] == "0" and facts["ftz_after_call_with_ftz"] == "1"
    assert facts["ftz_after_clear"] == "0" and facts["denormal_after_clear"] == "1"
    assert facts["same_result_either_mode"] == "1"
    # PDHMM computes with denormals whatever the caller's mode, and keeps the mode.
    assert facts["pd_ftz_kept"] == "1" and facts["pd_same_result_either_mode"] == "1"
    assert -631 < float(facts["pd_likelihood"]) < -615  # a denormal sum: FTZ would make it -inf
    # What GKL's loaders ask before loading the PairHMM and Smith-Waterman libraries.
    assert (facts["avx"], facts["avx2"], facts["avx512"]) == ("1", "1", "0")
    assert int(facts["omp_threads"]) >= 1


@pytest.mark.jvm
@pytest.mark.packaging
def test_shim_jar_carries_the_aarch64_library(arm, tmp_path):
    """java_shim/build.sh (which setup.py runs) stores the cross-built library
    at the path the shim's loader picks on os.arch aarch64."""
    import zipfile

    if not (shutil.which("javac") and shutil.which("jar")):  # (CI installs a JDK; the GPU host has a JRE only)
        pytest.skip("needs a JDK (javac, jar) to build the shim jar")
    x86_lib = os.path.join(os.path.dirname(pyphmm.__file__), "libpyphmm.so")
    jar = tmp_path / "shim.jar"
    subprocess.run(
        ["bash", os.path.join(ROOT, "java_shim", "build.sh"), x86_lib, str(jar)],
        check=True,
        capture_output=True,
        env=dict(os.environ, PYPHMM_AARCH64_LIB=arm.lib),
    )
    with zipfile.ZipFile(jar) as z:
        data = z.read("pyphmm/native/linux-aarch64/libpyphmm.so")
    with open(arm.lib, "rb") as f:
        assert data == f.read()
    assert struct.unpack_from("<H", data, 18)[0] == EM_AARCH64
