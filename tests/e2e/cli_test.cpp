// End to end: the ftbench executable driven as a user drives it.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report_docs.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  double seconds = 0.0;
};

// Runs `args` (already shell-quoted where needed) through the ftbench launcher from the
// source tree, so the configs resolve as they do for a user.
Result ftbench(const std::string& args, const std::string& env = "") {
  const std::string cmd =
      "cd '" FTBENCH_SOURCE_DIR "' && " + env + " '" FTBENCH_BINARY "' " + args + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(cmd.c_str(), "r");
  Result r;
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ftbench-e2e-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

using ftbench::e2e::expect_documented;

// Phases in order and contiguous; returns where the last one ends.
double expect_contiguous(const nlohmann::json& phases) {
  double end = 0.0;
  for (const auto& p : phases) {
    EXPECT_NEAR(p["start_seconds"].get<double>(), end, 1e-9) << p["name"];
    EXPECT_GE(p["seconds"].get<double>(), 0.0) << p["name"];
    end = p["start_seconds"].get<double>() + p["seconds"].get<double>();
  }
  return end;
}

TEST_F(Cli, CiTinyRunsUnderAMinuteAndWritesEveryDocumentedField) {
  const fs::path report = dir_ / "ci-tiny.json";
  // Secrets in the environment must not reach the report; allow-listed knobs must.
  const Result r =
      ftbench("run configs/ci-tiny.yaml -o '" + report.string() + "'",
              "HF_TOKEN=hf_e2e_secret_value AWS_SECRET_ACCESS_KEY=aws_e2e_secret_value "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
              "FTBENCH_CONTAINER_IMAGE=rocm/pytorch-training:v25.4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 60.0) << "the CI smoke run must stay under a minute on 2 cores";
  EXPECT_NE(r.output.find("time to first step"), std::string::npos) << r.output;

  const nlohmann::json j = nlohmann::json::parse(read_file(report));
  EXPECT_EQ(j["schema"], "ftbench.report/1.13");
  EXPECT_EQ(j["run"]["status"], "completed");
  EXPECT_EQ(j["steps"].size(), 8u);
  EXPECT_EQ(j["weights"]["source"], "random");
  EXPECT_EQ(j["weights"]["bytes"], 0);
  EXPECT_EQ(j["weights"]["fingerprint"], "");
  EXPECT_TRUE(j["exports"].empty());
  EXPECT_EQ(j["derived"]["total_steps"], 8);
  EXPECT_EQ(j["summary"]["warmup_steps_excluded"], 2);
  EXPECT_EQ(j["summary"]["measured_steps"], 6);
  EXPECT_EQ(j["environment"]["device"]["backend"], "cpu");
  EXPECT_EQ(j["spec_fingerprint"].get<std::string>().size(), 64u);
  // Phases in order, contiguous, summing to the time of the last one's end.
  const std::vector<std::string> phases = {
      "launch",       "spec_load",  "backend_init", "model_build", "weight_load",
      "data_prepare", "first_step", "training",     "summarize",   "report_write"};
  ASSERT_EQ(j["timing"]["phases"].size(), phases.size());
  double end = 0.0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const auto& p = j["timing"]["phases"][i];
    EXPECT_EQ(p["name"], phases[i]);
    EXPECT_NEAR(p["start_seconds"].get<double>(), end, 1e-9) << phases[i];
    EXPECT_GE(p["seconds"].get<double>(), 0.0) << phases[i];
    end = p["start_seconds"].get<double>() + p["seconds"].get<double>();
  }
  EXPECT_NEAR(j["timing"]["time_to_first_step_seconds"].get<double>(),
              j["timing"]["phases"][7]["start_seconds"].get<double>(), 1e-9);

  // Memory per phase (since 1.2): launch and spec_load end before the run measures; on CPU the
  // device figures are null (never a 0 posing as a measurement) but the tensors' bytes, counted
  // from the backend's start (1.9), and the host's are measured.
  int64_t largest_phase_peak = 0;
  int64_t largest_tensor_peak = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const auto& m = j["timing"]["phases"][i]["memory"];
    if (i < 2) {
      EXPECT_TRUE(m.is_null()) << phases[i];
      continue;
    }
    ASSERT_TRUE(m.is_object()) << phases[i];
    for (const char* key : {"peak_reserved_bytes", "peak_active_bytes", "device_used_peak_bytes"}) {
      EXPECT_TRUE(m[key].is_null()) << phases[i] << " " << key;
    }
    ASSERT_TRUE(m["peak_allocated_bytes"].is_number_integer()) << phases[i];
    EXPECT_GE(m["peak_allocated_bytes"].get<int64_t>(), 0) << phases[i];
    largest_tensor_peak = std::max(largest_tensor_peak, m["peak_allocated_bytes"].get<int64_t>());
    // The first step holds the model, its gradients and a micro-batch's activations: more than
    // the 152,128 fp32 parameters' 608,512 bytes.
    if (phases[i] == "first_step") {
      EXPECT_GT(m["peak_allocated_bytes"].get<int64_t>(), 608512) << phases[i];
    }
    ASSERT_TRUE(m["rss_at_end_bytes"].is_number_integer()) << phases[i];
    EXPECT_GT(m["rss_at_end_bytes"].get<int64_t>(), 0) << phases[i];
    // Null only where the kernel refuses to reset the peak; this machine's does not.
    ASSERT_TRUE(m["peak_rss_bytes"].is_number_integer()) << phases[i];
    EXPECT_GE(m["peak_rss_bytes"].get<int64_t>(), m["rss_at_end_bytes"].get<int64_t>())
        << phases[i];
    largest_phase_peak = std::max(largest_phase_peak, m["peak_rss_bytes"].get<int64_t>());
  }
  const auto& memory = j["memory"];
  EXPECT_GE(memory["peak_rss_bytes"].get<int64_t>(), largest_phase_peak);
  EXPECT_EQ(memory["peak_allocated_bytes"].get<int64_t>(), largest_tensor_peak);
  for (const char* key : {"peak_reserved_bytes", "peak_active_bytes", "device_used_peak_bytes",
                          "device_total_bytes", "allocation_retries", "oom_count"}) {
    EXPECT_TRUE(memory[key].is_null()) << key;
  }
  // Environment (since 1.2): the allow-listed variables that were set, the LibTorch build.
  const auto& variables = j["environment"]["variables"];
  EXPECT_EQ(variables["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True");
  EXPECT_EQ(variables["OMP_WAIT_POLICY"], "PASSIVE");  // set by the launcher
  EXPECT_EQ(variables["OMP_NUM_THREADS"], "2");        // set by ctest
  // The LibTorch this ftbench was built with (cpu on CI, cuda on the GPU machines), even when the
  // run is on the CPU.
  EXPECT_EQ(j["environment"]["software"]["libtorch_build"], FTBENCH_LIBTORCH_BUILD);
  EXPECT_EQ(j["environment"]["software"]["container_image"], "rocm/pytorch-training:v25.4");
  EXPECT_EQ(j["environment"]["device"]["query_error"], "");
  EXPECT_TRUE(j["environment"]["device"]["clock_khz"].is_null());

  // Both ways between the report and docs/report-schema.md: each leaf key of the report is
  // documented there as `key`, and the documented top-level sections are all present.
  expect_documented(j);
  // Synthetic data: statistics from the data set itself, no validation, no evaluations.
  EXPECT_EQ(j["data"]["statistics"]["format"], "synthetic");
  EXPECT_EQ(j["data"]["statistics"]["records"], 64);
  EXPECT_LE(j["data"]["statistics"]["max_length"].get<int64_t>(), 128);
  EXPECT_TRUE(j["data"]["validation"].is_null());
  EXPECT_TRUE(j["evaluations"].empty());
  for (const char* section : {"run", "spec", "spec_fingerprint", "environment", "parameters",
                              "derived", "timing", "steps", "evaluations", "summary", "memory"}) {
    EXPECT_TRUE(j.contains(section)) << section;
  }
  // No secrets: no environment dump, no token-like fields.
  const std::string text = read_file(report);
  for (const char* bad : {"HF_TOKEN", "AWS_SECRET", "secret_value", "PATH=", "HOME=", "token\":"}) {
    EXPECT_EQ(text.find(bad), std::string::npos) << bad;
  }
}

// validate says the run is capped only where train.max_steps cuts it short (ci-tiny trains 8
// steps).
// A FTBENCH_CONTAINER_IMAGE that is no image reference is said once a run, not at every
// assembly of the report (it was said twice in a run of 8 steps, once more for each checkpoint),
// and its value, which may hold a credential, not at all.
TEST_F(Cli, AContainerImageThatIsNoneIsSaidOnceWithoutItsValue) {
  const fs::path report = dir_ / "image.json";
  const Result r = ftbench(
      "run configs/ci-tiny.yaml --set output.progress=off --set "
      "train.checkpoint.every_steps=2 --set train.checkpoint.dir='" +
          (dir_ / "ckpt").string() + "' -o '" + report.string() + "'",
      "FTBENCH_CONTAINER_IMAGE='https://user:s3cret@registry.example/x'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::size_t said = 0;
  for (std::size_t at = r.output.find("FTBENCH_CONTAINER_IMAGE:"); at != std::string::npos;
       at = r.output.find("FTBENCH_CONTAINER_IMAGE:", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 1u) << r.output;
  EXPECT_EQ(r.output.find("s3cret"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(report).find("s3cret"), std::string::npos);
}

TEST_F(Cli, ValidateSaysCappedOnlyWhereMaxStepsCutsTheRun) {
  const auto total_line = [](const std::string& out) {
    const std::size_t at = out.find("total steps");
    return at == std::string::npos ? std::string("no total steps line")
                                   : out.substr(at, out.find('\n', at) - at);
  };
  const Result roomy = ftbench("validate configs/ci-tiny.yaml --set train.max_steps=100");
  ASSERT_EQ(roomy.exit_code, 0) << roomy.output;
  EXPECT_EQ(total_line(roomy.output).find("capped"), std::string::npos) << total_line(roomy.output);
  EXPECT_NE(total_line(roomy.output).find(" 8"), std::string::npos) << total_line(roomy.output);
  const Result cut = ftbench("validate configs/ci-tiny.yaml --set train.max_steps=3");
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  EXPECT_NE(total_line(cut.output).find(" 3 (capped by train.max_steps)"), std::string::npos)
      << total_line(cut.output);
}

// A file the spec names that is not there: validate (with or without --no-data) and run refuse
// it with the same message, before reading anything; the message says where the key was given:
// --set, or the spec's line (it named the spec file for a --set value; found by a review).
TEST_F(Cli, ValidateAndRunRefuseAMissingDataFileAlike) {
  const std::string missing = (dir_ / "nope.jsonl").string();
  const std::string set = " --set data.source=file --set data.path='" + missing + "'";
  const std::string said = "--set: data.path: " + missing + ": no such file or folder";
  std::ofstream(dir_ / "named.yaml") << "model:\n  preset: tiny\ndata:\n  source: file\n"
                                     << "  path: " << missing << "\n";
  const Result in_file = ftbench("validate '" + (dir_ / "named.yaml").string() + "'");
  EXPECT_EQ(in_file.exit_code, 2) << in_file.output;
  EXPECT_NE(in_file.output.find((dir_ / "named.yaml").string() + ":5: data.path: " + missing +
                                ": no such file or folder"),
            std::string::npos)
      << in_file.output;
  const Result run =
      ftbench("run configs/ci-tiny.yaml" + set + " -o '" + (dir_ / "missing.json").string() + "'");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(said), std::string::npos) << run.output;
  for (const char* flags : {"", " --no-data"}) {
    const Result v = ftbench(std::string("validate configs/ci-tiny.yaml") + flags + set);
    EXPECT_EQ(v.exit_code, 2) << flags << v.output;
    EXPECT_NE(v.output.find(said), std::string::npos) << flags << v.output;
  }
}

TEST_F(Cli, SameSpecAndSeedGiveIdenticalLosses) {
  std::vector<double> losses[2];
  for (int i = 0; i < 2; ++i) {
    const fs::path report = dir_ / ("r" + std::to_string(i) + ".json");
    const Result r = ftbench("run configs/ci-tiny.yaml -o '" + report.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& s : nlohmann::json::parse(read_file(report))["steps"]) {
      losses[i].push_back(s["loss"].get<double>());
    }
  }
  EXPECT_EQ(losses[0], losses[1]);
}

TEST_F(Cli, ExistingReportIsKeptWithoutForce) {
  const fs::path report = dir_ / "keep.json";
  { std::ofstream(report) << "precious"; }
  Result r = ftbench("run configs/ci-tiny.yaml -o '" + report.string() + "'");
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(report), "precious");
  r = ftbench("run configs/ci-tiny.yaml --force --set train.max_steps=2 -o '" + report.string() +
              "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(read_file(report))["steps"].size(), 2u);
}

TEST_F(Cli, AnUnwritableReportPathStopsTheRunBeforeItStarts) {
  const fs::path blocker = dir_ / "file";
  { std::ofstream(blocker) << "x"; }
  const Result r = ftbench("run configs/ci-tiny.yaml -o '" + (blocker / "r.json").string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("cannot write"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << "trained before failing:\n" << r.output;
}

TEST_F(Cli, ExternalStartExtendsTimeToFirstStep) {
  const fs::path report = dir_ / "t0.json";
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string t0 = std::to_string(now - 100.0);
  const Result r =
      ftbench("run configs/ci-tiny.yaml --set train.max_steps=1 -o '" + report.string() + "'",
              "FTBENCH_T0=" + t0);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(report));
  EXPECT_EQ(j["timing"]["t0_source"], "FTBENCH_T0");
  EXPECT_GT(j["timing"]["t0_before_process_seconds"].get<double>(), 99.0);
  EXPECT_GT(j["timing"]["time_to_first_step_seconds"].get<double>(), 100.0);
  const Result bad = ftbench("run configs/ci-tiny.yaml -o '" + report.string() + "' --force",
                             "FTBENCH_T0=yesterday");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("FTBENCH_T0"), std::string::npos) << bad.output;
}

TEST_F(Cli, AFailedRunStillWritesAReport) {
  // This CI build's LibTorch has no CUDA: the backend fails, exit code 1, and the report says
  // so with the phases that ended.
  const fs::path report = dir_ / "failed.json";
  const Result r =
      ftbench("run configs/ci-tiny.yaml --set backend.device=cuda -o '" + report.string() + "'");
  if (r.exit_code == 0) GTEST_SKIP() << "this machine has a CUDA LibTorch and a GPU";
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("backend.device"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(report)) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(report));
  EXPECT_EQ(j["run"]["status"], "failed");
  EXPECT_NE(j["run"]["error"].get<std::string>().find("cuda"), std::string::npos);
  EXPECT_TRUE(j["steps"].empty());
  EXPECT_EQ(j["timing"]["time_to_first_step_seconds"], 0.0);
  const auto& phases = j["timing"]["phases"];
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[2]["name"], "failed");
  // The failed phase's memory: host figures, and null device figures (no backend started).
  ASSERT_TRUE(phases[2]["memory"].is_object());
  EXPECT_TRUE(phases[2]["memory"]["rss_at_end_bytes"].is_number_integer());
  EXPECT_TRUE(phases[2]["memory"]["peak_allocated_bytes"].is_null());
  EXPECT_EQ(j["summary"]["measured_steps"], 0);
}

// The out-of-memory fallback through the CI hook: a simulated limit of 2 rows per micro-batch
// from step 3 on. The run finishes at 2 x 4 with the same effective batch, the report's spec
// keeps what was asked (4 x 2) and its `batching` says what ran.
TEST_F(Cli, OutOfMemoryFallsBackToASmallerMicroBatchAndTheReportSaysSo) {
  const fs::path report = dir_ / "oom.json";
  const Result r = ftbench("run configs/ci-tiny.yaml -o '" + report.string() + "'",
                           "FTBENCH_INJECT_OOM='step=3,micro_batch>2'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("out-of-memory fallback    step 3: micro-batch 4 x 2 -> 2 x 4 ("),
            std::string::npos)
      << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(report));
  EXPECT_EQ(j["run"]["status"], "completed");
  EXPECT_EQ(j["steps"].size(), 8u);
  EXPECT_EQ(j["spec"]["train"]["micro_batch_size"], 4);
  EXPECT_EQ(j["spec"]["train"]["grad_accum_steps"], 2);
  EXPECT_EQ(j["derived"]["effective_batch"], 8);
  const nlohmann::json& b = j["batching"];
  EXPECT_EQ(b["micro_batch_size"], 2);
  EXPECT_EQ(b["grad_accum_steps"], 4);
  ASSERT_EQ(b["fallbacks"].size(), 1u);
  const nlohmann::json& f = b["fallbacks"][0];
  EXPECT_EQ(f["step"], 3);
  EXPECT_EQ(f["from_micro_batch_size"], 4);
  EXPECT_EQ(f["from_grad_accum_steps"], 2);
  EXPECT_EQ(f["to_micro_batch_size"], 2);
  EXPECT_EQ(f["to_grad_accum_steps"], 4);
  EXPECT_GT(f["seconds_lost"].get<double>(), 0.0);
  EXPECT_EQ(
      f["error"].get<std::string>().rfind(
          "out of memory (simulated: FTBENCH_INJECT_OOM=step=3,micro_batch>2) at step 3, ", 0),
      0u)
      << f["error"];
  expect_documented(j);
  // Time: the phases still tile the run; the lost time is in the training phases, in no step.
  expect_contiguous(j["timing"]["phases"]);
  double step_seconds = 0.0;
  for (const auto& s : j["steps"]) step_seconds += s["wall_seconds"].get<double>();
  double trained_seconds = 0.0;
  for (const auto& p : j["timing"]["phases"]) {
    if (p["name"] == "first_step" || p["name"] == "training") {
      trained_seconds += p["seconds"].get<double>();
    }
  }
  EXPECT_LE(step_seconds + f["seconds_lost"].get<double>(), trained_seconds);

  // Fallback off: the run fails at step 3 naming the micro-batch, and the report keeps steps
  // 1 and 2.
  const fs::path failed = dir_ / "oom-off.json";
  const Result off = ftbench(
      "run configs/ci-tiny.yaml --set train.oom_fallback=false -o '" + failed.string() + "'",
      "FTBENCH_INJECT_OOM='step=3,micro_batch>2'");
  EXPECT_EQ(off.exit_code, 3) << off.output;
  const std::string message =
      "out of memory in step 3 at micro-batch 4 x grad_accum_steps 2 (train.oom_fallback is off)";
  EXPECT_NE(off.output.find("error: " + message), std::string::npos) << off.output;
  const nlohmann::json jf = nlohmann::json::parse(read_file(failed));
  EXPECT_EQ(jf["run"]["status"], "failed");
  EXPECT_EQ(jf["run"]["error"].get<std::string>().rfind(message, 0), 0u) << jf["run"]["error"];
  EXPECT_EQ(jf["steps"].size(), 2u);
  EXPECT_TRUE(jf["batching"]["fallbacks"].empty());
  EXPECT_EQ(jf["batching"]["micro_batch_size"], 4);

  // A rule that does not parse is bad input, before anything runs.
  const Result bad = ftbench("run configs/ci-tiny.yaml -o '" + (dir_ / "bad.json").string() + "'",
                             "FTBENCH_INJECT_OOM='batch>2'");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("FTBENCH_INJECT_OOM"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("unknown key \"batch\""), std::string::npos) << bad.output;
}

// A learning rate that blows the weights up: the loss turns NaN, the run stops at that step with
// exit code 1 and a report whose status is `diverged`, the step named and its loss null.
TEST_F(Cli, ANonFiniteLossStopsTheRunAsDiverged) {
  const fs::path out = dir_ / "r.json";
  const Result r =
      ftbench("run configs/ci-tiny.yaml --set train.lr=1e30 -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j["run"]["status"], "diverged");
  const nlohmann::json& steps = j["steps"];
  ASSERT_FALSE(steps.empty());
  ASSERT_LT(steps.size(), 8u);  // stopped before the last of ci-tiny's 8 steps
  EXPECT_TRUE(steps.back()["loss"].is_null());
  for (size_t i = 0; i + 1 < steps.size(); ++i) EXPECT_TRUE(steps[i]["loss"].is_number()) << i;
  const std::string expected = "step " + std::to_string(steps.back()["step"].get<int>()) +
                               ": the training loss is nan (not finite): the run diverged";
  EXPECT_EQ(j["run"]["error"].get<std::string>().rfind(expected, 0), 0u) << j["run"]["error"];
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
}

TEST_F(Cli, ValidateTheReferenceRecipe) {
  // The synthetic twin of the reference recipe: the same job without the files the real one
  // reads (its data and tokenizer are the user's to supply).
  const Result r = ftbench("validate configs/llama3.1-8b-lora-synthetic.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("total steps +375\n"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("base parameters +8,030,261,248 ")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("total parameters +8,041,271,296 ")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("trainable parameters +11,010,048 ")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("effective batch +16 ")));
  EXPECT_TRUE(std::regex_search(r.output, std::regex("steps per epoch +125\n")));
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("on out of memory +fall back 4 x 4 -> 2 x 8 -> 1 x 16, then fail\n")))
      << r.output;
}

TEST_F(Cli, BadSpecsGetEveryProblemAndExitCode2) {
  const fs::path spec = dir_ / "bad.yaml";
  {
    std::ofstream out(spec);
    out << "model:\n  preset: tiny\nlora:\n  rnak: 8\n  dropout: 1.5\ntrain:\n  epochs: 0\n";
  }
  const Result r = ftbench("validate '" + spec.string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(spec.string() + ":4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean \"rank\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lora.dropout"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train.epochs"), std::string::npos) << r.output;
  const Result missing = ftbench("run '" + (dir_ / "nope.yaml").string() + "'");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("nope.yaml"), std::string::npos) << missing.output;
  const Result bad_set = ftbench("validate configs/ci-tiny.yaml --set lora.rank=zero");
  EXPECT_EQ(bad_set.exit_code, 2) << bad_set.output;
  EXPECT_NE(bad_set.output.find("lora.rank"), std::string::npos) << bad_set.output;
}

TEST_F(Cli, OverridesReachTheReportAndTheFingerprintIgnoresOutput) {
  const fs::path a = dir_ / "a.json";
  const fs::path b = dir_ / "b.json";
  ASSERT_EQ(
      ftbench("run configs/ci-tiny.yaml --set train.max_steps=1 -o '" + a.string() + "'").exit_code,
      0);
  ASSERT_EQ(ftbench("run configs/ci-tiny.yaml --set train.max_steps=1 --set output.name=other "
                    "--set backend.threads=1 -o '" +
                    b.string() + "'")
                .exit_code,
            0);
  const nlohmann::json ja = nlohmann::json::parse(read_file(a));
  const nlohmann::json jb = nlohmann::json::parse(read_file(b));
  EXPECT_EQ(ja["spec"]["train"]["max_steps"], 1);
  EXPECT_EQ(jb["run"]["name"], "other");
  EXPECT_EQ(ja["spec_fingerprint"], jb["spec_fingerprint"]);
  EXPECT_EQ(jb["environment"]["software"]["intra_op_threads"], 1);
}

// cost and compare on reports that `ftbench run` wrote: the same job twice compares as fair, a
// different data seed is refused, and cost follows the run's own span.
TEST_F(Cli, CostAndCompareReadWhatRunWrites) {
  const fs::path a = dir_ / "a.json";
  const fs::path b = dir_ / "b.json";
  const fs::path c = dir_ / "c.json";
  ASSERT_EQ(ftbench("run configs/ci-tiny.yaml -o '" + a.string() + "'").exit_code, 0);
  ASSERT_EQ(
      ftbench("run configs/ci-tiny.yaml --set backend.threads=1 -o '" + b.string() + "'").exit_code,
      0);
  ASSERT_EQ(ftbench("run configs/ci-tiny.yaml --set data.seed=7 -o '" + c.string() + "'").exit_code,
            0);
  const nlohmann::json ra = nlohmann::json::parse(read_file(a));
  const nlohmann::json rc = nlohmann::json::parse(read_file(c));
  EXPECT_EQ(ra["run"]["world_size"], 1);
  EXPECT_EQ(ra["data"]["fingerprint"].get<std::string>().size(), 64u);
  EXPECT_NE(ra["data"]["fingerprint"], rc["data"]["fingerprint"]);

  // Cost at $3.60/h billed per second: $0.001 per started second.
  const Result cost = ftbench("cost '" + a.string() + "' --rate 3.6 --format json");
  ASSERT_EQ(cost.exit_code, 0) << cost.output;
  const nlohmann::json cj = nlohmann::json::parse(cost.output);
  double end = 0.0;
  for (const auto& p : ra["timing"]["phases"]) {
    end = std::max(end, p["start_seconds"].get<double>() + p["seconds"].get<double>());
  }
  const nlohmann::json& chosen = cj["chosen"]["cost"];
  EXPECT_DOUBLE_EQ(chosen["run_seconds"].get<double>(), end);
  EXPECT_DOUBLE_EQ(chosen["billed_seconds"].get<double>(), std::ceil(end - 1e-9));
  EXPECT_NEAR(chosen["billed_usd"].get<double>(), std::ceil(end - 1e-9) * 0.001, 1e-15);
  EXPECT_NEAR(chosen["per_step_usd"].get<double>(),
              chosen["billed_usd"].get<double>() / ra["steps"].size(), 1e-15);

  const Result same = ftbench("compare '" + a.string() + "' '" + b.string() + "' --format json");
  ASSERT_EQ(same.exit_code, 0) << same.output;
  const nlohmann::json sj = nlohmann::json::parse(same.output);
  EXPECT_TRUE(sj["fairness"]["same_job"].get<bool>());
  EXPECT_TRUE(sj["fairness"]["same_spec_fingerprint"].get<bool>());
  EXPECT_TRUE(sj["fairness"]["same_data_fingerprint"].get<bool>());
  // Same seeds, same data: the loss curves coincide up to fp32 rounding (1 vs 2 threads sum in
  // a different order; measured gap about 1e-7).
  EXPECT_LT(sj["reports"][1]["loss_gap"]["max_abs_gap"].get<double>(), 1e-4);

  const Result different = ftbench("compare '" + a.string() + "' '" + c.string() + "'");
  EXPECT_EQ(different.exit_code, 2);
  EXPECT_NE(different.output.find("[job] data fingerprint"), std::string::npos) << different.output;
  EXPECT_NE(different.output.find("[job] spec.data.seed: A: 1234 | B: 7"), std::string::npos)
      << different.output;
}

// A byte-level BPE tokenizer.json with a few merges and two special tokens, as Llama 3's are
// laid out (GPT-2's byte-to-unicode table for the 256 byte symbols).
std::string tiny_tokenizer_json() {
  std::vector<int> bytes;
  for (int b = '!'; b <= '~'; ++b) bytes.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bytes.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bytes.push_back(b);
  std::vector<int> codes = bytes;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    if (std::find(bytes.begin(), bytes.end(), b) == bytes.end()) {
      bytes.push_back(b);
      codes.push_back(256 + extra++);
    }
  }
  auto utf8 = [](int cp) {
    std::string out;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
  };
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < bytes.size(); ++i) vocab[utf8(codes[i])] = bytes[i];
  vocab["th"] = 256;
  vocab["the"] = 257;
  const nlohmann::json added =
      nlohmann::json::array({{{"id", 258}, {"content", "<|begin_of_text|>"}, {"special", true}},
                             {{"id", 259}, {"content", "<|end_of_text|>"}, {"special", true}}});
  vocab["<|begin_of_text|>"] = 258;
  vocab["<|end_of_text|>"] = 259;
  const nlohmann::json tok = {
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      // Llama 3's: "<|begin_of_text|> $A", so every example starts with BOS.
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens",
         {{"<|begin_of_text|>",
           {{"id", "<|begin_of_text|>"}, {"ids", {258}}, {"tokens", {"<|begin_of_text|>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"t h", "th e"}}}}};
  return tok.dump();
}

// torchtune's own llama3_1/8B_lora_single_device (configs/torchtune-...): r8 on q, v, o and the
// MLP gives torchtune's 19.7 M trainable parameters; Alpaca as Llama 3 chat turns with the
// prompt in the loss leaves only BOS out of it; 2 x 8 over 40 examples is 2 steps.
TEST_F(Cli, ValidateTorchtunesOwnLoraRecipe) {
  nlohmann::json tok = nlohmann::json::parse(tiny_tokenizer_json());
  const char* chat_tokens[] = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  for (int i = 0; i < 3; ++i) {
    tok["added_tokens"].push_back(
        {{"id", 260 + i}, {"content", chat_tokens[i]}, {"special", true}});
    tok["model"]["vocab"][chat_tokens[i]] = 260 + i;
  }
  std::ofstream(dir_ / "tokenizer.json") << tok.dump();
  {
    std::ofstream data(dir_ / "chat.jsonl");
    for (int i = 0; i < 40; ++i) {
      const std::string prompt =
          "Below is an instruction that describes a task. Write a response that appropriately "
          "completes the request.\n\n### Instruction:\nSay " +
          std::to_string(i) + " twice.\n\n### Response:\n";
      data << nlohmann::json({{"messages",
                               {{{"role", "user"}, {"content", prompt}},
                                {{"role", "assistant"}, {"content", std::to_string(i)}}}}})
                  .dump()
           << "\n";
    }
  }
  const Result r = ftbench(
      "validate configs/torchtune-llama3.1-8b-lora-single-device.yaml --json "
      "--set data.path='" +
      (dir_ / "chat.jsonl").string() + "' --set data.tokenizer='" +
      (dir_ / "tokenizer.json").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["parameters"]["trainable"], 19660800);
  EXPECT_EQ(j["parameters"]["base"], 8030261248);
  EXPECT_EQ(j["derived"]["effective_batch"], 16);
  EXPECT_EQ(j["derived"]["steps_per_epoch"], 2);
  EXPECT_EQ(j["derived"]["total_steps"], 2);
  EXPECT_EQ(j["data"]["examples"], 40);
  EXPECT_EQ(j["data"]["truncated"], 0);
  EXPECT_EQ(j["data"]["dropped_too_long"], 0);
  EXPECT_EQ(j["data"]["tokens"].get<int64_t>() - j["data"]["loss_tokens"].get<int64_t>(), 40);
}

// `ftbench run` on an Alpaca JSONL file through a tokenizer.json: the prompt is masked from the
// loss, the report carries the file's data statistics and fingerprint, and the step counts
// follow the file's size.
TEST_F(Cli, TrainsOnAnAlpacaFileThroughATokenizerJson) {
  std::ofstream(dir_ / "tokenizer.json") << tiny_tokenizer_json();
  {
    std::ofstream data(dir_ / "alpaca.jsonl");
    for (int i = 0; i < 40; ++i) {
      data << nlohmann::json({{"instruction", "Say the number " + std::to_string(i) + " twice."},
                              {"input", i % 2 == 0 ? "the input" : ""},
                              {"output", std::to_string(i) + " " + std::to_string(i)}})
                  .dump()
           << "\n";
    }
  }
  const fs::path out = dir_ / "r.json";
  const std::string args =
      "run configs/ci-tiny.yaml --set data.source=file --set data.path='" +
      (dir_ / "alpaca.jsonl").string() + "' --set data.tokenizer='" +
      (dir_ / "tokenizer.json").string() +
      "' --set data.seq_len=512 --set data.max_tokens=512 --set train.max_steps=0 -o '" +
      out.string() + "'";
  const Result r = ftbench(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j["data"]["examples"], 40);
  EXPECT_EQ(j["data"]["source"],
            "file(path=" + (dir_ / "alpaca.jsonl").string() + ", format=alpaca, n=40)");
  EXPECT_EQ(j["data"]["fingerprint"].get<std::string>().size(), 64u);
  // 40 examples, micro-batch 4 x accumulation 2 (ci-tiny): 5 steps per epoch.
  EXPECT_EQ(j["derived"]["steps_per_epoch"], 5);
  EXPECT_EQ(j["steps"].size(), j["derived"]["total_steps"].get<size_t>());
  // The Alpaca prompt (~150 tokens) carries no loss; only the short answers and EOS do.
  int64_t real = 0;
  int64_t loss = 0;
  for (const auto& step : j["steps"]) {
    real += step["real_tokens"].get<int64_t>();
    loss += step["loss_tokens"].get<int64_t>();
  }
  EXPECT_LT(loss * 10, real);
  EXPECT_GT(loss, 0);

  EXPECT_EQ(j["data"]["statistics"]["format"], "alpaca");
  EXPECT_EQ(j["data"]["statistics"]["records"], 40);
  EXPECT_GT(j["data"]["statistics"]["masked_fraction"].get<double>(), 0.9);
  EXPECT_TRUE(j["data"]["validation"].is_null());
  EXPECT_TRUE(j["evaluations"].empty());

  // A bad record names the file and line; exit code 2.
  std::ofstream(dir_ / "alpaca.jsonl", std::ios::app) << "{\"instruction\": 3}\n";
  const Result bad = ftbench(args + " --force");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find((dir_ / "alpaca.jsonl").string() + ":41"), std::string::npos)
      << bad.output;
}

// --force replaces an export folder as a whole: one that holds the spec, or the report named by
// -o, is refused before anything runs, and nothing in it is touched (a review lost a spec and
// the notes beside it so).
TEST_F(Cli, AForcedExportMayNotRemoveTheRunsOwnFiles) {
  const fs::path work = dir_ / "w";
  fs::create_directories(work);
  fs::copy_file(fs::path(FTBENCH_SOURCE_DIR) / "configs/ci-tiny.yaml", work / "ci-tiny.yaml");
  std::ofstream(work / "notes.txt") << "keep\n";
  const std::string outside = " --set 'output.report=" + (dir_ / "r.json").string() +
                              "' --set 'train.checkpoint.dir=" + (dir_ / "ck").string() + "'";
  const Result spec_inside =
      ftbench("run '" + (work / "ci-tiny.yaml").string() +
              "' --force --set 'output.adapter=" + work.string() + "'" + outside);
  EXPECT_EQ(spec_inside.exit_code, 2) << spec_inside.output;
  EXPECT_NE(
      spec_inside.output.find("output.adapter: \"" + work.string() + "\" and the spec file (\"" +
                              (work / "ci-tiny.yaml").string() + "\") overlap"),
      std::string::npos)
      << spec_inside.output;
  EXPECT_TRUE(fs::exists(work / "notes.txt"));
  EXPECT_TRUE(fs::exists(work / "ci-tiny.yaml"));
  EXPECT_FALSE(fs::exists(dir_ / "r.json"));

  const fs::path exp = dir_ / "exp";
  const Result report_inside =
      ftbench("run configs/ci-tiny.yaml --force -o '" + (exp / "r.json").string() +
              "' --set 'output.adapter=" + exp.string() +
              "' --set 'train.checkpoint.dir=" + (dir_ / "ck").string() + "'");
  EXPECT_EQ(report_inside.exit_code, 2) << report_inside.output;
  EXPECT_NE(report_inside.output.find("output.adapter: \"" + exp.string() + "\" and -o (\"" +
                                      (exp / "r.json").string() + "\") overlap"),
            std::string::npos)
      << report_inside.output;
  EXPECT_FALSE(fs::exists(exp / "r.json"));
}

// The same Alpaca JSON array (not JSONL) trained with packing on and off, prompt masked and
// not: packing changes the batches but not what is trained, so the data fingerprint and the loss
// tokens stay; it cuts the padding. With train_on_input every token but each example's first is
// a target, packed or not: no loss crosses from one example into the next.
TEST_F(Cli, PacksAnAlpacaJsonArrayWithAndWithoutPromptMasking) {
  std::ofstream(dir_ / "tokenizer.json") << tiny_tokenizer_json();
  nlohmann::json records = nlohmann::json::array();
  for (int i = 0; i < 48; ++i) {
    records.push_back(
        {{"instruction", "Count to " + std::to_string(i % 7 + 1) + "."},
         {"input", i % 3 == 0 ? "" : std::string(static_cast<size_t>(i % 5) * 9, 'x')},
         {"output", std::string(static_cast<size_t>(i % 11) * 4 + 1, 'y')}});
  }
  std::ofstream(dir_ / "alpaca.json") << records.dump(2);
  struct Run {
    nlohmann::json report;
    int64_t steps = 0, real = 0, padded = 0, loss = 0;
  };
  // Micro-batch 1 x accumulation 1 unless `batch` says otherwise: every row is a step, so no
  // partial step is dropped at the end of the epoch.
  const auto run = [&](const std::string& padding, bool train_on_input,
                       const std::string& batch = "") {
    const fs::path out = dir_ / ("r-" + padding + (train_on_input ? "-all" : "") + ".json");
    const Result r = ftbench(
        "run configs/ci-tiny.yaml --set data.source=file --set data.path='" +
        (dir_ / "alpaca.json").string() + "' --set data.tokenizer='" +
        (dir_ / "tokenizer.json").string() +
        "' --set model.max_seq_len=1024 --set data.seq_len=1024 --set data.padding=" + padding +
        " --set data.train_on_input=" + (train_on_input ? "true" : "false") +
        (batch.empty() ? " --set train.micro_batch_size=1 --set train.grad_accum_steps=1" : batch) +
        " -o '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    Run result;
    result.report = nlohmann::json::parse(read_file(out));
    for (const auto& step : result.report["steps"]) {
      ++result.steps;
      result.real += step["real_tokens"].get<int64_t>();
      result.padded += step["padded_tokens"].get<int64_t>();
      result.loss += step["loss_tokens"].get<int64_t>();
    }
    return result;
  };
  const Run longest = run("longest", false, " ");  // ci-tiny's micro-batch 4 x accumulation 2
  const Run max_length = run("max_length", false);
  const Run packed = run("pack", false);
  const Run packed_all = run("pack", true);
  const nlohmann::json& data = longest.report["data"];
  ASSERT_EQ(data["examples"], 48);
  EXPECT_EQ(data["source"],
            "file(path=" + (dir_ / "alpaca.json").string() + ", format=alpaca, n=48)");
  EXPECT_EQ(data["statistics"]["format"], "alpaca");
  EXPECT_EQ(packed.report["data"], data);
  EXPECT_EQ(packed.report["spec"]["data"]["padding"], "pack");

  // One epoch trains every example once: every token and every loss token, packed or not.
  EXPECT_EQ(longest.steps, 6);  // 48 examples / (4 x 2)
  EXPECT_EQ(max_length.steps, 48);
  for (const Run* r : {&longest, &max_length, &packed}) {
    EXPECT_EQ(r->real, data["tokens"].get<int64_t>());
    EXPECT_EQ(r->loss, data["loss_tokens"].get<int64_t>());
  }
  // About 10,000 tokens in examples of roughly 150 to 300: several to a packed row of 1024.
  EXPECT_GE(packed.steps, 10);
  EXPECT_LE(packed.steps, 16);
  EXPECT_EQ(packed.padded, packed.steps * 1024);
  EXPECT_EQ(max_length.padded, 48 * 1024);
  EXPECT_LT(packed.padded, max_length.padded / 3);
  // `ftbench validate` counts the same packed rows, so the same steps, without running.
  const Result v = ftbench(
      "validate configs/ci-tiny.yaml --json --set data.source=file --set "
      "data.path='" +
      (dir_ / "alpaca.json").string() + "' --set data.tokenizer='" +
      (dir_ / "tokenizer.json").string() +
      "' --set model.max_seq_len=1024 --set data.seq_len=1024 --set "
      "data.padding=pack --set train.micro_batch_size=1 --set "
      "train.grad_accum_steps=1");
  ASSERT_EQ(v.exit_code, 0) << v.output;
  const nlohmann::json validated = nlohmann::json::parse(v.output);
  EXPECT_EQ(validated["derived"]["total_steps"].get<int64_t>(), packed.steps);
  EXPECT_EQ(validated["derived"]["packed_rows_per_epoch"].get<int64_t>(), packed.steps);
  EXPECT_EQ(validated["data"]["special_tokens"],
            "BOS <|begin_of_text|> = 258 (starts each example), EOS <|end_of_text|> = 259, PAD = "
            "EOS");
  // And says so in its text form, on the line the JSON's packed_rows_per_epoch is.
  const Result text =
      ftbench("validate configs/ci-tiny.yaml --set data.source=file --set data.path='" +
              (dir_ / "alpaca.json").string() + "' --set data.tokenizer='" +
              (dir_ / "tokenizer.json").string() +
              "' --set model.max_seq_len=1024 --set data.seq_len=1024 --set "
              "data.padding=pack --set train.micro_batch_size=1 --set train.grad_accum_steps=1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  const std::string label = "packed rows per epoch";
  EXPECT_NE(text.output.find("\n" + label + std::string(30 - label.size(), ' ') +
                             std::to_string(packed.steps) + "\n"),
            std::string::npos)
      << text.output;

  // Without masking: a different fingerprint, and every token after each example's first.
  const nlohmann::json& all = packed_all.report["data"];
  EXPECT_NE(all["fingerprint"], data["fingerprint"]);
  EXPECT_EQ(all["tokens"], data["tokens"]);
  EXPECT_EQ(all["loss_tokens"].get<int64_t>(), data["tokens"].get<int64_t>() - 48);
  EXPECT_EQ(packed_all.loss, all["loss_tokens"].get<int64_t>());
  EXPECT_EQ(packed_all.steps, packed.steps);
  EXPECT_NEAR(all["statistics"]["masked_fraction"].get<double>(),
              48.0 / data["tokens"].get<double>(), 1e-15);
}

// A quarter of the file held out for validation, a pass every 2 steps and after the last: the
// passes come at the expected steps with finite losses, each is an `evaluation` phase between
// training phases, and the step wall times leave the evaluation time out.
TEST_F(Cli, ValidationPassesRunEveryNStepsAsTheirOwnPhases) {
  std::ofstream(dir_ / "tokenizer.json") << tiny_tokenizer_json();
  {
    std::ofstream data(dir_ / "alpaca.jsonl");
    for (int i = 0; i < 40; ++i) {
      data << nlohmann::json({{"instruction", "Say the number " + std::to_string(i) + " twice."},
                              {"input", i % 2 == 0 ? "the input" : ""},
                              {"output", std::to_string(i) + " " + std::to_string(i)}})
                  .dump()
           << "\n";
    }
  }
  const fs::path out = dir_ / "r.json";
  const Result r =
      ftbench("run configs/ci-tiny.yaml --set data.source=file --set data.path='" +
              (dir_ / "alpaca.jsonl").string() + "' --set data.tokenizer='" +
              (dir_ / "tokenizer.json").string() +
              "' --set data.seq_len=512 --set data.max_tokens=512 --set train.epochs=3 "
              "--set data.validation_fraction=0.25 --set train.eval_every_steps=2 -o '" +
              out.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("validation loss"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(out));
  expect_documented(j);

  // 40 records: 10 held out, 30 trained; micro-batch 4 x accumulation 2: 3 steps per epoch.
  EXPECT_EQ(j["data"]["examples"], 30);
  EXPECT_EQ(j["data"]["validation"]["examples"], 10);
  EXPECT_GT(j["data"]["validation"]["loss_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(j["data"]["statistics"]["records"], 40);
  EXPECT_EQ(j["derived"]["total_steps"], 9);
  ASSERT_EQ(j["steps"].size(), 9u);

  const std::vector<int64_t> expected_after = {2, 4, 6, 8, 9};
  const auto& evals = j["evaluations"];
  ASSERT_EQ(evals.size(), expected_after.size());
  for (size_t i = 0; i < evals.size(); ++i) {
    EXPECT_EQ(evals[i]["after_step"], expected_after[i]);
    ASSERT_TRUE(evals[i]["loss"].is_number()) << evals[i];
    EXPECT_TRUE(std::isfinite(evals[i]["loss"].get<double>()));
    EXPECT_GT(evals[i]["loss"].get<double>(), 0.0);
    // 10 examples: two micro-batches of 4 and one of the 2 left over; every loss token.
    EXPECT_EQ(evals[i]["batches"], 3);
    EXPECT_EQ(evals[i]["loss_tokens"], j["data"]["validation"]["loss_tokens"]);
    EXPECT_GT(evals[i]["seconds"].get<double>(), 0.0);
  }

  // Phases: first_step, then training and evaluation alternating; contiguous and in order.
  const auto& phases = j["timing"]["phases"];
  expect_contiguous(phases);
  std::vector<std::string> names;
  for (const auto& p : phases) names.push_back(p["name"]);
  const std::vector<std::string> expected_names = {
      "launch",       "spec_load",  "backend_init", "model_build", "weight_load",
      "data_prepare", "first_step", "training",     "evaluation",  "training",
      "evaluation",   "training",   "evaluation",   "training",    "evaluation",
      "training",     "evaluation", "summarize",    "report_write"};
  EXPECT_EQ(names, expected_names);
  double training = 0.0;
  size_t pass = 0;
  for (const auto& p : phases) {
    if (p["name"] == "first_step" || p["name"] == "training")
      training += p["seconds"].get<double>();
    if (p["name"] != "evaluation" || pass >= evals.size()) continue;
    // The phase is the pass (device synchronised at both ends) and a little bookkeeping.
    EXPECT_GE(p["seconds"].get<double>(), evals[pass]["seconds"].get<double>() - 1e-6);
    EXPECT_LT(p["seconds"].get<double>(), evals[pass]["seconds"].get<double>() + 0.05);
    ++pass;
  }
  // The step times lie inside the training phases: no evaluation time in any step.
  double steps = 0.0;
  for (const auto& s : j["steps"]) steps += s["wall_seconds"].get<double>();
  EXPECT_LE(steps, training + 1e-3);
  EXPECT_NEAR(j["timing"]["time_to_first_step_seconds"].get<double>(),
              phases[7]["start_seconds"].get<double>(), 1e-9);
}

}  // namespace
