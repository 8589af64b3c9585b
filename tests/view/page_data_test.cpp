// The HTML report's figures (view/page_data.h) with exact values: histogram bins, the phases on
// the timeline from t0, memory by phase, the warm-up marks, each offer's bill split at the first
// step, and the comparison. The two fixture reports are the reference run of FIELD.md.
#include "ftbench/view/page_data.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ftbench/cost/catalog.h"
#include "ftbench/report/report_io.h"

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
  EXPECT_NE(j["reports"][0]["cost"]["reason"].get<std::string>().find("Some CPU"),
            std::string::npos)
      << j["reports"][0]["cost"]["reason"];
  EXPECT_TRUE(j["comparison"].is_null());
}

}  // namespace
}  // namespace ftbench::view
