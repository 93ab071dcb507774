/*
 * Compile-time declaration of gatk-native-bindings 1.1.0's PDHMM arguments.
 * The enums' ordinals are what crosses JNI. Never packaged (see
 * ReadDataHolder).
 */
package org.broadinstitute.gatk.nativebindings.pdhmm;

public class PDHMMNativeArguments {
    public enum AVXLevel { FASTEST_AVAILABLE, SCALAR, AVX2, AVX512 }

    public enum OpenMPSetting { FASTEST_AVAILABLE, ENABLE, DISABLE }

    public int maxNumberOfThreads;
    public AVXLevel avxLevel;
    public OpenMPSetting openMPSetting = OpenMPSetting.FASTEST_AVAILABLE;
    private int maxMemoryInMB;

    public void setMaxMemoryInMB(int maxMemoryInMB) {
        if (maxMemoryInMB <= 0) {
            throw new IllegalArgumentException("maxMemoryInMB must be positive, got " + maxMemoryInMB);
        }
        this.maxMemoryInMB = maxMemoryInMB;
    }

    public int getMaxMemoryInMB() {
        return maxMemoryInMB;
    }
}
