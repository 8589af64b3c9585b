// Replays one fuzz target's seed corpus (fuzz/corpus/<target>/) and regression inputs
// (fuzz/regressions/<target>/: crashes found and fixed, and inputs at the parser's limits)
// through the same ftbench_fuzz_one() the fuzzer runs, in the normal build: a fixed bug that
// comes back fails here without a fuzzer. Then every other target's seeds, as hostile input of
// the wrong kind. FTBENCH_FUZZ_TARGET and FTBENCH_FUZZ_DIR come from fuzz/CMakeLists.txt.
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

struct Replayed {
  int files = 0;
  std::vector<fs::path> rejected;
};

// Runs every file of `dir`. An exception out of the target fails the test and names the file;
// a crash or sanitizer report ends the process after the "replaying" line.
Replayed replay(const fs::path& dir) {
  Replayed r;
  for (const fs::path& file : files_in(dir)) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s (%zu bytes): ", file.c_str(), bytes.size());
    try {
      const FuzzVerdict verdict =
          ftbench_fuzz_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      std::fprintf(stderr, "%s\n", verdict == FuzzVerdict::kAccepted ? "accepted" : "rejected");
      if (verdict == FuzzVerdict::kRejected) r.rejected.push_back(file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "exception\n");
      ADD_FAILURE() << file << ": unexpected exception: " << e.what();
    } catch (...) {
      std::fprintf(stderr, "exception\n");
      ADD_FAILURE() << file << ": unexpected exception of an unknown type";
    }
    ++r.files;
  }
  return r;
}

const fs::path kFuzzDir = FTBENCH_FUZZ_DIR;

// Seeds are valid files of the target's kind, where the fuzzer starts from, and each must be
// accepted: a parser that refuses them (broken, or a seed gone stale) is fuzzed only up to its
// first error. Inputs that must be refused belong in fuzz/regressions/.
TEST(FuzzReplay, SeedCorpus) {
  const Replayed r = replay(kFuzzDir / "corpus" / FTBENCH_FUZZ_TARGET);
  EXPECT_GT(r.files, 0) << "no seed inputs in fuzz/corpus/" FTBENCH_FUZZ_TARGET;
  for (const fs::path& file : r.rejected) ADD_FAILURE() << file << ": the parser rejects this seed";
}

TEST(FuzzReplay, Regressions) {
  EXPECT_GT(replay(kFuzzDir / "regressions" / FTBENCH_FUZZ_TARGET).files, 0)
      << "no inputs in fuzz/regressions/" FTBENCH_FUZZ_TARGET;
}

// Every seed of every other target: files of the wrong kind (YAML to a JSON reader, a report
// to the CSV parser) must end as this parser's own error or be read, never crash.
TEST(FuzzReplay, OtherTargetsSeeds) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kFuzzDir / "corpus")) {
    if (!entry.is_directory() || entry.path().filename() == FTBENCH_FUZZ_TARGET) continue;
    files += replay(entry.path()).files;
  }
  EXPECT_GT(files, 0);
}

}  // namespace
