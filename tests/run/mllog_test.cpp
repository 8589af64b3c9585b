// The event log's lines as mllog writes them (exact text), and the live line's dollars.
#include "ftbench/run/mllog.h"
#include "ftbench/run/running_cost.h"

#include <cmath>
#include <limits>

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
