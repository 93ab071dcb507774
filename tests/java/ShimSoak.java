import com.intel.gkl.pairhmm.IntelPairHmm;
import com.intel.gkl.smithwaterman.IntelSmithWaterman;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;

/**
 * Soak test of the shim in one JVM: THREADS threads, each with its own
 * bindings (as GATK engines on Spark task threads have), make CALLS
 * computeLikelihoods calls over the regions of a record file, round robin,
 * building GATK's holders afresh for every call; every SW_EVERY-th call also
 * aligns the region's first read to its first haplotype (HaplotypeCaller's
 * read-vs-haplotype alignment). Every result is compared with the one
 * computed for that region before the threads start. Meanwhile the main
 * thread samples VmRSS (/proc/self/status) with the number of calls done.
 *
 * Usage: ShimSoak REGIONS.in CALLS THREADS OUT.txt [SW_EVERY]. Output lines:
 *   rss <calls done> <VmRSS kB>
 *   done calls <n> sw <n> mismatches <n> seconds <s>
 */
public final class ShimSoak {
    private static final double TOL = 1e-5;
    private static final SWParameters READ_TO_HAP = new SWParameters(10, -15, -30, -5);

    public static void main(String[] args) throws Exception {
        final List<Records.Region> regions = Records.readRegions(Paths.get(args[0]));
        final long calls = Long.parseLong(args[1]);
        final int nThreads = Integer.parseInt(args[2]);
        final int swEvery = args.length > 4 ? Integer.parseInt(args[4]) : 4;

        // Expected values: one pass before the soak.
        IntelPairHmm refHmm = binding();
        IntelSmithWaterman refSw = aligner();
        final double[][] expected = new double[regions.size()][];
        final String[] expectedSw = new String[regions.size()];
        for (Records.Region r : regions) {
            expected[r.index] = r.likelihoods(refHmm);
            expectedSw[r.index] = align(refSw, r);
        }

        final AtomicLong next = new AtomicLong(), done = new AtomicLong(), swDone = new AtomicLong(),
                mismatches = new AtomicLong();
        final List<Throwable> errors = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < nThreads; ++t) {
            Thread th = new Thread(() -> {
                try {
                    IntelPairHmm hmm = binding();
                    IntelSmithWaterman sw = aligner();
                    long i;
                    while ((i = next.getAndIncrement()) < calls) {
                        Records.Region r = regions.get((int) (i % regions.size()));
                        if (!close(r.likelihoods(hmm), expected[r.index])) {
                            mismatches.incrementAndGet();
                        }
                        if (swEvery > 0 && i % swEvery == 0) {
                            if (!align(sw, r).equals(expectedSw[r.index])) {
                                mismatches.incrementAndGet();
                            }
                            swDone.incrementAndGet();
                        }
                        done.incrementAndGet();
                    }
                    hmm.done();
                    sw.close();
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            }, "soak-" + t);
            threads.add(th);
        }
        long start = System.nanoTime();
        for (Thread th : threads) {
            th.start();
        }
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(args[3])))) {
            while (anyAlive(threads)) {
                out.println("rss " + done.get() + " " + vmRssKb());
                Thread.sleep(100);
            }
            out.println("rss " + done.get() + " " + vmRssKb());
            out.println("done calls " + done.get() + " sw " + swDone.get() + " mismatches " + mismatches.get()
                    + " seconds " + (System.nanoTime() - start) / 1e9);
        }
        refHmm.done();
        if (!errors.isEmpty()) {
            throw new RuntimeException("soak thread failed", errors.get(0));
        }
    }

    static IntelPairHmm binding() {
        IntelPairHmm hmm = new IntelPairHmm();
        if (!hmm.load(null)) {
            throw new IllegalStateException("shim did not load");
        }
        PairHMMNativeArguments a = new PairHMMNativeArguments();
        a.maxNumberOfThreads = 1;  // the calling threads are the parallelism
        a.useDoublePrecision = false;
        hmm.initialize(a);
        return hmm;
    }

    static IntelSmithWaterman aligner() {
        IntelSmithWaterman sw = new IntelSmithWaterman();
        if (!sw.load(null)) {
            throw new IllegalStateException("shim Smith-Waterman did not load");
        }
        return sw;
    }

    static String align(IntelSmithWaterman sw, Records.Region r) {
        SWNativeAlignerResult a = sw.align(r.haps[0], r.bases[0], READ_TO_HAP, SWOverhangStrategy.SOFTCLIP);
        return a.cigar + "@" + a.alignment_offset;
    }

    static boolean close(double[] a, double[] b) {
        if (a.length != b.length) {
            return false;
        }
        for (int i = 0; i < a.length; ++i) {
            if (a[i] != b[i] && !(Math.abs(a[i] - b[i]) <= TOL)) {
                return false;
            }
        }
        return true;
    }

    static boolean anyAlive(List<Thread> threads) {
        for (Thread t : threads) {
            if (t.isAlive()) {
                return true;
            }
        }
        return false;
    }

    static long vmRssKb() throws java.io.IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.US_ASCII)) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }
}
