/*
 * pyphmm's stand-in for GKL 0.9's IntelPDHMM, the partially determined
 * PairHMM of GATK's --use-pdhmm and DRAGEN mode. Placed before GATK on the
 * class path, it makes GATK's VectorLoglessPairPDHMM run pyphmm. Public
 * behaviour follows GKL's class (checks, exception types, the legacy batch
 * call); natives are GKL's symbols and a few of the shim's own, exported by
 * libpyphmm.so, which pyphmm.shim.LibraryLoader loads.
 *
 * Unlike GKL, whose initialize() sets one process-wide configuration, each
 * instance keeps its own: instances configured differently may compute at
 * once on different threads. One instance may also be shared by threads.
 *
 * The pdhmm types come from gatk-native-bindings 1.1.0, which GATK 4.6
 * ships; this is the only class of the shim that names them, so an older
 * GATK, without them, never loads it and runs the rest of the shim.
 */
package com.intel.gkl.pdhmm;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.pdhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pdhmm.ReadDataHolder;

import pyphmm.shim.LibraryLoader;

public class IntelPDHMM implements PDHMMNativeBinding {
    // GKL's defaults for initialize(null): 1 thread, 512 MB, fastest AVX and OpenMP.
    private static final int DEFAULT_MEMORY_MB = 512;
    // CPU threads of this instance's calls (GKL before initialize: 1).
    private volatile int threads = 1;

    public IntelPDHMM() {
    }

    /** Loads libpyphmm.so; false (never an exception) when it cannot. */
    @Override
    public synchronized boolean load(File tempDir) {
        return LibraryLoader.load(tempDir);
    }

    /**
     * Validates the arguments as GKL does (a null level or setting is a
     * NullPointerException, memory <= 0 an IllegalArgumentException), logs
     * pyphmm's line and sets this instance's thread count. An explicit AVX
     * level is accepted whatever the CPU has: pyphmm chooses its kernel and
     * every kernel gives the same results (GKL refuses a level the CPU lacks).
     */
    @Override
    public void initialize(PDHMMNativeArguments args) {
        int maxThreads = 1;
        int memory = DEFAULT_MEMORY_MB;
        int avx = PDHMMNativeArguments.AVXLevel.FASTEST_AVAILABLE.ordinal();
        int omp = PDHMMNativeArguments.OpenMPSetting.FASTEST_AVAILABLE.ordinal();
        if (args != null) {
            if (args.avxLevel == null) {
                throw new NullPointerException("PDHMMNativeArguments.avxLevel is null");
            }
            if (args.openMPSetting == null) {
                throw new NullPointerException("PDHMMNativeArguments.openMPSetting is null");
            }
            maxThreads = args.maxNumberOfThreads;
            memory = args.getMaxMemoryInMB();
            avx = args.avxLevel.ordinal();
            omp = args.openMPSetting.ordinal();
        }
        threads = configureNative(ReadDataHolder.class, HaplotypeDataHolder.class, omp, maxThreads, avx, memory);
    }

