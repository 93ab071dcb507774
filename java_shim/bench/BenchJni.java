// JNI benchmark: pyphmm's shim vs GKL's IntelPairHmm (AVX, 1 thread) and
// IntelPairHmmOMP in ONE JVM, on the same regions, one computeLikelihoods call
// per region as GATK makes them. Run with GKL's jars on the class path; the
// shim is loaded in its own class loader (parent: platform loader).
//   java -cp gkl.jar:gatk-native-bindings.jar:commons-logging.jar:. BenchJni \
//        REGIONS.in SHIM.jar BINDINGS.jar REPS MODE[:THREADS]...
// MODE[:THREADS[:REPS]]: shim | shim-omp | gkl | gkl-omp (REPS overrides the
// common count). Prints one JSON line per mode; with
// BENCHJNI_OUT=PREFIX also writes each mode's likelihoods to PREFIX.MODE_THREADS;
// BENCHJNI_DOUBLE=1 initialises every mode with useDoublePrecision.
import java.io.BufferedReader;
import java.io.File;
import java.io.FileReader;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class BenchJni {
    static final class Region {
        byte[][][] reads;  // [r][0..4] bases, quals, ins, dels, gcp (raw phred)
        byte[][] haps;
        long cells;
    }

    static List<Region> readRegions(String path) throws Exception {
        List<Region> out = new ArrayList<Region>();
        BufferedReader in = new BufferedReader(new FileReader(path));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) continue;
            String[] rh = line.trim().split("\\s+");
            int nr = Integer.parseInt(rh[0]), nh = Integer.parseInt(rh[1]);
            Region g = new Region();
            g.reads = new byte[nr][][];
            g.haps = new byte[nh][];
            long rl = 0, hl = 0;
            for (int r = 0; r < nr; ++r) {
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
            for (int h = 0; h < nh; ++h) {
                g.haps[h] = in.readLine().trim().getBytes("US-ASCII");
                hl += g.haps[h].length;
            }
            g.cells = rl * hl;
            out.add(g);
        }
        in.close();
        return out;
    }

    public static void main(String[] a) throws Throwable {
        List<Region> regions = readRegions(a[0]);
        URLClassLoader shimLoader = new URLClassLoader(
                new URL[] {new File(a[1]).toURI().toURL(), new File(a[2]).toURI().toURL()},
                ClassLoader.getPlatformClassLoader());
        int reps = Integer.parseInt(a[3]);
        for (int m = 4; m < a.length; ++m) {
            String[] mt = a[m].split(":");
            String mode = mt[0];
            int threads = mt.length > 1 ? Integer.parseInt(mt[1]) : 1;
            int modeReps = mt.length > 2 ? Integer.parseInt(mt[2]) : reps;
            ClassLoader cl = mode.startsWith("shim") ? shimLoader : BenchJni.class.getClassLoader();
            String cls = mode.endsWith("omp") ? "com.intel.gkl.pairhmm.IntelPairHmmOMP" : "com.intel.gkl.pairhmm.IntelPairHmm";
            run(mode + ":" + threads, cl, cls, threads, regions, modeReps);
        }
    }

    static void run(String label, ClassLoader cl, String implName, int threads, List<Region> regions, int reps)
            throws Throwable {
        String nb = "org.broadinstitute.gatk.nativebindings.pairhmm.";
        Class<?> readCls = Class.forName(nb + "ReadDataHolder", true, cl);
        Class<?> hapCls = Class.forName(nb + "HaplotypeDataHolder", true, cl);
        Class<?> argsCls = Class.forName(nb + "PairHMMNativeArguments", true, cl);
        Class<?> impl = Class.forName(implName, true, cl);
        Object hmm = impl.getConstructor().newInstance();
        if (!(Boolean) impl.getMethod("load", File.class).invoke(hmm, (File) null))
            throw new RuntimeException(label + ": load failed");
        Object args = argsCls.getConstructor().newInstance();
        argsCls.getField("maxNumberOfThreads").setInt(args, threads);
        argsCls.getField("useDoublePrecision").setBoolean(args, System.getenv("BENCHJNI_DOUBLE") != null);
        // Method handles, not Method.invoke: reflective calls re-enter Java
        // through the JVM's call stub, which saves and restores the floating-
        // point control register (MXCSR) around every call. GKL's initNative
        // turns flush-to-zero on for the calling thread and relies on it
        // staying on (as it does when GATK calls it directly); through
        // reflection it would be undone at once, and GKL would then run with
        // denormals, which costs an order of magnitude on Intel CPUs.
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
        Field hapField = hapCls.getField("haplotypeBases");
        int n = regions.size();
        Object[] jr = new Object[n], jh = new Object[n];
        double[][] outs = new double[n][];
        long cells = 0;
        for (int i = 0; i < n; ++i) {
            Region g = regions.get(i);
            Object ra = Array.newInstance(readCls, g.reads.length);
            for (int r = 0; r < g.reads.length; ++r) {
                Object h = readCls.getConstructor().newInstance();
                for (int k = 0; k < 5; ++k) readFields[k].set(h, g.reads[r][k]);
                Array.set(ra, r, h);
            }
            Object ha = Array.newInstance(hapCls, g.haps.length);
            for (int h = 0; h < g.haps.length; ++h) {
                Object o = hapCls.getConstructor().newInstance();
                hapField.set(o, g.haps[h]);
                Array.set(ha, h, o);
            }
            jr[i] = ra;
            jh[i] = ha;
            outs[i] = new double[g.reads.length * g.haps.length];
            cells += g.cells;
        }
        for (int i = 0; i < n; ++i) compute.invokeExact(hmm, jr[i], jh[i], outs[i]);  // warm-up
        // pyphmm's JNI timers (PYPHMM_DEV=jni_trace=2) print and restart at done():
        // one line for the warm-up pass, one for the timed passes.
        if (label.startsWith("shim") && String.valueOf(System.getenv("PYPHMM_DEV")).contains("jni_trace=")) impl.getMethod("done").invoke(hmm);
        long[] lat = new long[n * reps];
        long t0 = System.nanoTime();
        for (int rep = 0; rep < reps; ++rep) {
            for (int i = 0; i < n; ++i) {
                long s = System.nanoTime();
                compute.invokeExact(hmm, jr[i], jh[i], outs[i]);
                lat[rep * n + i] = System.nanoTime() - s;
            }
        }
        double total = (System.nanoTime() - t0) / 1e9;
        impl.getMethod("done").invoke(hmm);
        Arrays.sort(lat);
        double checksum = 0;
        for (double[] o : outs) for (double v : o) checksum += v;
        String dump = System.getenv("BENCHJNI_OUT");  // results of this mode, big-endian doubles in region order
        if (dump != null) {
            java.io.DataOutputStream d = new java.io.DataOutputStream(new java.io.BufferedOutputStream(
                    new java.io.FileOutputStream(dump + "." + label.replace(':', '_'))));
            for (double[] o : outs) for (double v : o) d.writeDouble(v);
            d.close();
        }
        System.out.printf(java.util.Locale.ROOT,
                "{\"mode\": \"%s\", \"regions\": %d, \"reps\": %d, \"cells\": %d, \"seconds\": %.6f, \"gcups\": %.4f, "
                        + "\"median_us\": %.2f, \"p99_us\": %.2f, \"checksum\": %.6f}%n",
                label, n, reps, cells * reps, total, cells * (double) reps / total / 1e9, lat[lat.length / 2] / 1e3,
                lat[Math.min(lat.length - 1, (int) (lat.length * 0.99))] / 1e3, checksum);
    }
}
