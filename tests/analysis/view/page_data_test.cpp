// The HTML report's figures (analysis/view/page_data.h) with exact values: histogram bins, the
// phases on the timeline from t0, memory by phase, the warm-up marks, each offer's bill split at
// the first step, and the comparison. The two fixture reports are the reference run of FIELD.md.
#include "analysis/view/page_data.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "economics/cost/catalog.h"
#include "report/report_io.h"

namespace ftbench::view {
namespace {

const std::string kFixtures = std::string(FTBENCH_SOURCE_DIR) + "/tests/fixtures/reports/";

TEST(Histogram, BinsAreEqualWidthAndTheLargestSampleIsInTheLastBin) {
  const Histogram h = histogram({1.0, 2.0, 2.0, 3.0, 5.0}, 4);
  EXPECT_EQ(h.edges, (std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0}));
  // 2.0 lies on an inner edge: the bin above it; 5.0 on the last edge: the last bin.
  EXPECT_EQ(h.counts, (std::vector<int64_t>{1, 2, 1, 1}));
}

TEST(Histogram, EqualSamplesMakeOneBinAndNoSamplesNone) {
  const Histogram one = histogram({0.25, 0.25, 0.25}, 30);
  EXPECT_EQ(one.edges, (std::vector<double>{0.25, 0.25}));
  EXPECT_EQ(one.counts, (std::vector<int64_t>{3}));
  EXPECT_TRUE(histogram({}, 30).counts.empty());
}

TEST(Histogram, BinsFollowTheSampleCount) {
  // The least k with k^3 >= 8n, at most 30 and at most n.
  const std::vector<std::pair<std::size_t, int64_t>> expected = {
      {0, 0},     {1, 1},     {2, 2},     {3, 3},     {6, 4},     {8, 4},
      {9, 5},     {27, 6},    {100, 10},  {125, 10},  {126, 11},  {370, 15},
      {1000, 20}, {1001, 21}, {3374, 30}, {3375, 30}, {22500, 30}};
  for (const auto& [n, bins] : expected) EXPECT_EQ(histogram_bins(n), bins) << n << " samples";
}

TEST(ByteAxis, TicksAreRoundMultiplesOfOneBinaryUnit) {
  struct Case {
    double largest;
    const char* unit;
    double step_units;
    double top_units;
  };
  constexpr double kGiB = 1073741824.0;
  const std::vector<Case> cases = {
      {0.0, "B", 1, 1},
      {1.0, "B", 1, 1},
      {7.0, "B", 1, 7},
      {500.0, "B", 100, 500},
      {2047.0, "B", 500, 2500},           // under 2 KiB: bytes
      {2048.0, "KiB", 1, 2},              // 2 KiB
      {250e6, "MiB", 50, 250},            // 238.4 MiB
      {1.2 * kGiB, "MiB", 200, 1400},     // 1228.8 MiB
      {9.0 * kGiB, "GiB", 2, 10},         // 0, 2, ... 10 GiB
      {36.0 * kGiB, "GiB", 5, 40},        // 8 steps of 5
      {41.0 * kGiB, "GiB", 10, 50},       // 9 steps of 5 are too many
      {80.0 * kGiB, "GiB", 10, 80},       // an 80 GiB device
      {1536.0 * kGiB, "GiB", 200, 1600},  // 1.5 TiB: under 2 TiB, in GiB
      {2048.0 * kGiB, "TiB", 1, 2}};
  for (const Case& c : cases) {
    const ByteAxis a = byte_axis(c.largest);
    EXPECT_EQ(a.unit, c.unit) << c.largest;
    EXPECT_EQ(a.step_bytes, c.step_units * a.unit_bytes) << c.largest;
    EXPECT_EQ(a.top_bytes, c.top_units * a.unit_bytes) << c.largest;
  }
  EXPECT_EQ(byte_axis(kGiB).unit_bytes, 1048576.0);
}

report::Report phases_report() {
  report::Report r;
  r.t0_before_process_seconds = 100.0;
  r.phases = {{"launch", 0.0, 0.5},    {"model_build", 0.5, 2.0},   {"first_step", 2.5, 1.0},
              {"training", 3.5, 10.0}, {"evaluation", 13.5, 2.0},   {"training", 15.5, 4.0},
              {"training", 19.5, 1.0}, {"report_write", 20.5, 0.25}};
  r.phases[1].memory = report::PhaseMemory{};
  r.phases[1].memory->peak_rss_bytes = 100;
  r.phases[3].memory = report::PhaseMemory{};
  r.phases[3].memory->peak_rss_bytes = 300;
  r.phases[3].memory->peak_allocated_bytes = 7;
  r.phases[5].memory = report::PhaseMemory{};
  r.phases[5].memory->peak_rss_bytes = 500;
  return r;
}

TEST(Timeline, PhasesAreShiftedToT0AndConsecutiveOnesOfANameJoined) {
  const std::vector<TimelineBar> bars = timeline(phases_report());
  ASSERT_EQ(bars.size(), 8u);
  EXPECT_EQ(bars[0].phase, "t0 to process start");
  EXPECT_EQ(bars[0].start_seconds, 0.0);
  EXPECT_EQ(bars[0].end_seconds, 100.0);
  EXPECT_EQ(bars[1].phase, "launch");
  EXPECT_EQ(bars[1].start_seconds, 100.0);
  EXPECT_EQ(bars[1].end_seconds, 100.5);
  EXPECT_EQ(bars[4].phase, "training");
  EXPECT_EQ(bars[4].end_seconds, 113.5);
  EXPECT_EQ(bars[5].phase, "evaluation");
  // training 15.5-19.5 and 19.5-20.5 are one bar.
  EXPECT_EQ(bars[6].phase, "training");
  EXPECT_EQ(bars[6].start_seconds, 115.5);
  EXPECT_EQ(bars[6].end_seconds, 120.5);
  EXPECT_EQ(bars[7].phase, "report_write");
  EXPECT_EQ(bars[7].end_seconds, 120.75);
}

TEST(Timeline, AResumedRunsEarlierProcessesComeFirstEachItsOwnRental) {
  report::Report r = phases_report();
  r.t0_before_process_seconds = 0.0;
  r.phases.resize(2);  // launch 0-0.5, model_build 0.5-2.5
  report::Segment first;
  first.index = 1;
  first.run_seconds = 40.0;
  report::Segment second;
  second.index = 2;
  second.run_seconds = 2.5;
  r.segments = {first, second};
  const std::vector<TimelineBar> bars = timeline(r);
  ASSERT_EQ(bars.size(), 3u);
  EXPECT_EQ(bars[0].phase, "process 1 (resumed after)");
  EXPECT_EQ(bars[0].start_seconds, 0.0);
  EXPECT_EQ(bars[0].end_seconds, 40.0);
  EXPECT_EQ(bars[1].phase, "launch");
  EXPECT_EQ(bars[1].start_seconds, 40.0);
  EXPECT_EQ(bars[2].end_seconds, 42.5);  // the run's 42.5 s, as cost bills it
}

TEST(MemoryByPhase, EachKindKeepsItsLargestFigureInTheOrderKindsFirstRan) {
  const std::vector<PhaseMemoryRow> rows = memory_by_phase(phases_report());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].phase, "model_build");
  EXPECT_EQ(rows[0].peak_rss_bytes, 100);
  EXPECT_FALSE(rows[0].peak_allocated_bytes.has_value());
  EXPECT_EQ(rows[1].phase, "training");
  EXPECT_EQ(rows[1].peak_rss_bytes, 500);
  EXPECT_EQ(rows[1].peak_allocated_bytes, 7);
  EXPECT_FALSE(rows[1].device_used_peak_bytes.has_value());
}

