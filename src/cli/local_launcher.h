// The process side of `ftbench run --nproc-per-node N` (train/dist/local_launch.h): start the
// ranks, forward stop signals, end every rank when one fails, and return the launcher's exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ftbench::cli {

// Starts `ranks` copies of `program` with `args` (program name first) as one job on this machine
// and waits for them. SIGTERM and SIGINT must be blocked in the calling thread (the launcher
// blocks them before anything runs); they are forwarded to every rank, which stop together at
// a step boundary. When a rank fails (a non-zero exit or a signal), the others get SIGTERM and,
// after `grace_seconds`, SIGKILL: no rank is left behind. Returns dist::launcher_exit_code.
int run_local_ranks(const std::string& program, const std::vector<std::string>& args, int64_t ranks,
                    double grace_seconds);

}  // namespace ftbench::cli
