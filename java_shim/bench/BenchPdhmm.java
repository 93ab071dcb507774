// PDHMM JNI benchmark: pyphmm's shim IntelPDHMM vs GKL 0.9's IntelPDHMM in
// ONE JVM, on the same regions, one computeLikelihoods call per region as
// GATK's VectorLoglessPairPDHMM makes them. Each side has its own class
// loader (parent: the platform loader), so each binds GKL's JNI symbols to
// its own library: the shim to libpyphmm.so, GKL to the libgkl_pdhmm.so its
// loader extracts from its jar.
//   java -cp . BenchPdhmm PD_REGIONS.in SHIM_CP GKL_CP REPS MODE...
// SHIM_CP, GKL_CP: class paths (':'-separated) of the two loaders; SHIM_CP
// is the shim jar and bindings 1.1.0's types, GKL_CP GKL 0.9's jar, bindings
// 1.1.0, commons-logging and commons-io ("-": no GKL).
// MODE: shim:THREADS | gkl:THREADS:AVXLEVEL (AVXLEVEL: FASTEST_AVAILABLE,
// SCALAR, AVX2, AVX512; OpenMP FASTEST_AVAILABLE, so GKL uses OpenMP when
// THREADS > 1), optionally :REPS at the end. Prints one JSON line per mode;
// with BENCHPD_OUT=PREFIX also writes each mode's likelihoods (big-endian
// doubles, region order) to PREFIX.<mode with '_' for ':'>.
// One of K JVMs (scripts/bench_pdhmm_jni.py --jvms K): BENCHPD_SHARE=p/K
// takes regions p, p + K, ...; BENCHPD_WARMUP passes of the shim's modes
// (default 1; the JIT compiles the shim's packing over its first ~1,000
// calls) and one of GKL's come before the timing (BENCHPD_DONE_AFTER_WARMUP=1: the shim's done() after
// its warm-up, so that its reports cover the timed calls); with BENCHPD_BARRIER=1 the JVM then prints READY and
// waits for a line on stdin, so that all JVMs start together, and its JSON
// line holds the wall-clock start and end (t_go_ns, t_end_ns, epoch).
// BENCHPD_HOLDERS=fresh builds each call's read holders and result array
// just before the call, untimed, as VectorLoglessPairPDHMM does (its reads'
// arrays are new copies: GATKRead.getBases() and getBaseQualities() copy,
// the score imputator allocates the gap arrays; haplotype arrays are the
// haplotypes' own), so a call finds them in the CPU's cache; "seconds" is
// then the calls' summed time. Otherwise (reused) every region's holders
// are built once and cycled through: each call's arrays are cold, and
// "seconds" is the loop's wall time.
import java.io.BufferedReader;
import java.io.File;
import java.io.FileReader;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class BenchPdhmm {
    static final class Region {
        byte[][][] reads;  // [r][0..4] bases, quals, ins, dels, gcp (raw phred)
        byte[][][] haps;   // [h][0..1] bases, PD bytes
        long cells;
    }

    /** tests/java/Records.java's format with PD bytes after each haplotype. */
    static List<Region> readRegions(String path) throws Exception {
        List<Region> out = new ArrayList<Region>();
        try (BufferedReader in = new BufferedReader(new FileReader(path))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.trim().isEmpty()) continue;
                String[] rh = line.trim().split("\\s+");
                Region g = new Region();
                g.reads = new byte[Integer.parseInt(rh[0])][][];
                g.haps = new byte[Integer.parseInt(rh[1])][][];
                long rl = 0, hl = 0;
                for (int r = 0; r < g.reads.length; ++r) {
                    String[] f = in.readLine().trim().split("\\s+");
                    g.reads[r] = new byte[5][];
                    g.reads[r][0] = f[0].getBytes("US-ASCII");
                    for (int k = 1; k < 5; ++k) {
                        byte[] q = f[k].getBytes("US-ASCII");
                        for (int i = 0; i < q.length; ++i) q[i] -= 33;
                        g.reads[r][k] = q;
                    }
                    rl += g.reads[r][0].length;
                }
                for (int h = 0; h < g.haps.length; ++h) {
                    String[] f = in.readLine().trim().split("\\s+");
                    String[] pd = f[1].split(",");
                    g.haps[h] = new byte[][] {f[0].getBytes("US-ASCII"), new byte[pd.length]};
                    for (int i = 0; i < pd.length; ++i) g.haps[h][1][i] = Byte.parseByte(pd[i]);
                    hl += g.haps[h][0].length;
                }
                g.cells = rl * hl;
                out.add(g);
            }
        }
        return out;
    }

    /** Regions p, p + K, ... of "p/K" (all when null). */
    static List<Region> share(List<Region> all, String spec) {
        if (spec == null) return all;
        String[] f = spec.split("/");
        int p = Integer.parseInt(f[0]), k = Integer.parseInt(f[1]);
        List<Region> out = new ArrayList<Region>();
        for (int i = p; i < all.size(); i += k) out.add(all.get(i));
        return out;
    }

    /** Wall-clock now in epoch nanoseconds (comparable across JVMs). */
    static long epochNanos() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    static URLClassLoader loader(String classpath) throws Exception {
        String[] parts = classpath.split(File.pathSeparator);
        URL[] urls = new URL[parts.length];
        for (int i = 0; i < parts.length; ++i) urls[i] = new File(parts[i]).toURI().toURL();
        return new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
    }

    public static void main(String[] a) throws Throwable {
        List<Region> regions = share(readRegions(a[0]), System.getenv("BENCHPD_SHARE"));
        ClassLoader shim = loader(a[1]);
        ClassLoader gkl = a[2].equals("-") ? null : loader(a[2]);
        int reps = Integer.parseInt(a[3]);
        for (int m = 4; m < a.length; ++m) {
            String[] f = a[m].split(":");
            boolean isShim = f[0].equals("shim");
            int threads = Integer.parseInt(f[1]);
            String avx = isShim ? "FASTEST_AVAILABLE" : f[2];
            int last = isShim ? 2 : 3;
            int modeReps = f.length > last ? Integer.parseInt(f[last]) : reps;
            ClassLoader cl = isShim ? shim : gkl;
            if (cl == null) throw new IllegalArgumentException(a[m] + ": no GKL class path given");
            run(a[m], cl, threads, avx, regions, modeReps);
        }
    }

    static void run(String label, ClassLoader cl, int threads, String avx, List<Region> regions, int reps)
            throws Throwable {
        String nb = "org.broadinstitute.gatk.nativebindings.pdhmm.";
        Class<?> readCls = Class.forName(nb + "ReadDataHolder", true, cl);
        Class<?> hapCls = Class.forName(nb + "HaplotypeDataHolder", true, cl);
        Class<?> argsCls = Class.forName(nb + "PDHMMNativeArguments", true, cl);
        Class<?> impl = Class.forName("com.intel.gkl.pdhmm.IntelPDHMM", true, cl);
        Object hmm = impl.getConstructor().newInstance();
        if (!(Boolean) impl.getMethod("load", File.class).invoke(hmm, (File) null))
            throw new RuntimeException(label + ": load failed");
        // GATK's arguments (PDPairHMMNativeArgumentCollection), with this mode's threads and AVX level.
        Object args = argsCls.getConstructor().newInstance();
        argsCls.getField("maxNumberOfThreads").setInt(args, threads);
        argsCls.getField("avxLevel").set(args, enumValue(cl, nb + "PDHMMNativeArguments$AVXLevel", avx));
        argsCls.getField("openMPSetting").set(args,
                enumValue(cl, nb + "PDHMMNativeArguments$OpenMPSetting", "FASTEST_AVAILABLE"));
        argsCls.getMethod("setMaxMemoryInMB", int.class).invoke(args, 1024);
        // Method handles, not Method.invoke (see BenchJni: a reflective call
        // restores the thread's MXCSR, undoing a flush-to-zero mode).
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        MethodHandle init = lookup.unreflect(impl.getMethod("initialize", argsCls))
                .asType(MethodType.methodType(void.class, Object.class, Object.class));
        MethodHandle compute = lookup.unreflect(impl.getMethod("computeLikelihoods",
                        Array.newInstance(readCls, 0).getClass(), Array.newInstance(hapCls, 0).getClass(),
                        double[].class))
                .asType(MethodType.methodType(void.class, Object.class, Object.class, Object.class, double[].class));
        init.invokeExact(hmm, args);
        String[] rf = {"readBases", "readQuals", "insertionGOP", "deletionGOP", "overallGCP"};
        Field[] readFields = new Field[5];
        for (int k = 0; k < 5; ++k) readFields[k] = readCls.getField(rf[k]);
        Field[] hapFields = {hapCls.getField("haplotypeBases"), hapCls.getField("haplotypePDBases")};
        int n = regions.size();
        boolean fresh = "fresh".equals(System.getenv("BENCHPD_HOLDERS"));
        Object[] jr = new Object[n], jh = new Object[n];
        double[][] outs = new double[n][];
        long cells = 0;
        for (int i = 0; i < n; ++i) {
            Region g = regions.get(i);
            jr[i] = holders(readCls, readFields, g.reads, false);
            jh[i] = holders(hapCls, hapFields, g.haps, false);
            outs[i] = new double[g.reads.length * g.haps.length];
            cells += g.cells;
        }
        String warm = label.startsWith("shim") ? System.getenv("BENCHPD_WARMUP") : null;
        for (int w = 0, passes = warm == null ? 1 : Integer.parseInt(warm); w < passes; ++w)
            for (int i = 0; i < n; ++i) {
                if (fresh) {
                    jr[i] = holders(readCls, readFields, regions.get(i).reads, true);
                    outs[i] = new double[outs[i].length];
                }
                compute.invokeExact(hmm, jr[i], jh[i], outs[i]);
            }
        if (warm != null && "1".equals(System.getenv("BENCHPD_DONE_AFTER_WARMUP")))
            impl.getMethod("done").invoke(hmm);  // (closes the warm-up's reports: the timed calls' follow)
        if ("1".equals(System.getenv("BENCHPD_BARRIER"))) {
            System.out.println("READY");
            System.out.flush();
            if (new BufferedReader(new java.io.InputStreamReader(System.in)).readLine() == null)
                throw new RuntimeException(label + ": stdin closed before the start");
        }
        long[] lat = new long[n * reps];
        long goNs = epochNanos();
        long t0 = System.nanoTime(), called = 0;
        for (int rep = 0; rep < reps; ++rep) {
            for (int i = 0; i < n; ++i) {
                if (fresh) {
                    jr[i] = holders(readCls, readFields, regions.get(i).reads, true);
                    outs[i] = new double[outs[i].length];
                }
                long s = System.nanoTime();
                compute.invokeExact(hmm, jr[i], jh[i], outs[i]);
                long t = System.nanoTime() - s;
                lat[rep * n + i] = t;
                called += t;
            }
        }
        double total = fresh ? called / 1e9 : (System.nanoTime() - t0) / 1e9;
        long endNs = epochNanos();
        impl.getMethod("done").invoke(hmm);
        Arrays.sort(lat);
        double checksum = 0;
        for (double[] o : outs) for (double v : o) if (!Double.isInfinite(v)) checksum += v;
        String dump = System.getenv("BENCHPD_OUT");
        if (dump != null) {
            try (java.io.DataOutputStream d = new java.io.DataOutputStream(new java.io.BufferedOutputStream(
                    new java.io.FileOutputStream(dump + "." + label.replace(':', '_'))))) {
                for (double[] o : outs) for (double v : o) d.writeDouble(v);
            }
        }
        System.out.printf(java.util.Locale.ROOT,
                "{\"mode\": \"%s\", \"regions\": %d, \"reps\": %d, \"cells\": %d, \"seconds\": %.6f, \"gcups\": %.4f, "
                        + "\"median_us\": %.2f, \"p99_us\": %.2f, \"checksum\": %.6f, \"t_go_ns\": %d, "
                        + "\"t_end_ns\": %d}%n",
                label, n, reps, cells * reps, total, cells * (double) reps / total / 1e9, lat[lat.length / 2] / 1e3,
                lat[Math.min(lat.length - 1, (int) (lat.length * 0.99))] / 1e3, checksum, goNs, endNs);
    }

    /** Holders of values; copy: every array a new copy, as GATK's reads' are. */
    static Object holders(Class<?> cls, Field[] fields, byte[][][] values, boolean copy) throws Exception {
        Object arr = Array.newInstance(cls, values.length);
        java.lang.reflect.Constructor<?> make = cls.getConstructor();
        for (int i = 0; i < values.length; ++i) {
            Object h = make.newInstance();
            for (int k = 0; k < fields.length; ++k) fields[k].set(h, copy ? values[i][k].clone() : values[i][k]);
            Array.set(arr, i, h);
        }
        return arr;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object enumValue(ClassLoader cl, String name, String value) throws Exception {
        return Enum.valueOf((Class) Class.forName(name, true, cl), value);
    }
}