PageInput fixture_input(const cost::Catalog& catalog) {
  PageInput in;
  in.sources = {kFixtures + "h100-reference.json", kFixtures + "mi300x-reference.json"};
  for (const std::string& s : in.sources) in.reports.push_back(report::read_report(s));
  in.catalog = &catalog;
  in.today = cost::Date{2026, 12, 4};
  return in;
}

TEST(PageData, TheFixtureReportsGiveTheirStepsTimelineAndCostsExactly) {
  const cost::Catalog catalog = cost::builtin_catalog();
  const PageInput in = fixture_input(catalog);
  const nlohmann::ordered_json j = page_data(in);
  EXPECT_EQ(j["schema"], kPageSchema);
  ASSERT_EQ(j["reports"].size(), 2u);
  const auto& a = j["reports"][0];
  EXPECT_EQ(a["label"], "A");
  EXPECT_EQ(a["steps"]["step"].size(), 375u);
  EXPECT_EQ(a["steps"]["wall_seconds"][0], in.reports[0].steps[0].wall_seconds);
  EXPECT_EQ(a["steps"]["loss"][374], in.reports[0].steps[374].loss);
  // The first 5 steps are the timing warm-up (summary.warmup_steps_excluded).
  EXPECT_EQ(a["steps"]["warmup"][4], true);
  EXPECT_EQ(a["steps"]["warmup"][5], false);
  int64_t binned = 0;
  for (const auto& c : a["step_time"]["histogram"]["counts"]) binned += c.get<int64_t>();
  EXPECT_EQ(binned, 370);
  EXPECT_EQ(a["step_time"]["histogram"]["edges"].front(), 2.166015625);  // summary min
  EXPECT_EQ(a["step_time"]["histogram"]["edges"].back(), 2.7353515625);  // summary max
  // FIELD.md's reference run: H100 18 min from t0, of which 3 min before the first step ends.
  EXPECT_EQ(a["timeline"]["time_to_first_step_seconds"], 180.0);
  EXPECT_DOUBLE_EQ(a["timeline"]["bars"].back()["end_seconds"].get<double>(), 1080.0);
  // Priced at the reference run's H100 rate, $2.97/GPU-h per minute: 18 min = $0.891; the
  // 3 min before the first step, linear, $0.1485.
  bool found = false;
  for (const auto& o : a["cost"]["offers"]) {
    if (!o["chosen"].get<bool>()) continue;
    found = true;
    EXPECT_EQ(o["name"], "reference-run/H100-SXM/on-demand");
    EXPECT_DOUBLE_EQ(o["billed_usd"].get<double>(), 0.891);
    EXPECT_DOUBLE_EQ(o["before_first_step_usd"].get<double>(), 0.1485);
    EXPECT_DOUBLE_EQ(o["from_first_step_usd"].get<double>(), 0.891 - 0.1485);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(j["comparison"]["kind"], "same job run differently");
  EXPECT_EQ(j["comparison"]["refused"], false);
  EXPECT_EQ(j["comparison"]["verdicts"].size(), 1u);
}

// The headline that opens the page (issue 39): the run's time from t0 to the end, tokens/s, its
// cost at the price it is set at, and MFU, as ftbench compare and the markdown summary give them.
TEST(PageData, EachReportLeadsWithItsTimeTokensPerSecondCostAndMfu) {
  const cost::Catalog catalog = cost::builtin_catalog();
  const PageInput in = fixture_input(catalog);
  const nlohmann::ordered_json j = page_data(in);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(j["reports"][i].contains("headline")) << "report " << i;
  }
  const auto& a = j["reports"][0]["headline"];
  EXPECT_DOUBLE_EQ(a["run_seconds"].get<double>(), 1080.0);  // 18.0 min
  EXPECT_EQ(a["tokens_per_second"], in.reports[0].summary.tokens_per_second_real);
  EXPECT_EQ(a["tokens_per_second"], 2355.4298093226153);
  EXPECT_DOUBLE_EQ(a["cost_usd"].get<double>(), 0.891);
  EXPECT_EQ(a["cost_rate"], "reference-run/H100-SXM/on-demand");
  EXPECT_EQ(a["mfu"], 0.07649788217941599);
  const auto& b = j["reports"][1]["headline"];
  EXPECT_DOUBLE_EQ(b["run_seconds"].get<double>(), 2040.0);  // 34.0 min
  EXPECT_EQ(b["tokens_per_second"], 1765.9715710312823);
  EXPECT_EQ(b["mfu"], 0.04338611508453785);
  for (const auto& o : j["reports"][1]["cost"]["offers"]) {
    if (o["chosen"].get<bool>()) {
      EXPECT_EQ(b["cost_usd"], o["billed_usd"]);
    }
  }
}

