// What the CPU kernels need to know about the processor they run on, per
// architecture: whether AArch64's Advanced SIMD (NEON) is usable, and the
// calling thread's flush-to-zero (FTZ) mode: PairHMM runs with it on (as
// GKL's PairHMM does), PDHMM with denormals kept (as GKL's PDHMM does).
//
// FTZ is MXCSR bit 15 on x86 (FTZ only; DAZ is left alone, as GKL does) and
// FPCR bit 24 (FZ) on AArch64. FZ also reads denormal inputs as zero, which
// x86's FTZ alone does not; the kernels never read a denormal while it is on
// (every value is a table entry or a result computed under it), so both give
// the same results.
#pragma once
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace pyphmm {

#if defined(__aarch64__)
// Advanced SIMD is part of ARMv8-A and Linux reports it as HWCAP_ASIMD
// (bit 1 of AT_HWCAP); checked rather than assumed, as x86 checks AVX.
inline bool cpu_has_neon() { return (getauxval(AT_HWCAP) & (1ul << 1)) != 0; }
#endif

inline bool flush_to_zero() {
#if defined(__x86_64__) || defined(__i386__)
    return (_mm_getcsr() & 0x8000u) != 0;
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return (fpcr >> 24) & 1;
#else
    return false;
#endif
}

// Sets or clears FTZ for the calling thread; other mode bits are kept.
inline void set_flush_to_zero(bool on) {
#if defined(__x86_64__) || defined(__i386__)
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? (csr | 0x8000u) : (csr & ~0x8000u));
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    fpcr = on ? (fpcr | (uint64_t(1) << 24)) : (fpcr & ~(uint64_t(1) << 24));
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
#else
    (void)on;
#endif
}

// FTZ on for the calling thread while alive; the caller's mode is restored
// afterwards, so pyphmm neither depends on nor leaks it.
class FlushToZero {
  public:
    FlushToZero() : saved_(flush_to_zero()) {
        if (!saved_) set_flush_to_zero(true);
    }
    ~FlushToZero() {
        if (!saved_) set_flush_to_zero(false);
    }
    FlushToZero(const FlushToZero&) = delete;
    FlushToZero& operator=(const FlushToZero&) = delete;

  private:
    bool saved_;
};

// Denormals kept for the calling thread while alive: FTZ off, and DAZ off
// on x86 (MXCSR bit 6); the caller's mode is restored afterwards. GKL's
// PDHMM never sets FTZ, and its results below about -300 (and every cell
// on the way to one) depend on denormal arithmetic.
class KeepDenormals {
  public:
    KeepDenormals() {
#if defined(__x86_64__) || defined(__i386__)
        saved_ = _mm_getcsr();
        if (saved_ & kFtzDaz) _mm_setcsr(saved_ & ~kFtzDaz);
#else
        saved_ = flush_to_zero();
        if (saved_) set_flush_to_zero(false);
#endif
    }
    ~KeepDenormals() {
#if defined(__x86_64__) || defined(__i386__)
        if (saved_ & kFtzDaz) _mm_setcsr(saved_);
#else
        if (saved_) set_flush_to_zero(true);
#endif
    }
    KeepDenormals(const KeepDenormals&) = delete;
    KeepDenormals& operator=(const KeepDenormals&) = delete;

  private:
#if defined(__x86_64__) || defined(__i386__)
    static constexpr unsigned kFtzDaz = 0x8040u;
    unsigned saved_;
#else
    bool saved_;
#endif
};

}  // namespace pyphmm
