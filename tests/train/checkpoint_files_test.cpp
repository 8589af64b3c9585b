#include "train/checkpoint_files.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/sha256.h"
#include "spec/canonical.h"

namespace ftbench::train {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

CheckpointManifest manifest_at(int64_t step) {
  CheckpointManifest m;
  m.created_at_utc = "2026-11-30T07:00:00Z";
  m.reason = "every_steps";
  m.ftbench_version = "0.1.0";
  m.spec_fingerprint = "abc";
  m.data_fingerprint = "def";
  m.spec = {{"train", {{"lr", 0.001}}}};
  m.step = step;
  m.epoch = 1;
  m.micro_batches_done = step * 2;
  m.micro_batch_size = 2;
  m.grad_accum_steps = 2;
  m.device_type = "cpu";
  m.optimizer_implementation = "foreach";
  m.parameters = {"layers.0.q.lora_a"};
  m.parameter_steps = {step};
  m.step_flops.assign(static_cast<size_t>(step), {1.0, 2.0, 3.0, 4.0});
  m.report = {{"schema", "ftbench.report/1.3"}};
  return m;
}

class CheckpointFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ftbench_ckpt_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE");
    fs::remove_all(dir_);
  }
  SavedCheckpointFolder save(int64_t step, int64_t keep, const std::string& payload = "tensors") {
    return save_checkpoint_folder(dir_.string(), manifest_at(step), keep,
                                  [&](const std::string& path) { std::ofstream(path) << payload; });
  }
  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const std::string& p : list_checkpoints(dir_.string())) {
      out.push_back(fs::path(p).filename().string());
    }
    return out;
  }
  fs::path dir_;
};

TEST(CheckpointFiles, FolderNames) {
  EXPECT_EQ(checkpoint_folder_name(10), "step-00000010");
  EXPECT_EQ(checkpoint_folder_name(123456789), "step-123456789");
}

TEST(CheckpointFiles, ManifestRoundTrips) {
  const CheckpointManifest m = manifest_at(3);
  const CheckpointManifest back = manifest_from_json(nlohmann::json(to_json(m)), "c.json");
  EXPECT_EQ(nlohmann::json(to_json(back)), nlohmann::json(to_json(m)));
  EXPECT_EQ(back.step, 3);
  EXPECT_EQ(back.parameters, m.parameters);
}

TEST(CheckpointFiles, ManifestErrorsNameTheField) {
  nlohmann::json j = to_json(manifest_at(2));
  j["format"] = "ftbench.checkpoint/9";
  EXPECT_THROW(
      {
        try {
          manifest_from_json(j, "c.json");
        } catch (const CheckpointError& e) {
          EXPECT_EQ(std::string(e.what()),
                    "c.json: format: expected \"ftbench.checkpoint/1\", found "
                    "\"ftbench.checkpoint/9\" (written by another version of ftbench?)");
          throw;
        }
      },
      CheckpointError);
  j = to_json(manifest_at(2));
  j["position"]["step"] = "two";
  try {
    manifest_from_json(j, "c.json");
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              "c.json: position.step: expected an integer >= 0, found string");
  }
  j = to_json(manifest_at(2));
  j["step_flops"].erase(0);
  EXPECT_THROW(manifest_from_json(j, "c.json"), CheckpointError);
  EXPECT_THROW(manifest_from_json(nlohmann::json::array(), "c.json"), CheckpointError);
}

TEST(CheckpointFiles, DifferingKeysListsEveryChangedPath) {
  const nlohmann::json a = {{"lora", {{"rank", 8}, {"alpha", 16}}}, {"train", {{"lr", 1e-3}}}};
  const nlohmann::json b = {{"lora", {{"rank", 16}, {"alpha", 16}}}, {"data", {{"seed", 1}}}};
  EXPECT_EQ(differing_keys(a, b), (std::vector<std::string>{"lora.rank", "train.lr", "data.seed"}));
  EXPECT_TRUE(differing_keys(a, a).empty());
}

TEST_F(CheckpointFolder, SavesAtomicallyKeepsTheLastKAndFindsTheLatest) {
  for (int64_t step : {2, 4, 6}) save(step, 2);
  EXPECT_EQ(names(), (std::vector<std::string>{"step-00000004", "step-00000006"}));
  EXPECT_EQ(resolve_checkpoint(dir_.string()), (dir_ / "step-00000006").string());
  EXPECT_EQ(resolve_checkpoint((dir_ / "step-00000004").string()),
            (dir_ / "step-00000004").string());
  const CheckpointManifest m = read_manifest((dir_ / "step-00000006").string());
  EXPECT_EQ(m.step, 6);
  EXPECT_EQ(m.tensors_bytes, 7);
  // SHA-256 of "tensors", as `printf tensors | sha256sum` gives it.
  EXPECT_EQ(m.tensors_sha256, "26cc73f9fbf623d9a49bbf3f3d88f70195f2de68d7f25b5161f6700e6644cf44");
}

