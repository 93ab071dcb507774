// Python's repr() of a double (repr.cc).
#pragma once

namespace pyphmm {

// Writes repr(v) to out (at least 32 bytes) and returns its length: the
// shortest digits that read back to v; positional notation (".0" on whole
// numbers) for decimal exponents -4 <= e < 16, else d.ddde+XX.
int format_double_repr(double v, char* out);

}  // namespace pyphmm
