#include "train/checkpoint_files.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spec/canonical.h"
#include "util/io/sha256.h"

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

// A manifest that gives a key twice was read with its last value (issue 39): refused, naming the
// file and the key (the segment journal's half: tests/run/segment_journal_test.cpp).
TEST(CheckpointFiles, AKeyGivenTwiceInTheManifestIsRefused) {
  const std::string manifest = nlohmann::json(to_json(manifest_at(2))).dump();
  try {
    parse_manifest("{\"format\": \"ftbench.checkpoint/1\"," + manifest.substr(1), "c.json");
    ADD_FAILURE() << "a manifest with a key given twice was read";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), "c.json: format: a key given twice in one object");
  }
}

}  // namespace
}  // namespace ftbench::train
