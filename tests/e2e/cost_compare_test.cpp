// End to end: `ftbench cost`, `ftbench compare` and `ftbench catalog` on the fixture reports of
// the public H100 vs MI300X run (tests/fixtures/make_reference_reports.py; FIELD.md's figures).
// Needs only the torch-free `ftbench` executable.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Result = ftbench::e2e::Outcome;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CostCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ftbench-cost-e2e-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs ftbench from the source tree with `args` (shell-quoted by the caller).
  Result ftbench(const std::string& args) const {
    return ftbench::e2e::run_ftbench(args, dir_, "NO_COLOR=1");
  }

  json ftbench_json(const std::string& args) const {
    const Result r = ftbench(args + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }

  // A copy of a fixture with `edit` applied, in the test's folder.
  std::string edited(const std::string& fixture, const std::function<void(json&)>& edit,
                     const std::string& name = "") const {
    json j = json::parse(read_file(fs::path(FTBENCH_SOURCE_DIR) / kFixtures / fixture));
    edit(j);
    const fs::path out = dir_ / (name.empty() ? fixture : name);
    std::ofstream(out) << j.dump(2);
    return out.string();
  }

  static constexpr const char* kFixtures = "tests/fixtures/reports";
  fs::path dir_;
};

const std::string kH100 = "tests/fixtures/reports/h100-reference.json";
const std::string kMi300x = "tests/fixtures/reports/mi300x-reference.json";

// FIELD.md: 18 min at $2.97/h billed per minute -> $0.89, about $0.30 per epoch over 3 epochs.
TEST_F(CostCompare, H100ReferenceRunCosts89Cents) {
  const json j = ftbench_json("cost " + kH100 + " --offer reference-run/H100-SXM/on-demand");
  const json& c = j["chosen"]["cost"];
  EXPECT_DOUBLE_EQ(j["times"]["run_seconds"].get<double>(), 1080.0);
  EXPECT_DOUBLE_EQ(c["billed_seconds"].get<double>(), 1080.0);
  EXPECT_NEAR(c["billed_usd"].get<double>(), 0.891, 1e-12);
  EXPECT_NEAR(c["per_epoch_usd"].get<double>(), 0.297, 1e-12);
  EXPECT_NEAR(c["per_step_usd"].get<double>(), 0.891 / 375.0, 1e-15);
  // 3 min of 18 before the first step.
  EXPECT_NEAR(c["before_first_step_share"].get<double>(), 180.0 / 1080.0, 1e-15);
  EXPECT_NEAR(c["before_first_step_usd"].get<double>(), 0.1485, 1e-12);
  EXPECT_EQ(j["chosen"]["rate"]["billing"], "per-minute");
  EXPECT_EQ(j["chosen"]["rate"]["date"], "2026-09-13");
  EXPECT_EQ(j["gpu"], "H100-SXM");
}

// The summary's labels stand apart from their values, in every format and with colour: the
// value column starts after the longest label ("until the first step ended") and two spaces.
TEST_F(CostCompare, CostSummaryLabelsStandApartFromValues) {
  for (const char* color : {"never", "always"}) {
    SCOPED_TRACE(color);
    const Result r = ftbench("cost " + kH100 + " --rate 2.97 --color " + color);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("until the first step ended  $0.149 (16.7% of the run"), std::string::npos)
        << r.out;
    // Every line of the summary (up to the blank line) has its value at the same column.
    std::istringstream lines(r.out);
    std::string line;
    std::size_t column = std::string::npos;
    while (std::getline(lines, line) && !line.empty()) {
      const std::size_t gap = line.find("  ");
      ASSERT_NE(gap, std::string::npos) << "label runs into its value: " << line;
      const std::size_t value = line.find_first_not_of(' ', gap);
      if (column == std::string::npos) column = value;
      EXPECT_EQ(value, column) << line;
    }
  }
  const Result md = ftbench("cost " + kH100 + " --rate 2.97 --format markdown");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| until the first step ended | $0.149 (16.7% of the run"),
            std::string::npos)
      << md.out;
}

// FIELD.md: 34 min at $2.39/h -> $1.35, about $0.45 per epoch.
TEST_F(CostCompare, Mi300xReferenceRunCosts135) {
  const json j = ftbench_json("cost " + kMi300x + " --offer reference-run/MI300X");
  const json& c = j["chosen"]["cost"];
  EXPECT_DOUBLE_EQ(c["billed_seconds"].get<double>(), 2040.0);
  EXPECT_NEAR(c["billed_usd"].get<double>(), 34.0 / 60.0 * 2.39, 1e-12);           // $1.3543
  EXPECT_NEAR(c["per_epoch_usd"].get<double>(), 34.0 / 60.0 * 2.39 / 3.0, 1e-12);  // $0.4514
}

// FIELD.md: with hourly billing both round to one hour and the gap disappears (reverses).
TEST_F(CostCompare, HourlyBillingRoundsBothToOneHour) {
  const json a = ftbench_json("cost " + kH100 + " --rate 2.97 --billing per-hour");
  const json b = ftbench_json("cost " + kMi300x + " --rate 2.39 --billing per-hour");
  EXPECT_DOUBLE_EQ(a["chosen"]["cost"]["billed_seconds"].get<double>(), 3600.0);
  EXPECT_DOUBLE_EQ(a["chosen"]["cost"]["billed_usd"].get<double>(), 2.97);
  EXPECT_DOUBLE_EQ(b["chosen"]["cost"]["billed_usd"].get<double>(), 2.39);
  // The linear cost keeps the gap.
  EXPECT_NEAR(a["chosen"]["cost"]["linear_usd"].get<double>(), 0.891, 1e-12);
}

