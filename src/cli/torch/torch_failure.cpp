// A LibTorch failure (c10::Error) said as ftbench's RunFailure, and out of memory said with the
// memory limit it ran under, for ftbench-bin's commands.
#include <string>

#include <c10/util/Exception.h>

#include "cli/run_command.h"
#include "device/host_memory.h"
#include "train/oom_fallback.h"

namespace ftbench::cli {

RunFailure torch_failure(const c10::Error& e) {
  const std::string what = e.what_without_backtrace();
  if (!train::is_out_of_memory_message(what)) return RunFailure("LibTorch: " + what);
  return RunFailure("out of memory under " + device::describe_memory_limit() +
                    ": LibTorch: " + what);
}

}  // namespace ftbench::cli
