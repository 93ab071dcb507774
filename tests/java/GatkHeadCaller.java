import com.intel.gkl.pairhmm.IntelPairHmm;
import com.intel.gkl.pairhmm.IntelPairHmmOMP;
import com.intel.gkl.smithwaterman.IntelSmithWaterman;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWAlignerNativeBinding;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;

/**
 * Calls GKL's three binding classes exactly as GATK HEAD (4.6, GKL 0.9.0,
 * gatk-native-bindings 1.1.0) does, so the same program runs against GKL and
 * against pyphmm's shim and the outputs can be compared:
 *
 * - PairHMM.Implementation (utils/pairhmm/PairHMM.java): FASTEST_AVAILABLE
 *   tries new IntelPairHmmOMP().load(null), then new IntelPairHmm().load(null);
 *   VectorLoglessPairHMM's constructor calls initialize(args) once, with the
 *   arguments of PairHMMNativeArgumentCollection (4 threads, float; double
 *   with --native-pair-hmm-use-double-precision); per region, initialize()
 *   fills one HaplotypeDataHolder per haplotype and computeLog10Likelihoods
 *   one ReadDataHolder per read and a fresh double[reads * haps], then calls
 *   computeLikelihoods; close() calls done(). Two engines run in turn (float
 *   and double arguments), as two HaplotypeCaller engines in one JVM would.
 * - SmithWatermanIntelAligner: new IntelSmithWaterman(), load(null) (false:
 *   GATK uses its Java aligner), then SWNativeAlignerWrapper.align: for
 *   SOFTCLIP and IGNORE an exact occurrence of alt in ref (last index) is
 *   answered in Java as alt.length M at that offset, else align(); close().
 *
 * - PDHMM (--use-pdhmm, DRAGEN mode; GKL 0.9's IntelPDHMM): GatkHeadPdhmm,
 *   when PD_REGIONS.in is given. It is reached by name so that this class
 *   also compiles and runs against a GKL and bindings without PDHMM.
 *
 * Usage: GatkHeadCaller REGIONS.in SW_PAIRS.tsv OUT.txt [FASTEST_AVAILABLE |
 * AVX_LOGLESS_CACHING | AVX_LOGLESS_CACHING_OMP] [PD_REGIONS.in]. Output
 * lines:
 *   I pairhmm <class used> | I sw <native|java> | I pdhmm <class used|java>
 *   P <float|double> <region> <value>...       (out[r * haps + h] order)
 *   S <strategy> <pair> <cigar> <offset>
 *   D <region> <value>...                      (PDHMM, out[r * haps + h])
 */
public final class GatkHeadCaller {
    public static void main(String[] args) throws Exception {
        List<Records.Region> regions = Records.readRegions(Paths.get(args[0]));
        List<Records.SwPair> pairs = Records.readSwPairs(Paths.get(args[1]));
        String impl = args.length > 3 ? args[3] : "FASTEST_AVAILABLE";
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(args[2])))) {
            for (boolean dbl : new boolean[] {false, true}) {
                PairHMMNativeBinding hmm = makeHmm(impl, out);
                if (hmm == null) {
                    break;
                }
                PairHMMNativeArguments a = new PairHMMNativeArguments();
                a.maxNumberOfThreads = 4;  // PairHMMNativeArgumentCollection's default
                a.useDoublePrecision = dbl;
                hmm.initialize(a);
                for (Records.Region region : regions) {
                    out.println("P " + (dbl ? "double" : "float") + " " + region.index + join(compute(hmm, region)));
                }
                hmm.done();
            }
            align(pairs, out);
            if (args.length > 4) {
                List<Records.Region> pdRegions = Records.readRegions(Paths.get(args[4]));
                Class.forName("GatkHeadPdhmm").getMethod("run", List.class, PrintWriter.class)
                        .invoke(null, pdRegions, out);
            }
        }
    }

    /** PairHMM.Implementation's factories; null when GATK would use a Java HMM. */
    static PairHMMNativeBinding makeHmm(String impl, PrintWriter out) {
        PairHMMNativeBinding hmm = null;
        if (!impl.equals("AVX_LOGLESS_CACHING")) {
            hmm = new IntelPairHmmOMP();
            if (!hmm.load(null)) {
                hmm = null;
            }
        }
        if (hmm == null && !impl.equals("AVX_LOGLESS_CACHING_OMP")) {
            hmm = new IntelPairHmm();
            if (!hmm.load(null)) {
                hmm = null;
            }
        }
        out.println("I pairhmm " + (hmm == null ? "java" : hmm.getClass().getName()));
        return hmm;
    }

    /** VectorLoglessPairHMM.initialize + computeLog10Likelihoods for one region. */
    static double[] compute(PairHMMNativeBinding hmm, Records.Region region) {
        HaplotypeDataHolder[] haps = new HaplotypeDataHolder[region.haps.length];
        for (int h = 0; h < haps.length; ++h) {
            haps[h] = new HaplotypeDataHolder();
            haps[h].haplotypeBases = region.haps[h];
        }
        ReadDataHolder[] reads = new ReadDataHolder[region.reads()];
        for (int r = 0; r < reads.length; ++r) {
            reads[r] = new ReadDataHolder();
            reads[r].readBases = region.bases[r];
            reads[r].readQuals = region.quals[r];
            reads[r].insertionGOP = region.ins[r];
            reads[r].deletionGOP = region.dels[r];
            reads[r].overallGCP = region.gcp[r];
        }
        double[] likelihoods = new double[reads.length * haps.length];
        hmm.computeLikelihoods(reads, haps, likelihoods);
        return likelihoods;
    }

    /** SmithWatermanIntelAligner through SWNativeAlignerWrapper, every strategy. */
    static void align(List<Records.SwPair> pairs, PrintWriter out) {
        SWAlignerNativeBinding sw = new IntelSmithWaterman();
        boolean native_ = sw.load(null);
        out.println("I sw " + (native_ ? "native" : "java"));
        if (!native_) {
            return;
        }
        for (SWOverhangStrategy strategy : SWOverhangStrategy.values()) {
            for (int k = 0; k < pairs.size(); ++k) {
                Records.SwPair p = pairs.get(k);
                SWParameters params = new SWParameters(p.match, p.mismatch, p.open, p.extend);
                int match = -1;
                if (strategy == SWOverhangStrategy.SOFTCLIP || strategy == SWOverhangStrategy.IGNORE) {
                    match = lastIndexOf(p.ref, p.alt);
                }
                String cigar;
                int offset;
                if (match != -1) {
                    cigar = p.alt.length + "M";
                    offset = match;
                } else {
                    SWNativeAlignerResult r = sw.align(p.ref, p.alt, params, strategy);
                    cigar = r.cigar;
                    offset = r.alignment_offset;
                }
                out.println("S " + strategy + " " + k + " " + cigar + " " + offset);
            }
        }
        sw.close();
    }

    /** GATK's Utils.lastIndexOf: last start of target in source, or -1. */
    static int lastIndexOf(byte[] source, byte[] target) {
        for (int start = source.length - target.length; start >= 0; --start) {
            int i = 0;
            while (i < target.length && source[start + i] == target[i]) {
                ++i;
            }
            if (i == target.length) {
                return start;
            }
        }
        return -1;
    }

    private static String join(double[] values) {
        StringBuilder b = new StringBuilder(values.length * 20);
        for (double v : values) {
            b.append(' ').append(v);
        }
        return b.toString();
    }
}
