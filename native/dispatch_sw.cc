// Placeholder: Smith-Waterman batch validation lands with the SW issue.
#include "common/errors.h"
#include "dispatch.h"

namespace pyphmm {

int check_sw_batch(const pyphmm_sw_batch* batch, const char*, const int64_t*, const int32_t*,
                   pyphmm_error* err) {
    if (!batch) return set_error(err, PYPHMM_E_INVALID, "batch is NULL");
    return PYPHMM_OK;
}

}  // namespace pyphmm