TEST_F(CheckpointFolder, AFailedSaveLeavesTheEarlierCheckpointsAndNoTemporaryFolder) {
  save(2, 2);
  ::setenv("FTBENCH_INJECT_WRITE_FAILURE", "checkpoint:ENOSPC", 1);
  try {
    save(4, 2);
    FAIL() << "the injected failure did not happen";
  } catch (const CheckpointWriteError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_EQ(names(), std::vector<std::string>{"step-00000002"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  // A failure inside the tensor writer is reported the same way.
  ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE");
  EXPECT_THROW(
      save_checkpoint_folder(dir_.string(), manifest_at(4), 2,
                             [](const std::string&) { throw std::runtime_error("device lost"); }),
      CheckpointWriteError);
  EXPECT_EQ(names(), std::vector<std::string>{"step-00000002"});
}

TEST_F(CheckpointFolder, CorruptedOrMissingFilesAreRefusedWithTheReason) {
  save(2, 2, "0123456789");
  const fs::path folder = dir_ / "step-00000002";
  const CheckpointManifest m = read_manifest(folder.string());
  verify_checkpoint_tensors(folder.string(), m);
  {
    std::fstream f(folder / kCheckpointTensors, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('X');
  }
  try {
    verify_checkpoint_tensors(folder.string(), m);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("the file is corrupted"), std::string::npos) << e.what();
  }
  fs::resize_file(folder / kCheckpointTensors, 4);
  try {
    verify_checkpoint_tensors(folder.string(), m);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("4 bytes, the manifest says 10"), std::string::npos)
        << e.what();
  }
  fs::resize_file(folder / kCheckpointManifest, 100);
  try {
    read_manifest(folder.string());
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_manifest("{\"format\": ", "m.json"), CheckpointError);
  // A device in its place (a link to /dev/zero) is named as what it is.
  fs::remove(folder / kCheckpointTensors);
  fs::create_symlink("/dev/zero", folder / kCheckpointTensors);
  try {
    verify_checkpoint_tensors(folder.string(), m);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("state.safetensors: not a regular file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(resolve_checkpoint((dir_ / "nothing").string()), CheckpointError);
  fs::create_directories(dir_ / "empty");
  EXPECT_THROW(resolve_checkpoint((dir_ / "empty").string()), CheckpointError);
}

// Item 12 of issue 14: a hand edit of the manifest (here: another position) was read as if the
// checkpoint said so. The manifest's SHA-256 is kept beside it, as sha256sum writes it.
TEST_F(CheckpointFolder, AnEditedManifestIsRefused) {
  save(2, 2);
  const fs::path folder = dir_ / "step-00000002";
  const std::string text = slurp(folder / kCheckpointManifest);
  EXPECT_EQ(slurp(folder / kCheckpointManifestChecksum),
            io::sha256_hex(text) + "  checkpoint.json\n");
  std::string edited = text;
  const std::size_t at = edited.find("\"micro_batch_size\": 2");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 21, "\"micro_batch_size\": 4");
  std::ofstream(folder / kCheckpointManifest, std::ios::binary | std::ios::trunc) << edited;
  try {
    read_manifest(folder.string());
    FAIL() << "the edit was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              (folder / kCheckpointManifest).string() + ": SHA-256 " + io::sha256_hex(edited) +
                  " differs from the \"" + io::sha256_hex(text) +
                  "\" recorded in checkpoint.json.sha256 (the manifest was edited or corrupted): "
                  "resuming from it could continue another position, split or optimizer state");
  }
  fs::remove(folder / kCheckpointManifestChecksum);
  try {
    read_manifest(folder.string());
    FAIL() << "a manifest without its checksum was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint.json.sha256"), std::string::npos)
        << e.what();
  }
}