// Offers of the report's GPU, ordered by what this run would cost there: the 8-GPU cluster is
// cheap per GPU-hour but bills 8 GPUs for a 1-GPU run, and says so.
TEST_F(CostCompare, CostListsEveryOfferOfTheGpuByWhatTheRunWouldCost) {
  const json j = ftbench_json("cost " + kH100 + " --today 2026-11-30");
  const json& offers = j["offers"];
  ASSERT_GE(offers.size(), 5u);
  for (size_t i = 1; i < offers.size(); ++i) {
    EXPECT_LE(offers[i - 1]["cost"]["billed_usd"].get<double>(),
              offers[i]["cost"]["billed_usd"].get<double>());
  }
  bool saw_cluster = false;
  for (const json& o : offers) {
    if (o["rate"]["label"] == "example-8gpu-cluster/H100-SXM/spot") {
      saw_cluster = true;
      EXPECT_EQ(o["cost"]["gpus_billed"], 8);
      EXPECT_NE(o["flags"].get<std::string>().find("pays for 8 GPUs, uses 1"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_cluster);
  // Without --offer or --rate: of the on-demand offers whose billing is stated, the one that
  // costs this run least.
  EXPECT_EQ(j["chosen"]["rate"]["label"], "reference-run/H100-SXM/on-demand");
  EXPECT_TRUE(j["chosen"]["chosen"].get<bool>());
}

// Spot, reserved and marketplace prices are never taken without being asked for.
TEST_F(CostCompare, NoOnDemandOfferMeansNoSilentPrice) {
  const fs::path yaml = dir_ / "spot-only.yaml";
  std::ofstream(yaml) << "offers:\n"
                         "  - {provider: cheap, gpu: H200-SXM, tier: spot, usd_per_gpu_hour: 1.1,\n"
                         "     source: test}\n";
  const std::string h200 = edited(
      "h100-reference.json", [](json& j) { j["environment"]["device"]["name"] = "NVIDIA H200"; });
  const Result r = ftbench("cost " + h200 + " --catalog " + yaml.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no on-demand offer for device \"NVIDIA H200\" (it has 1 other offers; "
                       "cheapest for this run: --offer cheap/H200-SXM/spot)"),
            std::string::npos)
      << r.err;
  const Result c = ftbench("compare " + h200 + " " + h200 + " --catalog " + yaml.string());
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("no cost (give --rate or --offer per report"), std::string::npos) << c.out;
}

TEST_F(CostCompare, TheSameReportTwiceIsTheSameTimeAndCost) {
  const json j = ftbench_json("compare " + kH100 + " " + kH100);
  EXPECT_TRUE(j["fairness"]["differences"].empty());
  const std::string verdict = j["verdicts"][0];
  EXPECT_NE(verdict.find("same total time"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("Same time and cost"), std::string::npos) << verdict;
  EXPECT_EQ(verdict.find("would cost the same"), std::string::npos) << verdict;
  EXPECT_DOUBLE_EQ(j["reports"][1]["step_test"]["p_value"].get<double>(), 1.0);
}

// Where the spec file was and where the weights are stored do not make another job.
TEST_F(CostCompare, SpecAndCheckpointPathsDoNotMakeADifferentJob) {
  const std::string moved = edited("h100-reference.json", [](json& j) {
    j["spec"]["source_path"] = "/home/me/elsewhere/llama.yaml";
    j["spec"]["model"]["checkpoint"] = "/mnt/weights/llama";
  });
  const json j = ftbench_json("compare " + kH100 + " " + moved);
  EXPECT_TRUE(j["fairness"]["same_job"].get<bool>());
  ASSERT_EQ(j["fairness"]["differences"].size(), 1u);
  EXPECT_EQ(j["fairness"]["differences"][0]["what"], "spec.model.checkpoint");
  EXPECT_EQ(j["fairness"]["differences"][0]["severity"], "execution");
}

TEST_F(CostCompare, AnOfferForAnotherGpuIsWarnedAbout) {
  const Result r = ftbench("compare " + kH100 + " " + kMi300x +
                           " --offer reference-run/MI300X --offer reference-run/H100-SXM");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("warning: " + kH100 +
                       " ran on NVIDIA H100 80GB HBM3 (H100-SXM), but --offer reference-run/MI300X "
                       "prices MI300X"),
            std::string::npos)
      << r.err;
  const Result c = ftbench("cost " + kMi300x + " --offer reference-run/H100-SXM");
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_NE(c.err.find("warning: " + kMi300x + " ran on AMD Instinct MI300X (MI300X)"),
            std::string::npos)
      << c.err;
}

// The standard workload of FIELD.md: 22.5 M tokens at the measured steady throughput.
TEST_F(CostCompare, ProjectsALargerJob) {
  const json j =
      ftbench_json("cost " + kH100 + " --offer reference-run/H100-SXM --project-tokens 22.5M");
  const json& p = j["chosen"]["projection"];
  const double tps = j["times"]["steady_tokens_per_second"].get<double>();
  const double trained = j["times"]["trained_tokens"].get<double>();
  EXPECT_DOUBLE_EQ(p["tokens"].get<double>(), 22.5e6);
  EXPECT_NEAR(p["training_seconds"].get<double>(), 22.5e6 / tps, 1e-6);
  EXPECT_NEAR(p["fixed_seconds"].get<double>(), 1080.0 - trained / tps, 1e-6);
  const double billed = std::ceil(p["total_seconds"].get<double>() / 60.0) * 60.0;
  EXPECT_NEAR(p["billed_usd"].get<double>(), billed / 3600.0 * 2.97, 1e-9);
}

// FIELD.md: the H100 run is faster and cheaper; the MI300X would have to cost
// $0.891 / (34/60 h) = $1.572/h to match it.
TEST_F(CostCompare, CompareNamesTheFasterAndCheaperRunAndTheBreakEvenRate) {
  const json j = ftbench_json("compare " + kH100 + " " + kMi300x +
                              " --offer reference-run/H100-SXM --offer reference-run/MI300X");
  EXPECT_TRUE(j["fairness"]["same_job"].get<bool>());
  EXPECT_FALSE(j["fairness"]["same_spec_fingerprint"].get<bool>());
  EXPECT_TRUE(j["fairness"]["same_data_fingerprint"].get<bool>());
  bool micro_batch_listed = false;
  for (const json& d : j["fairness"]["differences"]) {
    if (d["what"] == "spec.train.micro_batch_size") {
      micro_batch_listed = true;
      EXPECT_EQ(d["severity"], "execution");
      EXPECT_EQ(d["values"], json::array({"4", "2"}));
    }
    EXPECT_NE(d["severity"], "job") << d.dump();
  }
  EXPECT_TRUE(micro_batch_listed);
  const json& b = j["reports"][1];
  EXPECT_NEAR(b["run_time_ratio"].get<double>(), 2040.0 / 1080.0, 1e-12);
  EXPECT_NEAR(b["cost_ratio"].get<double>(), (34.0 * 2.39) / (18.0 * 2.97), 1e-12);  // +52.0%
  EXPECT_NEAR(b["break_even_usd_per_gpu_hour"].get<double>(), 0.891 / (34.0 / 60.0), 1e-12);
  EXPECT_LT(b["step_test"]["p_value"].get<double>(), 1e-6);  // 370 vs 370 steps, 33 % apart
  EXPECT_EQ(b["step_test"]["n1"], 370);
  const std::string verdict = j["verdicts"][0];
  EXPECT_NE(verdict.find("A is faster and cheaper"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("$1.57/GPU-h"), std::string::npos) << verdict;
}

// The MI300X leg as ftbench runs it now: asked for the H100's 4 x 4 (so the same spec and
// fingerprint), ran out of memory in step 1 and went on at 2 x 8. The fallback is flagged even
// though the specs agree; the figures and costs are those of the by-hand rerun.
TEST_F(CostCompare, CompareFlagsAnOutOfMemoryFallback) {
  const json h100 = json::parse(read_file(fs::path(FTBENCH_SOURCE_DIR) / kH100));
  const std::string fell_back = edited("mi300x-reference.json", [&](json& j) {
    j["spec"]["train"] = h100["spec"]["train"];
    j["spec_fingerprint"] = h100["spec_fingerprint"];
    j["batching"] = {
        {"micro_batch_size", 2},
        {"grad_accum_steps", 8},
        {"fallbacks", json::array({{{"step", 1},
                                    {"from_micro_batch_size", 4},
                                    {"from_grad_accum_steps", 4},
                                    {"to_micro_batch_size", 2},
                                    {"to_grad_accum_steps", 8},
                                    {"seconds_lost", 46.5},
                                    {"error", "HIP out of memory. Tried to allocate 3.91 GiB"}}})}};
  });
  // The H100 leg as a 1.2 report: it records that it never ran out of memory.
  const std::string h100_now = edited("h100-reference.json", [](json& j) {
    j["batching"] = {
        {"micro_batch_size", 4}, {"grad_accum_steps", 4}, {"fallbacks", json::array()}};
  });
  const std::string args = "compare " + h100_now + " " + fell_back +
                           " --offer reference-run/H100-SXM --offer reference-run/MI300X";
  const Result table = ftbench(args);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("fair: same job run differently"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("[execution] out-of-memory fallback: A: none | B: 4x4 -> 2x8 at step "
                           "1 (46.5 s lost) — ran out of memory"),
            std::string::npos)
      << table.out;
  EXPECT_EQ(table.out.find("spec.train.micro_batch_size"), std::string::npos) << table.out;
  const json j = ftbench_json(args);
  EXPECT_TRUE(j["fairness"]["same_job"].get<bool>());
  EXPECT_TRUE(j["fairness"]["same_spec_fingerprint"].get<bool>());
  EXPECT_TRUE(j["fairness"]["fell_back"].get<bool>());
  // The golden figures are untouched by the flag.
  EXPECT_NEAR(j["reports"][1]["cost_ratio"].get<double>(), (34.0 * 2.39) / (18.0 * 2.97), 1e-12);
  // Against the 1.1 fixture, which did not record it either way.
  const Result old = ftbench("compare " + kH100 + " " + fell_back);
  EXPECT_NE(old.out.find("out-of-memory fallback: A: not recorded | B: 4x4 -> 2x8"),
            std::string::npos)
      << old.out;
  const json plain = ftbench_json("compare " + kH100 + " " + kMi300x);
  EXPECT_FALSE(plain["fairness"]["fell_back"].get<bool>());
}

TEST_F(CostCompare, CompareTableMarkdownAndCsv) {
  const std::string args = "compare " + kH100 + " " + kMi300x +
                           " --offer reference-run/H100-SXM --offer reference-run/MI300X";
  const Result table = ftbench(args);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("fair: same job run differently"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("$0.891"), std::string::npos);
  EXPECT_NE(table.out.find("$1.35"), std::string::npos);
  EXPECT_NE(table.out.find("+52.0%"), std::string::npos);
  EXPECT_EQ(table.out.find("\033["), std::string::npos);  // no colour when not a terminal
  const Result md = ftbench(args + " --format markdown");
  EXPECT_EQ(md.exit_code, 0);
  EXPECT_NE(md.out.find("| report |"), std::string::npos) << md.out;
  const Result csv = ftbench(args + " --format csv");
  EXPECT_EQ(csv.exit_code, 0);
  EXPECT_EQ(csv.out.rfind("label,report,run_name,", 0), 0u) << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3);
}

TEST_F(CostCompare, CompareRefusesADifferentJobUnlessAllowed) {
  const std::string other =
      edited("mi300x-reference.json", [](json& j) { j["spec"]["lora"]["rank"] = 8; });
  const Result refused = ftbench("compare " + kH100 + " " + other);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("different jobs"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("[job] spec.lora.rank: A: 16 | B: 8"), std::string::npos)
      << refused.err;
  // The labels are the files, named.
  EXPECT_NE(refused.err.find("A: " + kH100 + "\n  B: " + other + "\n"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--allow-different"), std::string::npos);
  const Result allowed = ftbench("compare " + kH100 + " " + other + " --allow-different");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_NE(allowed.out.find("NOT the same job"), std::string::npos);
}

TEST_F(CostCompare, CatalogListsOffersCheapestFirstAndFlagsAge) {
  const json offers = ftbench_json("catalog --gpu H100 --today 2026-11-30 --max-age-days 30");
  ASSERT_GE(offers.size(), 5u);
  for (size_t i = 1; i < offers.size(); ++i) {
    EXPECT_LE(offers[i - 1]["usd_per_gpu_hour"].get<double>(),
              offers[i]["usd_per_gpu_hour"].get<double>());
  }
  bool saw_reference = false;
  for (const json& o : offers) {
    EXPECT_EQ(o["flags"].get<std::string>().find("dated after today"), std::string::npos);
    EXPECT_EQ(o["gpu"], "H100-SXM");
    if (o["offer"] == "reference-run/H100-SXM/on-demand") {
      saw_reference = true;
      EXPECT_EQ(o["age_days"], 78);
      EXPECT_EQ(o["flags"], "stale (78 days)");
    }
    if (o["date"].is_null()) {
      EXPECT_NE(o["flags"].get<std::string>().find("undated"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_reference);

  // A price dated after --today is flagged too.
  // --gpus --gpu: that GPU's datasheet alone, found by an alias as offers are.
  const json one = ftbench_json("catalog --gpus --gpu H100");
  ASSERT_EQ(one.size(), 1u) << one.dump(2);
  EXPECT_EQ(one[0]["name"], "H100-SXM");
  const json early = ftbench_json("catalog --gpu H100 --provider Reference-Run --today 2026-09-01");
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0]["age_days"], -12);
  EXPECT_EQ(early[0]["flags"], "dated after today");
}

TEST_F(CostCompare, BadInputIsExitCodeTwoWithAClearMessage) {
  struct Case {
    std::string args;
    std::string message;
  };
  const std::string truncated = (dir_ / "truncated.json").string();
  {
    const std::string text = read_file(fs::path(FTBENCH_SOURCE_DIR) / kH100);
    std::ofstream(truncated) << text.substr(0, text.size() / 2);
  }
  const std::string not_json = (dir_ / "notes.txt").string();
  std::ofstream(not_json) << "hello";
  const std::string v2 = edited(
      "h100-reference.json", [](json& j) { j["schema"] = "ftbench.report/2"; }, "v2.json");
  const std::string no_steps_field = edited(
      "h100-reference.json", [](json& j) { j.erase("steps"); }, "no-steps.json");
  const Case cases[] = {
      {"cost /nonexistent.json --rate 2", "/nonexistent.json: cannot read"},
      {"cost " + truncated + " --rate 2", truncated + ": not valid JSON"},
      {"cost " + not_json + " --rate 2", not_json + ": not valid JSON"},
      {"cost " + v2 + " --rate 2", "unsupported report schema \"ftbench.report/2\""},
      {"cost " + no_steps_field + " --rate 2", "missing required field \"steps\""},
      {"cost " + kH100 + " --rate 0",
       "--rate: expected a price in USD per GPU-hour from 0.0001 to 1000000"},
      {"cost " + kH100 + " --rate -1",
       "--rate: expected a price in USD per GPU-hour from 0.0001 to 1000000"},
      // 300-digit dollar figures (a review of issue 14).
      {"cost " + kH100 + " --rate 1e-300",
       "--rate: expected a price in USD per GPU-hour from 0.0001 to 1000000, found 1e-300"},
      {"cost " + kH100 + " --rate 2 --billing per-minit", "did you mean \"per-minute\"?"},
      {"cost " + kH100 + " --offer referense-run/H100-SXM", "did you mean \"reference-run\"?"},
      {"cost " + kH100 + " --offer reference-run/H10", "H10"},
      {"cost " + kH100 + " --rate 2 --format jsn", "did you mean \"json\"?"},
      {"cost " + kH100 + " --rate 2 --project-tokens -5", "--project-tokens: expected a positive"},
      {"compare " + kH100 + " " + truncated, truncated + ": not valid JSON"},
      {"compare " + kH100 + " " + kMi300x + " --rate 2 --rate 3 --rate 4", "--rate: give one"},
      {"catalog --gpu H1OO", "unknown GPU \"H1OO\"; did you mean \"H100\"?"},
      // --gpus lists GPUs: --gpu picks one, the offer filters have nothing to filter.
      {"catalog --gpus --gpu H1OO", "unknown GPU \"H1OO\"; did you mean \"H100\"?"},
      {"catalog --gpus --provider aws", "--provider filters offers; --gpus lists GPUs"},
      {"catalog --gpus --tier spot", "--tier filters offers; --gpus lists GPUs"},
      {"catalog --catalog /nonexistent.yaml", "/nonexistent.yaml"},
      {"catalog --catalog /tmp", "/tmp: is a folder, not a catalog file"},
      {"catalog --max-age-days -1", "--max-age-days: expected a number of days >= 0, found -1"},
      {"catalog --tier spto",
       "--tier: expected one of on-demand, spot, reserved, marketplace, "
       "found \"spto\"; did you mean \"spot\"?"},
      {"cost " + kH100 + " --gpus 0", "--gpus"},
      {"cost " + kH100 + " --rate 1e308", "from 0.0001 to 1000000, found 1e+308"},
      {"cost " + kH100 + " --rate 2 --project-tokens 1e30", "up to 10^15"},
      {"compare " + kH100 + " " + kMi300x + " --loss-window 0", "--loss-window"},
      // As a catalog's min_billed_seconds: at most 366 days.
      {"cost " + kH100 + " --rate 2 --min-seconds 31622401",
       "--min-seconds: expected a whole number from 0 to 31622400, found 31622401"},
      {"compare " + kH100 + " " + kMi300x + " --rate 2 --min-seconds 9223372036854775807",
       "--min-seconds: expected a whole number from 0 to 31622400, found 9223372036854775807"},
  };
  for (const Case& c : cases) {
    const Result r = ftbench(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
}

// A run of 0 s (every phase 0 s long) is a report ftbench reads; compare against it prints
// no infinite ratio ("took infx as long") and does not fail on its break-even rate.
TEST_F(CostCompare, AZeroLengthRunGivesNoInfiniteRatio) {
  const std::string zero = edited("h100-reference.json", [](json& j) {
    for (json& p : j["timing"]["phases"]) p["start_seconds"] = p["seconds"] = 0.0;
    j["timing"]["t0_before_process_seconds"] = 0.0;
    j["timing"]["time_to_first_step_seconds"] = 0.0;
    for (json& s : j["steps"]) s["wall_seconds"] = s["data_wait_seconds"] = 0.0;
    // A summary of no time, as one over such steps is (the reader checks it against them).
    for (auto& [key, value] : j["summary"]["step_seconds"].items()) {
      if (key != "count") value = 0.0;
    }
    j["summary"]["tokens_per_second"]["real"] = 0.0;
    j["summary"]["tokens_per_second"]["padded"] = 0.0;
    j["summary"]["data_wait_fraction"] = 0.0;
    for (json& e : j["summary"]["mfu"]["entries"]) {
      e["achieved_tflops"] = 0.0;
      if (e["mfu"].is_number()) e["mfu"] = 0.0;
    }
  });
  for (const std::string& args : {"compare " + zero + " " + kMi300x + " --rate 2",
                                  "compare " + kMi300x + " " + zero + " --rate 2"}) {
    const Result r = ftbench(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    EXPECT_EQ(r.out.find("inf"), std::string::npos) << args << "\n" << r.out;
  }
}

// A CPU report has no catalog GPU: a price must be given.
TEST_F(CostCompare, ReportWithoutACatalogGpuNeedsARate) {
  const std::string cpu = edited("h100-reference.json", [](json& j) {
    j["environment"]["device"]["name"] = "AMD EPYC";
    j["environment"]["device"]["backend"] = "cpu";
  });
  const Result r = ftbench("cost " + cpu);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no price: the catalog has no on-demand offer for device \"AMD EPYC\""),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ftbench("cost " + cpu + " --rate 0.5").exit_code, 0);
}

// A SkyPilot catalog CSV: per-instance prices become per-GPU offers (on-demand and spot), and a
// 1-GPU run on an 8-GPU instance pays for 8 GPUs.
TEST_F(CostCompare, SkyPilotCsvOffersPriceARun) {
  const fs::path csv = dir_ / "vms.csv";
  std::ofstream(csv)
      << "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,"
         "SpotPrice\n"
         "p5.48xlarge,H100,8,192,2048,98.32,us-east-1,\"{'Gpus': [{'Name': 'H100', "
         "'Manufacturer': 'NVIDIA', 'Count': 8}]}\",39.5\n"
         "m5.large,,,2,8,0.096,us-east-1,,0.04\n";
  const json offers =
      ftbench_json("catalog --gpu H100 --provider aws --catalog aws=" + csv.string());
  ASSERT_EQ(offers.size(), 2u);
  EXPECT_EQ(offers[0]["offer"], "aws/H100-SXM/spot (us-east-1, p5.48xlarge)");
  EXPECT_DOUBLE_EQ(offers[0]["usd_per_gpu_hour"].get<double>(), 39.5 / 8);
  EXPECT_EQ(offers[0]["price_basis"], "per-instance");
  EXPECT_DOUBLE_EQ(offers[1]["usd_per_gpu_hour"].get<double>(), 98.32 / 8);
  const json cost = ftbench_json("cost " + kH100 + " --catalog aws=" + csv.string() +
                                 " --offer aws/H100/on-demand");
  EXPECT_EQ(cost["chosen"]["cost"]["gpus_billed"], 8);
  EXPECT_NEAR(cost["chosen"]["cost"]["billed_usd"].get<double>(), 0.3 * 98.32, 1e-9);
}

// A user catalog with mistakes: every problem with file and line, exit 2, nothing on stdout.
TEST_F(CostCompare, BadCatalogFileListsEveryProblem) {
  const fs::path yaml = dir_ / "prices.yaml";
  std::ofstream(yaml) << "offers:\n"
                         "  - provider: mycloud\n"
                         "    gpu: H100\n"
                         "    tier: spto\n"
                         "    usd_per_gpu_hour: -2\n"
                         "    source: my quote\n"
                         "    date: 2026-02-30\n";
  const Result r = ftbench("catalog --catalog " + yaml.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  const std::string p = yaml.string();
  EXPECT_NE(r.err.find(p + ":4: offers[0].tier: expected one of on-demand, spot, reserved, "
                           "marketplace, found \"spto\"; did you mean \"spot\"?"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(p + ":5: offers[0].usd_per_gpu_hour: expected a finite number > 0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(p + ":7: offers[0].date: expected a calendar date YYYY-MM-DD, found "
                           "\"2026-02-30\""),
            std::string::npos)
      << r.err;
}

}  // namespace

namespace energy_e2e {

// The H100 fixture as a 1.6 report: 700 W for 800 s of its step loop, by the device's counter.
void add_energy(json& j) {
  j["schema"] = "ftbench.report/1.6";
  const double joules = 560000.0;
  const int64_t tokens = 2122336;
  j["energy"] = {{"reason", ""},
                 {"method", "energy_counter"},
                 {"source", "nvmlDeviceGetTotalEnergyConsumption"},
                 {"segment", 1},
                 {"interval_seconds", 0.1},
                 {"window_start_seconds", 100.0},
                 {"window_seconds", 800.0},
                 {"steps", 375},
                 {"tokens", tokens},
                 {"joules", joules},
                 {"joules_per_step", joules / 375.0},
                 {"joules_per_million_tokens", joules / double(tokens) * 1e6},
                 {"mean_watts", 700.0},
                 {"peak_watts", 712.5},
                 {"sampled_seconds", 800.0},
                 {"coverage", 1.0},
                 {"sample_count", 8001},
                 {"devices", json::array({{{"index", 0},
                                           {"pci_bus_id", "0000:1B:00.0"},
                                           {"method", "energy_counter"},
                                           {"source", "nvmlDeviceGetTotalEnergyConsumption"},
                                           {"library", "libnvidia-ml.so.1"},
                                           {"joules", joules},
                                           {"sampled_seconds", 800.0},
                                           {"mean_watts", 700.0},
                                           {"peak_watts", 712.5},
                                           {"samples", 8001},
                                           {"failed_reads", 0},
                                           {"counter_resets", 0}}})}};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The last `n` comma-separated fields of a CSV line whose last fields hold no comma or quote.
std::vector<std::string> last_fields(const std::string& line, std::size_t n) {
  std::vector<std::string> out;
  std::size_t end = line.size();
  while (out.size() < n) {
    const std::size_t comma = line.rfind(',', end == 0 ? 0 : end - 1);
    if (comma == std::string::npos || end == 0) break;
    out.insert(out.begin(), line.substr(comma + 1, end - comma - 1));
    end = comma;
  }
  return out;
}

}  // namespace energy_e2e

// 560,000 J = 0.15556 kWh; at $0.15/kWh $0.023333 a run, a third of it an epoch.
TEST_F(CostCompare, EnergyPriceAddsTheMeasuredEnergysCost) {
  const std::string h100 = edited("h100-reference.json", energy_e2e::add_energy);
  const json j = ftbench_json("cost " + h100 + " --rate 2.97 --energy-price 0.15");
  const json& e = j["energy"];
  EXPECT_EQ(e["usd_per_kwh"], 0.15);
  EXPECT_EQ(e["reason"], "");
  EXPECT_EQ(e["method"], "energy_counter");
  EXPECT_DOUBLE_EQ(e["kwh"].get<double>(), 560000.0 / 3.6e6);
  EXPECT_DOUBLE_EQ(e["usd"].get<double>(), 560000.0 / 3.6e6 * 0.15);
  EXPECT_DOUBLE_EQ(e["epochs"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(e["per_epoch_usd"].get<double>(), 560000.0 / 3.6e6 * 0.15 / 3.0);
  EXPECT_DOUBLE_EQ(e["per_step_usd"].get<double>(), 560000.0 / 3.6e6 * 0.15 / 375.0);
  EXPECT_DOUBLE_EQ(e["per_million_tokens_usd"].get<double>(),
                   560000.0 / 3.6e6 * 0.15 / 2122336.0 * 1e6);
  EXPECT_EQ(e["devices"], 1);
  // The rental's figures are untouched.
  EXPECT_NEAR(j["chosen"]["cost"]["billed_usd"].get<double>(), 1080.0 / 3600.0 * 2.97, 1e-12);

  const Result text = ftbench("cost " + h100 + " --rate 2.97 --energy-price 0.15");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("0.1556 kWh (energy_counter) at $0.150/kWh: $0.0233 (step loop, 1 "
                          "device, 100.0% sampled)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("energy per epoch"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("energy per 1M trained tokens"), std::string::npos) << text.out;
  // CSV: the same figures at the end of every offer's row, empty without the flag.
  const Result csv = ftbench("cost " + h100 + " --rate 2.97 --energy-price 0.15 --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const std::vector<std::string> lines = energy_e2e::lines(csv.out);
  ASSERT_GE(lines.size(), 2u) << csv.out;
  EXPECT_EQ(energy_e2e::last_fields(lines[0], 6),
            (std::vector<std::string>{"energy_usd_per_kwh", "energy_kwh", "energy_usd",
                                      "energy_per_epoch_usd", "energy_per_step_usd",
                                      "energy_per_million_tokens_usd"}));
  for (std::size_t i = 1; i < lines.size(); ++i) {  // the chosen offer, then every other
    const std::vector<std::string> row = energy_e2e::last_fields(lines[i], 6);
    ASSERT_EQ(row.size(), 6u) << lines[i];
    EXPECT_DOUBLE_EQ(std::stod(row[0]), 0.15);
    EXPECT_NEAR(std::stod(row[1]), 560000.0 / 3.6e6, 1e-9);
    EXPECT_NEAR(std::stod(row[2]), 560000.0 / 3.6e6 * 0.15, 1e-9);
    EXPECT_NEAR(std::stod(row[3]), 560000.0 / 3.6e6 * 0.15 / 3.0, 1e-9);
    EXPECT_NEAR(std::stod(row[4]), 560000.0 / 3.6e6 * 0.15 / 375.0, 1e-9);
    EXPECT_NEAR(std::stod(row[5]), 560000.0 / 3.6e6 * 0.15 / 2122336.0 * 1e6, 1e-9);
  }
  const std::vector<std::string> no_price =
      energy_e2e::lines(ftbench("cost " + h100 + " --rate 2.97 --format csv").out);
  ASSERT_EQ(no_price.size(), lines.size());
  for (std::size_t i = 1; i < no_price.size(); ++i) {
    EXPECT_EQ(energy_e2e::last_fields(no_price[i], 6), std::vector<std::string>(6)) << no_price[i];
  }
  // Without the flag: no energy rows, JSON energy null.
  EXPECT_EQ(ftbench("cost " + h100 + " --rate 2.97").out.find("GPU board energy"),
            std::string::npos);
  EXPECT_TRUE(ftbench_json("cost " + h100 + " --rate 2.97")["energy"].is_null());
}

// The reference H100 run (1080 s, 180 s to its first step, no checkpoints) at 2 reclaims an
// hour: a reclaim starts it again, 1800 (e^0.6 - 1) s expected.
TEST_F(CostCompare, PreemptionsPerHourPriceTheReclaimsOfASpotRun) {
  const json j = ftbench_json("cost " + kH100 + " --rate 2.97 --preemptions-per-hour 2");
  const json& s = j["spot_risk"];
  EXPECT_EQ(s["preemptions_per_hour"], 2.0);
  EXPECT_EQ(s["mean_seconds_between"], 1800.0);
  EXPECT_DOUBLE_EQ(s["work_seconds"].get<double>(), 1080.0);
  EXPECT_EQ(s["work_from"], "the run's time");
  EXPECT_DOUBLE_EQ(s["p_at_least_one"].get<double>(), 0.45118836390597356);
  EXPECT_TRUE(s["checkpoint_interval_seconds"].is_null());
  EXPECT_EQ(s["interval_from"], "no checkpoints: a reclaim restarts the job");
  EXPECT_DOUBLE_EQ(s["restart_seconds"].get<double>(), 180.0);
  EXPECT_DOUBLE_EQ(s["restart_counted_seconds"].get<double>(), 0.0);  // in the work run again
  EXPECT_DOUBLE_EQ(s["segment_seconds"].get<double>(), 1080.0);
  EXPECT_DOUBLE_EQ(s["expected_seconds"].get<double>(), 1479.813840702916);
  EXPECT_DOUBLE_EQ(s["expected_interruptions"].get<double>(), 0.8221188003905089);
  EXPECT_DOUBLE_EQ(s["expected_usd"].get<double>(), 1479.813840702916 * 2.97 / 3600.0);
  EXPECT_DOUBLE_EQ(s["without_reclaims_usd"].get<double>(), 1080.0 * 2.97 / 3600.0);
  EXPECT_TRUE(s["optimal_interval_seconds"].is_null());  // no save to time
  // A given rate is not on demand: the catalog's on-demand price for the run beside it.
  EXPECT_NEAR(s["on_demand_usd"].get<double>(), 18.0 * 2.97 / 60.0, 1e-12);  // per-minute

  const Result text = ftbench("cost " + kH100 + " --rate 2.97 --preemptions-per-hour 2");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2 an hour: one every 30.0 min on average; chance of at least one in "
                          "18.0 min: 45.1%"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("24.7 min (+37.0% over 18.0 min): 0.82 reclaims expected"),
            std::string::npos)
      << text.out;
  // Without the flag: no spot rows, JSON null; a bad rate is refused naming the flag.
  EXPECT_EQ(ftbench("cost " + kH100 + " --rate 2.97").out.find("spot reclaims"), std::string::npos);
  EXPECT_TRUE(ftbench_json("cost " + kH100 + " --rate 2.97")["spot_risk"].is_null());
  for (const char* bad : {"0", "-1", "5000", "nan"}) {
    const Result r =
        ftbench("cost " + kH100 + " --rate 2.97 --preemptions-per-hour " + std::string(bad));
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("--preemptions-per-hour"), std::string::npos) << bad << "\n" << r.err;
  }
}

TEST_F(CostCompare, EnergyPriceOfAReportWithoutEnergySaysWhy) {
  const Result old = ftbench("cost " + kH100 + " --rate 2.97 --energy-price 0.15");
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_NE(old.out.find("n/a: not recorded (report schema 1.5 or older)"), std::string::npos)
      << old.out;
  const std::string cpu = edited("h100-reference.json", [](json& j) {
    energy_e2e::add_energy(j);
    json& e = j["energy"];
    for (const char* k : {"joules", "joules_per_step", "joules_per_million_tokens", "mean_watts",
                          "peak_watts", "sampled_seconds", "coverage"}) {
      e[k] = nullptr;
    }
    e["reason"] = "cuda device 0 power: libnvidia-ml.so.1: cannot open shared object file";
    e["method"] = "";
    e["source"] = "";
    e["sample_count"] = 0;
    e["devices"] = json::array();
  });
  const json j = ftbench_json("cost " + cpu + " --rate 2.97 --energy-price 0.15");
  EXPECT_EQ(j["energy"]["reason"],
            "cuda device 0 power: libnvidia-ml.so.1: cannot open shared object file");
  EXPECT_TRUE(j["energy"]["usd"].is_null());
}

TEST_F(CostCompare, EnergyPriceIsValidated) {
  // An empty value is no price, not "no flag": refused like the others.
  for (const char* bad : {"0", "-1", "nan", "inf", "15", "1e308", "0.00015", "1e-300", "''"}) {
    const Result r = ftbench("cost " + kH100 + " --rate 2.97 --energy-price " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.err.find("--energy-price"), std::string::npos) << bad << ": " << r.err;
  }
  const Result cents = ftbench("cost " + kH100 + " --rate 2.97 --energy-price 15");
  EXPECT_NE(cents.err.find("--energy-price: expected a price in USD per kWh between 0.001 and "
                           "10, found 15 (a price in cents is 100 times too high)"),
            std::string::npos)
      << cents.err;
  const Result per_wh = ftbench("cost " + kH100 + " --rate 2.97 --energy-price 0.00015");
  EXPECT_NE(per_wh.err.find("--energy-price: expected a price in USD per kWh between 0.001 and "
                            "10, found 0.00015 (a price per Wh is 1000 times too low)"),
            std::string::npos)
      << per_wh.err;
  EXPECT_EQ(ftbench("cost " + kH100 + " --rate 2.97 --energy-price 0.001").exit_code, 0);
  // No hint where the slip it names would not explain the figure: 1500 cents is still $15.
  for (const char* far : {"1500", "1e-9"}) {
    const Result r = ftbench("cost " + kH100 + " --rate 2.97 --energy-price " + far);
    EXPECT_NE(r.err.find("between 0.001 and 10, found " +
                         std::string(far == std::string("1500") ? "1500" : "1e-09") + "\n"),
              std::string::npos)
        << r.err;
  }
  const Result word = ftbench("cost " + kH100 + " --rate 2.97 --energy-price cheap");
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.err.find("--energy-price"), std::string::npos) << word.err;
}

TEST_F(CostCompare, CompareShowsEnergyAndSaysWhenOneSideHasNone) {
  const std::string h100 = edited("h100-reference.json", energy_e2e::add_energy);
  const std::string args = "compare " + h100 + " " + kMi300x;
  const Result table = ftbench(args);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("GPU board energy"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("560 kJ (energy_counter)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("n/a: not recorded (report schema 1.5 or older)"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("[execution] energy figures: A: energy_counter "
                           "(nvmlDeviceGetTotalEnergyConsumption) | B: none: not recorded"),
            std::string::npos)
      << table.out;
  const json j = ftbench_json(args);
  EXPECT_DOUBLE_EQ(j["reports"][0]["energy"]["joules"].get<double>(), 560000.0);
  EXPECT_DOUBLE_EQ(j["reports"][0]["energy"]["mean_watts"].get<double>(), 700.0);
  EXPECT_TRUE(j["reports"][1]["energy"]["joules"].is_null());
  EXPECT_TRUE(j["reports"][1]["energy_per_token_ratio"].is_null());
  // Both measured: the ratio of energy per token, and no fairness line.
  const std::string mi300x = edited(
      "mi300x-reference.json",
      [](json& m) {
        energy_e2e::add_energy(m);
        m["energy"]["joules"] = 840000.0;
        m["energy"]["joules_per_step"] = 840000.0 / 375.0;
        m["energy"]["joules_per_million_tokens"] = 840000.0 / 2122336.0 * 1e6;
        m["energy"]["devices"][0]["joules"] = 840000.0;
        m["energy"]["mean_watts"] = 1050.0;
        m["energy"]["peak_watts"] = 1100.0;
        m["energy"]["devices"][0]["mean_watts"] = 1050.0;
        m["energy"]["devices"][0]["peak_watts"] = 1100.0;
      },
      "mi300x-energy.json");
  const json both = ftbench_json("compare " + h100 + " " + mi300x);
  EXPECT_DOUBLE_EQ(both["reports"][1]["energy_per_token_ratio"].get<double>(), 1.5);
  // CSV: the same figures in columns of their own, empty where a report has none.
  const Result csv = ftbench("compare " + h100 + " " + mi300x + " " + kMi300x + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const std::vector<std::string> lines = energy_e2e::lines(csv.out);
  ASSERT_EQ(lines.size(), 4u) << csv.out;
  EXPECT_EQ(energy_e2e::last_fields(lines[0], 7),
            (std::vector<std::string>{"energy_joules", "energy_joules_per_million_tokens",
                                      "energy_mean_watts", "energy_method", "energy_scope",
                                      "energy_reason", "energy_per_token_ratio"}));
  const std::vector<std::string> b = energy_e2e::last_fields(lines[2], 7);
  ASSERT_EQ(b.size(), 7u) << lines[2];
  EXPECT_DOUBLE_EQ(std::stod(b[0]), 840000.0);
  EXPECT_NEAR(std::stod(b[1]), 840000.0 / 2122336.0 * 1e6, 1e-6);
  EXPECT_DOUBLE_EQ(std::stod(b[2]), 1050.0);
  EXPECT_EQ(b[3], "energy_counter");
  EXPECT_EQ(b[4], "");
  EXPECT_EQ(b[5], "");
  EXPECT_DOUBLE_EQ(std::stod(b[6]), 1.5);
  EXPECT_EQ(energy_e2e::last_fields(lines[3], 7),
            (std::vector<std::string>{"", "", "", "", "",
                                      "not recorded (report schema 1.5 or older)", ""}));
  EXPECT_EQ(ftbench("compare " + h100 + " " + mi300x).out.find("energy figures"),
            std::string::npos);
}
