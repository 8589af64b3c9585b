// 2 and 4 ranks as separate processes (tests/train/dist/store_rank/store_rank.cpp) meeting over a
// FileStore and over a TCPStore served by rank 0 on a free 127.0.0.1 port: every rank gets the
// exact sum, the all-gathers in rank order, bf16 bits intact.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "../../../free_port.h"
#include "util/io/remove_tree.h"

namespace {

namespace fs = std::filesystem;

using ftbench::test_env::free_port;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What every rank must write for `world` ranks (store_rank.cpp's line).
std::string expected_line(int world) {
  std::string line = std::to_string(world * (world + 1) / 2);
  char value[64];
  for (int r = 0; r < world; ++r) {
    std::snprintf(value, sizeof(value), " %.9g %.9g", double(r), double(r) + 0.5);
    line += value;
  }
  for (int r = 0; r < world; ++r) {
    // 1e30 x (r + 1) as bf16 holds it, read back through fp32.
    const auto f = static_cast<float>(1e30 * double(r + 1));
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof(bits));
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;  // round to nearest even
    float rounded = 0;
    std::memcpy(&rounded, &bits, sizeof(bits));
    std::snprintf(value, sizeof(value), " %.9g", double(rounded));
    line += value;
  }
  return line + "\n";
}

class ProcessRanks : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ProcessRanks, MeetOverTheStoreAndAgree) {
  const auto [kind, world] = GetParam();
  const fs::path dir =
      fs::temp_directory_path() /
      ("ftbench-store-" + kind + "-" + std::to_string(world) + "-" + std::to_string(getpid()));
  ftbench::io::remove_tree(dir);
  fs::create_directories(dir);
  const std::string where = kind == "file" ? (dir / "store").string() : std::to_string(free_port());
  std::string script;
  for (int r = 0; r < world; ++r) {
    const std::string rank = std::to_string(r);
    script += "(timeout 60 '" FTBENCH_STORE_RANK "' " + kind + " '" + where + "' " + rank + " " +
              std::to_string(world) + " '" + (dir / ("out" + rank)).string() + "' 2>'" +
              (dir / ("err" + rank)).string() + "'; echo $? >'" + (dir / ("rc" + rank)).string() +
              "') & ";
  }
  script += "wait";
  ASSERT_EQ(std::system(("sh -c \"" + script + "\"").c_str()), 0);
  for (int r = 0; r < world; ++r) {
    const std::string rank = std::to_string(r);
    EXPECT_EQ(slurp(dir / ("rc" + rank)), "0\n") << slurp(dir / ("err" + rank));
    EXPECT_EQ(slurp(dir / ("out" + rank)), expected_line(world)) << "rank " << r;
  }
  ftbench::io::remove_tree(dir);
}

INSTANTIATE_TEST_SUITE_P(StoresAndRanks, ProcessRanks,
                         ::testing::Combine(::testing::Values("file", "tcp"),
                                            ::testing::Values(2, 4)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
