// Replays one fuzz target's seed corpus (fuzz/corpus/<target>/) and regression inputs
// (fuzz/regressions/<target>/, one file per crash found and fixed) through the same
// ftbench_fuzz_one() the fuzzer runs, in the normal build: a fixed bug that comes back fails
// here without a fuzzer. FTBENCH_FUZZ_TARGET and FTBENCH_FUZZ_DIR come from fuzz/CMakeLists.txt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"

namespace {

namespace fs = std::filesystem;

// The files under `dir`, sorted; none when it does not exist.
std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs every file of `dir`; returns how many. An exception out of the target fails the test
// and names the file; a crash or sanitizer report ends the process after the "replaying" line.
int replay(const fs::path& dir) {
  int count = 0;
  for (const fs::path& file : files_in(dir)) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
    try {
      ftbench_fuzz_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": unexpected exception: " << e.what();
    } catch (...) {
      ADD_FAILURE() << file << ": unexpected exception of an unknown type";
    }
    ++count;
  }
  return count;
}

const fs::path kFuzzDir = FTBENCH_FUZZ_DIR;

TEST(FuzzReplay, SeedCorpus) {
  EXPECT_GT(replay(kFuzzDir / "corpus" / FTBENCH_FUZZ_TARGET), 0)
      << "no seed inputs in fuzz/corpus/" FTBENCH_FUZZ_TARGET;
}

TEST(FuzzReplay, Regressions) { replay(kFuzzDir / "regressions" / FTBENCH_FUZZ_TARGET); }

}  // namespace
