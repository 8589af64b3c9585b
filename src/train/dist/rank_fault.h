// A testing aid: FTBENCH_INJECT_RANK_FAULT=RANK:STEP:KIND makes one rank of a job fail after
// optimizer step STEP, the way ranks fail in the field, so that the others' handling of it is
// tested: `exit` (the process ends at once, exit code 9, like a node lost), `hang` (it stops
// answering: sleeps for an hour) or `sigterm` (it gets SIGTERM, like a spot reclaim).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ftbench::dist {

enum class FaultKind { kExit, kHang, kSigterm };

struct RankFault {
  int64_t rank = 0;
  int64_t step = 0;  // after this optimizer step (1-based)
  FaultKind kind = FaultKind::kExit;
};

// Parses "1:3:exit". Throws LaunchError naming FTBENCH_INJECT_RANK_FAULT and what is wrong.
RankFault parse_rank_fault(std::string_view text);

// The variable's fault, if set and meant for some rank.
std::optional<RankFault> rank_fault_from_environment();

// Carries the fault out when it is for `rank` after `step`: never returns for kExit and kHang.
void inject_rank_fault(const std::optional<RankFault>& fault, int64_t rank, int64_t step);

}  // namespace ftbench::dist
