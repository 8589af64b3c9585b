#include "ftbench/train/checkpoint_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ftbench::train {
namespace {

namespace fs = std::filesystem;

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
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_checkpoint((dir_ / "nothing").string()), CheckpointError);
  fs::create_directories(dir_ / "empty");
  EXPECT_THROW(resolve_checkpoint((dir_ / "empty").string()), CheckpointError);
}

}  // namespace
}  // namespace ftbench::train