// Item 13: a kill between the two renames of a replacing save left ".step-N.old-PID" forever and
// step N vanished. Where the filesystem exchanges folders atomically nothing is left; otherwise
// the next start puts the earlier copy back.
TEST_F(CheckpointFolder, ReplacingAStepLeavesOneCompleteCopyAndLeftoversAreCleaned) {
  save(2, 2, "first");
  save(2, 2, "second");  // a run interrupted right after resuming saves the same step again
  EXPECT_EQ(names(), std::vector<std::string>{"step-00000002"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  EXPECT_EQ(read_manifest((dir_ / "step-00000002").string()).tensors_bytes, 6);

  // What a kill between "move the old one aside" and "move the new one in" leaves: no step-4,
  // its complete earlier copy aside, and the new one unfinished; and a replacement of step-6
  // that made it, with its old copy still aside.
  save(4, 3, "old");
  save(6, 3, "new");
  fs::rename(dir_ / "step-00000004", dir_ / ".step-00000004.old-99999999");
  fs::create_directories(dir_ / ".step-00000004.tmp-99999999");
  fs::create_directories(dir_ / ".step-00000006.old-99999998");
  std::vector<std::string> cleaned = clean_checkpoint_leftovers(dir_.string());
  std::sort(cleaned.begin(), cleaned.end());
  EXPECT_EQ(cleaned, (std::vector<std::string>{
                         ".step-00000004.old-99999999 (put back as step-00000004)",
                         ".step-00000004.tmp-99999999 (an unfinished save, removed)",
                         ".step-00000006.old-99999998 (replaced by step-00000006, removed)"}));
  EXPECT_EQ(names(), (std::vector<std::string>{"step-00000002", "step-00000004", "step-00000006"}));
  EXPECT_EQ(read_manifest((dir_ / "step-00000004").string()).tensors_bytes, 3);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 3);
}

// A second stop signal ends a run at once, also in the middle of writing the segment journal:
// "segments.json.tmp.<pid>" was left, and stayed after a resume (issue 39, item 4). The next
// start removes it with the other leftovers.
TEST_F(CheckpointFolder, AnUnfinishedJournalWriteIsCleaned) {
  save(2, 2, "first");
  std::ofstream(dir_ / "segments.json") << "{}";
  std::ofstream(dir_ / "segments.json.tmp.99999997") << "{\"form";
  const std::vector<std::string> cleaned = clean_checkpoint_leftovers(dir_.string());
  EXPECT_EQ(cleaned, (std::vector<std::string>{
                         "segments.json.tmp.99999997 (an unfinished write of segments.json, "
                         "removed)"}));
  EXPECT_FALSE(fs::exists(dir_ / "segments.json.tmp.99999997"));
  EXPECT_TRUE(fs::exists(dir_ / "segments.json"));
}

TEST_F(CheckpointFolder, TwoRunsCannotHoldOneFolder) {
  const CheckpointDirLock first(dir_.string());
  try {
    const CheckpointDirLock second(dir_.string());
    FAIL() << "two locks on one folder";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir_.string() +
                  ": in use by another ftbench run (it holds the folder's lock): two "
                  "runs writing checkpoints into one folder would replace each "
                  "other's; wait for it to end, or give this run a folder of its own "
                  "(train.checkpoint.dir)");
  }
  const fs::path other = dir_ / "other";
  const CheckpointDirLock elsewhere(other.string());  // another folder is free
  EXPECT_TRUE(fs::is_directory(other));
}

TEST(CheckpointFiles, TheResumedSplitMustBeTheSpecsOrOneItsFallbackReaches) {
  CheckpointManifest m = manifest_at(3);  // saved at 2 x 2, 6 micro-batches done
  EXPECT_NO_THROW(check_resume_split("ck", m, 2, 2, true, 4));
  EXPECT_NO_THROW(check_resume_split("ck", m, 4, 1, true, 4));  // 4 x 1 -> 2 x 2
  m.micro_batch_size = 1;
  m.grad_accum_steps = 4;
  m.micro_batches_done = 12;
  EXPECT_NO_THROW(check_resume_split("ck", m, 4, 1, true, 2));  // 4 x 1 -> 2 x 2 -> 1 x 4
  try {
    check_resume_split("ck", m, 4, 1, true, 1);  // one fallback only: 2 x 2
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              "ck: saved at micro-batch 1 x grad_accum_steps 4; this spec runs 4 x 1: not a split "
              "its out-of-memory fallback reaches (train.oom_fallback)");
  }
  try {
    check_resume_split("ck", m, 4, 1, false, 4);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("train.oom_fallback is off"), std::string::npos);
  }
  try {
    check_resume_split("ck", m, 3, 1, true, 4);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()),
              "ck: saved at micro-batch 1 x grad_accum_steps 4; this spec runs 3 x 1: another "
              "effective batch (4 vs 3), so another job");
  }
  m.micro_batches_done = 11;
  try {
    check_resume_split("ck", m, 4, 1, true, 4);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), "ck: position: 11 micro-batches done for 3 steps of 4");
  }
}

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
TEST(CheckpointFiles, SegmentsToResumeBillEveryProcessAndCountDiscardedSteps) {
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

TEST_F(CheckpointFolder, TheSegmentJournalRoundTripsAndKnowsItsRun) {
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
TEST(CheckpointFiles, TheSegmentJournalKeepsTheReportsRules) {
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

// A manifest or segment journal that gives a key twice was read with its last value (issue 39):
// refused, naming the file and the key.
TEST(CheckpointFiles, AKeyGivenTwiceInTheManifestOrTheJournalIsRefused) {
  const std::string manifest = nlohmann::json(to_json(manifest_at(2))).dump();
  try {
    parse_manifest("{\"format\": \"ftbench.checkpoint/1\"," + manifest.substr(1), "c.json");
    ADD_FAILURE() << "a manifest with a key given twice was read";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), "c.json: format: a key given twice in one object");
  }
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
}  // namespace ftbench::train
