// The event log's lines as mllog writes them (exact text), and the live line's dollars.
#include "run/mllog.h"
#include "run/running_cost.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::run {
namespace {

TEST(MlLogLine, KeysInMllogsOrderWithPythonsSpacing) {
  EXPECT_EQ(mllog_line(1745912296016, MlEvent::kStart, "block_start", nullptr,
                       {{"file", "ftbench"}, {"lineno", 28}, {"samples_count", 0}}),
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745912296016, \"event_type\": "
            "\"INTERVAL_START\", \"key\": \"block_start\", \"value\": null, \"metadata\": "
            "{\"file\": \"ftbench\", \"lineno\": 28, \"samples_count\": 0}}\n");
  // Strings keep ", " and ": " as written; non-ASCII is escaped as Python's ensure_ascii does.
  EXPECT_EQ(
      mllog_line(1, MlEvent::kPoint, "submission_platform", "1x\xC3\xA9, a: b",
                 nlohmann::ordered_json::object()),
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", "
      "\"key\": \"submission_platform\", \"value\": \"1x\\u00e9, a: b\", \"metadata\": {}}\n");
  // No nan: Python's json reads none.
  EXPECT_NE(mllog_line(2, MlEvent::kEnd, "eval_stop", std::numeric_limits<double>::quiet_NaN(),
                       nlohmann::ordered_json::object())
                .find("\"event_type\": \"INTERVAL_END\", \"key\": \"eval_stop\", \"value\": null"),
            std::string::npos);
}

// Every line's time_ms, in the order of the file, is at or after the line before: MLPerf's
// tools read a log as a timeline. cache_clear, written when the log opens (after the spec is
// read), says what held since the start, so it is stamped at t0 with init_start, not later.
TEST(MlLog, TimesNeverGoBackwardsFromTheFirstLine) {
  namespace fs = std::filesystem;
  const fs::path path =
      fs::temp_directory_path() /
      ("ftbench-mllog-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       ".mllog");
  fs::remove(path);
  {
    // The process started at 1,000 s after the epoch; an external t0 1.5 s before it.
    MlLog log(path.string(), /*force=*/false, /*append=*/false, 1000.0);
    MlLogJob job;
    job.global_batch_size = 8;
    log.start_init(/*t0_seconds=*/-1.5, /*now_seconds=*/0.25, job);
    log.start_run(0.5, "1xCPU");
    log.start_training(0.75, 1, 1, 64, 16, 8);
    log.step_ended(1.0, 8, 1, /*epoch_ended=*/true, /*more=*/false);
    log.stop_run(1.25, 8, 1, /*completed=*/true);
  }
  std::ifstream in(path);
  std::vector<std::pair<std::string, int64_t>> lines;  // key, time_ms
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line.substr(std::string(":::MLLOG ").size()));
    lines.emplace_back(j.at("key").get<std::string>(), j.at("time_ms").get<int64_t>());
  }
  fs::remove(path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], std::make_pair(std::string("cache_clear"), int64_t{998'500}));
  EXPECT_EQ(lines[1], std::make_pair(std::string("init_start"), int64_t{998'500}));
  EXPECT_EQ(lines[2], std::make_pair(std::string("submission_benchmark"), int64_t{1'000'250}));
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_GE(lines[i].second, lines[i - 1].second)
        << "line " << i + 1 << " (" << lines[i].first << ") at " << lines[i].second
        << " ms, before line " << i << " (" << lines[i - 1].first << ") at " << lines[i - 1].second
        << " ms";
  }
  EXPECT_EQ(lines.back(), std::make_pair(std::string("run_stop"), int64_t{1'001'250}));
}

TEST(RunningCost, SoFarIsBilledAsStoppingNowAndTheEndAddsTheEta) {
  cost::Rate r;
  r.usd_per_gpu_hour = 2.97;
  r.billing = cost::Billing::kPerMinute;
  // 61 s so far is billed as 2 minutes; with 60 s to go, 121 s is 3 minutes.
  const RunningCost c = running_cost(r, 1, 61.0, 60.0);
  EXPECT_DOUBLE_EQ(c.so_far_usd, 2.97 * 120.0 / 3600.0);
  EXPECT_DOUBLE_EQ(c.projected_usd, 2.97 * 180.0 / 3600.0);
  EXPECT_EQ(running_cost_text(c), "$0.10 so far, ~$0.15 at the end");
  // A 1-GPU run on an 8-GPU instance pays for 8.
  r.gpus_per_instance = 8;
  EXPECT_DOUBLE_EQ(running_cost(r, 1, 60.0, 0.0).so_far_usd, 8 * 2.97 / 60.0);
  EXPECT_EQ(running_cost_text({123.4, 1234.5}), "$123 so far, ~$1234 at the end");
}

}  // namespace
}  // namespace ftbench::run
