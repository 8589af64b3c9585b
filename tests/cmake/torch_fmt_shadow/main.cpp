// Compiled with the fake wheel's include directories (CMakeLists.txt): LibTorch's own headers
// are the wheel's (not the system LibTorch's), fmt and spdlog are the system's, and the program
// links libfmt and libspdlog and runs.
#include <c10/fake_c10.h>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <string>

static_assert(FTBENCH_FAKE_C10 == 1, "the fake wheel's own header");
static_assert(FMT_VERSION == FTBENCH_LIBFMT_VERSION, "the system's fmt");

int main() {
  const std::string text = fmt::format("{} + {}", 1, 2);
  spdlog::info("fmt {} from the system: {}", FMT_VERSION, text);
  return text == "1 + 2" ? 0 : 1;
}
