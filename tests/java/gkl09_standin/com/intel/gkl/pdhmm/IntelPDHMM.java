package com.intel.gkl.pdhmm;

import java.io.File;

import org.broadinstitute.gatk.nativebindings.pdhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pdhmm.PDHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pdhmm.ReadDataHolder;

/**
 * Test stand-in for GKL 0.9's own IntelPDHMM where no GKL 0.9 jar exists
 * (CI): what that class does with a `pyphmm gatk-libdir` directory under
 * USE_LIBRARY_PATH=1, with as little Java as possible around it:
 * System.loadLibrary of gkl_utils and gkl_pdhmm from java.library.path,
 * and GKL's four native declarations, called the way GKL's class calls
 * them (initialize(null) means 1 thread, 512 MB, fastest AVX and OpenMP).
 * tests/test_pdhmm_jni.py checks that these declarations have the
 * descriptors of GKL 0.9's (tests/data/gkl09-pdhmm-api.txt). Never part of
 * the shim.
 */
public class IntelPDHMM implements PDHMMNativeBinding {
    @Override
    public synchronized boolean load(File tempDir) {
        try {
            System.loadLibrary("gkl_utils");
            System.loadLibrary("gkl_pdhmm");
            return true;
        } catch (UnsatisfiedLinkError e) {
            System.err.println("stand-in IntelPDHMM: " + e);
            return false;
        }
    }

    @Override
    public void initialize(PDHMMNativeArguments args) {
        if (args == null) {
            args = new PDHMMNativeArguments();
            args.maxNumberOfThreads = 1;
            args.avxLevel = PDHMMNativeArguments.AVXLevel.FASTEST_AVAILABLE;
            args.setMaxMemoryInMB(512);
        }
        initNative(ReadDataHolder.class, HaplotypeDataHolder.class, args.openMPSetting.ordinal(),
                args.maxNumberOfThreads, args.avxLevel.ordinal(), args.getMaxMemoryInMB());
    }

    @Override
    public void computeLikelihoods(ReadDataHolder[] reads, HaplotypeDataHolder[] haps, double[] out) {
        computeLikelihoodsNative(reads, haps, out);
    }

    @Override
    public void done() {
        doneNative();
    }

    public double[] computePDHMM(byte[] hapBases, byte[] hapPd, byte[] readBases, byte[] readQuals, byte[] ins,
                                 byte[] dels, byte[] gcp, long[] hapLengths, long[] readLengths, int batch,
                                 int maxHap, int maxRead) {
        return computePDHMMNative(hapBases, hapPd, readBases, readQuals, ins, dels, gcp, hapLengths, readLengths,
                batch, maxHap, maxRead);
    }

    private static native void initNative(Class<?> readDataHolderClass, Class<?> haplotypeDataHolderClass,
                                          int openMPSetting, int maxThreads, int avxLevel, int maxMemoryInMB);

    private native double[] computePDHMMNative(byte[] hapBases, byte[] hapPd, byte[] readBases, byte[] readQuals,
                                               byte[] ins, byte[] dels, byte[] gcp, long[] hapLengths,
                                               long[] readLengths, int batch, int maxHap, int maxRead);

    private native void computeLikelihoodsNative(Object[] reads, Object[] haps, double[] out);

    private static native void doneNative();
}
