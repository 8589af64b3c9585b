// Build identity, stamped at build time (cmake/WriteVersion.cmake).
#pragma once

namespace ftbench {
const char* version();     // semantic version of ftbench
const char* git_commit();  // short commit, "-dirty" with uncommitted changes, or "unknown"
}  // namespace ftbench
