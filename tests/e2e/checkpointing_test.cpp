// model.activation_checkpointing from the command line: each policy runs and the report says
// which; auto is resolved by the memory plan against the machine's memory and the report says
// what it chose from; selective is refused with the composite forms (FTBENCH_FUSED_BLOCKS=0).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::Outcome;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;
using ftbench::e2e::shell_quote;
using ftbench::e2e::slurp;

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

class Checkpointing : public ::testing::Test {
 protected:
  Outcome run(const std::string& policy, const std::string& env = "") {
    return run_ftbench(
        "run configs/ci-tiny.yaml --set train.max_steps=3 --set output.progress=off"
        " --set model.activation_checkpointing=" +
            policy + " -o " + shell_quote(report().string()) + " --force",
        scratch_.path(), env);
  }
  fs::path report() const { return scratch_.path() / "r.json"; }
  ScratchDir scratch_{"ftbench-checkpointing"};
};

TEST_F(Checkpointing, EachPolicyRunsTheSameJobAndTheReportSaysWhichRan) {
  std::vector<double> first_losses;
  for (const std::string policy : {"none", "full", "selective"}) {
    const Outcome o = run(policy);
    ASSERT_EQ(o.exit_code, 0) << policy << o.out << o.err;
    const nlohmann::json r = nlohmann::json::parse(slurp(report()));
    EXPECT_EQ(r["spec"]["model"]["activation_checkpointing"], policy);
    EXPECT_EQ(r["execution"]["activation_checkpointing"], policy);
    EXPECT_TRUE(r["execution"]["checkpointing_choice"].is_null());
    EXPECT_NE(o.out.find("activation checkpointing " + policy), std::string::npos) << o.out;
    first_losses.push_back(r["steps"][0]["loss"].get<double>());
  }
  // The same masks and arithmetic: the first step's loss agrees to fp32 rounding.
  EXPECT_NEAR(first_losses[1], first_losses[0], 1e-5 * std::abs(first_losses[0]));
  EXPECT_NEAR(first_losses[2], first_losses[0], 1e-5 * std::abs(first_losses[0]));
}

TEST_F(Checkpointing, AutoTakesTheLeastRecomputeThatFitsAndSaysWhatItChoseFrom) {
  const Outcome o = run("auto");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const nlohmann::json r = nlohmann::json::parse(slurp(report()));
  EXPECT_EQ(r["spec"]["model"]["activation_checkpointing"], "auto");
  // A toy model on a machine with gigabytes: nothing recomputed.
  EXPECT_EQ(r["execution"]["activation_checkpointing"], "none");
  const nlohmann::json& c = r["execution"]["checkpointing_choice"];
  ASSERT_TRUE(c.is_object()) << r["execution"].dump();
  EXPECT_TRUE(c["fits"].get<bool>());
  EXPECT_GT(c["usable_bytes"].get<int64_t>(), 0);
  ASSERT_EQ(c["needed_bytes"].size(), 3u);
  EXPECT_EQ(c["needed_bytes"][0]["policy"], "none");
  EXPECT_EQ(c["needed_bytes"][1]["policy"], "selective");
  EXPECT_EQ(c["needed_bytes"][2]["policy"], "full");
  EXPECT_GT(c["needed_bytes"][0]["bytes"].get<int64_t>(),
            c["needed_bytes"][1]["bytes"].get<int64_t>());
  EXPECT_GT(c["needed_bytes"][1]["bytes"].get<int64_t>(),
            c["needed_bytes"][2]["bytes"].get<int64_t>());
  EXPECT_LE(c["needed_bytes"][0]["bytes"].get<int64_t>(), c["usable_bytes"].get<int64_t>());
  EXPECT_NE(o.out.find("activation checkpointing none (auto: none "), std::string::npos) << o.out;
}

// Refused before the run starts: no report is written, and an earlier one stays, --force or not.
// A resumed auto run keeps the policy the run it continues chose (the machine may have another
// amount of memory free by then): one policy for every step of one report.
TEST_F(Checkpointing, AResumedAutoRunKeepsThePolicyItStartedWith) {
  const std::string cp = (scratch_.path() / "ck").string();
  const std::string common =
      " --set train.checkpoint.every_steps=1 --set train.checkpoint.dir=" + shell_quote(cp);
  const Outcome first = run_ftbench(
      "run configs/ci-tiny.yaml --set train.max_steps=3 --set output.progress=off --set "
      "model.activation_checkpointing=auto -o " +
          shell_quote(report().string()) + common + " --stop-after-steps 1",
      scratch_.path());
  ASSERT_EQ(first.exit_code, 4) << first.out << first.err;
  const nlohmann::json before = nlohmann::json::parse(slurp(report()));
  const Outcome second = run_ftbench(
      "run configs/ci-tiny.yaml --set train.max_steps=3 --set output.progress=off --set "
      "model.activation_checkpointing=auto -o " +
          shell_quote(report().string()) + common + " --resume latest",
      scratch_.path());
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  const std::string log = second.out + second.err;
  EXPECT_NE(log.find("model.activation_checkpointing auto: none, as the run it resumes chose"),
            std::string::npos)
      << log;
  const nlohmann::json after = nlohmann::json::parse(slurp(report()));
  EXPECT_EQ(after["execution"]["activation_checkpointing"],
            before["execution"]["activation_checkpointing"]);
  EXPECT_EQ(after["execution"]["checkpointing_choice"],
            before["execution"]["checkpointing_choice"]);
  EXPECT_EQ(after["steps"].size(), 3u);
}

TEST_F(Checkpointing, SelectiveNeedsTheFusedBlocks) {
  write(report(), "earlier");
  const Outcome o = run("selective", "FTBENCH_FUSED_BLOCKS=0");
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_EQ(slurp(report()), "earlier");
  EXPECT_NE(o.err.find("FTBENCH_FUSED_BLOCKS=0 runs the step's composite forms, which keep no GEMM "
                       "outputs for model.activation_checkpointing selective: use full or none "
                       "with it"),
            std::string::npos)
      << o.err;
  const Outcome full = run("full", "FTBENCH_FUSED_BLOCKS=0");
  EXPECT_EQ(full.exit_code, 0) << full.out << full.err;
}

TEST_F(Checkpointing, BadStepSwitchesAreRefusedBeforeTheRun) {
  for (const char* env : {"FTBENCH_GPU_KERNELS=2", "FTBENCH_GPU_KERNELS=yes",
                          "FTBENCH_GPU_KERNELS=", "FTBENCH_FUSED_BLOCKS=true"}) {
    write(report(), "earlier");
    const Outcome o = run("none", env);
    EXPECT_EQ(o.exit_code, 2) << env << o.out << o.err;
    EXPECT_NE(o.err.find(std::string(env).substr(0, std::string(env).find('=')) + ": expected "),
              std::string::npos)
        << env << o.err;
    EXPECT_EQ(slurp(report()), "earlier") << env;
  }
}

}  // namespace
