// End to end: `ftbench report` as a user (and a careless one) runs it: both outputs written,
// outputs that would replace a report or each other refused, and what a run without steps or
// with a price from the catalog shows (defects found by a hostile review, each tested here).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"

namespace {

using ftbench::e2e::Outcome;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;

const std::string kH100 = "tests/fixtures/reports/h100-reference.json";
const std::string kMi300x = "tests/fixtures/reports/mi300x-reference.json";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReportCli, WritesThePageAndTheSummary) {
  const ScratchDir scratch("ftbench-report-cli");
  const auto html = scratch.path() / "a.html";
  const auto md = scratch.path() / "a.md";
  const Outcome r = run_ftbench(
      "report " + kH100 + " " + kMi300x + " --html " + html.string() + " --markdown " + md.string(),
      scratch.path(), "", 60.0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(html).find("<script type=\"application/json\" id=\"ftbench-data\">"),
            std::string::npos);
  EXPECT_EQ(slurp(md).rfind("## ftbench: h100-reference vs mi300x-reference", 0), 0u);
  EXPECT_NE(slurp(md).find("| final loss | 0.9132 (mean of last 20) | 0.9252 (mean of last 20) |"),
            std::string::npos)
      << slurp(md);
}

TEST(ReportCli, OneFileForBothOutputsIsRefused) {
  const ScratchDir scratch("ftbench-report-cli");
  const std::string out = (scratch.path() / "both.out").string();
  for (const std::string& args : {"--html " + out + " --markdown " + out + " --force",
                                  std::string("--html - --markdown -")}) {
    SCOPED_TRACE(args);
    const Outcome r = run_ftbench("report " + kH100 + " " + args, scratch.path(), "", 60.0);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--html and --markdown name one"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ReportCli, AReportIsNeverReplacedEvenWithForce) {
  const ScratchDir scratch("ftbench-report-cli");
  const auto victim = scratch.path() / "victim.json";
  std::filesystem::copy_file(std::string(FTBENCH_SOURCE_DIR) + "/" + kMi300x, victim);
  const std::string before = slurp(victim);
  // The flag before the reports takes the first one as its value.
  const Outcome r = run_ftbench("report --markdown " + victim.string() + " " + kH100 + " --force",
                                scratch.path(), "", 60.0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("that file is an ftbench report"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(victim), before);
}

TEST(ReportCli, TheChosenOfferIsOneRowWithItsFlags) {
  const ScratchDir scratch("ftbench-report-cli");
  const auto html = scratch.path() / "stale.html";
  const Outcome r = run_ftbench("report " + kH100 + " --today 2030-01-01 --html " + html.string(),
                                scratch.path(), "", 60.0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(html);
  // One row of the chosen offer, the catalog's, with its age flagged.
  const std::string chosen = R"("name":"reference-run/H100-SXM/on-demand","billing")";
  ASSERT_NE(page.find(chosen), std::string::npos);
  EXPECT_EQ(page.find(chosen, page.find(chosen) + 1), std::string::npos) << "listed twice";
  EXPECT_NE(page.find(R"x("chosen":true,"flags":"stale (1206 days)")x"), std::string::npos);
}

// Output that does not arrive is a failure, not a success (a full disk behind a redirection):
// for report and for every command that prints through print_as.
TEST(ReportCli, AFailedWriteToStandardOutputIsAFailure) {
  const ScratchDir scratch("ftbench-report-cli");
  for (const std::string& args :
       {"report " + kH100 + " --html - >/dev/full", "report " + kH100 + " >/dev/full",
        "compare " + kH100 + " " + kMi300x + " >/dev/full"}) {
    SCOPED_TRACE(args);
    const Outcome r = run_ftbench(args, scratch.path(), "", 60.0);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("standard output: writing failed"), std::string::npos) << r.err;
  }
}

// A command that fails on its reports leaves no output folder behind.
TEST(ReportCli, ABadReportLeavesNothingBehind) {
  const ScratchDir scratch("ftbench-report-cli");
  const auto made = scratch.path() / "made";
  const Outcome r = run_ftbench("report nosuch.json --html " + (made / "out.html").string(),
                                scratch.path(), "", 60.0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(made));
}

// A report's strings cannot make the summary longer than a CI comment takes.
TEST(ReportCli, AHugeRunNameIsCutInTheSummary) {
  const ScratchDir scratch("ftbench-report-cli");
  nlohmann::json j = nlohmann::json::parse(slurp(std::string(FTBENCH_SOURCE_DIR) + "/" + kH100));
  j["run"]["name"] = std::string(1 << 20, 'x');
  const auto huge = scratch.path() / "huge.json";
  std::ofstream(huge) << j.dump();
  const Outcome r = run_ftbench("report " + huge.string(), scratch.path(), "", 60.0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.out.size(), 65536u);
  EXPECT_NE(r.out.find("… (1048576 bytes in all)"), std::string::npos);
}

}  // namespace
