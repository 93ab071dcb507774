// The floor under a single-pair Smith-Waterman call on the GPU: what a
// haplotype-vs-reference call (GATK's one pair per call) would cost at the
// least. One block, one thread per row of the shorter sequence, one
// anti-diagonal per step with a __syncthreads between steps; affine gaps in
// int32 with four backtrack bits a cell kept in shared memory; the best
// cell found by a block reduction; one thread walking back from it. That is
// less than GATK's rules need (no overhang strategies, no tie rules, no
// CIGAR text), so a real kernel can only be slower. Per iteration, as a
// library call would: the copy of both sequences from pinned memory, the
// launch, and the host spinning until the result lands in mapped memory.
// Prints median and p99 of the whole call and of the kernel alone (CUDA
// events), with the number of diagonals and traceback steps.
//
//   nvcc -O2 -arch=sm_90 scripts/sw_gpu_floor.cu -o /tmp/sw_gpu_floor
//   /tmp/sw_gpu_floor [ROWS COLS [ITERATIONS]]   (default 350 600 2000: ~210,000 cells)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

#define CHECK(call)                                                          \
    do {                                                                     \
        const cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                             \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                    \
        }                                                                    \
    } while (0)

// GATK's haplotype-to-reference scores (NEW_SW_PARAMETERS).
constexpr int kMatch = 200, kMismatch = -150, kOpen = -260, kExtend = -11;
constexpr int kNeg = -(1 << 29);
constexpr int kMaxRows = 1024;

struct Result {
    int score, end_row, end_col, steps;
    volatile int done;
};

// Backtrack nibble of a cell: bits 0-1 the move into it (0 stop, 1
// diagonal, 2 from the left (E), 3 from above (F)); bit 2: E here extends
// E of the left cell; bit 3: F here extends F of the cell above.
__device__ __forceinline__ int nibble(const unsigned char* bt, int cell) {
    return (bt[cell >> 1] >> ((cell & 1) * 4)) & 15;
}

// Cell (r, c) is nibble r * stride + c, stride = cols rounded up to even: a
// byte holds two cells of one row, which one thread writes on consecutive
// steps (the even one first, with =).
__global__ void sw_one(const char* __restrict__ seq, int rows, int cols, Result* out) {
    const int stride = (cols + 1) & ~1;
    extern __shared__ unsigned char smem[];
    int2* pub = reinterpret_cast<int2*>(smem);                // [2][blockDim]: (H, F) of each row's last cell
    int* red = reinterpret_cast<int*>(pub + 2 * blockDim.x);  // [2][blockDim]: best score, its cell
    char* ref = reinterpret_cast<char*>(red + 2 * blockDim.x);
    unsigned char* bt = reinterpret_cast<unsigned char*>(ref + ((cols + 15) & ~15));
    const int i = threadIdx.x;
    for (int k = i; k < cols; k += blockDim.x) ref[k] = seq[k];
    const char a = i < rows ? seq[cols + i] : 0;
    int h_left = 0, e = kNeg, h_diag = 0, best = 0, best_cell = -1;
    __syncthreads();
    for (int d = 0; d < rows + cols - 1; ++d) {
        const int j = d - i;
        int h = 0, f = kNeg;
        if (i < rows && j >= 0 && j < cols) {
            const int2 up = i == 0 ? make_int2(0, kNeg) : pub[((d - 1) & 1) * blockDim.x + i - 1];
            const int e_open = h_left + kOpen, e_ext = e + kExtend;
            const int f_open = up.x + kOpen, f_ext = up.y + kExtend;
            e = max(e_open, e_ext);
            f = max(f_open, f_ext);
            const int hd = h_diag + (a == ref[j] ? kMatch : kMismatch);
            h = max(max(hd, 0), max(e, f));
            const int move = h == 0 ? 0 : h == hd ? 1 : h == e ? 2 : 3;
            const int cell = i * stride + j;
            const int bits = move | (e_ext >= e_open) << 2 | (f_ext >= f_open) << 3;
            if (cell & 1)
                bt[cell >> 1] |= static_cast<unsigned char>(bits << 4);
            else
                bt[cell >> 1] = static_cast<unsigned char>(bits);
            if (h > best) best = h, best_cell = cell;
            h_diag = up.x;
            h_left = h;
        } else if (i < rows && j < 0) {
            // (before its first column a row's diagonal is H(i-1, j-1) = 0)
            h_diag = 0;
        }
        if (i < rows) pub[(d & 1) * blockDim.x + i] = make_int2(h, f);
        __syncthreads();
    }
    red[i] = best;
    red[blockDim.x + i] = best_cell;
    __syncthreads();
    for (int s = kMaxRows / 2; s > 0; s >>= 1) {
        if (i < s && i + s < static_cast<int>(blockDim.x) && red[i + s] > red[i])
            red[i] = red[i + s], red[blockDim.x + i] = red[blockDim.x + i + s];
        __syncthreads();
    }
    if (i != 0) return;
    int cell = red[blockDim.x], steps = 0, state = 0;  // state: 0 H, 1 E, 2 F
    const int score = red[0];
    while (cell >= 0) {
        const int b = nibble(bt, cell), r = cell / stride, c = cell - r * stride;
        const int move = state == 0 ? (b & 3) : state == 1 ? 2 : 3;
        if (move == 0) break;
        ++steps;
        if (move == 1) {
            if (r == 0 || c == 0) break;
            cell -= stride + 1;
            state = 0;
        } else if (move == 2) {
            state = (b >> 2) & 1 ? 1 : 0;
            if (c == 0) break;
            cell -= 1;
        } else {
            state = (b >> 3) & 1 ? 2 : 0;
            if (r == 0) break;
            cell -= stride;
        }
    }
    const int end = red[blockDim.x];
    out->score = score;
    out->end_row = end < 0 ? -1 : end / stride;
    out->end_col = end < 0 ? -1 : end % stride;
    out->steps = steps;
    __threadfence_system();
    out->done = 1;
}

