// End to end: checkpoints, --resume and SIGTERM, driven through the ftbench executable.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"
#include "spawned.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;

struct Result {
  int exit_code = -1;
  std::string output;  // stderr, then stdout
};

std::string read_file(const fs::path& p) { return ftbench::e2e::slurp(p); }

json read_json(const fs::path& p) { return json::parse(read_file(p)); }

class Resume : public ::testing::Test {
 protected:
  Result ftbench(const std::string& args, const std::string& env = "") {
    const ftbench::e2e::Outcome o = run_ftbench(args, dir_, env, 300.0);
    EXPECT_EQ(o.signal, 0) << "killed by signal " << o.signal << "\n" << o.err;
    return {o.exit_code, o.err + o.out};
  }

  // The ci-tiny job made 20 steps long (160 examples / 4 x 2), dropout on, checkpoints in
  // `checkpoints` every `every` steps.
  std::string args(const std::string& name, const std::string& checkpoints, int every) const {
    return "run configs/ci-tiny.yaml --set data.num_examples=160 --set output.progress=off "
           "--set train.checkpoint.every_steps=" +
           std::to_string(every) + " --set train.checkpoint.dir='" + (dir_ / checkpoints).string() +
           "' -o '" + (dir_ / name).string() + "'";
  }
  // `ftbench cost` of a resumed report bills each segment as a rental of its own: at $3.60 per
  // GPU-hour billed per started minute, a segment of s seconds costs ceil(s / 60) minutes, so
  // a run of two short segments pays two minutes where one process would pay one. The
  // expected figures are worked out here from the report's segments.
  void expect_cost_bills_each_segment(const fs::path& report_path, const json& report) {
    const ftbench::e2e::Outcome cost = run_ftbench(
        "cost '" + report_path.string() + "' --rate 3.6 --billing per-minute --format json", dir_,
        "", 60.0);
    ASSERT_EQ(cost.exit_code, 0) << cost.err;
    const json c = json::parse(cost.out);
    double run_seconds = 0.0;
    double first_step_seconds = 0.0;
    double billed_seconds = 0.0;
    ASSERT_GE(report["segments"].size(), 2u);
    for (const json& g : report["segments"]) {
      const double s = g["run_seconds"].get<double>();
      ASSERT_GT(s, 0.0);
      run_seconds += s;
      first_step_seconds += g["time_to_first_step_seconds"].get<double>();
      billed_seconds += 60.0 * std::ceil(s / 60.0);
    }
    const json& times = c["times"];
    const json& cost_of = c["chosen"]["cost"];
    SCOPED_TRACE(c.dump(1));
    EXPECT_EQ(times["run_seconds"].get<double>(), run_seconds);
    EXPECT_EQ(times["time_to_first_step_seconds"].get<double>(), first_step_seconds);
    EXPECT_EQ(times["steps"], report["steps"].size());
    EXPECT_EQ(cost_of["gpus_billed"], 1);
    EXPECT_EQ(cost_of["billed_seconds"].get<double>(), billed_seconds);
    // Exact but for the rounding of seconds / 3600 * 3.6 in either order: within 1e-12 USD
    // (the figures are cents; a wrong billing is off by whole minutes, $0.06).
    EXPECT_NEAR(cost_of["billed_usd"].get<double>(), billed_seconds / 1000.0, 1e-12);
    EXPECT_NEAR(cost_of["linear_usd"].get<double>(), run_seconds / 1000.0, 1e-12);
    EXPECT_NEAR(cost_of["per_step_usd"].get<double>(),
                billed_seconds / 1000.0 / static_cast<double>(report["steps"].size()), 1e-12);
  }

  ScratchDir scratch_{"ftbench-resume"};
  const fs::path dir_ = scratch_.path();
};

std::vector<json> field_of_steps(const json& report, const char* field) {
  std::vector<json> out;
  for (const json& s : report["steps"]) out.push_back(s[field]);
  return out;
}

// A resumed run trained as the straight one did, bit for bit: every step's loss, gradient norm,
// learning rate, epoch and tokens, and every validation pass.
void expect_same_training(const json& straight, const json& resumed) {
  ASSERT_EQ(straight["steps"].size(), resumed["steps"].size());
  for (const char* field :
       {"loss", "grad_norm", "lr", "epoch", "real_tokens", "padded_tokens", "loss_tokens"}) {
    EXPECT_EQ(field_of_steps(straight, field), field_of_steps(resumed, field)) << field;
  }
  EXPECT_EQ(straight["evaluations"].size(), resumed["evaluations"].size());
  for (size_t i = 0; i < std::min(straight["evaluations"].size(), resumed["evaluations"].size());
       ++i) {
    const json& a = straight["evaluations"][i];
    const json& b = resumed["evaluations"][i];
    EXPECT_EQ(a["after_step"], b["after_step"]) << "evaluation " << i;
    EXPECT_EQ(a["loss"], b["loss"]) << "evaluation " << i;
    EXPECT_EQ(a["loss_tokens"], b["loss_tokens"]) << "evaluation " << i;
    EXPECT_EQ(a["batches"], b["batches"]) << "evaluation " << i;
  }
}

