// Smith-Waterman call benchmark: one IntelSmithWaterman.align per pair, as
// GATK's SmithWatermanIntelAligner makes them, through pyphmm's shim (its own
// class loader: shim jar + native-bindings jar, parent the platform loader)
// or through GKL's jars on the class path.
//   java -cp gkl.jar:gatk-native-bindings.jar:commons-logging.jar:. BenchSwCalls \
//        PAIRS.tsv SHIM.jar BINDINGS.jar MODE REPS [OUT]
// PAIRS.tsv: REF TAB ALT TAB MATCH,MISMATCH,OPEN,EXTEND TAB STRATEGY TAB KIND.
// MODE: shim | gkl | both | base=JAR. One warm-up pass, then REPS timed
// passes, each call timed on its own. "both" loads the shim and GKL in this
// one JVM (the shim in its own class loader, so each class binds its own
// native library), "base=JAR" the shim and another shim jar (an earlier
// pyphmm, its rows' mode "base"), and times their passes in turn, which
// comes first alternating, so that a change in the host's speed reaches both
// alike while each pass runs with its own data in the caches (OUT then names
// the shim's file and OUT2, the next argument, the other's). With BENCHSW_WAIT=1 the program prints "ready" after the
// warm-up and waits for a line on standard input (scripts/bench_sw_calls.py
// starts many JVMs and releases them together). Prints one JSON line per
// KIND and one for "all": calls, cells, seconds (sum of call times),
// best_seconds (REPS x the sum of each pair's fastest call), wall (the timed
// passes), median_us, p99_us. OUT, if given, receives "CIGAR
// OFFSET" per pair from the warm-up pass.
import java.io.BufferedReader;
import java.io.File;
import java.io.FileReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class BenchSwCalls {
    static final class Pair {
        byte[] ref, alt;
        Object params, strategy;
        String kind;
        long cells;
    }

    /** One IntelSmithWaterman (the shim's or GKL's) and the pairs in its loader's parameter types. */
    static final class Engine {
        final String mode;
        final MethodHandle align, offsetOf, cigarOf, close;
        final List<Pair> pairs;

        Engine(String mode, String pairsFile, String shimJar, String bindingsJar) throws Throwable {
            this.mode = mode;
            ClassLoader cl = mode.equals("gkl")
                    ? BenchSwCalls.class.getClassLoader()
                    : new URLClassLoader(new URL[] {new File(shimJar).toURI().toURL(), new File(bindingsJar).toURI().toURL()},
                            ClassLoader.getPlatformClassLoader());
            Class<?> swCls = Class.forName("com.intel.gkl.smithwaterman.IntelSmithWaterman", true, cl);
            Class<?> paramCls =
                    Class.forName("org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters", true, cl);
            Class<?> stratCls =
                    Class.forName("org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy", true, cl);
            Class<?> resultCls =
                    Class.forName("org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult", true, cl);
            Object sw = swCls.getConstructor().newInstance();
            boolean loaded = (Boolean) swCls.getMethod("load", File.class).invoke(sw, (File) null);
            if (!loaded) throw new IllegalStateException(mode + ": IntelSmithWaterman.load(null) returned false");
            MethodHandles.Lookup lk = MethodHandles.publicLookup();
            align = lk.findVirtual(swCls, "align",
                    MethodType.methodType(resultCls, byte[].class, byte[].class, paramCls, stratCls)).bindTo(sw);
            cigarOf = lk.findGetter(resultCls, "cigar", String.class);
            offsetOf = lk.findGetter(resultCls, "alignment_offset", int.class);
            close = lk.findVirtual(swCls, "close", MethodType.methodType(void.class)).bindTo(sw);
            pairs = readPairs(pairsFile, paramCls, stratCls);
        }

        Object call(int i) throws Throwable {
            Pair p = pairs.get(i);
            return align.invoke(p.ref, p.alt, p.params, p.strategy);
        }

        /** The warm-up pass (JIT, buffers); "CIGAR OFFSET" per pair into out if given. */
        void warmUp(String out) throws Throwable {
            PrintWriter w = out != null ? new PrintWriter(out) : null;
            for (int i = 0; i < pairs.size(); ++i) {
                Object r = call(i);
                if (w != null) w.println((String) cigarOf.invoke(r) + " " + (int) offsetOf.invoke(r));
            }
            if (w != null) w.close();
        }
    }

    public static void main(String[] a) throws Throwable {
        String mode = a[3];
        int reps = Integer.parseInt(a[4]);
        List<Engine> engines = new ArrayList<Engine>();
        if (mode.startsWith("base=")) {
            engines.add(new Engine("shim", a[0], a[1], a[2]));
            engines.add(new Engine("base", a[0], mode.substring(5), a[2]));
        } else {
            for (String m : mode.equals("both") ? new String[] {"shim", "gkl"} : new String[] {mode}) {
                engines.add(new Engine(m, a[0], a[1], a[2]));
            }
        }
        for (int e = 0; e < engines.size(); ++e) engines.get(e).warmUp(a.length > 5 + e ? a[5 + e] : null);
        if ("1".equals(System.getenv("BENCHSW_WAIT"))) {
            System.out.println("ready");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
        }
        List<Pair> pairs = engines.get(0).pairs;
        int n = pairs.size(), ne = engines.size();
        long[][] ns = new long[ne][n * reps];
        long sink = 0;
        long t0 = System.nanoTime();
        for (int rep = 0; rep < reps; ++rep) {
            for (int j = 0; j < ne; ++j) {
                int e = (j + rep) % ne;  // which engine's pass comes first alternates
                Engine g = engines.get(e);
                for (int i = 0; i < n; ++i) {
                    long s = System.nanoTime();
                    Object r = g.call(i);
                    ns[e][rep * n + i] = System.nanoTime() - s;
                    sink += (int) g.offsetOf.invoke(r);
                }
            }
        }
        double wall = (System.nanoTime() - t0) / 1e9;
        for (int e = 0; e < ne; ++e) report(engines.get(e).mode, pairs, ns[e], reps, wall, sink);
        for (Engine g : engines) g.close.invoke();  // the shim's summary line: time inside pyphmm
    }

    /** One JSON line per kind and one for "all" (the header's fields). */
    static void report(String mode, List<Pair> pairs, long[] ns, int reps, double wall, long sink) {
        int n = pairs.size();
        Map<String, List<Integer>> byKind = new LinkedHashMap<String, List<Integer>>();
        byKind.put("all", new ArrayList<Integer>());
        for (int i = 0; i < n; ++i) {
            byKind.computeIfAbsent(pairs.get(i).kind, k -> new ArrayList<Integer>()).add(i);
            byKind.get("all").add(i);
        }
        for (Map.Entry<String, List<Integer>> e : byKind.entrySet()) {
            List<Integer> idx = e.getValue();
            long[] t = new long[idx.size() * reps];
            long cells = 0, total = 0, best = 0;
            int k = 0;
            for (int rep = 0; rep < reps; ++rep) {
                for (int i : idx) {
                    t[k++] = ns[rep * n + i];
                    total += ns[rep * n + i];
                    cells += pairs.get(i).cells;
                }
            }
            for (int i : idx) {  // each pair's fastest call: free of preemption and other noise
                long m = Long.MAX_VALUE;
                for (int rep = 0; rep < reps; ++rep) m = Math.min(m, ns[rep * n + i]);
                best += m;
            }
            Arrays.sort(t);
            System.out.printf("{\"mode\": \"%s\", \"kind\": \"%s\", \"calls\": %d, \"cells\": %d, \"seconds\": %.6f, "
                            + "\"best_seconds\": %.6f, \"wall\": %.6f, \"median_us\": %.3f, \"p99_us\": %.3f, \"sink\": %d}%n",
                    mode, e.getKey(), t.length, cells, total / 1e9, reps * best / 1e9, wall, t[t.length / 2] / 1e3,
                    t[(int) ((t.length - 1) * 0.99)] / 1e3, sink);
        }
    }

    static List<Pair> readPairs(String path, Class<?> paramCls, Class<?> stratCls) throws Exception {
        List<Pair> out = new ArrayList<Pair>();
        Map<String, Object> params = new LinkedHashMap<String, Object>();
        BufferedReader in = new BufferedReader(new FileReader(path));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            Pair p = new Pair();
            p.ref = f[0].getBytes("US-ASCII");
            p.alt = f[1].getBytes("US-ASCII");
            Object prm = params.get(f[2]);
            if (prm == null) {
                String[] v = f[2].split(",");
                prm = paramCls.getConstructor(int.class, int.class, int.class, int.class)
                              .newInstance(Integer.parseInt(v[0]), Integer.parseInt(v[1]), Integer.parseInt(v[2]),
                                      Integer.parseInt(v[3]));
                params.put(f[2], prm);
            }
            p.params = prm;
            p.strategy = stratCls.getMethod("valueOf", String.class).invoke(null, f[3]);
            p.kind = f[4];
            p.cells = (long) p.ref.length * p.alt.length;
            out.add(p);
        }
        in.close();
        return out;
    }
}
