import com.intel.gkl.pairhmm.IntelPairHmm;
import com.intel.gkl.pairhmm.IntelPairHmmOMP;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.TreeSet;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;

/**
 * A Spark job shaped like HaplotypeCallerSpark's PairHMM use: regions are
 * split into partitions; each task (a task thread of an executor JVM)
 * builds its own engine the way GATK does (IntelPairHmmOMP, load(null),
 * initialize), computes its regions one computeLikelihoods call each and
 * calls done(). The job jar carries GKL's classes, as GATK's jar does; the
 * shim must come first through spark.executor.extraClassPath.
 *
 * Usage: SparkPairHmmJob REGIONS.in OUT.txt PARTITIONS. Output lines:
 *   P <region> <value>...
 *   W <executor id> <pid> <thread> <IntelPairHmm's code source> <libpyphmm files mapped, comma-separated>
 */
public final class SparkPairHmmJob {
    public static void main(String[] args) throws Exception {
        List<Records.Region> regions = Records.readRegions(Paths.get(args[0]));
        int partitions = Integer.parseInt(args[2]);
        JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("pyphmm-shim-on-spark"));
        try {
            List<String> lines = sc.parallelize(regions, partitions).mapPartitions(SparkPairHmmJob::partition)
                    .collect();
            try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(args[1])))) {
                for (String line : lines) {
                    out.println(line);
                }
            }
        } finally {
            sc.stop();
        }
    }

    /** One task: one GATK engine over this partition's regions. */
    static Iterator<String> partition(Iterator<Records.Region> regions) throws IOException {
        PairHMMNativeBinding hmm = new IntelPairHmmOMP();
        if (!hmm.load(null)) {
            throw new IllegalStateException("IntelPairHmmOMP.load(null) returned false");
        }
        PairHMMNativeArguments a = new PairHMMNativeArguments();
        a.maxNumberOfThreads = 1;
        a.useDoublePrecision = false;
        hmm.initialize(a);
        List<String> out = new ArrayList<>();
        while (regions.hasNext()) {
            Records.Region r = regions.next();
            StringBuilder b = new StringBuilder("P ").append(r.index);
            for (double v : r.likelihoods(hmm)) {
                b.append(' ').append(v);
            }
            out.add(b.toString());
        }
        hmm.done();
        out.add("W " + SparkEnv.get().executorId() + " " + ProcessHandle.current().pid() + " "
                + Thread.currentThread().getName().replace(' ', '_') + " "
                + IntelPairHmm.class.getProtectionDomain().getCodeSource().getLocation() + " " + mappedPyphmm());
        return out.iterator();
    }

    /** The libpyphmm.so files this JVM has mapped (/proc/self/maps). */
    static String mappedPyphmm() throws IOException {
        TreeSet<String> files = new TreeSet<>();
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.endsWith("libpyphmm.so")) {
                files.add(line.substring(slash));
            }
        }
        return files.isEmpty() ? "-" : String.join(",", files);
    }
}
