// A testing aid: simulated write failures (disk full, I/O error) for the tests of what ftbench
// leaves behind when a file cannot be written.
#pragma once

#include <string_view>

namespace ftbench::io {

// What to do for a write of a file of kind `kind` ("report", "checkpoint"): 0 to write, or the
// errno the write must fail with. Set by FTBENCH_INJECT_WRITE_FAILURE=[KIND:]ERRNO, ERRNO one of
// ENOSPC, EIO, EDQUOT, EROFS, EACCES (without KIND: every kind). Unset or empty: 0. A value
// that does not parse fails every write with EINVAL, so a mistyped test cannot pass by writing.
int injected_write_failure(std::string_view kind);

}  // namespace ftbench::io
