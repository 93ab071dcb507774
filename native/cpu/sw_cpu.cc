// Placeholder until the Smith-Waterman issue lands: reports "not implemented".
#include "sw_cpu.h"

#include "../common/errors.h"

namespace pyphmm {

int cpu_sw_align(const pyphmm_sw_batch&, char*, const int64_t*, int32_t*, int, pyphmm_stats*,
                 pyphmm_error* error) {
    return set_error(error, PYPHMM_E_UNAVAILABLE, "Smith-Waterman is not implemented yet");
}

}  // namespace pyphmm
