/*
 * pyphmm's stand-in for GKL's IntelPairHmmOMP: the same engine as
 * IntelPairHmm; maxNumberOfThreads is capped at the available cores, as GKL's
 * OpenMP build does.
 */
package com.intel.gkl.pairhmm;

public final class IntelPairHmmOMP extends IntelPairHmm {
    public IntelPairHmmOMP() {
        super();
        useOmp = true;
    }
}