// The checkpoints of `step` in two folders hold the same state, byte for byte: adapters, AdamW
// moments, step counts, generator.
void expect_same_state(const fs::path& a, const fs::path& b, int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08d", step);
  ASSERT_TRUE(fs::exists(a / name / "checkpoint.json")) << a / name;
  ASSERT_TRUE(fs::exists(b / name / "checkpoint.json")) << b / name;
  const std::string state_a = read_file(a / name / "state.safetensors");
  const std::string state_b = read_file(b / name / "state.safetensors");
  ASSERT_GT(state_a.size(), 1000u) << a / name;
  EXPECT_TRUE(state_a == state_b) << "the checkpoints of step " << step << " differ";
  const json ma = read_json(a / name / "checkpoint.json");
  const json mb = read_json(b / name / "checkpoint.json");
  EXPECT_EQ(ma["tensors"]["sha256"], mb["tensors"]["sha256"]);
  EXPECT_EQ(ma["optimizer"]["parameter_steps"], mb["optimizer"]["parameter_steps"]);
  EXPECT_EQ(ma["position"], mb["position"]);
}

// 20 steps straight, and 10 steps, a stop, a resume in a new process and 10 more: the same
// losses, gradient norms and learning rates bit for bit, and the same final state (adapter
// weights, AdamW moments, random-number generator) byte for byte.
TEST_F(Resume, TwentyStepsStraightEqualTenStopResumeTen) {
  const Result straight = ftbench(args("straight.json", "ck-straight", 10));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;

  const Result first = ftbench(args("resumed.json", "ck-resumed", 10) + " --stop-after-steps 10");
  ASSERT_EQ(first.exit_code, 4) << first.output;
  EXPECT_NE(first.output.find("stopped by --stop-after-steps 10 after step 10 of 20"),
            std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("--resume latest"), std::string::npos) << first.output;
  const json part = read_json(dir_ / "resumed.json");
  EXPECT_EQ(part["run"]["status"], "interrupted");
  EXPECT_EQ(part["steps"].size(), 10u);
  ASSERT_EQ(part["checkpoints"].size(), 1u);
  EXPECT_EQ(part["checkpoints"][0]["step"], 10);
  EXPECT_EQ(part["checkpoints"][0]["reason"], "every_steps");
  EXPECT_GT(part["checkpoints"][0]["bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(fs::exists(dir_ / "ck-resumed" / "step-00000010" / "state.safetensors"));

  // The interrupted report of the same job is replaced without --force.
  const Result second = ftbench(args("resumed.json", "ck-resumed", 10) + " --resume latest");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const json a = read_json(dir_ / "straight.json");
  const json b = read_json(dir_ / "resumed.json");
  EXPECT_EQ(b["run"]["status"], "completed");
  ASSERT_EQ(a["steps"].size(), 20u);
  ASSERT_EQ(b["steps"].size(), 20u);
  EXPECT_EQ(field_of_steps(a, "loss"), field_of_steps(b, "loss"));
  EXPECT_EQ(field_of_steps(a, "grad_norm"), field_of_steps(b, "grad_norm"));
  EXPECT_EQ(field_of_steps(a, "lr"), field_of_steps(b, "lr"));
  EXPECT_EQ(field_of_steps(a, "real_tokens"), field_of_steps(b, "real_tokens"));
  EXPECT_EQ(b["steps"][9]["segment"], 1);
  EXPECT_EQ(b["steps"][10]["segment"], 2);

  // Segments: the interrupted process and the one that finished, billed one after the other.
  ASSERT_EQ(b["segments"].size(), 2u);
  EXPECT_EQ(b["segments"][0]["status"], "interrupted");
  EXPECT_EQ(b["segments"][0]["first_step"], 1);
  EXPECT_EQ(b["segments"][0]["last_step"], 10);
  EXPECT_EQ(b["segments"][1]["status"], "completed");
  EXPECT_EQ(b["segments"][1]["first_step"], 11);
  EXPECT_EQ(b["segments"][1]["last_step"], 20);
  EXPECT_EQ(b["segments"][1]["resumed_from"], (dir_ / "ck-resumed" / "step-00000010").string());
  EXPECT_GT(b["segments"][1]["time_to_first_step_seconds"].get<double>(), 0.0);
  EXPECT_EQ(b["timing"]["total_run_seconds"].get<double>(),
            b["segments"][0]["run_seconds"].get<double>() +
                b["segments"][1]["run_seconds"].get<double>());
  EXPECT_NE(second.output.find("2 (resumed 1 time)"), std::string::npos) << second.output;
  // The warm-up is left out of each segment.
  EXPECT_EQ(b["summary"]["warmup_steps_excluded"], 4);
  ASSERT_EQ(b["checkpoints"].size(), 2u);
  EXPECT_EQ(b["checkpoints"][1]["step"], 20);
  EXPECT_EQ(b["checkpoints"][1]["segment"], 2);

  // Final state, byte for byte: adapters, moments, step counts, generator.
  const std::string final_a =
      read_file(dir_ / "ck-straight" / "step-00000020" / "state.safetensors");
  const std::string final_b =
      read_file(dir_ / "ck-resumed" / "step-00000020" / "state.safetensors");
  ASSERT_GT(final_a.size(), 1000u);
  EXPECT_TRUE(final_a == final_b) << "the final checkpoints differ";
  const json ma = read_json(dir_ / "ck-straight" / "step-00000020" / "checkpoint.json");
  const json mb = read_json(dir_ / "ck-resumed" / "step-00000020" / "checkpoint.json");
  EXPECT_EQ(ma["tensors"]["sha256"], mb["tensors"]["sha256"]);
  EXPECT_EQ(ma["optimizer"]["parameter_steps"], mb["optimizer"]["parameter_steps"]);

  expect_cost_bills_each_segment(dir_ / "resumed.json", b);
}

TEST_F(Resume, TimedCheckpointsKeepTheLastK) {
  // every_minutes so small that every step is due: three saves, two kept.
  const Result r = ftbench(args("r.json", "ck", 0) +
                           " --set train.max_steps=3 --set train.checkpoint.every_minutes=1e-9");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json rep = read_json(dir_ / "r.json");
  ASSERT_EQ(rep["checkpoints"].size(), 3u);
  for (const json& c : rep["checkpoints"]) EXPECT_EQ(c["reason"], "every_minutes");
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(dir_ / "ck")) {
    kept.push_back(e.path().filename().string());
  }
  std::sort(kept.begin(), kept.end());
  // and the segment journal beside them (every process of the run, for a later resume).
  EXPECT_EQ(kept, (std::vector<std::string>{"segments.json", "step-00000002", "step-00000003"}));
  // Each save is a phase of its own between steps; the phases stay contiguous.
  int saves = 0;
  double end = 0.0;
  for (const json& p : rep["timing"]["phases"]) {
    saves += p["name"] == "checkpoint";
    EXPECT_NEAR(p["start_seconds"].get<double>(), end, 1e-9) << p["name"];
    end = p["start_seconds"].get<double>() + p["seconds"].get<double>();
  }
  EXPECT_EQ(saves, 3);
}

TEST_F(Resume, RefusesACheckpointOfAnotherJobOrData) {
  ASSERT_EQ(ftbench(args("r.json", "ck", 5) + " --stop-after-steps 5").exit_code, 4);
  const std::string before = read_file(dir_ / "r.json");
  // Another job: a different LoRA rank. Exit code 2, the differing key named, the report kept.
  Result r = ftbench(args("r.json", "ck", 5) + " --set lora.rank=4 --resume latest");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("saved by another job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lora.rank"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(dir_ / "r.json"), before);
  // Other data: same spec keys but another data seed changes the tokens.
  r = ftbench(args("r.json", "ck", 5) + " --set data.seed=99 --resume latest");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("data.seed"), std::string::npos) << r.output;
  // No checkpoint where --resume points.
  r = ftbench(args("r.json", "ck", 5) + " --resume '" + (dir_ / "nowhere").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no such checkpoint folder"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(dir_ / "r.json"), before);
}

// --stop-after-steps names a step this process will make: after the run's last step, or at or
// before the step a resumed run continues after, it would never stop (the run went on to the
// end, exit 0, as if it had not been given). Refused before any machine time, the report kept.
TEST_F(Resume, AStopAfterAStepThisProcessDoesNotMakeIsRefused) {
  Result r = ftbench(args("r.json", "ck", 5) + " --stop-after-steps 21");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--stop-after-steps 21: the run has 20 optimizer steps; stop after a "
                          "step from 1 to 20"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "r.json"));
  ASSERT_EQ(ftbench(args("r.json", "ck", 5) + " --stop-after-steps 5").exit_code, 4);
  const std::string before = read_file(dir_ / "r.json");
  r = ftbench(args("r.json", "ck", 5) + " --resume latest --stop-after-steps 5");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--stop-after-steps 5: this process resumes after step 5; stop after a "
                          "step from 6 to 20"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_file(dir_ / "r.json"), before);
  // A step it makes: stopped there.
  r = ftbench(args("r.json", "ck", 5) + " --resume latest --stop-after-steps 6");
  EXPECT_EQ(r.exit_code, 4) << r.output;
}

