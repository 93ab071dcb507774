// What the GPU Smith-Waterman's host planning (sw_plan.h) and its kernels
// (sw_cuda_kernels.cuh) agree on: constants, the pair descriptor, the
// backtrack layout and the choice of columns per lane. Plain C++ for the
// host compiler, host-and-device functions under nvcc.
#pragma once
#include <cstdint>
#include <type_traits>

#ifndef SW_HD
#ifdef __CUDACC__
#define SW_HD __host__ __device__
#else
#define SW_HD
#endif
#endif

namespace pyphmm {
namespace sw_gpu {

constexpr int32_t kFloor = -100000000;       // GATK's MATRIX_MIN_CUTOFF
constexpr int32_t kLowInit = INT32_MIN / 2;  // GATK's initial best gap
constexpr int kWarp = 32;                    // lanes per pair on the GPU
constexpr int kMaxColsPerLane = 16;          // K: alt columns a lane keeps in registers
constexpr int kFillThreads = 128;            // 4 pairs per block
constexpr int kTraceThreads = 128;
constexpr int kShortCigar = 32;  // CIGARs shorter than this come back in a compact slot

struct PairDesc {
    int64_t ref;      // offset of ref in the chunk's ref buffer
    int64_t alt;      // offset of alt in the chunk's alt buffer
    int64_t bt;       // first short2 of this pair's backtrack matrix
    int64_t edge;     // last column (m + 1 ints) then last row (n + 1 ints)
    int64_t scratch;  // stripe boundary columns (2 x 3 x m ints), pairs with several stripes only
    int64_t cigar;    // first byte of this pair's CIGAR slot in the chunk buffer
    int32_t m, n;     // len(ref), len(alt)
    int32_t match, mismatch, open, extend;
    int32_t strategy;
    int32_t index;  // pair index in the caller's batch
    int32_t lanes;  // P: lanes sweeping the pair (kWarp on the GPU)
    int32_t cols;   // K: alt columns per lane
};

// ---- backtrack layout ---------------------------------------------------------------
//
// Lanes own alt columns: a stripe is P * K consecutive columns, lane t holds
// columns t*K+1 .. t*K+K of it (1-based within the stripe), and the ref rows
// stream through the lanes: at step s lane t computes row i = s - t + 1.
// Stripes are swept one after another, left to right.
//
// Cells are stored stripe by stripe, step by step; within a step, by column
// slot k, then by lane, so that each store instruction of the warp (one k,
// all lanes) writes consecutive short2. Only the (step, lane) slots that hold
// a row 1..m of an active lane take space: a stripe of m rows and T active
// lanes takes m * T * K cells.

// Active lanes of stripe c (the last stripe may be narrower).
SW_HD inline int stripe_lanes(int c, int n, int P, int K) {
    const int R = P * K;
    const int cols = n - c * R < R ? n - c * R : R;
    return (cols + K - 1) / K;
}

// Valid (step, lane) slots before step s in a stripe of m rows and T lanes.
SW_HD inline int64_t slots_before(int64_t s, int64_t m, int64_t T) {
    const int64_t full = s <= T ? s * (s + 1) / 2 : T * (T + 1) / 2 + (s - T) * T;
    const int64_t past = s - m;  // steps where lane 0 is already past the last row
    return full - (past > 0 ? past * (past + 1) / 2 : 0);
}

// First valid lane at step s, and how many there are.
SW_HD inline int step_lane_lo(int s, int m) { return s - m + 1 > 0 ? s - m + 1 : 0; }
SW_HD inline int step_lane_count(int s, int m, int T) { return (s < T - 1 ? s : T - 1) - step_lane_lo(s, m) + 1; }

// Backtrack cells of a pair.
SW_HD inline int64_t backtrack_cells(int m, int n, int P, int K) {
    const int R = P * K;
    const int stripes = (n + R - 1) / R;
    return static_cast<int64_t>(stripes - 1) * m * R + static_cast<int64_t>(m) * stripe_lanes(stripes - 1, n, P, K) * K;
}

// Index of cell (i, j), 1 <= i <= m, 1 <= j <= n, in a pair's backtrack.
SW_HD inline int64_t backtrack_index(int i, int j, int m, int n, int P, int K) {
    const int R = P * K;
    const int c = (j - 1) / R;
    const int col = j - 1 - c * R;
    const int t = col / K, k = col - t * K;
    const int T = stripe_lanes(c, n, P, K);
    const int s = i - 1 + t;
    const int lo = step_lane_lo(s, m);
    return static_cast<int64_t>(c) * m * R + slots_before(s, m, T) * K +
           static_cast<int64_t>(k) * step_lane_count(s, m, T) + (t - lo);
}

// K for an alt of n bases: the fewest stripes, then the fewest columns per
// lane that cover them (idle columns cost as much as busy ones).
SW_HD inline int choose_cols(int n, int P) {
    const int R = P * kMaxColsPerLane;
    const int stripes = (n + R - 1) / R;
    const int need = (n + stripes * P - 1) / (stripes * P);
    return need <= 8 ? need : need <= 10 ? 10 : need <= 12 ? 12 : need <= 14 ? 14 : 16;
}

// Calls f(std::integral_constant<int, K>{}) for one of the K choose_cols gives.
template <class F>
void with_cols(int K, F&& f) {
    switch (K) {
        case 1: f(std::integral_constant<int, 1>{}); break;
        case 2: f(std::integral_constant<int, 2>{}); break;
        case 3: f(std::integral_constant<int, 3>{}); break;
        case 4: f(std::integral_constant<int, 4>{}); break;
        case 5: f(std::integral_constant<int, 5>{}); break;
        case 6: f(std::integral_constant<int, 6>{}); break;
        case 7: f(std::integral_constant<int, 7>{}); break;
        case 8: f(std::integral_constant<int, 8>{}); break;
        case 10: f(std::integral_constant<int, 10>{}); break;
        case 12: f(std::integral_constant<int, 12>{}); break;
        case 14: f(std::integral_constant<int, 14>{}); break;
        default: f(std::integral_constant<int, 16>{}); break;
    }
}

}  // namespace sw_gpu
}  // namespace pyphmm