// 370 measured steps over 30 bins left most of them empty, and 6 over 30 (a ci-tiny run) drew
// six bars among gaps (issue 39): the bin count follows the sample count.
TEST(PageData, TheStepTimeHistogramHasAsManyBinsAsItsSamplesFill) {
  const cost::Catalog catalog = cost::builtin_catalog();
  PageInput in = fixture_input(catalog);
  in.reports[1].steps.resize(11);  // 5 warm-up steps, 6 measured
  const nlohmann::ordered_json j = page_data(in);
  EXPECT_EQ(j["reports"][0]["step_time"]["histogram"]["counts"].size(), 15u);
  EXPECT_EQ(j["reports"][0]["step_time"]["histogram"]["edges"].size(), 16u);
  EXPECT_EQ(j["reports"][1]["step_time"]["histogram"]["counts"].size(), 4u);
}

// The memory charts' ticks were Chart.js's decimal steps written in GiB ("1.86 GiB", issue 39):
// they are whole multiples of 1, 2 or 5 x 10^k of one binary unit, over every report's phases.
TEST(PageData, MemoryAxesTickAtRoundBinaryUnits) {
  const cost::Catalog catalog = cost::builtin_catalog();
  PageInput in = fixture_input(catalog);
  const nlohmann::ordered_json none = page_data(in);  // the fixtures measured no phase's memory
  ASSERT_TRUE(none.contains("memory_axes"));
  EXPECT_TRUE(none["memory_axes"]["host"].is_null());
  EXPECT_TRUE(none["memory_axes"]["device"].is_null());
  in.reports[0].phases[7].memory = report::PhaseMemory{};
  in.reports[0].phases[7].memory->peak_rss_bytes = 9663676416;         // 9 GiB
  in.reports[0].phases[7].memory->peak_allocated_bytes = 38654705664;  // 36 GiB
  in.reports[1].phases[7].memory = report::PhaseMemory{};
  in.reports[1].phases[7].memory->peak_rss_bytes = 10737418240;          // 10 GiB
  in.reports[1].phases[7].memory->device_used_peak_bytes = 44023414784;  // 41 GiB
  const nlohmann::ordered_json j = page_data(in);
  const auto& host = j["memory_axes"]["host"];
  EXPECT_EQ(host["unit"], "GiB");
  EXPECT_EQ(host["unit_bytes"], 1073741824.0);
  EXPECT_EQ(host["step_bytes"], 2147483648.0);  // 0, 2, ... 10 GiB
  EXPECT_EQ(host["top_bytes"], 10737418240.0);
  const auto& device = j["memory_axes"]["device"];
  EXPECT_EQ(device["unit"], "GiB");
  EXPECT_EQ(device["step_bytes"], 10737418240.0);  // 0, 10, ... 50 GiB
  EXPECT_EQ(device["top_bytes"], 53687091200.0);
}

