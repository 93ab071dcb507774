// One JVM of scripts/bench_multiproc.py: T Java threads, each with its own
// PairHMM binding, computing this process's share of a record file the way
// GATK's engine threads call GKL (new binding, load(null), initialize(args),
// one computeLikelihoods per region, done()).
//
//   java -cp CLASSES:BINDING_JARS BenchMultiproc IMPL REGIONS PROC PROCS THREADS NATIVE_THREADS
//        WARMUP REPS OUT_PREFIX
//
// IMPL: the binding class (com.intel.gkl.pairhmm.IntelPairHmm or
// ...IntelPairHmmOMP); whichever jar comes first on the class path supplies
// it (the shim jar before GKL's, as scripts/gatk-gpu puts it before GATK).
// Caller thread t of process PROC is worker w = PROC * THREADS + t of
// W = PROCS * THREADS and takes regions w, w + W, w + 2W, ... (interleaved).
//
// Protocol on stdout: "READY" once every thread has loaded, initialized,
// built its holders and run WARMUP passes over its share; then the process
// waits for one line on stdin ("GO": the start barrier shared by all
// processes of a run), runs REPS timed passes and prints one JSON line.
// Times are System.nanoTime(), CLOCK_MONOTONIC on Linux and so comparable
// between JVMs of one host. Each thread writes its last pass's likelihoods
// (native-order doubles, its regions in ascending order) to
// OUT_PREFIX.T.res and its per-call latencies (native-order longs, ns) to
// OUT_PREFIX.T.lat.
//
// The bindings are called directly through the interface, as GATK does:
// GKL's initialize turns flush-to-zero on for the calling thread only, and a
// reflective call (Method.invoke) would restore the thread's MXCSR on return.
import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.FileReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;

public class BenchMultiproc {
    /** One region as GATK hands it to the binding, plus its output array. */
    static final class Region {
        ReadDataHolder[] reads;
        HaplotypeDataHolder[] haps;
        double[] out;
        long cells;
    }

    /** One caller thread: its binding, its regions and what it measured. */
    static final class Caller implements Runnable {
        final String impl;
        final int nativeThreads, warmup, reps;
        final List<Region> regions = new ArrayList<Region>();
        final CountDownLatch ready, go;
        long[] latencies;
        long startNs, endNs, cells;
        volatile Throwable error;

        Caller(String impl, int nativeThreads, int warmup, int reps, CountDownLatch ready, CountDownLatch go) {
            this.impl = impl;
            this.nativeThreads = nativeThreads;
            this.warmup = warmup;
            this.reps = reps;
            this.ready = ready;
            this.go = go;
        }

        @Override
        public void run() {
            PairHMMNativeBinding hmm;
            try {
                hmm = (PairHMMNativeBinding) Class.forName(impl).getConstructor().newInstance();
                if (!hmm.load(null)) {
                    throw new IllegalStateException(impl + ".load(null) returned false");
                }
                PairHMMNativeArguments args = new PairHMMNativeArguments();
                args.maxNumberOfThreads = nativeThreads;
                args.useDoublePrecision = false;
                hmm.initialize(args);  // on this thread: GKL's FTZ mode is per thread
                for (int p = 0; p < warmup; ++p) {
                    for (Region g : regions) {
                        hmm.computeLikelihoods(g.reads, g.haps, g.out);
                    }
                }
            } catch (Throwable e) {
                error = e;
                ready.countDown();
                return;
            }
            ready.countDown();
            try {
                go.await();
                int n = regions.size();
                latencies = new long[n * reps];
                startNs = System.nanoTime();
                for (int p = 0; p < reps; ++p) {
                    for (int i = 0; i < n; ++i) {
                        Region g = regions.get(i);
                        long s = System.nanoTime();
                        hmm.computeLikelihoods(g.reads, g.haps, g.out);
                        latencies[p * n + i] = System.nanoTime() - s;
                    }
                }
                endNs = System.nanoTime();
                for (Region g : regions) {
                    cells += g.cells;
                }
                cells *= reps;
                hmm.done();
            } catch (Throwable e) {
                error = e;
            }
        }
    }

    static byte[] phred(String ascii33) throws IOException {
        byte[] q = ascii33.getBytes("US-ASCII");
        for (int i = 0; i < q.length; ++i) {
            q[i] -= 33;
        }
        return q;
    }

