import com.intel.gkl.pdhmm.IntelPDHMM;

import java.io.PrintWriter;
import java.util.List;

import org.broadinstitute.gatk.nativebindings.pdhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pdhmm.ReadDataHolder;

/**
 * GATK HEAD's PDHMM calls (HaplotypeCaller --use-pdhmm, DRAGEN mode), for
 * GatkHeadCaller: VectorLoglessPairPDHMM's constructor makes a new
 * IntelPDHMM, calls load(null) (false: GATK falls back to its Java
 * LoglessPDPairHMM) and initialize(args) with
 * PDPairHMMNativeArgumentCollection's defaults (8 threads, AVX level and
 * OpenMP FASTEST_AVAILABLE, 1024 MB); computeLog10Likelihoods builds one
 * ReadDataHolder per read and one HaplotypeDataHolder per PD haplotype
 * (bases, PD bytes) and a fresh double[reads * haps], and makes one
 * computeLikelihoods call per region; close() calls done().
 *
 * Kept apart from GatkHeadCaller because it needs gatk-native-bindings
 * 1.1.0's pdhmm types and GKL 0.9's class name, which an older GKL lacks.
 * Output lines: "I pdhmm <class used | java>" and
 * "D <region> <value>..." (out[r * haps + h] order).
 */
public final class GatkHeadPdhmm {
    private GatkHeadPdhmm() {
    }

    public static void run(List<Records.Region> regions, PrintWriter out) {
        PDHMMNativeBinding hmm = new IntelPDHMM();
        if (!hmm.load(null)) {
            out.println("I pdhmm java");
            return;
        }
        out.println("I pdhmm " + hmm.getClass().getName());
        PDHMMNativeArguments args = new PDHMMNativeArguments();
        args.maxNumberOfThreads = 8;
        args.avxLevel = PDHMMNativeArguments.AVXLevel.FASTEST_AVAILABLE;
        args.setMaxMemoryInMB(1024);
        args.openMPSetting = PDHMMNativeArguments.OpenMPSetting.FASTEST_AVAILABLE;
        hmm.initialize(args);
        for (Records.Region region : regions) {
            StringBuilder line = new StringBuilder("D ").append(region.index);
            for (double v : compute(hmm, region)) {
                line.append(' ').append(v);
            }
            out.println(line);
        }
        hmm.done();
    }

    /** VectorLoglessPairPDHMM.computeLog10Likelihoods for one region. */
    static double[] compute(PDHMMNativeBinding hmm, Records.Region region) {
        ReadDataHolder[] reads = new ReadDataHolder[region.reads()];
        for (int r = 0; r < reads.length; ++r) {
            reads[r] = new ReadDataHolder();
            reads[r].readBases = region.bases[r];
            reads[r].readQuals = region.quals[r];
            reads[r].insertionGOP = region.ins[r];
            reads[r].deletionGOP = region.dels[r];
            reads[r].overallGCP = region.gcp[r];
        }
        HaplotypeDataHolder[] haps = new HaplotypeDataHolder[region.haps.length];
        for (int h = 0; h < haps.length; ++h) {
            haps[h] = new HaplotypeDataHolder();
            haps[h].haplotypeBases = region.haps[h];
            haps[h].haplotypePDBases = region.pd[h];
        }
        double[] likelihoods = new double[reads.length * haps.length];
        hmm.computeLikelihoods(reads, haps, likelihoods);
        return likelihoods;
    }
}