TEST(PageData, DifferentJobsAreMarkedRefusedWithoutVerdicts) {
  const cost::Catalog catalog = cost::builtin_catalog();
  PageInput in = fixture_input(catalog);
  in.reports[1].spec["data"]["seq_len"] = 4096;
  const nlohmann::ordered_json j = page_data(in);
  EXPECT_EQ(j["comparison"]["kind"], "different jobs");
  EXPECT_EQ(j["comparison"]["refused"], true);
  EXPECT_TRUE(j["comparison"]["verdicts"].empty());
}

TEST(PageData, AReportWithoutAnOfferSaysWhyItIsNotPriced) {
  const cost::Catalog catalog = cost::builtin_catalog();
  PageInput in = fixture_input(catalog);
  in.reports.resize(1);
  in.sources.resize(1);
  in.reports[0].environment.device.name = "Some CPU";
  const nlohmann::ordered_json j = page_data(in);
  EXPECT_TRUE(j["reports"][0]["cost"]["offers"].empty());
  EXPECT_TRUE(j["reports"][0]["headline"]["cost_usd"].is_null());
  EXPECT_TRUE(j["reports"][0]["headline"]["cost_rate"].is_null());
  EXPECT_NE(j["reports"][0]["cost"]["reason"].get<std::string>().find("Some CPU"),
            std::string::npos)
      << j["reports"][0]["cost"]["reason"];
  EXPECT_TRUE(j["comparison"].is_null());
}

}  // namespace
}  // namespace ftbench::view
