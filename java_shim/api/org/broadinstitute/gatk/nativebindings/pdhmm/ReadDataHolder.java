/*
 * Compile-time declaration of gatk-native-bindings 1.1.0's PDHMM read holder
 * (the API contract: names and types). Never packaged: GATK's own 1.1.0 jar
 * provides the class at run time (java_shim/compile.sh).
 */
package org.broadinstitute.gatk.nativebindings.pdhmm;

public final class ReadDataHolder {
    public byte[] readBases;
    public byte[] readQuals;
    public byte[] insertionGOP;
    public byte[] deletionGOP;
    public byte[] overallGCP;
}
