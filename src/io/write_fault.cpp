#include "ftbench/io/write_fault.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace ftbench::io {

int injected_write_failure(std::string_view kind) {
  const char* value = std::getenv("FTBENCH_INJECT_WRITE_FAILURE");
  if (value == nullptr || *value == '\0') return 0;
  std::string_view rule(value);
  const size_t colon = rule.find(':');
  if (colon != std::string_view::npos) {
    if (rule.substr(0, colon) != kind) return 0;
    rule.remove_prefix(colon + 1);
  }
  if (rule == "ENOSPC") return ENOSPC;
  if (rule == "EIO") return EIO;
  if (rule == "EDQUOT") return EDQUOT;
  if (rule == "EROFS") return EROFS;
  if (rule == "EACCES") return EACCES;
  return EINVAL;
}

}  // namespace ftbench::io
