#include "train/dist/rank_fault.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "train/dist/launch.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::dist {

RankFault parse_rank_fault(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return LaunchError(
        fmt::format("FTBENCH_INJECT_RANK_FAULT={}: {}; expected RANK:STEP:KIND "
                    "with KIND exit, hang or sigterm, e.g. 1:3:exit",
                    text::quoted(text), why));
  };
  const std::size_t a = text.find(':');
  const std::size_t b = a == std::string_view::npos ? a : text.find(':', a + 1);
  if (b == std::string_view::npos) throw bad("three fields are needed");
  RankFault f;
  if (text::parse_int(text.substr(0, a), f.rank) != std::errc{} || f.rank < 0) {
    throw bad("RANK is not a whole number >= 0");
  }
  if (text::parse_int(text.substr(a + 1, b - a - 1), f.step) != std::errc{} || f.step < 1) {
    throw bad("STEP is not a whole number >= 1");
  }
  const std::string_view kind = text.substr(b + 1);
  if (kind == "exit") {
    f.kind = FaultKind::kExit;
  } else if (kind == "hang") {
    f.kind = FaultKind::kHang;
  } else if (kind == "sigterm") {
    f.kind = FaultKind::kSigterm;
  } else {
    throw bad(fmt::format("KIND {} is not exit, hang or sigterm", text::quoted(kind)));
  }
  return f;
}

std::optional<RankFault> rank_fault_from_environment() {
  const char* value = std::getenv("FTBENCH_INJECT_RANK_FAULT");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_rank_fault(value);
}

void inject_rank_fault(const std::optional<RankFault>& fault, int64_t rank, int64_t step) {
  if (!fault || fault->rank != rank || fault->step != step) return;
  switch (fault->kind) {
    case FaultKind::kExit:
      std::fprintf(stderr, "FTBENCH_INJECT_RANK_FAULT: rank %lld exits after step %lld\n",
                   static_cast<long long>(rank), static_cast<long long>(step));
      std::_Exit(9);
    case FaultKind::kHang:
      std::fprintf(stderr, "FTBENCH_INJECT_RANK_FAULT: rank %lld hangs after step %lld\n",
                   static_cast<long long>(rank), static_cast<long long>(step));
      std::this_thread::sleep_for(std::chrono::hours(1));
      std::_Exit(9);
    case FaultKind::kSigterm:
      kill(getpid(), SIGTERM);
      return;
  }
}

}  // namespace ftbench::dist
