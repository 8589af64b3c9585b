#include "run/segment_journal.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::run {
namespace {

namespace fs = std::filesystem;
using train::CheckpointError;
using train::kSegmentJournal;

class JournalFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ftbench_journal_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

report::Segment segment(int64_t index, const std::string& started, int64_t first, int64_t last,
                        double seconds, const std::string& status = "interrupted") {
  report::Segment g;
  g.index = index;
  g.status = status;
  g.started_at_utc = started;
  g.finished_at_utc = started;
  g.first_step = first;
  g.last_step = last;
  g.run_seconds = seconds;
  return g;
}

// Item 4: a resumed process stopped in set-up vanished from the report, 2 segments for 3
// processes. The journal knows every process.
TEST(SegmentJournal, SegmentsToResumeBillEveryProcessAndCountDiscardedSteps) {
  const std::vector<report::Segment> from_checkpoint = {
      segment(1, "t1", 1, 10, 100.0), segment(2, "t2", 11, 20, 50.0, "unfinished")};
  // No journal: the checkpoint's segments as they are.
  std::vector<report::Segment> out = segments_to_resume(from_checkpoint, std::nullopt, 20);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].run_seconds, 50.0);

  // The journal: segment 2 ran on to step 25 and was killed (its later record), segment 3 was
  // stopped during set-up, segment 4 failed after 3 steps from the same checkpoint.
  const std::vector<report::Segment> journal = {
      segment(1, "t1", 1, 10, 100.0), segment(2, "t2", 11, 25, 80.0, "unfinished"),
      segment(3, "t3", 0, 0, 30.0), segment(4, "t4", 21, 23, 40.0, "failed")};
  out = segments_to_resume(from_checkpoint, journal, 20);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[1].run_seconds, 80.0);
  EXPECT_EQ(out[1].last_step, 25);
  EXPECT_EQ(out[1].discarded_steps, 5);  // 21-25 are redone
  EXPECT_EQ(out[2].status, "interrupted");
  EXPECT_EQ(out[2].discarded_steps, 0);
  EXPECT_EQ(out[3].discarded_steps, 3);
  double billed = 0.0;
  for (const report::Segment& g : out) billed += g.run_seconds;
  EXPECT_EQ(billed, 250.0);

  // A journal of another branch (segment 2 started elsewhere) is not used.
  std::vector<report::Segment> other = journal;
  other[1].started_at_utc = "t9";
  EXPECT_EQ(segments_to_resume(from_checkpoint, other, 20).size(), 2u);
}

TEST_F(JournalFolder, TheSegmentJournalRoundTripsAndKnowsItsRun) {
  fs::create_directories(dir_);
  std::vector<report::Segment> segments = {segment(1, "t1", 1, 10, 100.0),
                                           segment(2, "t2", 0, 0, 3.5)};
  segments[1].intra_op_threads = 2;
  write_segment_journal(dir_.string(), "fp", segments);
  const auto back = read_segment_journal(dir_.string(), "fp", "t1");
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].run_seconds, 3.5);
  EXPECT_EQ((*back)[1].intra_op_threads, 2);
  EXPECT_EQ((*back)[0].intra_op_threads, std::nullopt);
  EXPECT_FALSE(read_segment_journal(dir_.string(), "other job", "t1").has_value());
  EXPECT_FALSE(read_segment_journal(dir_.string(), "fp", "another run's start").has_value());
  std::ofstream(dir_ / kSegmentJournal) << "{\"format\": \"ftbench.segments/1\"";
  EXPECT_THROW(read_segment_journal(dir_.string(), "fp", "t1"), CheckpointError);
}

// A hand-edited journal billed what it liked (a review of issue 14): 1e300 s, 20,000 copies of
// one process, a status with a terminal escape. The report's rules apply to its segments, and
// each process started after the one before.
TEST(SegmentJournal, TheSegmentJournalKeepsTheReportsRules) {
  const auto error_of = [](const std::vector<report::Segment>& segments) {
    try {
      parse_segment_journal(segment_journal_text({"fp", segments}), "segments.json");
    } catch (const CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::vector<report::Segment> ok = {segment(1, "2026-12-01T10:00:00.000Z", 1, 4, 60.0),
                                     segment(2, "2026-12-01T10:05:00.000Z", 0, 0, 3.0)};
  EXPECT_EQ(error_of(ok), "accepted");
  std::vector<report::Segment> bad = ok;
  bad[1].run_seconds = 1e300;
  EXPECT_EQ(error_of(bad),
            "segments.json: segments[1]: run_seconds 1e+300 and time_to_first_step_seconds 0: "
            "expected at most 366 days, the second within the first");
  bad = ok;
  bad.push_back(ok[1]);
  bad[2].index = 3;  // a copy of segment 2
  EXPECT_EQ(error_of(bad),
            "segments.json: segments[2].started_at_utc: \"2026-12-01T10:05:00.000Z\" is not "
            "after the segment before it (\"2026-12-01T10:05:00.000Z\")");
  bad = ok;
  bad[1].status = "x\x1b[2J";
  EXPECT_EQ(error_of(bad),
            "segments.json: segments[1].status: expected one of completed, interrupted, diverged, "
            "failed, unfinished, found \"x\\x1B[2J\"");
  bad = ok;
  bad[0].discarded_steps = 5;
  EXPECT_EQ(error_of(bad), "segments.json: segments[0].discarded_steps: 5 of the 4 steps it ran");
  bad = ok;
  bad[0].first_step = 3;
  bad[0].last_step = 2;
  EXPECT_NE(error_of(bad).find("segments[0]: first_step 3 and last_step 2"), std::string::npos);
}

// A segment journal that gives a key twice was read with its last value (issue 39): refused,
// naming the file and the key.
TEST(SegmentJournal, AKeyGivenTwiceInTheJournalIsRefused) {
  const std::string journal =
      segment_journal_text({"fp", {segment(1, "2026-12-01T10:00:00.000Z", 1, 4, 60.0)}});
  const std::size_t at = journal.find("\"run_seconds\"");
  ASSERT_NE(at, std::string::npos);
  try {
    parse_segment_journal(journal.substr(0, at) + "\"run_seconds\": 1.0, " + journal.substr(at),
                          "segments.json");
    ADD_FAILURE() << "a journal with a key given twice was read";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              "segments.json: segments[0].run_seconds: a key given twice in one object");
  }
}

}  // namespace
}  // namespace ftbench::run