TEST_F(Resume, RefusesACheckpointOfOtherDataUnderTheSameSpec) {
  // The same spec keys over a data file whose content changed: only the data fingerprint says.
  const fs::path data = dir_ / "d.jsonl";
  auto write_data = [&](const std::string& last) {
    std::ofstream out(data);
    for (int i = 0; i < 40; ++i) {
      out << "{\"instruction\": \"Say " << i << "\", \"input\": \"\", \"output\": \""
          << (i == 39 ? last : "ok " + std::to_string(i)) << "\"}\n";
    }
  };
  write_data("the end");
  const std::string run =
      "run configs/ci-tiny.yaml --set output.progress=off --set "
      "data.source=file --set data.seq_len=512 --set data.max_tokens=512 --set data.path='" +
      data.string() + "' --set train.checkpoint.dir='" + (dir_ / "ck").string() + "' -o '" +
      (dir_ / "r.json").string() + "'";
  const Result first = ftbench(run + " --stop-after-steps 2");
  ASSERT_EQ(first.exit_code, 4) << first.output;
  write_data("another end");
  const Result r = ftbench(run + " --resume latest");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("saved with other training data"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 3/"), std::string::npos) << r.output;
  write_data("the end");
  EXPECT_EQ(ftbench(run + " --resume latest").exit_code, 0);
}

TEST_F(Resume, CorruptedCheckpointsAreRefusedAndNothingIsOverwritten) {
  ASSERT_EQ(ftbench(args("r.json", "ck", 5) + " --stop-after-steps 5").exit_code, 4);
  const fs::path folder = dir_ / "ck" / "step-00000005";
  const std::string before = read_file(dir_ / "r.json");
  const std::string tensors = read_file(folder / "state.safetensors");
  const std::string manifest = read_file(folder / "checkpoint.json");
  auto put = [&](const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  };
  struct Case {
    const char* what;
    fs::path file;
    std::string text;
    const char* message;
  };
  std::string flipped = tensors;
  flipped[flipped.size() / 2] ^= 0x01;
  const std::vector<Case> cases = {
      {"a flipped bit in the tensors", folder / "state.safetensors", flipped, "is corrupted"},
      {"truncated tensors", folder / "state.safetensors", tensors.substr(0, tensors.size() / 2),
       "truncated or replaced"},
      // The manifest's own checksum (checkpoint.json.sha256) refuses any change to it before it
      // is parsed; what a parse refuses is tested on the manifest alone (checkpoint_files_test).
      {"truncated manifest", folder / "checkpoint.json", manifest.substr(0, manifest.size() / 3),
       "(the manifest was edited or corrupted)"},
      {"a manifest that is not an object", folder / "checkpoint.json", "[]",
       "(the manifest was edited or corrupted)"},
      {"garbage manifest", folder / "checkpoint.json", std::string("\x00\xff\xfe garbage", 11),
       "(the manifest was edited or corrupted)"},
      {"no checksum beside the manifest", folder / "checkpoint.json.sha256", "",
       "(the manifest was edited or corrupted)"},
  };
  const std::string checksum = read_file(folder / "checkpoint.json.sha256");
  for (const Case& c : cases) {
    put(folder / "state.safetensors", tensors);
    put(folder / "checkpoint.json", manifest);
    put(folder / "checkpoint.json.sha256", checksum);
    put(c.file, c.text);
    const Result r = ftbench(args("r.json", "ck", 5) + " --resume latest");
    EXPECT_EQ(r.exit_code, 2) << c.what << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.what << "\n" << r.output;
    EXPECT_NE(r.output.find(folder.string()), std::string::npos) << c.what << "\n" << r.output;
    EXPECT_EQ(r.output.find("step 6/"), std::string::npos) << c.what << ": trained\n" << r.output;
    EXPECT_EQ(read_file(dir_ / "r.json"), before) << c.what;
  }
}

TEST_F(Resume, ACheckpointThatCannotBeWrittenFailsTheRunAndKeepsTheEarlierOne) {
  ASSERT_EQ(ftbench(args("r.json", "ck", 5) + " --stop-after-steps 5").exit_code, 4);
  const std::string manifest = read_file(dir_ / "ck" / "step-00000005" / "checkpoint.json");
  const Result r = ftbench(args("r.json", "ck", 5) + " --resume latest",
                           "FTBENCH_INJECT_WRITE_FAILURE=checkpoint:ENOSPC");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(dir_ / "ck" / "step-00000005" / "checkpoint.json"), manifest);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir_ / "ck")) {
    entries.push_back(e.path().filename().string());
  }
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"segments.json", "step-00000005"}));
  // A failed resume does not overwrite the interrupted run's report (issue 14, item 12): it
  // stays as it was, and the failed attempt is a segment of the journal, billed by the next
  // resume.
  const json rep = read_json(dir_ / "r.json");
  EXPECT_EQ(rep["run"]["status"], "interrupted");
  EXPECT_EQ(rep["steps"].size(), 5u);
  const json journal = read_json(dir_ / "ck" / "segments.json");
  ASSERT_EQ(journal["segments"].size(), 2u);
  EXPECT_EQ(journal["segments"][1]["status"], "failed");
  EXPECT_EQ(journal["segments"][1]["first_step"], 6);
  EXPECT_EQ(journal["segments"][1]["last_step"], 10);
}

