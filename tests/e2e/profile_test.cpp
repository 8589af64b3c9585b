// `ftbench run --profile-steps`: the profiler around a window of steps, the files beside the
// report, the report's record, and the flag's refusals.
#include <filesystem>
#include <string>

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

class Profile : public ::testing::Test {
 protected:
  // configs/ci-tiny.yaml for `steps` steps, 1 of them warm-up, the report in the scratch folder.
  Outcome run(const std::string& more, int64_t steps = 4) {
    return run_ftbench("run configs/ci-tiny.yaml --set train.max_steps=" + std::to_string(steps) +
                           " --set train.timing_warmup_steps=1 -o " +
                           shell_quote((scratch_.path() / "r.json").string()) + " " + more,
                       scratch_.path());
  }
  fs::path at(const std::string& name) const { return scratch_.path() / name; }
  ScratchDir scratch_{"ftbench-profile"};
};

TEST_F(Profile, TheWindowIsRecordedWrittenBesideTheReportAndLeftOutOfTheTiming) {
  const Outcome o = run("--profile-steps 2,3");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const nlohmann::json r = nlohmann::json::parse(slurp(at("r.json")));
  const nlohmann::json& p = r["profile"];
  EXPECT_EQ(p["first_step"], 2);
  EXPECT_EQ(p["last_step"], 3);
  EXPECT_EQ(p["trace"], at("r.profile-trace.json").string());
  EXPECT_EQ(p["ops_table"], at("r.profile-ops.csv").string());
  EXPECT_EQ(p["kernels_table"], at("r.profile-kernels.csv").string());
  EXPECT_EQ(p["device_activity"], false);
  EXPECT_GT(p["op_self_seconds"].get<double>(), 0.0);
  EXPECT_GT(p["flops"].get<double>(), 0.0);
  EXPECT_GT(p["leaf_input_bytes"].get<int64_t>(), 0);
  std::vector<std::string> scopes;
  for (const auto& s : p["scopes"]) {
    scopes.push_back(s["name"]);
    // Two steps of two micro-batches: a forward, loss and backward each, one update a step.
    EXPECT_EQ(s["calls"], s["name"] == "optimizer" ? 2 : 4) << s["name"];
  }
  EXPECT_EQ(scopes, (std::vector<std::string>{"forward", "loss", "backward", "optimizer"}));
  // The first ops by self time, largest first; the GEMMs among them (which leads depends on the
  // machine's load: the times are wall times).
  ASSERT_FALSE(p["top_ops"].empty());
  bool mm = false;
  for (std::size_t i = 0; i < p["top_ops"].size(); ++i) {
    mm = mm || p["top_ops"][i]["name"] == "aten::mm";
    if (i > 0) {
      EXPECT_LE(p["top_ops"][i]["self_seconds"].get<double>(),
                p["top_ops"][i - 1]["self_seconds"].get<double>());
    }
  }
  EXPECT_TRUE(mm) << p["top_ops"].dump();
  // Step 1 is the warm-up, 2 and 3 the profile: step 4 alone is timed.
  EXPECT_EQ(r["summary"]["warmup_steps_excluded"], 1);
  EXPECT_EQ(r["summary"]["profiled_steps_excluded"], 2);
  EXPECT_EQ(r["summary"]["measured_steps"], 1);
  EXPECT_EQ(r["summary"]["step_seconds"]["median"], r["steps"][3]["wall_seconds"]);
  EXPECT_NE(o.out.find("2 profiled excluded"), std::string::npos) << o.out;
  // The files: a trace whose events include the scopes, and the two tables.
  const nlohmann::json trace = nlohmann::json::parse(slurp(at("r.profile-trace.json")));
  bool forward = false;
  for (const auto& e : trace["traceEvents"]) forward = forward || e["name"] == "ftbench::forward";
  EXPECT_TRUE(forward);
  const std::string ops = slurp(at("r.profile-ops.csv"));
  EXPECT_EQ(ops.rfind("name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,"
                      "input_gb_per_s\n",
                      0),
            0u)
      << ops.substr(0, 200);
  EXPECT_NE(ops.find("\naten::mm,"), std::string::npos);
  EXPECT_EQ(slurp(at("r.profile-kernels.csv")), "name,kind,calls,total_ms,share,mean_us\n");
  // The execution record is there with or without a profile.
  EXPECT_FALSE(r["execution"]["attention_kernel"].get<std::string>().empty());
  EXPECT_EQ(r["execution"]["activation_checkpointing"], "none");
}

TEST_F(Profile, BadWindowsAreRefusedBeforeTraining) {
  for (const char* bad : {"0", "3,2", "x", "2,"}) {
    const Outcome o = run(std::string("--profile-steps ") + shell_quote(bad));
    EXPECT_EQ(o.exit_code, 2) << bad << o.out << o.err;
    EXPECT_NE(o.err.find("--profile-steps"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("expected N or N,M"), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(at("r.json"))) << bad;
  }
  const Outcome beyond = run("--profile-steps 3,9");
  EXPECT_EQ(beyond.exit_code, 2) << beyond.out << beyond.err;
  EXPECT_NE(beyond.err.find("--profile-steps 3,9: the run has 4 optimizer steps; profile steps "
                            "from 1 to 4"),
            std::string::npos)
      << beyond.err;
  EXPECT_FALSE(fs::exists(at("r.json")));
}

TEST_F(Profile, AnExistingTableIsNotOverwrittenWithoutForce) {
  {
    std::ofstream keep(at("r.profile-ops.csv"));
    keep << "mine\n";
  }
  const Outcome o = run("--profile-steps 2");
  EXPECT_EQ(o.exit_code, 5) << o.out << o.err;
  EXPECT_NE(o.err.find("r.profile-ops.csv"), std::string::npos) << o.err;
  EXPECT_EQ(slurp(at("r.profile-ops.csv")), "mine\n");
  EXPECT_FALSE(fs::exists(at("r.json")));
  const Outcome forced = run("--profile-steps 2 --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.out << forced.err;
  EXPECT_NE(slurp(at("r.profile-ops.csv")), "mine\n");
}

TEST_F(Profile, ARunStoppedInsideTheWindowWritesTheStepsItRecorded) {
  const Outcome o = run("--profile-steps 3,5 --stop-after-steps 4", 5);
  EXPECT_EQ(o.exit_code, 4) << o.out << o.err;
  const nlohmann::json r = nlohmann::json::parse(slurp(at("r.json")));
  EXPECT_EQ(r["run"]["status"], "interrupted");
  EXPECT_EQ(r["profile"]["first_step"], 3);
  EXPECT_EQ(r["profile"]["last_step"], 4);
  EXPECT_TRUE(fs::exists(at("r.profile-trace.json")));
  // Step 1 the warm-up, 3 and 4 profiled: step 2 is timed.
  EXPECT_EQ(r["summary"]["profiled_steps_excluded"], 2);
  EXPECT_EQ(r["summary"]["measured_steps"], 1);
}

}  // namespace
