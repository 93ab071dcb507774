// A read row's transition probabilities from GKL's tables: the one place
// that turns a row's (insertion, deletion, gap-continuation) quality triple
// into mm, gm, mx, my and cc (GKL's xx = yy = cc). The CPU kernels, the GPU
// kernels and the GPU host code (launch constants) all call it, so every
// backend starts from the same values (docs/ALGORITHM.md).
#pragma once

#ifdef __CUDACC__
#define PYPHMM_HD __host__ __device__ __forceinline__
#else
#define PYPHMM_HD inline
#endif

namespace pyphmm {

// Index into GKL's triangular match-to-match table for a quality pair.
PYPHMM_HD int mm_index(int ins_qual, int del_qual) {
    const int lo = ins_qual < del_qual ? ins_qual : del_qual;
    const int hi = ins_qual < del_qual ? del_qual : ins_qual;
    return hi * (hi + 1) / 2 + lo;
}

template <typename T>
struct RowTransitions {
    T mm;  // match to match
    T gm;  // gap to match: 1 - cc
    T mx;  // match to insertion
    T my;  // match to deletion
    T cc;  // gap continuation (insertion to insertion, deletion to deletion)
};

// `tab` is any table view with T prob(int qual) (ph2pr) and T mm_at(int
// index) (the match-to-match table); qualities are already masked.
template <typename T, typename Tab>
PYPHMM_HD RowTransitions<T> row_transitions(const Tab& tab, int ins, int del, int gcp) {
    RowTransitions<T> r;
    r.mm = tab.mm_at(mm_index(ins, del));
    r.cc = tab.prob(gcp);
    r.gm = T(1) - r.cc;
    r.mx = tab.prob(ins);
    r.my = tab.prob(del);
    return r;
}

}  // namespace pyphmm
