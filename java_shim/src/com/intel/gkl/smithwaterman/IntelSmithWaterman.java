/*
 * pyphmm's stand-in for GKL's IntelSmithWaterman: GATK's native
 * Smith-Waterman binding backed by libpyphmm.so. Checks follow GKL's class;
 * load() returns false when this pyphmm build cannot align (GATK then uses
 * its Java aligner).
 */
package com.intel.gkl.smithwaterman;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.smithwaterman.SWAlignerNativeBinding;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWNativeAlignerResult;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWOverhangStrategy;
import org.broadinstitute.gatk.nativebindings.smithwaterman.SWParameters;

import pyphmm.shim.LibraryLoader;

public class IntelSmithWaterman implements SWAlignerNativeBinding {
    private static final int MAX_SW_SEQUENCE_LENGTH = 32767;
    private static final int MAXIMUM_SW_MATCH_VALUE = 64 * 1024;
    private static boolean announced = false;
    // The CIGAR buffer, one per calling thread and reused: the native side
    // ends the CIGAR with a NUL where it fits, so stale bytes after it are
    // never read.
    private static final ThreadLocal<byte[]> CIGAR_BUFFER = new ThreadLocal<byte[]>();

    public IntelSmithWaterman() {
    }

    @Override
    public synchronized boolean load(File tmpDir) {
        if (!LibraryLoader.load(tmpDir)) {
            return false;
        }
        String problem = pyphmmSwStatusNative();
        if (problem != null) {
            synchronized (IntelSmithWaterman.class) {
                if (!announced) {
                    announced = true;
                    System.err.println("pyphmm: Smith-Waterman unavailable (" + problem + "); not loading");
                }
            }
            return false;
        }
        initNative();  // logs pyphmm's one line, once per process
        return true;
    }

    @Override
    public SWNativeAlignerResult align(byte[] refArray, byte[] altArray, SWParameters parameters,
                                       SWOverhangStrategy overhangStrategy)
            throws NullPointerException, OutOfMemoryError, IllegalArgumentException {
        if (refArray == null) {
            throw new NullPointerException("Reference data array is null.");
        }
        if (altArray == null) {
            throw new NullPointerException("Alternate data array is null.");
        }
        if (parameters == null) {
            throw new NullPointerException("Parameter structure is null.");
        }
        if (overhangStrategy == null) {
            throw new NullPointerException("OverhangStrategy is null.");
        }
        if (refArray.length <= 0 || altArray.length <= 0) {
            throw new IllegalArgumentException("Cannot align empty sequences");
        }
        byte strategy = getStrategy(overhangStrategy);
        if (refArray.length > MAX_SW_SEQUENCE_LENGTH || altArray.length > MAX_SW_SEQUENCE_LENGTH) {
            throw new IllegalArgumentException(
                    String.format("Sequences exceed maximum length of %d bytes", MAX_SW_SEQUENCE_LENGTH));
        }
        if (parameters.getMatchValue() > MAXIMUM_SW_MATCH_VALUE) {
            throw new IllegalArgumentException(
                    String.format("Match value parameter exceed maximum value of %d", MAXIMUM_SW_MATCH_VALUE));
        }
        if (strategy < 9 || strategy > 12) {
            throw new IllegalArgumentException("Strategy is invalid.");
        }
        int cigarBytes = 2 * Integer.max(refArray.length, altArray.length);  // GKL's bound
        byte[] cigarArray = CIGAR_BUFFER.get();
        if (cigarArray == null || cigarArray.length < cigarBytes) {
            cigarArray = new byte[Integer.max(cigarBytes, 1024)];
            CIGAR_BUFFER.set(cigarArray);
        }
        int offset;
        try {
            offset = alignNative(refArray, altArray, cigarArray, parameters.getMatchValue(),
                                 parameters.getMismatchPenalty(), parameters.getGapOpenPenalty(),
                                 parameters.getGapExtendPenalty(), strategy);
        } catch (OutOfMemoryError e) {
            OutOfMemoryError oom = new OutOfMemoryError("Memory allocation failed: " + e.getMessage());
            oom.initCause(e);
            throw oom;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Ran into invalid argument issue: " + e.getMessage(), e);
        }
        // The native side writes the CIGAR (digits and letters) and a NUL
        // where it fits: what GKL's trim() of its zeroed array returns.
        int length = 0;
        while (length < cigarArray.length && cigarArray[length] != 0) {
            ++length;
        }
        if (length > cigarBytes) {  // past GKL's bound, as when the buffer was exactly that long
            throw new IllegalArgumentException(String.format(
                    "Ran into invalid argument issue: CIGAR of %d characters does not fit in %d bytes", length,
                    cigarBytes));
        }
        return new SWNativeAlignerResult(
                new String(cigarArray, 0, length, java.nio.charset.StandardCharsets.US_ASCII), offset);
    }

    /** GKL's byte code for a strategy (no enum switch: it would add a class). */
    public byte getStrategy(SWOverhangStrategy strategy) {
        if (strategy == SWOverhangStrategy.SOFTCLIP) {
            return 9;
        }
        if (strategy == SWOverhangStrategy.INDEL) {
            return 10;
        }
        if (strategy == SWOverhangStrategy.LEADING_INDEL) {
            return 11;
        }
        if (strategy == SWOverhangStrategy.IGNORE) {
            return 12;
        }
        return 0;
    }

    @Override
    public void close() {
        doneNative();
    }

    private static native void initNative();

    private static native int alignNative(byte[] refArray, byte[] altArray, byte[] cigarArray, int match,
                                          int mismatch, int open, int extend, byte strategy);

    private static native void doneNative();

    private static native String pyphmmSwStatusNative();
}
