// End to end: `ftbench gemm` through the launcher, and its result fed to `ftbench run --gemm`.
// No timing assertions: the figures are whatever this machine measures.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"
#include "report_docs.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::read_text;
using nlohmann::json;

using Result = ftbench::e2e::Outcome;

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
  Result ftbench(const std::string& args) const { return ftbench::e2e::run_ftbench(args, dir_); }

  fs::path dir_;
};

// The quick CPU sweep: bf16 and fp32 over three cubes, one warm-up and three timed calls each.
TEST_F(GemmCli, QuickCpuSweepPrintsJsonOnStdout) {
  const Result r = ftbench("gemm --quick --device cpu --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);  // nothing but the JSON on stdout
  EXPECT_EQ(j["schema"], "ftbench.gemm/1.1");
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
      EXPECT_LE(s["check_error"].get<double>(), s["check_tolerance"].get<double>());
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
  EXPECT_EQ(json::parse(read_text(out))["schema"], "ftbench.gemm/1.1");
  { std::ofstream(out) << "precious"; }
  r = ftbench(args);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(out), "precious");
  r = ftbench(args + " --force");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(read_text(out))["schema"], "ftbench.gemm/1.1");
}

// The quick sweep's fp32 peak becomes the ci-tiny run's second MFU denominator.
TEST_F(GemmCli, RunCarriesTheMeasuredPeakAndASecondMfu) {
  const fs::path gemm = dir_ / "cpu-gemm.json";
  Result r = ftbench("gemm --quick --device cpu -o '" + gemm.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json g = json::parse(read_text(gemm));
  double fp32_peak = 0.0;
  for (const json& d : g["dtypes"]) {
    if (d["dtype"] == "fp32") fp32_peak = d["max_tflops"].get<double>();
  }
  ASSERT_GT(fp32_peak, 0.0);

  const fs::path report = dir_ / "run.json";
  r = ftbench("run configs/ci-tiny.yaml --gemm '" + gemm.string() + "' -o '" + report.string() +
              "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("of the measured GEMM peak"), std::string::npos) << r.out;
  const json j = json::parse(read_text(report));
  ftbench::e2e::expect_documented(j);
  EXPECT_EQ(j["gemm"]["source"], gemm.string());
  EXPECT_EQ(j["gemm"]["backend"], "cpu");
  EXPECT_EQ(j["gemm"]["device_name"], j["environment"]["device"]["name"]);
  ASSERT_EQ(j["gemm"]["dtypes"].size(), 2u);
  const json& mfu = j["summary"]["mfu"];
  EXPECT_EQ(mfu["gemm_peak_tflops"].get<double>(), fp32_peak);
  EXPECT_EQ(
      mfu["gemm_peak_source"].get<std::string>().rfind("gemm file: " + gemm.string() + " fp32 ", 0),
      0u)
      << mfu["gemm_peak_source"];
  EXPECT_TRUE(mfu["peak_tflops"].is_null());  // no datasheet peak for a CPU
  for (const json& e : mfu["entries"]) {
    EXPECT_TRUE(e["mfu"].is_null());
    ASSERT_TRUE(e["mfu_gemm"].is_number());
    EXPECT_DOUBLE_EQ(e["mfu_gemm"].get<double>(), e["achieved_tflops"].get<double>() / fp32_peak);
  }

  // Measured on another device: carried, but no MFU against it, and the report says why.
  json other = g;
  other["environment"]["device"]["name"] = "Some Other CPU";
  const fs::path other_path = dir_ / "other-gemm.json";
  std::ofstream(other_path) << other.dump(2);
  r = ftbench("run configs/ci-tiny.yaml --set train.max_steps=1 --gemm '" + other_path.string() +
              "' --force -o '" + report.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json k = json::parse(read_text(report));
  EXPECT_EQ(k["gemm"]["device_name"], "Some Other CPU");
  EXPECT_TRUE(k["summary"]["mfu"]["gemm_peak_tflops"].is_null());
  EXPECT_EQ(k["summary"]["mfu"]["gemm_peak_source"].get<std::string>().rfind("none: ", 0), 0u);
  EXPECT_TRUE(k["summary"]["mfu"]["entries"][0]["mfu_gemm"].is_null());
}

// A sweep whose correctness check failed (ftbench gemm keeps its file and exits 3) is no peak:
// `run --gemm` used to take it without a word. Also refused: a measured shape with no check.
TEST_F(GemmCli, AGemmFileWhoseCheckFailedIsRefusedBeforeTheRun) {
  const fs::path gemm = dir_ / "cpu-gemm.json";
  Result r = ftbench("gemm --quick --device cpu -o '" + gemm.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json good = json::parse(read_text(gemm));
  const fs::path report = dir_ / "run.json";
  struct Case {
    std::string name;
    std::function<void(json&)> spoil;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"failed", [](json& g) { g["dtypes"][1]["shapes"][0]["check_error"] = 0.45; },
       "relative error 0.45 > tolerance"},
      {"unchecked", [](json& g) { g["dtypes"][1]["shapes"][2]["check_error"] = nullptr; },
       "was not checked"},
      {"key removed", [](json& g) { g["dtypes"][0]["shapes"][1].erase("check_error"); },
       "was not checked"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json spoiled = good;
    c.spoil(spoiled);
    const fs::path path = dir_ / "spoiled.json";
    std::ofstream(path) << spoiled.dump(2);
    r = ftbench("run configs/ci-tiny.yaml --gemm '" + path.string() + "' -o '" + report.string() +
                "'");
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find(path.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(report));
  }
}

TEST_F(GemmCli, ABadGemmFileStopsTheRunBeforeItStarts) {
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << R"({"schema": "ftbench.report/1.1"})";
  const fs::path report = dir_ / "run.json";
  const Result r = ftbench("run configs/ci-tiny.yaml --gemm '" + bad.string() + "' -o '" +
                           report.string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unsupported gemm result schema"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(report));
}

}  // namespace