// SIGTERM in the middle of a run (a spot reclaim notice): the step in flight finishes, a
// checkpoint and a partial report are written, exit code 4; resumed, the run completes with
// the losses of an unbroken run.
TEST_F(Resume, SigtermMidRunThenResumeCompletes) {
  const Result straight = ftbench(args("straight.json", "ck-straight", 0));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;

  const fs::path log = dir_ / "log.txt";
  const std::string command = "cd '" FTBENCH_SOURCE_DIR "' && exec '" FTBENCH_BINARY "' " +
                              args("r.json", "ck", 0) + " >'" + log.string() + "' 2>&1";
  pid_t pid = 0;
  std::vector<char*> argv = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                             const_cast<char*>(command.c_str()), nullptr};
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv.data(), environ), 0);
  // Wait until step 3 is logged, then send SIGTERM.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (read_file(log).find("step 3/20") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_file(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const double stop_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  const std::string output = read_file(log);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 4) << output;
  EXPECT_NE(output.find("stopped by SIGTERM after step"), std::string::npos) << output;
  // Not a timed assertion: how long the stop took is printed for the record.
  std::printf("SIGTERM to exit: %.3f s\n", stop_seconds);

  const json part = read_json(dir_ / "r.json");
  EXPECT_EQ(part["run"]["status"], "interrupted");
  const size_t done = part["steps"].size();
  ASSERT_GE(done, 3u);
  ASSERT_LT(done, 20u);
  ASSERT_EQ(part["checkpoints"].size(), 1u);
  EXPECT_EQ(part["checkpoints"][0]["reason"], "signal");
  EXPECT_EQ(part["checkpoints"][0]["step"], done);

  const Result resumed = ftbench(args("r.json", "ck", 0) + " --resume latest");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const json a = read_json(dir_ / "straight.json");
  const json b = read_json(dir_ / "r.json");
  EXPECT_EQ(b["run"]["status"], "completed");
  EXPECT_EQ(field_of_steps(a, "loss"), field_of_steps(b, "loss"));
  EXPECT_EQ(b["segments"].size(), 2u);
}

