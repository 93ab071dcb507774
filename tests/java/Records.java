import java.io.BufferedReader;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;

/**
 * pyphmm's record files (SPEC section 2) for the Java test harnesses: one
 * region per record, reads with ASCII+33 quality strings, haplotypes (for
 * PDHMM each followed by its PD bytes, comma-separated signed values); and
 * Smith-Waterman pair files (REF TAB ALT TAB match,mismatch,open,extend);
 * a region's likelihoods through GATK's binding API.
 * The files are written by the Python tests (tests/oracle/java_harness.py).
 */
public final class Records {
    private Records() {
    }

    /** One GATK active region: raw phred arrays, as GATK's holders carry them. */
    public static final class Region implements Serializable {
        private static final long serialVersionUID = 1L;
        public final int index;
        public final byte[][] bases, quals, ins, dels, gcp, haps;
        /** PDHMM regions: one PD byte per haplotype base; null for PairHMM ones. */
        public final byte[][] pd;

        Region(int index, byte[][] bases, byte[][] quals, byte[][] ins, byte[][] dels, byte[][] gcp,
               byte[][] haps, byte[][] pd) {
            this.index = index;
            this.bases = bases;
            this.quals = quals;
            this.ins = ins;
            this.dels = dels;
            this.gcp = gcp;
            this.haps = haps;
            this.pd = pd;
        }

        public int reads() {
            return bases.length;
        }

        public long cells() {
            long r = 0, h = 0;
            for (byte[] b : bases) {
                r += b.length;
            }
            for (byte[] b : haps) {
                h += b.length;
            }
            return r * h;
        }

        /** This region's likelihoods through hmm, with GATK's holders built afresh as VectorLoglessPairHMM does. */
        public double[] likelihoods(PairHMMNativeBinding hmm) {
            HaplotypeDataHolder[] holders = new HaplotypeDataHolder[haps.length];
            for (int h = 0; h < holders.length; ++h) {
                holders[h] = new HaplotypeDataHolder();
                holders[h].haplotypeBases = haps[h];
            }
            ReadDataHolder[] reads = new ReadDataHolder[reads()];
            for (int k = 0; k < reads.length; ++k) {
                reads[k] = new ReadDataHolder();
                reads[k].readBases = bases[k];
                reads[k].readQuals = quals[k];
                reads[k].insertionGOP = ins[k];
                reads[k].deletionGOP = dels[k];
                reads[k].overallGCP = gcp[k];
            }
            double[] out = new double[reads.length * holders.length];
            hmm.computeLikelihoods(reads, holders, out);
            return out;
        }
    }

    /** One Smith-Waterman pair with its parameters. */
    public static final class SwPair {
        public final byte[] ref, alt;
        public final int match, mismatch, open, extend;

        SwPair(byte[] ref, byte[] alt, int[] p) {
            this.ref = ref;
            this.alt = alt;
            this.match = p[0];
            this.mismatch = p[1];
            this.open = p[2];
            this.extend = p[3];
        }
    }

    public static List<Region> readRegions(Path path) throws IOException {
        List<Region> out = new ArrayList<>();
        try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.US_ASCII)) {
            String header;
            while ((header = in.readLine()) != null) {
                if (header.trim().isEmpty()) {
                    continue;
                }
                String[] rh = header.trim().split("\\s+");
                int nr = Integer.parseInt(rh[0]), nh = Integer.parseInt(rh[1]);
                byte[][] bases = new byte[nr][], quals = new byte[nr][], ins = new byte[nr][],
                        dels = new byte[nr][], gcp = new byte[nr][], haps = new byte[nh][], pd = null;
                for (int r = 0; r < nr; ++r) {
                    String[] f = in.readLine().trim().split("\\s+");
                    bases[r] = f[0].getBytes(StandardCharsets.US_ASCII);
                    quals[r] = phred(f[1]);
                    ins[r] = phred(f[2]);
                    dels[r] = phred(f[3]);
                    gcp[r] = phred(f[4]);
                }
                for (int h = 0; h < nh; ++h) {
                    String[] f = in.readLine().trim().split("\\s+");
                    haps[h] = f[0].getBytes(StandardCharsets.US_ASCII);
                    if (f.length > 1) {
                        if (pd == null) {
                            pd = new byte[nh][];
                        }
                        pd[h] = signedBytes(f[1]);
                    }
                }
                out.add(new Region(out.size(), bases, quals, ins, dels, gcp, haps, pd));
            }
        }
        return out;
    }

    public static List<SwPair> readSwPairs(Path path) throws IOException {
        List<SwPair> out = new ArrayList<>();
        for (String line : Files.readAllLines(path, StandardCharsets.US_ASCII)) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t");
            String[] p = f[2].split(",");
            int[] params = new int[4];
            for (int k = 0; k < 4; ++k) {
                params[k] = Integer.parseInt(p[k]);
            }
            out.add(new SwPair(f[0].getBytes(StandardCharsets.US_ASCII), f[1].getBytes(StandardCharsets.US_ASCII),
                               params));
        }
        return out;
    }

    private static byte[] signedBytes(String csv) {
        String[] f = csv.split(",");
        byte[] b = new byte[f.length];
        for (int i = 0; i < b.length; ++i) {
            b[i] = Byte.parseByte(f[i]);
        }
        return b;
    }

    private static byte[] phred(String ascii33) {
        byte[] b = ascii33.getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < b.length; ++i) {
            b[i] -= 33;
        }
        return b;
    }
}
