// End to end: `ftbench plan` as a user runs it before renting (the torch-free `ftbench`): every
// catalog GPU planned, the 8B recipe's answer, each format, and bad flags refused by name.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"

namespace {

using ftbench::e2e::Outcome;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;

Outcome ftbench(const std::string& args) {
  const ScratchDir scratch("ftbench-plan-cli");
  return run_ftbench(args, scratch.path(), "", 60.0);
}

TEST(PlanCli, The8bRecipeIsPlannedForEveryCatalogGpu) {
  const Outcome r =
      ftbench("plan configs/llama3.1-8b-lora-synthetic.yaml --format json --today 2026-12-04");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::vector<std::string> gpus;
  for (const auto& f : j["fits"]) gpus.push_back(f["gpu"]);
  EXPECT_EQ(gpus,
            (std::vector<std::string>{"A100-SXM-80GB", "H100-SXM", "H200-SXM", "B200", "MI300X"}));
  for (const auto& f : j["fits"]) {
    EXPECT_TRUE(f["fits"].get<bool>()) << f["gpu"];  // about 24 GB on 80 GB and more
    EXPECT_GE(f["largest_micro_batch"].get<int>(), 4) << f["gpu"];
  }
  // The H200 run of this recipe peaked at 20,939,517,440 bytes allocated (docs/benchmarks.md):
  // the plan is within 2 %.
  EXPECT_NEAR(j["memory"]["peak_bytes"].get<double>() / 20939517440.0, 1.0, 0.02);
  EXPECT_TRUE(j["estimate"].get<bool>());
  ASSERT_TRUE(j["recommended"].is_string());
  // Dated offers with their billing stated come before the rest.
  EXPECT_EQ(j["recommended"], "reference-run/MI300X/on-demand");
  EXPECT_EQ(j["offers"].size(), 11u);
}

TEST(PlanCli, EveryFormatPrints) {
  for (const char* format : {"table", "markdown", "csv", "json"}) {
    SCOPED_TRACE(format);
    const Outcome r = ftbench(std::string("plan configs/ci-tiny.yaml --gpu H100 --format ") +
                              format + " --today 2026-12-04");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("reference-run/H100-SXM/on-demand"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MI300X"), std::string::npos) << "--gpu H100 plans the H100 only";
  }
}

TEST(PlanCli, BadFlagsAreRefusedByName) {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--gpu H900", "error: --gpu: no datasheet for a GPU \"H900\""},
           {"--deadline 2x", "error: --deadline: expected a duration such as 90m, 2h, 1h30m"},
           {"--deadline 1h30", "error: --deadline: expected a duration"},
           {"--deadline 0", "error: --deadline: expected a duration"},
           {"--deadline 30m1h", "error: --deadline: expected a duration"},
           {"--deadline 1h1h", "error: --deadline: expected a duration"},
           {"--tokens 0.4", "error: --tokens: expected at least 1 token, found 0.4"},
           {"--from-report tests/fixtures/reports/h100-reference.json",
            "error: --from-report tests/fixtures/reports/h100-reference.json: the run trained in "
            "\"bf16\", the spec in \"fp32\""},
           {"--max-age-days -1", "error: --max-age-days"},
           {"--budget -3", "error: --budget: expected dollars above 0, found -3"},
           {"--tokens lots", "error: --tokens: expected a positive count"},
           {"--preemptions-per-hour 0", "error: --preemptions-per-hour: expected a number"},
           {"--headroom 100", "error: --headroom: expected a percentage from 0 to below 100"},
           {"--from-report nowhere.json", "error: nowhere.json"},
           {"--set lora.rank=0", "lora.rank"}}) {
    SCOPED_TRACE(args);
    const Outcome r = ftbench("plan configs/ci-tiny.yaml " + args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

TEST(PlanCli, ADeadlineAndABudgetNarrowTheChoice) {
  const Outcome r = ftbench(
      "plan configs/llama3.1-8b-lora-synthetic.yaml --format json --today 2026-12-04 "
      "--deadline 1m");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["recommended"].is_null());
  EXPECT_EQ(j["recommendation"],
            "none of the 11 offers qualifies: 11 may miss the deadline, 3 are spot offers whose "
            "reclaims are not priced");
}

}  // namespace