    /**
     * Reads the record file and deals region j to callers[j % workers -
     * firstWorker] when that caller belongs to this process; the other
     * regions are skipped without building holders.
     */
    static int readRegions(String path, Caller[] callers, int firstWorker, int workers) throws IOException {
        int index = 0;
        try (BufferedReader in = new BufferedReader(new FileReader(path), 1 << 20)) {
            String line;
            while ((line = in.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty()) {
                    continue;
                }
                String[] rh = line.split("\\s+");
                if (rh.length != 2) {
                    throw new IOException(path + ": record " + index + ": header '" + line + "' is not 'R H'");
                }
                int nr = Integer.parseInt(rh[0]), nh = Integer.parseInt(rh[1]);
                int slot = index % workers - firstWorker;
                boolean mine = slot >= 0 && slot < callers.length;
                Region g = mine ? new Region() : null;
                if (mine) {
                    g.reads = new ReadDataHolder[nr];
                    g.haps = new HaplotypeDataHolder[nh];
                }
                long readBases = 0, hapBases = 0;
                for (int r = 0; r < nr; ++r) {
                    String l = in.readLine();
                    if (l == null) {
                        throw new IOException(path + ": record " + index + " ends early");
                    }
                    if (!mine) {
                        continue;
                    }
                    String[] f = l.trim().split("\\s+");
                    if (f.length != 5) {
                        throw new IOException(path + ": record " + index + ": read line has " + f.length + " fields");
                    }
                    ReadDataHolder d = new ReadDataHolder();
                    d.readBases = f[0].getBytes("US-ASCII");
                    d.readQuals = phred(f[1]);
                    d.insertionGOP = phred(f[2]);
                    d.deletionGOP = phred(f[3]);
                    d.overallGCP = phred(f[4]);
                    g.reads[r] = d;
                    readBases += d.readBases.length;
                }
                for (int h = 0; h < nh; ++h) {
                    String l = in.readLine();
                    if (l == null) {
                        throw new IOException(path + ": record " + index + " ends early");
                    }
                    if (!mine) {
                        continue;
                    }
                    HaplotypeDataHolder d = new HaplotypeDataHolder();
                    d.haplotypeBases = l.trim().getBytes("US-ASCII");
                    g.haps[h] = d;
                    hapBases += d.haplotypeBases.length;
                }
                if (mine) {
                    g.out = new double[nr * nh];
                    g.cells = readBases * hapBases;
                    callers[slot].regions.add(g);
                }
                ++index;
            }
        }
        return index;
    }

    static void writeResults(String path, Caller c) throws IOException {
        int values = 0;
        for (Region g : c.regions) {
            values += g.out.length;
        }
        ByteBuffer b = ByteBuffer.allocate(8 * values).order(ByteOrder.nativeOrder());
        for (Region g : c.regions) {
            for (double v : g.out) {
                b.putDouble(v);
            }
        }
        write(path, b);
    }

    static void writeLatencies(String path, long[] lat) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 * lat.length).order(ByteOrder.nativeOrder());
        for (long v : lat) {
            b.putLong(v);
        }
        write(path, b);
    }

    static void write(String path, ByteBuffer b) throws IOException {
        b.flip();
        try (FileChannel ch = new FileOutputStream(new File(path)).getChannel()) {
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }
    }

    public static void main(String[] a) throws Exception {
        if (a.length != 9) {
            System.err.println("usage: BenchMultiproc IMPL REGIONS PROC PROCS THREADS NATIVE_THREADS WARMUP REPS "
                    + "OUT_PREFIX");
            System.exit(2);
        }
        String impl = a[0], regionsPath = a[1], prefix = a[8];
        int proc = Integer.parseInt(a[2]), procs = Integer.parseInt(a[3]), threads = Integer.parseInt(a[4]);
        int nativeThreads = Integer.parseInt(a[5]), warmup = Integer.parseInt(a[6]), reps = Integer.parseInt(a[7]);
        CountDownLatch ready = new CountDownLatch(threads), go = new CountDownLatch(1);
        Caller[] callers = new Caller[threads];
        for (int t = 0; t < threads; ++t) {
            callers[t] = new Caller(impl, nativeThreads, warmup, reps, ready, go);
        }
        readRegions(regionsPath, callers, proc * threads, procs * threads);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; ++t) {
            workers[t] = new Thread(callers[t], "caller-" + t);
            workers[t].start();
        }
        ready.await();
        for (Caller c : callers) {
            if (c.error != null) {
                fail("set-up", c.error);
            }
        }
        System.out.println("READY");
        System.out.flush();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, "US-ASCII"));
        String cmd = stdin.readLine();
        if (!"GO".equals(cmd)) {
            fail("barrier", new IllegalStateException("expected GO on stdin, got " + cmd));
        }
        long goNs = System.nanoTime();
        go.countDown();
        for (Thread w : workers) {
            w.join();
        }
        StringBuilder json = new StringBuilder();
        // The MPS pipe directory this JVM's CUDA clients would use (null: none set).
        String mpsPipe = System.getenv("CUDA_MPS_PIPE_DIRECTORY");
        json.append(String.format(Locale.ROOT, "{\"proc\": %d, \"go_ns\": %d, \"mps_pipe\": %s, \"threads\": [",
                proc, goNs, jsonString(mpsPipe)));
        for (int t = 0; t < threads; ++t) {
            Caller c = callers[t];
            if (c.error != null) {
                fail("timed passes", c.error);
            }
            writeResults(prefix + "." + t + ".res", c);
            writeLatencies(prefix + "." + t + ".lat", c.latencies);
            json.append(String.format(Locale.ROOT, "%s{\"t\": %d, \"regions\": %d, \"calls\": %d, \"cells\": %d, "
                    + "\"start_ns\": %d, \"end_ns\": %d}", t == 0 ? "" : ", ", t, c.regions.size(),
                    c.latencies.length, c.cells, c.startNs, c.endNs));
        }
        json.append("]}");
        System.out.println(json);
        System.out.flush();
    }

    /** s as a JSON string (null as null); paths hold no control characters. */
    static String jsonString(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static void fail(String phase, Throwable e) {
        System.err.println("BenchMultiproc: " + phase + " failed: " + e);
        e.printStackTrace();
        System.exit(1);
    }
}