    @Override
    public void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                                   double[] likelihoodArray)
            throws NullPointerException, OutOfMemoryError, IllegalArgumentException {
        if (readDataArray == null || haplotypeDataArray == null || likelihoodArray == null) {
            throw new NullPointerException("readDataArray, haplotypeDataArray and likelihoodArray must not be null");
        }
        long pairs = (long) readDataArray.length * haplotypeDataArray.length;
        if (likelihoodArray.length != pairs) {
            throw new IllegalArgumentException("likelihoodArray holds " + likelihoodArray.length + " values, "
                    + readDataArray.length + " reads x " + haplotypeDataArray.length + " haplotypes are " + pairs);
        }
        try {
            int[] lengths = new int[readDataArray.length + haplotypeDataArray.length];
            byte[] packed = pack(readDataArray, haplotypeDataArray, lengths);
            computePackedNative(packed, lengths, readDataArray.length, haplotypeDataArray.length, likelihoodArray,
                    threads);
        } catch (NullPointerException e) {
            throw e;
        } catch (OutOfMemoryError e) {
            throw (OutOfMemoryError) new OutOfMemoryError("Memory allocation failed: " + e.getMessage()).initCause(e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Ran into invalid argument issue: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new RuntimeException("Runtime exception thrown from native pdhmm function call: " + e.getMessage(),
                    e);
        }
    }

    // Per-thread buffer of pack(): GATK calls once per active region, so it
    // is reused; regions beyond MAX_KEPT bytes get a buffer of their own.
    private static final int MAX_KEPT = 64 << 20;
    private static final ThreadLocal<byte[]> SCRATCH = new ThreadLocal<byte[]>();

    /**
     * Checks the holders and packs them into one byte[] for
     * computePackedNative (one JNI copy per call instead of about 20 JNI
     * calls per read): every read's bases, then quals, insertion GOPs,
     * deletion GOPs, GCPs, then every haplotype's bases, then its PD bytes.
     * lengths receives the read lengths, then the haplotype lengths. A null
     * holder or field is a NullPointerException; a quality or PD array
     * shorter than its bases an IllegalArgumentException (GKL reads past
     * it); a longer one is accepted and its extra bytes ignored, as in GKL.
     */
    private static byte[] pack(ReadDataHolder[] reads, HaplotypeDataHolder[] haps, int[] lengths) {
        final int nr = reads.length;
        long readTotal = 0;
        long hapTotal = 0;
        for (int r = 0; r < nr; ++r) {
            ReadDataHolder d = reads[r];
            if (d == null) {
                throw new NullPointerException("read holder " + r + " is null");
            }
            int len = length(d.readBases, "read", r, "readBases", -1);
            length(d.readQuals, "read", r, "readQuals", len);
            length(d.insertionGOP, "read", r, "insertionGOP", len);
            length(d.deletionGOP, "read", r, "deletionGOP", len);
            length(d.overallGCP, "read", r, "overallGCP", len);
            lengths[r] = len;
            readTotal += len;
        }
        for (int h = 0; h < haps.length; ++h) {
            HaplotypeDataHolder d = haps[h];
            if (d == null) {
                throw new NullPointerException("haplotype holder " + h + " is null");
            }
            int len = length(d.haplotypeBases, "haplotype", h, "haplotypeBases", -1);
            length(d.haplotypePDBases, "haplotype", h, "haplotypePDBases", len);
            lengths[nr + h] = len;
            hapTotal += len;
        }
        long total = 5 * readTotal + 2 * hapTotal;
        if (total > Integer.MAX_VALUE - 16) {
            throw new OutOfMemoryError("a region of " + total + " bytes does not fit a Java array");
        }
        byte[] packed = SCRATCH.get();
        if (packed == null || packed.length < total) {
            packed = new byte[(int) total];
            if (total <= MAX_KEPT) {
                SCRATCH.set(packed);
            }
        }
        // Each read's five arrays are copied together, into their five
        // sections, rather than one field over all reads: holders and their
        // small arrays lie scattered over the heap, and a holder visited once
        // is cheaper than one visited five times.
        final int rt = (int) readTotal, ht = (int) hapTotal;
        int pos = 0;
        for (int r = 0; r < nr; ++r) {
            ReadDataHolder d = reads[r];
            int len = lengths[r];
            System.arraycopy(d.readBases, 0, packed, pos, len);
            System.arraycopy(d.readQuals, 0, packed, pos + rt, len);
            System.arraycopy(d.insertionGOP, 0, packed, pos + 2 * rt, len);
            System.arraycopy(d.deletionGOP, 0, packed, pos + 3 * rt, len);
            System.arraycopy(d.overallGCP, 0, packed, pos + 4 * rt, len);
            pos += len;
        }
        pos = 5 * rt;
        for (int h = 0; h < haps.length; ++h) {
            HaplotypeDataHolder d = haps[h];
            int len = lengths[nr + h];
            System.arraycopy(d.haplotypeBases, 0, packed, pos, len);
            System.arraycopy(d.haplotypePDBases, 0, packed, pos + ht, len);
            pos += len;
        }
        return packed;
    }

    // Length of one holder array; atLeast >= 0: it must hold that many bytes.
    private static int length(byte[] a, String what, int index, String name, int atLeast) {
        if (a == null) {
            throw new NullPointerException(what + " " + index + ": " + name + " is null");
        }
        if (a.length < atLeast) {
            throw new IllegalArgumentException(what + " " + index + ": " + name + " has " + a.length
                    + " values for " + atLeast + " bases");
        }
        return a.length;
    }

    // GKL's legacy-call check: non-null, exactly `expected` elements.
    private static void checkSize(Object array, long expected, String name) {
        if (array == null) {
            throw new NullPointerException(name + " must not be null");
        }
        int n = java.lang.reflect.Array.getLength(array);
        if (n != expected) {
            throw new IllegalArgumentException("array " + name + " has " + n + " elements, expected " + expected);
        }
    }

    /** Logs pyphmm's PDHMM summary of the process's calls so far. */
    @Override
    public void done() {
        doneNative();
    }

    /**
     * GKL's legacy batch call: pair i is read i against haplotype i, each in
     * a slot of maxReadLength (maxHapLength) bytes of its arrays; returns
     * batchSize log10 likelihoods. GKL's checks, in GKL's order, come first.
     */
    public double[] computePDHMM(byte[] hap_bases, byte[] hap_pdbases, byte[] read_bases, byte[] read_qual,
                                 byte[] read_ins_qual, byte[] read_del_qual, byte[] gcp, long[] hap_lengths,
                                 long[] read_lengths, int batchSize, int maxHapLength, int maxReadLength) {
        long hapSize = (long) maxHapLength * batchSize;
        long readSize = (long) maxReadLength * batchSize;
        checkSize(hap_bases, hapSize, "hap_bases");
        checkSize(hap_pdbases, hapSize, "hap_pdbases");
        checkSize(read_bases, readSize, "read_bases");
        checkSize(read_qual, readSize, "read_qual");
        checkSize(read_ins_qual, readSize, "read_ins_qual");
        checkSize(read_del_qual, readSize, "read_del_qual");
        checkSize(gcp, readSize, "gcp");
        checkSize(hap_lengths, batchSize, "hap_lengths");
        checkSize(read_lengths, batchSize, "read_lengths");
        if (batchSize <= 0) {
            throw new IllegalArgumentException("batchSize must be greater than 0, got " + batchSize);
        }
        if (maxHapLength <= 0 || maxReadLength <= 0) {
            throw new IllegalArgumentException("maxHapLength (" + maxHapLength + ") and maxReadLength ("
                    + maxReadLength + ") must be greater than 0");
        }
        try {
            return computeBatchNative(hap_bases, hap_pdbases, read_bases, read_qual, read_ins_qual, read_del_qual,
                    gcp, hap_lengths, read_lengths, batchSize, maxHapLength, maxReadLength, threads);
        } catch (OutOfMemoryError e) {
            throw (OutOfMemoryError) new OutOfMemoryError("pyphmm PDHMM batch: " + e.getMessage()).initCause(e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("pyphmm PDHMM batch: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new RuntimeException("pyphmm PDHMM batch: " + e.getMessage(), e);
        }
    }

    // ---- GKL's natives (symbols fixed by this class name; GKL's own class
    // reaches them through `pyphmm gatk-libdir`) ----------------------------
    private static native void initNative(Class<?> readDataHolderClass, Class<?> haplotypeDataHolderClass,
                                          int openMPSetting, int maxThreads, int avxLevel, int maxMemoryInMB);

    private native double[] computePDHMMNative(byte[] hap_bases, byte[] hap_pdbases, byte[] read_bases,
                                               byte[] read_qual, byte[] read_ins_qual, byte[] read_del_qual,
                                               byte[] gcp, long[] hap_lengths, long[] read_lengths, int batchSize,
                                               int maxHapLength, int maxReadLength);

    private native void computeLikelihoodsNative(Object[] readDataArray, Object[] haplotypeDataArray,
                                                 double[] likelihoodArray);

    private static native void doneNative();

    // ---- the shim's own: the instance's thread count is an argument -------
    // initNative's checks and banner; returns the CPU threads calls use.
    private static native int configureNative(Class<?> readDataHolderClass, Class<?> haplotypeDataHolderClass,
                                              int openMPSetting, int maxThreads, int avxLevel, int maxMemoryInMB);

    private native void computePackedNative(byte[] packed, int[] lengths, int numReads, int numHaps,
                                            double[] likelihoodArray, int threads);

    private native double[] computeBatchNative(byte[] hap_bases, byte[] hap_pdbases, byte[] read_bases,
                                               byte[] read_qual, byte[] read_ins_qual, byte[] read_del_qual,
                                               byte[] gcp, long[] hap_lengths, long[] read_lengths, int batchSize,
                                               int maxHapLength, int maxReadLength, int threads);
}
