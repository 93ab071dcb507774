/*
 * Compile-time declaration of gatk-native-bindings 1.1.0's PDHMM binding
 * interface. Never packaged (see ReadDataHolder).
 */
package org.broadinstitute.gatk.nativebindings.pdhmm;

import org.broadinstitute.gatk.nativebindings.NativeLibrary;

public interface PDHMMNativeBinding extends NativeLibrary {
    /** Once per instance, before computeLikelihoods. */
    void initialize(PDHMMNativeArguments args);

    /** likelihoodArray[r * haplotypes + h]: log10 P(read r | haplotype h). */
    void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                            double[] likelihoodArray);

    void done();
}
