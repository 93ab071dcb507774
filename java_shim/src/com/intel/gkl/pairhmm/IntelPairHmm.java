/*
 * pyphmm's stand-in for GKL's IntelPairHmm. Placed before GATK on the class
 * path, it makes GATK's native PairHMM (AVX_LOGLESS_CACHING[_OMP],
 * FASTEST_AVAILABLE) run pyphmm: GPU when one is usable, else pyphmm's CPU
 * kernels. Public behaviour follows GKL's class; natives are GKL's symbols,
 * exported by libpyphmm.so, which pyphmm.shim.LibraryLoader loads.
 */
package com.intel.gkl.pairhmm;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;

import pyphmm.shim.LibraryLoader;

public class IntelPairHmm implements PairHMMNativeBinding {
    boolean useOmp = false;

    public IntelPairHmm() {
    }

    /** Loads libpyphmm.so; false (never an exception) when it cannot. */
    @Override
    public synchronized boolean load(File tmpDir) {
        return LibraryLoader.load(tmpDir);
    }

    @Override
    public void initialize(PairHMMNativeArguments args) {
        if (args == null) {
            args = new PairHMMNativeArguments();
            args.useDoublePrecision = false;
            args.maxNumberOfThreads = 1;
        }
        int threads = Math.max(1, args.maxNumberOfThreads);
        if (useOmp) {
            threads = Math.min(threads, Runtime.getRuntime().availableProcessors());
        }
        // (initNative logs pyphmm's one line: backend, GPU, CPU kernel, threshold)
        initNative(ReadDataHolder.class, HaplotypeDataHolder.class, args.useDoublePrecision, threads);
    }

    @Override
    public void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                                   double[] likelihoodArray)
            throws NullPointerException, OutOfMemoryError, IllegalArgumentException {
        if (readDataArray == null || haplotypeDataArray == null || likelihoodArray == null) {
            throw new NullPointerException("Input is null");
        }
        try {
            if (!computePacked(readDataArray, haplotypeDataArray, likelihoodArray)) {
                computeLikelihoodsNative(readDataArray, haplotypeDataArray, likelihoodArray);
            }
        } catch (OutOfMemoryError e) {
            OutOfMemoryError oom = new OutOfMemoryError("Memory allocation failed: " + e.getMessage());
            oom.initCause(e);
            throw oom;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Ran into invalid argument issue: " + e.getMessage(), e);
        }
    }

    // Per-thread buffer of computePacked: GATK calls once per active region, so
    // reuse it; regions beyond MAX_KEPT bytes get a buffer of their own.
    private static final int MAX_KEPT = 64 << 20;
    private static final ThreadLocal<byte[]> SCRATCH = new ThreadLocal<byte[]>();

    /**
     * Checks the holders and packs every array into one byte[] (bases of all
     * reads, then quals, insertion GOPs, deletion GOPs, GCPs, then the
     * haplotypes) for computePackedNative: one JNI copy per call instead of
     * about 17 JNI calls per read. Returns false, computing nothing, when the
     * region does not fit a Java array (the native path handles it).
     */
    private boolean computePacked(ReadDataHolder[] reads, HaplotypeDataHolder[] haps, double[] out) {
        final int nr = reads.length, nh = haps.length;
        if (out.length < (long) nr * nh) {
            throw new IllegalArgumentException("output array holds " + out.length + " values, " + nr
                    + " reads x " + nh + " haplotypes need " + (long) nr * nh);
        }
        if ((long) nr * nh == 0) {
            return true;
        }
        int[] lengths = new int[nr + nh];
        long readTotal = 0, hapTotal = 0;
        for (int r = 0; r < nr; ++r) {
            ReadDataHolder d = reads[r];
            if (d == null) {
                throw new NullPointerException("read holder " + r + " is null");
            }
            int len = checkedLength(d.readBases, r, "readBases", -1);
            checkedLength(d.readQuals, r, "readQuals", len);
            checkedLength(d.insertionGOP, r, "insertionGOP", len);
            checkedLength(d.deletionGOP, r, "deletionGOP", len);
            checkedLength(d.overallGCP, r, "overallGCP", len);
            lengths[r] = len;
            readTotal += len;
        }
        for (int h = 0; h < nh; ++h) {
            HaplotypeDataHolder d = haps[h];
            if (d == null) {
                throw new NullPointerException("haplotype holder " + h + " is null");
            }
            if (d.haplotypeBases == null) {
                throw new NullPointerException("haplotype " + h + ": haplotypeBases is null");
            }
            if (d.haplotypeBases.length == 0) {
                throw new IllegalArgumentException("haplotype " + h + " is empty");
            }
            lengths[nr + h] = d.haplotypeBases.length;
            hapTotal += d.haplotypeBases.length;
        }
        long total = 5 * readTotal + hapTotal;
        if (total > Integer.MAX_VALUE - 16) {
            return false;
        }
        byte[] packed = SCRATCH.get();
        if (packed == null || packed.length < total) {
            packed = new byte[(int) total];
            if (total <= MAX_KEPT) {
                SCRATCH.set(packed);
            }
        }
        int pos = 0;
        for (int k = 0; k < 5; ++k) {
            for (int r = 0; r < nr; ++r) {
                byte[] a = field(reads[r], k);
                System.arraycopy(a, 0, packed, pos, a.length);
                pos += a.length;
            }
        }
        for (int h = 0; h < nh; ++h) {
            byte[] a = haps[h].haplotypeBases;
            System.arraycopy(a, 0, packed, pos, a.length);
            pos += a.length;
        }
        computePackedNative(packed, lengths, nr, nh, out);
        return true;
    }

    private static byte[] field(ReadDataHolder d, int k) {
        switch (k) {
            case 0: return d.readBases;
            case 1: return d.readQuals;
            case 2: return d.insertionGOP;
            case 3: return d.deletionGOP;
            default: return d.overallGCP;
        }
    }

    // Length of one of read r's arrays; expected < 0: the bases (non-empty).
    private static int checkedLength(byte[] a, int r, String name, int expected) {
        if (a == null) {
            throw new NullPointerException("read " + r + ": " + name + " is null");
        }
        if (expected < 0 && a.length == 0) {
            throw new IllegalArgumentException("read " + r + " is empty");
        }
        if (expected >= 0 && a.length != expected) {
            throw new IllegalArgumentException("read " + r + ": " + name + " has " + a.length + " values for "
                    + expected + " bases");
        }
        return a.length;
    }

    /** Logs pyphmm's summary of the process's calls so far (doneNative). */
    @Override
    public void done() {
        doneNative();
    }

    // ---- GKL's natives (symbols fixed by this class name) ----------------
    private static native void initNative(Class<?> readDataHolderClass, Class<?> haplotypeDataHolderClass,
                                          boolean doublePrecision, int maxThreads);

    private native void computeLikelihoodsNative(Object[] readDataArray, Object[] haplotypeDataArray,
                                                 double[] likelihoodArray);

    private native void doneNative();

    // pyphmm's packed entry (shim only; see computePacked).
    private native void computePackedNative(byte[] packed, int[] lengths, int numReads, int numHaps,
                                            double[] likelihoodArray);
}