// The same recurrence on the host: the best score (the check that the
// kernel did the work it is timed for).
int host_best(const std::string& ref, const std::string& alt) {
    const int n = static_cast<int>(ref.size());
    std::vector<int> h(n + 1, 0), f(n + 1, kNeg);
    int best = 0;
    for (char a : alt) {
        int diag = 0, left = 0, e = kNeg;
        for (int j = 1; j <= n; ++j) {
            e = std::max(left + kOpen, e + kExtend);
            f[j] = std::max(h[j] + kOpen, f[j] + kExtend);
            const int v = std::max(std::max(diag + (a == ref[j - 1] ? kMatch : kMismatch), 0), std::max(e, f[j]));
            diag = h[j];
            h[j] = left = v;
            best = std::max(best, v);
        }
    }
    return best;
}

using Clock = std::chrono::steady_clock;

double pct(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
    const int rows = argc > 2 ? std::atoi(argv[1]) : 350, cols = argc > 2 ? std::atoi(argv[2]) : 600;
    const int iters = argc > 3 ? std::atoi(argv[3]) : 2000;
    if (rows < 1 || rows > kMaxRows || cols < 1 || iters < 1) {
        std::fprintf(stderr, "usage: %s [ROWS (1-%d) COLS [ITERATIONS]]\n", argv[0], kMaxRows);
        return 2;
    }
    // A reference and an alternative haplotype taken from its middle with a
    // SNP every 40 bases and an indel every 150: a long local alignment.
    std::mt19937 rng(7);
    std::string ref(cols, 'A'), alt;
    for (char& c : ref) c = "ACGT"[rng() & 3];
    for (int k = (cols - rows) / 2; static_cast<int>(alt.size()) < rows; ++k) {
        const char c = ref[k % cols];
        alt.push_back(k % 40 == 0 ? (c == 'A' ? 'C' : 'A') : c);
        if (k % 150 == 0) alt.push_back('G');
    }
    alt.resize(rows);
    const int threads = (rows + 31) / 32 * 32;
    const size_t shmem = 4 * threads * sizeof(int2) + ((cols + 15) & ~15) + size_t(rows) * ((cols + 1) & ~1) / 2;
    CHECK(cudaFuncSetAttribute(sw_one, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shmem)));
    char *h_seq, *d_seq;
    Result* res;
    CHECK(cudaHostAlloc(&h_seq, cols + rows, cudaHostAllocDefault));
    CHECK(cudaHostAlloc(&res, sizeof(Result), cudaHostAllocMapped));
    CHECK(cudaMalloc(&d_seq, cols + rows));
    std::copy(ref.begin(), ref.end(), h_seq);
    std::copy(alt.begin(), alt.end(), h_seq + cols);
    Result* d_res;
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_res), res, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<double> call_us, kernel_us;
    for (int it = 0; it < iters + 50; ++it) {
        res->done = 0;
        const Clock::time_point t0 = Clock::now();
        CHECK(cudaMemcpyAsync(d_seq, h_seq, cols + rows, cudaMemcpyHostToDevice, s));
        CHECK(cudaEventRecord(e0, s));
        sw_one<<<1, threads, shmem, s>>>(d_seq, rows, cols, d_res);
        CHECK(cudaEventRecord(e1, s));
        while (!res->done) {}
        const Clock::time_point t1 = Clock::now();
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (it >= 50) {  // (the first calls load the module and warm the clocks)
            call_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            kernel_us.push_back(ms * 1e3);
        }
    }
    CHECK(cudaGetLastError());
    const int want = host_best(ref, alt);
    if (res->score != want) {
        std::fprintf(stderr, "kernel's best score %d, the host's %d\n", res->score, want);
        return 1;
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s: %d x %d = %d cells, %d diagonals, traceback %d steps, score %d (the host's)\n", prop.name, rows,
                cols, rows * cols, rows + cols - 1, res->steps, res->score);
    std::printf("call (copy + launch + kernel + result in mapped memory): median %.1f us, p99 %.1f us\n",
                pct(call_us, 0.5), pct(call_us, 0.99));
    std::printf("kernel alone (events): median %.1f us, p99 %.1f us\n", pct(kernel_us, 0.5), pct(kernel_us, 0.99));
    return 0;
}