// The ci-tiny job of `args` (20 steps, a checkpoint every `every`) as an argument vector, for a
// process that a signal must reach directly.
std::vector<std::string> run_argv(const fs::path& dir, const std::string& name,
                                  const std::string& checkpoints, int every,
                                  const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {FTBENCH_BINARY,
                                   "run",
                                   "configs/ci-tiny.yaml",
                                   "--set",
                                   "data.num_examples=160",
                                   "--set",
                                   "output.progress=off",
                                   "--set",
                                   "train.checkpoint.every_steps=" + std::to_string(every),
                                   "--set",
                                   "train.checkpoint.dir=" + (dir / checkpoints).string(),
                                   "-o",
                                   (dir / name).string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// A spot reclaim without notice, the OOM killer: SIGKILL between periodic checkpoints, three
// times at different moments (between saves, right as a save is due, late in the run), each
// time continued with --resume latest from the last periodic checkpoint. The run completes with
// the losses, gradient norms and final state of an unbroken run, bit for bit, and each killed
// process is a segment of the report, billed up to its last record in the journal. It used to
// end with exit 2: the checkpoint's partial report says run.status "unfinished", which the
// reader refused.
TEST_F(Resume, KilledWithoutNoticeThreeTimesResumesFromPeriodicCheckpoints) {
  const Result straight = ftbench(args("straight.json", "ck-straight", 2));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;

  const std::vector<int> kill_after = {3, 10, 15};
  for (size_t i = 0; i < kill_after.size(); ++i) {
    SCOPED_TRACE("kill -9 after step " + std::to_string(kill_after[i]));
    std::vector<std::string> extra;
    if (i > 0) extra = {"--resume", "latest"};
    const fs::path logs = dir_ / ("logs-" + std::to_string(i));
    fs::create_directories(logs);
    ftbench::e2e::Spawned run(run_argv(dir_, "r.json", "ck", 2, extra), logs);
    ASSERT_TRUE(run.spawned());
    const std::string step = "step " + std::to_string(kill_after[i]) + "/20";
    ASSERT_TRUE(run.wait_for_out(step, 180.0)) << run.out() << run.err();
    ASSERT_EQ(::kill(run.pid(), SIGKILL), 0);
    run.wait();
    ASSERT_EQ(run.signal, SIGKILL) << run.err();
    EXPECT_FALSE(fs::exists(dir_ / "r.json")) << "a killed process wrote no report";
  }
  const Result resumed = ftbench(args("r.json", "ck", 2) + " --resume latest");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;

  const json a = read_json(dir_ / "straight.json");
  const json b = read_json(dir_ / "r.json");
  EXPECT_EQ(b["run"]["status"], "completed");
  expect_same_training(a, b);
  expect_same_state(dir_ / "ck-straight", dir_ / "ck", 20);
  // Four processes: three killed (their end unknown: "unfinished", billed to their last record),
  // the last completed.
  ASSERT_EQ(b["segments"].size(), 4u);
  int64_t next_first = 1;
  for (size_t i = 0; i < 3; ++i) {
    const json& g = b["segments"][i];
    SCOPED_TRACE("segment " + std::to_string(i + 1));
    EXPECT_EQ(g["status"], "unfinished");
    EXPECT_EQ(g["first_step"], next_first);
    EXPECT_GE(g["last_step"].get<int64_t>(), next_first);
    EXPECT_LE(g["last_step"].get<int64_t>(), kill_after[i] + 1);
    EXPECT_GT(g["run_seconds"].get<double>(), 0.0);
    // The next process starts after the last checkpoint of this one, a step that it made.
    next_first = b["segments"][i + 1]["first_step"].get<int64_t>();
    EXPECT_LE(next_first, kill_after[i] + 1);
  }
  EXPECT_EQ(b["segments"][3]["status"], "completed");
  EXPECT_EQ(b["segments"][3]["last_step"], 20);
  expect_cost_bills_each_segment(dir_ / "r.json", b);
}

// SIGHUP (the SSH session that started the run dropped) is a stop request like SIGTERM: the step
// in flight finishes, a checkpoint and an interrupted report are written, exit code 4, and the
// run resumes. It used to kill the run at once with no report and no checkpoint.
TEST_F(Resume, SighupStopsWithACheckpointThenResumeCompletes) {
  const Result straight = ftbench(args("straight.json", "ck-straight", 0));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  {
    ftbench::e2e::Spawned run(run_argv(dir_, "r.json", "ck", 0), dir_);
    ASSERT_TRUE(run.spawned());
    ASSERT_TRUE(run.wait_for_out("step 3/20", 180.0)) << run.out() << run.err();
    ASSERT_EQ(::kill(run.pid(), SIGHUP), 0);
    const int code = run.wait();
    ASSERT_EQ(run.signal, 0) << "killed by signal " << run.signal << "\n" << run.err();
    EXPECT_EQ(code, 4) << run.err();
    EXPECT_NE(run.err().find("stopped by SIGHUP after step"), std::string::npos) << run.err();
  }
  const json part = read_json(dir_ / "r.json");
  EXPECT_EQ(part["run"]["status"], "interrupted");
  ASSERT_EQ(part["checkpoints"].size(), 1u);
  EXPECT_EQ(part["checkpoints"][0]["reason"], "signal");
  const Result resumed = ftbench(args("r.json", "ck", 0) + " --resume latest");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const json b = read_json(dir_ / "r.json");
  expect_same_training(read_json(dir_ / "straight.json"), b);
  EXPECT_EQ(b["segments"].size(), 2u);
}

// A plain rerun over the checkpoints of a run killed without notice started at step 1 and pruned
// them with its own saves, no --force needed (a hostile review of issue 39): it is refused
// (exit 5, the folder named and both ways on said), and --force starts again.
TEST_F(Resume, AFreshRunOverResumableCheckpointsNeedsForce) {
  ASSERT_EQ(ftbench(args("r.json", "ck", 2) + " --stop-after-steps 4").exit_code, 4);
  fs::remove(dir_ / "r.json");  // as after a kill -9: checkpoints, no report
  const Result again = ftbench(args("r.json", "ck", 2));
  EXPECT_EQ(again.exit_code, 5) << again.output;
  EXPECT_NE(again.output.find((dir_ / "ck").string() + ": holds 2 checkpoints (the newest "),
            std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("continue it with --resume latest, or pass --force"),
            std::string::npos)
      << again.output;
  EXPECT_TRUE(fs::exists(dir_ / "ck" / "step-00000004" / "checkpoint.json"));
  const Result forced = ftbench(args("r.json", "ck", 2) + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
}

// A process killed before its first checkpoint was not billed at all: the journal began at the
// first save (a hostile review of issue 39). A run that saves checkpoints journals from its
// start, and the next process, plain or with --resume latest, starts at step 1 with the killed
// one as an unfinished segment whose steps are made again.
TEST_F(Resume, AProcessKilledBeforeItsFirstCheckpointIsBilled) {
  for (const bool resume : {true, false}) {
    SCOPED_TRACE(resume ? "--resume latest" : "a plain rerun");
    fs::remove_all(dir_ / "ck");
    fs::remove(dir_ / "r.json");
    {
      ftbench::e2e::Spawned run(run_argv(dir_, "r.json", "ck", 15), dir_);
      ASSERT_TRUE(run.spawned());
      ASSERT_TRUE(run.wait_for_out("step 5/20", 180.0)) << run.out() << run.err();
      ASSERT_EQ(::kill(run.pid(), SIGKILL), 0);
      run.wait();
    }
    ASSERT_TRUE(fs::exists(dir_ / "ck" / "segments.json"));
    const Result next = ftbench(args("r.json", "ck", 15) + (resume ? " --resume latest" : ""));
    ASSERT_EQ(next.exit_code, 0) << next.output;
    const json b = read_json(dir_ / "r.json");
    ASSERT_EQ(b["segments"].size(), 2u) << b["segments"].dump(1);
    EXPECT_EQ(b["segments"][0]["status"], "unfinished");
    EXPECT_GT(b["segments"][0]["run_seconds"].get<double>(), 0.0);
    EXPECT_EQ(b["segments"][0]["discarded_steps"].get<int64_t>(),
              b["segments"][0]["last_step"].get<int64_t>() == 0
                  ? 0
                  : b["segments"][0]["last_step"].get<int64_t>() -
                        b["segments"][0]["first_step"].get<int64_t>() + 1);
    EXPECT_EQ(b["segments"][1]["first_step"], 1);
    EXPECT_EQ(b["steps"].size(), 20u);
    expect_cost_bills_each_segment(dir_ / "r.json", b);
  }
}

// A process killed after its last save and before its report left no report, and --resume latest
// said only "nothing left to run" (a hostile review of issue 39): it names the way on, the
// checkpoint before, from which the run completes with its report.
TEST_F(Resume, KilledAfterTheLastSaveBeforeTheReportSaysTheWayOn) {
  ASSERT_EQ(ftbench(args("r.json", "ck", 2)).exit_code, 0);
  fs::remove(dir_ / "r.json");  // as after a kill -9 between the last save and the report
  const Result latest = ftbench(args("r.json", "ck", 2) + " --resume latest");
  EXPECT_EQ(latest.exit_code, 2) << latest.output;
  const std::string before = (dir_ / "ck" / "step-00000018").string();
  EXPECT_NE(latest.output.find("nothing left to run; if the process that saved it ended before "
                               "writing its report (killed after the save), continue from the "
                               "checkpoint before it: --resume " +
                               before),
            std::string::npos)
      << latest.output;
  const Result way_on = ftbench(args("r.json", "ck", 2) + " --resume '" + before + "'");
  ASSERT_EQ(way_on.exit_code, 0) << way_on.output;
  EXPECT_EQ(read_json(dir_ / "r.json")["run"]["status"], "completed");
}

// ci-tiny over two epochs (8 steps each) in three processes: stopped in the first epoch
// (step 6), resumed across the boundary into the second (stopped at 11), resumed to the end.
// Each resume rebuilds the data order of an epoch it did not start, the second one of an
// epoch whose first steps another process ran.
TEST_F(Resume, AcrossAnEpochBoundaryInThreeSegments) {
  auto run = [&](const std::string& name, const std::string& checkpoints) {
    return "run configs/ci-tiny.yaml --set train.epochs=2 --set output.progress=off "
           "--set train.checkpoint.every_steps=8 --set train.checkpoint.keep_last=8 "
           "--set train.checkpoint.dir='" +
           (dir_ / checkpoints).string() + "' -o '" + (dir_ / name).string() + "'";
  };
  const Result straight = ftbench(run("straight.json", "ck-straight"));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  ASSERT_EQ(ftbench(run("r.json", "ck") + " --stop-after-steps 6").exit_code, 4);
  const Result second = ftbench(run("r.json", "ck") + " --resume latest --stop-after-steps 11");
  ASSERT_EQ(second.exit_code, 4) << second.output;
  const Result third = ftbench(run("r.json", "ck") + " --resume latest");
  ASSERT_EQ(third.exit_code, 0) << third.output;

  const json a = read_json(dir_ / "straight.json");
  const json b = read_json(dir_ / "r.json");
  ASSERT_EQ(a["steps"].size(), 16u);
  EXPECT_EQ(a["steps"][7]["epoch"], 1);
  EXPECT_EQ(a["steps"][8]["epoch"], 2);
  expect_same_training(a, b);
  ASSERT_EQ(b["segments"].size(), 3u);
  EXPECT_EQ(b["segments"][1]["first_step"], 7);
  EXPECT_EQ(b["segments"][1]["last_step"], 11);
  EXPECT_EQ(b["segments"][2]["first_step"], 12);
  // The saves at the epoch boundary and at the end hold the same state as the straight run's.
  expect_same_state(dir_ / "ck-straight", dir_ / "ck", 8);
  expect_same_state(dir_ / "ck-straight", dir_ / "ck", 16);
  expect_cost_bills_each_segment(dir_ / "r.json", b);
}

// File data packed several examples to a row, a validation set held out and evaluated every 2
// steps, two epochs: stopped one step before the end of the first epoch, resumed. The packed
// rows, the validation passes (their steps and losses) and the final state equal those of an
// unbroken run.
TEST_F(Resume, PackedFileDataWithEvaluationAcrossAnEpochBoundary) {
  {
    std::ofstream data(dir_ / "d.jsonl");
    for (int i = 0; i < 60; ++i) {
      data << json({{"instruction", "Repeat " + std::string(static_cast<size_t>(i % 7 + 1), 'x')},
                    {"input", i % 3 == 0 ? "an input of " + std::to_string(i) : ""},
                    {"output", "number " + std::to_string(i * 37 % 101)}})
                  .dump()
           << "\n";
    }
  }
  auto run = [&](const std::string& name, const std::string& checkpoints) {
    return "run configs/ci-tiny.yaml --set output.progress=off --set data.source=file "
           "--set data.path='" +
           (dir_ / "d.jsonl").string() +
           "' --set data.padding=pack --set data.seq_len=512 --set data.max_tokens=512 "
           "--set data.validation_fraction=0.2 --set train.eval_every_steps=2 "
           "--set train.epochs=2 --set train.micro_batch_size=4 --set train.grad_accum_steps=1 "
           "--set train.checkpoint.every_steps=1 --set train.checkpoint.dir='" +
           (dir_ / checkpoints).string() + "' -o '" + (dir_ / name).string() + "'";
  };
  const Result straight = ftbench(run("straight.json", "ck-straight"));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const json a = read_json(dir_ / "straight.json");
  const int64_t per_epoch = a["derived"]["steps_per_epoch"].get<int64_t>();
  const int64_t total = a["derived"]["total_steps"].get<int64_t>();
  ASSERT_GE(per_epoch, 3) << "the test needs a stop inside the first epoch";
  ASSERT_EQ(total, 2 * per_epoch);
  // 48 training examples of ~190 tokens: about two to a row of 512, so fewer micro-batches of
  // 4 rows than the 12 of unpacked examples.
  EXPECT_EQ(a["data"]["examples"], 48);
  EXPECT_LT(per_epoch, 48 / 4) << "the rows are packed";
  EXPECT_EQ(a["data"]["validation"]["examples"], 12);
  ASSERT_GE(a["evaluations"].size(), 3u);

  const std::string stop = std::to_string(per_epoch - 1);
  ASSERT_EQ(ftbench(run("r.json", "ck") + " --stop-after-steps " + stop).exit_code, 4);
  const json part = read_json(dir_ / "r.json");
  EXPECT_EQ(part["evaluations"].size(), static_cast<size_t>((per_epoch - 1) / 2));
  const Result resumed = ftbench(run("r.json", "ck") + " --resume latest");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const json b = read_json(dir_ / "r.json");
  expect_same_training(a, b);
  EXPECT_EQ(b["data"]["fingerprint"], a["data"]["fingerprint"]);
  EXPECT_EQ(b["segments"].size(), 2u);
  expect_same_state(dir_ / "ck-straight", dir_ / "ck", static_cast<int>(total));
}

// After an out-of-memory fallback (simulated: from step 3 a micro-batch over 2 rows does not
// fit, so 4 x 2 becomes 2 x 4): stopped at step 5, resumed. The resumed process must continue
// at 2 x 4 from the checkpoint (at 4 x 2 the same examples would sum in another order), and its
// report keeps the fallback.
TEST_F(Resume, AfterAnOutOfMemoryFallback) {
  const std::string oom = "FTBENCH_INJECT_OOM='step=3,micro_batch>2'";
  auto run = [&](const std::string& name, const std::string& checkpoints) {
    return "run configs/ci-tiny.yaml --set output.progress=off "
           "--set train.checkpoint.every_steps=8 --set train.checkpoint.dir='" +
           (dir_ / checkpoints).string() + "' -o '" + (dir_ / name).string() + "'";
  };
  const Result straight = ftbench(run("straight.json", "ck-straight"), oom);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const Result first = ftbench(run("r.json", "ck") + " --stop-after-steps 5", oom);
  ASSERT_EQ(first.exit_code, 4) << first.output;
  const json manifest = read_json(dir_ / "ck" / "step-00000005" / "checkpoint.json");
  EXPECT_EQ(manifest["position"]["micro_batch_size"], 2);
  EXPECT_EQ(manifest["position"]["grad_accum_steps"], 4);
  const Result resumed = ftbench(run("r.json", "ck") + " --resume latest", oom);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;

  const json a = read_json(dir_ / "straight.json");
  const json b = read_json(dir_ / "r.json");
  ASSERT_EQ(a["batching"]["fallbacks"].size(), 1u);
  expect_same_training(a, b);
  EXPECT_EQ(b["batching"]["micro_batch_size"], 2);
  EXPECT_EQ(b["batching"]["grad_accum_steps"], 4);
  ASSERT_EQ(b["batching"]["fallbacks"].size(), 1u);
  EXPECT_EQ(b["batching"]["fallbacks"][0]["step"], 3);
  EXPECT_EQ(b["batching"]["fallbacks"][0]["to_micro_batch_size"], 2);
  EXPECT_EQ(b["segments"].size(), 2u);
  expect_same_state(dir_ / "ck-straight", dir_ / "ck", 8);
}

}  // namespace
