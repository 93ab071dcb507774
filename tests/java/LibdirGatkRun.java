import com.intel.gkl.compression.IntelDeflaterFactory;
import com.intel.gkl.compression.IntelInflaterFactory;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * What a GATK run under USE_LIBRARY_PATH=1 needs from a `pyphmm gatk-libdir`
 * directory, in one JVM with GKL's own classes: BAM-style compression
 * through GATK's factories (IntelDeflaterFactory / IntelInflaterFactory, as
 * CommandLineProgram installs them), then GATK HEAD's PairHMM and
 * Smith-Waterman sequence (GatkHeadCaller), which pyphmm answers.
 *
 * Usage: LibdirGatkRun OUT_COMPRESSION.txt REGIONS.in SW_PAIRS.tsv OUT.txt
 * Compression output: "C <intel deflater?> <intel inflater?> <deflater class>
 * <inflater class> <bytes in> <bytes out> <round trip ok?> <JDK inflater ok?>".
 */
public final class LibdirGatkRun {
    public static void main(String[] args) throws Exception {
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(args[0])))) {
            out.println(roundTrip());
        }
        GatkHeadCaller.main(Arrays.copyOfRange(args, 1, args.length));
    }

    /** One BGZF-sized block: compressible, sequence-like text. */
    static String roundTrip() {
        Random rng = new Random(15);
        byte[] data = new byte[60000];
        byte[] acgt = "ACGT".getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < data.length; ++i) {
            data[i] = i % 100 == 99 ? (byte) '\n' : acgt[rng.nextInt(4)];
        }
        IntelDeflaterFactory df = new IntelDeflaterFactory();
        IntelInflaterFactory inf = new IntelInflaterFactory();
        Deflater deflater = df.makeDeflater(5, true);
        deflater.setInput(data, 0, data.length);
        deflater.finish();
        byte[] packed = new byte[data.length + 1024];
        int n = 0;
        while (!deflater.finished() && n < packed.length) {
            n += deflater.deflate(packed, n, packed.length - n);
        }
        deflater.end();
        return "C " + df.usingIntelDeflater() + " " + inf.usingIntelInflater() + " " + deflater.getClass().getName()
                + " " + inf.makeInflater(true).getClass().getName() + " " + data.length + " " + n + " "
                + Arrays.equals(data, inflate(inf.makeInflater(true), packed, n, data.length)) + " "
                + Arrays.equals(data, inflate(new Inflater(true), packed, n, data.length));
    }

    static byte[] inflate(Inflater inflater, byte[] packed, int n, int size) {
        byte[] out = new byte[size];
        try {
            inflater.setInput(packed, 0, n);
            int got = 0;
            for (int tries = 0; tries < 1000 && !inflater.finished() && got < size; ++tries) {
                got += inflater.inflate(out, got, size - got);
            }
            return got == size ? out : null;
        } catch (java.util.zip.DataFormatException e) {
            return null;
        } finally {
            inflater.end();
        }
    }
}
