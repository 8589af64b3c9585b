// The exit code each kind of error ends a command with (README "Exit codes"): every error class
// that a library throws, thrown from a command's action through the one catch of run_cli.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/gemm_result.h"
#include "bench/gemm_sweep.h"
#include "cli/commands.h"
#include "data/file_dataset.h"
#include "data/tokenizer.h"
#include "device/torch/backend.h"
#include "economics/cost/catalog.h"
#include "model/hf/checkpoint_layout.h"
#include "model/hf/torch/peft_adapter.h"
#include "report/report_io.h"
#include "spec/checkpoint_config.h"
#include "spec/spec_error.h"
#include "train/checkpoint_files.h"
#include "train/oom_fallback.h"
#include "train/stop_signals.h"
#include "train/torch/trainer.h"
#include "util/io/output_file.h"
#include "util/io/safetensors.h"
#include "util/io/whole_file.h"

namespace ftbench::cli {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string err;
};

// `ftbench boom`: a command whose action throws what `fail` throws.
Outcome run_failing(const std::function<void()>& fail) {
  const TorchCommands commands = [&](CLI::App& app) {
    app.add_subcommand("boom", "throws");
    return std::map<std::string, Action>{{"boom", [&]() -> int {
                                            fail();
                                            return kExitOk;
                                          }}};
  };
  std::vector<std::string> words = {"ftbench", "boom"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  testing::internal::CaptureStderr();
  Outcome out;
  out.exit_code = run_cli(static_cast<int>(argv.size()), argv.data(), commands);
  out.err = testing::internal::GetCapturedStderr();
  return out;
}

template <typename E>
std::function<void()> throws(const std::string& message) {
  return [message] { throw E(message); };
}

// Out of memory while the command line is set up (CLI11's options, spdlog's pattern: before the
// actions' try) ended in std::terminate under `ulimit -v` (a review of issue 41): it is exit 3
// with the out-of-memory message, as in an action.
TEST(ExitCodes, OutOfMemoryWhileTheCommandLineIsSetUpIsThree) {
  const TorchCommands commands = [](CLI::App&) -> std::map<std::string, Action> {
    throw std::bad_alloc();
  };
  std::vector<std::string> words = {"ftbench", "boom"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  testing::internal::CaptureStderr();
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), commands);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitFailure);
  EXPECT_EQ(err.rfind("error: out of memory: an allocation failed (std::bad_alloc) under ", 0), 0u)
      << err;
  EXPECT_NE(err.find("raise the limit, or make the job smaller"), std::string::npos) << err;
}

TEST(ExitCodes, BadInputIsTwo) {
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"InputError", throws<InputError>("m")},
      {"TokenizerError", throws<data::TokenizerError>("m")},
      {"DataError", throws<data::DataError>("m")},
      {"SweepError", throws<bench::SweepError>("m")},
      {"GemmFileError", throws<bench::GemmFileError>("m")},
      {"CatalogError", throws<cost::CatalogError>("m")},
      {"HfCheckpointError", throws<spec::HfCheckpointError>("m")},
      {"CheckpointError", throws<train::CheckpointError>("m")},
      {"FileReadError", [] { throw io::FileReadError("f.json", "m"); }},
  };
  for (const auto& [name, fail] : cases) {
    const Outcome o = run_failing(fail);
    EXPECT_EQ(o.exit_code, kExitBadInput) << name;
    EXPECT_NE(o.err.find("error: "), std::string::npos) << name << ": " << o.err;
  }
}

TEST(ExitCodes, AnInvalidSpecIsTwoWithItsHeadline) {
  spec::SpecIssue issue;
  issue.file = "s.yaml";
  issue.key_path = "lora.rank";
  issue.line = 3;
  issue.message = "must be >= 1, found 0";
  const Outcome o = run_failing([&] { throw spec::SpecError({issue}); });
  EXPECT_EQ(o.exit_code, kExitBadInput);
  EXPECT_EQ(o.err, "error: invalid run spec\ns.yaml:3: lora.rank: must be >= 1, found 0\n");
}

TEST(ExitCodes, ARunThatFailedIsThree) {
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"RunFailure", throws<RunFailure>("m")},
      {"ReportError", throws<report::ReportError>("m")},
      {"FileWriteError", throws<io::FileWriteError>("m")},
      {"BackendError", throws<device::BackendError>("m")},
      {"SafetensorsError", throws<io::SafetensorsError>("m")},
      {"CheckpointWriteError", throws<train::CheckpointWriteError>("m")},
      {"OutOfMemoryFailure", throws<train::OutOfMemoryFailure>("m")},
      {"std::runtime_error", throws<std::runtime_error>("m")},
  };
  for (const auto& [name, fail] : cases) {
    const Outcome o = run_failing(fail);
    EXPECT_EQ(o.exit_code, kExitFailure) << name;
    EXPECT_EQ(o.err, "error: m\n") << name;
  }
  EXPECT_EQ(run_failing([] { throw train::Diverged(7, 1e30); }).exit_code, kExitFailure);
}

TEST(ExitCodes, AnInterruptedRunIsFourWithoutAnErrorPrefix) {
  const Outcome o = run_failing(throws<train::Interrupted>("interrupted by SIGTERM"));
  EXPECT_EQ(o.exit_code, kExitInterrupted);
  EXPECT_EQ(o.err, "interrupted by SIGTERM\n");
}

// An export folder that appeared during the run ended with 3 before the error kinds carried
// their codes (it had its own class then; a report, a log and an export folder now share
// io::FileExistsError).
TEST(ExitCodes, AnOutputThatExistsIsFive) {
  const Outcome o = run_failing(throws<io::FileExistsError>("r.json exists"));
  EXPECT_EQ(o.exit_code, kExitOutputExists);
  EXPECT_EQ(o.err, "error: r.json exists\n");
}

TEST(ExitCodes, SomethingNotAnExceptionIsOne) {
  const Outcome o = run_failing([] { throw 42; });
  EXPECT_EQ(o.exit_code, kExitInternal);
  EXPECT_NE(o.err.find("a bug in ftbench"), std::string::npos) << o.err;
}

// A message from a shared file cannot drive the terminal: control bytes are shown escaped.
TEST(ExitCodes, MessagesAreMadePrintable) {
  const Outcome o = run_failing(throws<InputError>("bad \x1b[31mred"));
  EXPECT_EQ(o.exit_code, kExitBadInput);
  EXPECT_EQ(o.err.find('\x1b'), std::string::npos) << o.err;
}

}  // namespace
}  // namespace ftbench::cli
