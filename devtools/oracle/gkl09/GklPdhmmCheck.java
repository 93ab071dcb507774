// Loads GKL 0.9's com.intel.gkl.pdhmm.IntelPDHMM from gkl-0.9.0.jar (its native
// library from inside the jar, as GATK does), initializes it, and checks GKL's
// test file format (hap, [pd], read, quals, ins, del, gcp phred+33, expected)
// through computeLikelihoods (one read x one haplotype per call, and all pairs
// of one haplotype in one call) and computePDHMM (all pairs in one call).
//
//   java -cp classes:gkl-0.9.0.jar:gatk-native-bindings-1.1.0.jar:commons-logging.jar:commons-io.jar \
//        GklPdhmmCheck FILE [AVXLEVEL=FASTEST_AVAILABLE] [THREADS=1] [MAXPAIRS=all]
import com.intel.gkl.pdhmm.IntelPDHMM;
import org.broadinstitute.gatk.nativebindings.pdhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pdhmm.ReadDataHolder;

import java.io.BufferedReader;
import java.io.FileReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public class GklPdhmmCheck {
    static byte[] phred(String s) {
        byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
        for (int i = 0; i < b.length; i++) b[i] = (byte) (b[i] - 33);
        return b;
    }

    static byte[] pd(String s) {
        String[] f = s.substring(1, s.length() - 1).split(",");
        byte[] b = new byte[f.length];
        for (int i = 0; i < f.length; i++) b[i] = Byte.parseByte(f[i].trim());
        return b;
    }

    public static void main(String[] args) throws Exception {
        String file = args[0];
        String level = args.length > 1 ? args[1] : "FASTEST_AVAILABLE";
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        int maxPairs = args.length > 3 ? Integer.parseInt(args[3]) : Integer.MAX_VALUE;

        List<ReadDataHolder> reads = new ArrayList<>();
        List<HaplotypeDataHolder> haps = new ArrayList<>();
        List<Double> expected = new ArrayList<>();
        try (BufferedReader br = new BufferedReader(new FileReader(file))) {
            String line;
            while ((line = br.readLine()) != null && expected.size() < maxPairs) {
                if (line.startsWith("#") || line.isEmpty()) continue;
                String[] s = line.split("\t");
                HaplotypeDataHolder h = new HaplotypeDataHolder();
                h.haplotypeBases = s[0].getBytes(StandardCharsets.UTF_8);
                h.haplotypePDBases = pd(s[1]);
                ReadDataHolder r = new ReadDataHolder();
                r.readBases = s[2].getBytes(StandardCharsets.UTF_8);
                r.readQuals = phred(s[3]);
                r.insertionGOP = phred(s[4]);
                r.deletionGOP = phred(s[5]);
                r.overallGCP = phred(s[6]);
                haps.add(h);
                reads.add(r);
                expected.add(Double.parseDouble(s[7]));
            }
        }
        int n = expected.size();

        IntelPDHMM pdhmm = new IntelPDHMM();
        if (!pdhmm.load(null)) throw new IllegalStateException("IntelPDHMM.load failed");
        System.out.println("IntelPDHMM from " + IntelPDHMM.class.getProtectionDomain().getCodeSource().getLocation());
        PDHMMNativeArguments a = new PDHMMNativeArguments();
        a.maxNumberOfThreads = threads;
        a.avxLevel = PDHMMNativeArguments.AVXLevel.valueOf(level);
        a.openMPSetting = PDHMMNativeArguments.OpenMPSetting.FASTEST_AVAILABLE;
        a.setMaxMemoryInMB(512);
        pdhmm.initialize(a);

        // computeLikelihoods, one pair per call
        double d1 = 0;
        for (int i = 0; i < n; i++) {
            double[] out = new double[1];
            pdhmm.computeLikelihoods(new ReadDataHolder[] {reads.get(i)}, new HaplotypeDataHolder[] {haps.get(i)}, out);
            d1 = Math.max(d1, Math.abs(out[0] - expected.get(i)));
        }
        // computeLikelihoods, runs of pairs sharing a haplotype in one call (read-major output)
        double d2 = 0;
        int calls = 0;
        for (int i = 0; i < n; ) {
            int j = i;
            while (j < n && java.util.Arrays.equals(haps.get(j).haplotypeBases, haps.get(i).haplotypeBases)
                    && java.util.Arrays.equals(haps.get(j).haplotypePDBases, haps.get(i).haplotypePDBases)) j++;
            ReadDataHolder[] rs = reads.subList(i, j).toArray(new ReadDataHolder[0]);
            double[] out = new double[rs.length];
            pdhmm.computeLikelihoods(rs, new HaplotypeDataHolder[] {haps.get(i)}, out);
            for (int k = i; k < j; k++) d2 = Math.max(d2, Math.abs(out[k - i] - expected.get(k)));
            calls++;
            i = j;
        }
        // computePDHMM, all pairs in one call
        int mh = 0, mr = 0;
        for (int i = 0; i < n; i++) {
            mh = Math.max(mh, haps.get(i).haplotypeBases.length);
            mr = Math.max(mr, reads.get(i).readBases.length);
        }
        byte[] hb = new byte[n * mh], hp = new byte[n * mh];
        byte[] rb = new byte[n * mr], rq = new byte[n * mr], ri = new byte[n * mr], rd = new byte[n * mr], rg = new byte[n * mr];
        long[] hl = new long[n], rl = new long[n];
        for (int i = 0; i < n; i++) {
            HaplotypeDataHolder h = haps.get(i);
            ReadDataHolder r = reads.get(i);
            System.arraycopy(h.haplotypeBases, 0, hb, i * mh, h.haplotypeBases.length);
            System.arraycopy(h.haplotypePDBases, 0, hp, i * mh, h.haplotypePDBases.length);
            System.arraycopy(r.readBases, 0, rb, i * mr, r.readBases.length);
            System.arraycopy(r.readQuals, 0, rq, i * mr, r.readQuals.length);
            System.arraycopy(r.insertionGOP, 0, ri, i * mr, r.insertionGOP.length);
            System.arraycopy(r.deletionGOP, 0, rd, i * mr, r.deletionGOP.length);
            System.arraycopy(r.overallGCP, 0, rg, i * mr, r.overallGCP.length);
            hl[i] = h.haplotypeBases.length;
            rl[i] = r.readBases.length;
        }
        double[] all = pdhmm.computePDHMM(hb, hp, rb, rq, ri, rd, rg, hl, rl, n, mh, mr);
        double d3 = 0;
        for (int i = 0; i < n; i++) d3 = Math.max(d3, Math.abs(all[i] - expected.get(i)));
        pdhmm.done();

        System.out.printf("avxLevel=%s threads=%d pairs=%d%n", level, threads, n);
        System.out.printf("computeLikelihoods 1x1 per call: max |diff| %.3g%n", d1);
        System.out.printf("computeLikelihoods %d calls (reads x 1 hap): max |diff| %.3g%n", calls, d2);
        System.out.printf("computePDHMM one call: max |diff| %.3g%n", d3);
        boolean ok = d1 <= 1e-4 && d2 <= 1e-4 && d3 <= 1e-4;
        System.out.println(ok ? "OK" : "FAILED");
        System.exit(ok ? 0 : 1);
    }
}
