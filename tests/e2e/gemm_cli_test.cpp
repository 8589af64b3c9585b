// End to end: `ftbench gemm` through the launcher.
// No timing assertions: the figures are whatever this machine measures.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report_docs.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::read_text;
using nlohmann::json;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout alone: --json must leave nothing else there
  std::string err;
};

class GemmCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ftbench-gemm-e2e-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the ftbench launcher from the source tree with `args` (shell-quoted by the caller).
  Result ftbench(const std::string& args) const {
    const fs::path err = dir_ / "stderr.txt";
    const std::string cmd =
        "cd '" FTBENCH_SOURCE_DIR "' && '" FTBENCH_BINARY "' " + args + " 2>'" + err.string() + "'";
    Result r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) return r;
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_text(err);
    return r;
  }

  fs::path dir_;
};

// The quick CPU sweep: bf16 and fp32 over three cubes, one warm-up and three timed calls each.
TEST_F(GemmCli, QuickCpuSweepPrintsJsonOnStdout) {
  const Result r = ftbench("gemm --quick --device cpu --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);  // nothing but the JSON on stdout
  EXPECT_EQ(j["schema"], "ftbench.gemm/1");
  EXPECT_EQ(j["environment"]["device"]["backend"], "cpu");
  EXPECT_EQ(j["settings"]["shapes"], "128,256,512");
  EXPECT_EQ(j["settings"]["shape_count"], 3);
  EXPECT_EQ(j["settings"]["warmup_iterations"], 1);
  EXPECT_EQ(j["settings"]["iterations"], 3);
  EXPECT_GE(j["settings"]["cache_flush_bytes"].get<int64_t>(), int64_t{64} << 20);
  ASSERT_EQ(j["dtypes"].size(), 2u);
  EXPECT_EQ(j["dtypes"][0]["dtype"], "bf16");
  EXPECT_EQ(j["dtypes"][1]["dtype"], "fp32");
  for (const json& d : j["dtypes"]) {
    SCOPED_TRACE(d["dtype"].get<std::string>());
    EXPECT_TRUE(d["supported"].get<bool>());
    EXPECT_GT(d["max_tflops"].get<double>(), 0.0);
    EXPECT_GT(d["median_tflops"].get<double>(), 0.0);
    EXPECT_TRUE(d["best_shape"].is_object());
    ASSERT_EQ(d["shapes"].size(), 3u);
    double best = 0.0;
    for (const json& s : d["shapes"]) {
      EXPECT_EQ(s["samples_seconds"].size(), 3u);
      EXPECT_EQ(s["error"], "");
      EXPECT_LE(s["check_error"].get<double>(), d["check_tolerance"].get<double>());
      EXPECT_EQ(s["flops"].get<double>(),
                2.0 * s["m"].get<double>() * s["n"].get<double>() * s["k"].get<double>());
      best = std::max(best, s["median_tflops"].get<double>());
    }
    EXPECT_EQ(d["max_tflops"].get<double>(), best);
  }
  // Progress went to stderr, a line per shape.
  EXPECT_NE(r.err.find("gemm: bf16 512x512x512: median"), std::string::npos) << r.err;
}

TEST_F(GemmCli, TextNamesWhatThisDeviceCannotRun) {
  const Result r = ftbench(
      "gemm --device cpu --dtype fp8,fp32 --shapes 64 --warmup 0 --iterations 2 "
      "--cache-flush-mib 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fp8: not supported on this device/LibTorch: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("64x64x64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cache flush of 1 MiB"), std::string::npos) << r.out;
}

TEST_F(GemmCli, BadInputExitsTwoNamingTheOption) {
  Result r = ftbench("gemm --device cpu --shapes 1024:512:256");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shapes \"1024:512:256\": range \"1024:512:256\" starts above its stop"),
            std::string::npos)
      << r.err;
  r = ftbench("gemm --device cpu --dtype fp64");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dtype \"fp64\": unknown dtype"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(GemmCli, OutputFileIsKeptWithoutForce) {
  const fs::path out = dir_ / "g.json";
  const std::string args =
      "gemm --device cpu --dtype fp32 --shapes 64 --iterations 2 -o '" + out.string() + "'";
  Result r = ftbench(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(read_text(out))["schema"], "ftbench.gemm/1");
  { std::ofstream(out) << "precious"; }
  r = ftbench(args);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(out), "precious");
  r = ftbench(args + " --force");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(read_text(out))["schema"], "ftbench.gemm/1");
}

}  // namespace
