/*
 * Compile-time declaration of gatk-native-bindings 1.1.0's PDHMM haplotype
 * holder: the bases and one PD byte per base. Never packaged (see
 * ReadDataHolder).
 */
package org.broadinstitute.gatk.nativebindings.pdhmm;

public final class HaplotypeDataHolder {
    public byte[] haplotypeBases;
    public byte[] haplotypePDBases;
}
