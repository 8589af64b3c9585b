// End to end: signals and a hostile environment around `ftbench run` (issue 14, items 3, 7, 8).
// A stop signal at any moment, also while LibTorch loads and also as PID 1 (as in a container),
// ends the run with exit code 4 and an interrupted report; a second one ends it at once; a closed
// stdout or a file-size limit never kills it silently.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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
using ftbench::e2e::ScratchDir;
using ftbench::e2e::shell_quote;
using ftbench::e2e::slurp;
using ftbench::e2e::Spawned;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

class Signals : public ::testing::Test {
 protected:
  // `ftbench run configs/ci-tiny.yaml` with its report and checkpoints in the scratch folder.
  std::vector<std::string> run_args(const std::string& report, int64_t steps = 4) const {
    return {FTBENCH_BINARY,
            "run",
            "configs/ci-tiny.yaml",
            "--set",
            "output.progress=off",
            "--set",
            "data.num_examples=" + std::to_string(steps * 8),
            "--set",
            "train.checkpoint.dir=" + (dir_ / "ck").string(),
            "-o",
            (dir_ / report).string()};
  }
  json report(const std::string& name) const { return json::parse(slurp(dir_ / name)); }

  ScratchDir scratch_{"ftbench-signals"};
  const fs::path dir_ = scratch_.path();
};

// SIGTERM and SIGINT while LibTorch loads (the launcher's exec, ftbench-bin's static
// initialisers: about a second before main) and during set-up used to kill the run with 143/130,
// no report, no message. Now: exit code 4 and an interrupted report, billed.
TEST_F(Signals, AStopSignalBeforeTheFirstStepEndsTheRunWithAnInterruptedReport) {
  for (const double delay : {0.1, 0.4, 0.8}) {
    for (const int sig : {SIGTERM, SIGINT}) {
      SCOPED_TRACE(std::to_string(delay) + " s, signal " + std::to_string(sig));
      const std::string name =
          "early-" + std::to_string(sig) + "-" + std::to_string(delay) + ".json";
      Spawned run(run_args(name, 400), dir_);
      ASSERT_TRUE(run.spawned());
      run.at(delay);
      ASSERT_EQ(::kill(run.pid(), sig), 0);
      const int code = run.wait();
      ASSERT_EQ(run.signal, 0) << "killed by signal " << run.signal << "; stderr: " << run.err();
      EXPECT_EQ(code, 4) << run.err();
      const json r = report(name);
      EXPECT_EQ(r["run"]["status"], "interrupted");
      ASSERT_EQ(r["segments"].size(), 1u);
      EXPECT_EQ(r["segments"][0]["status"], "interrupted");
      EXPECT_GT(r["segments"][0]["run_seconds"].get<double>(), 0.0);
      // 400 steps take minutes here: the stop came long before the last.
      EXPECT_LT(r["steps"].size(), 400u);
    }
  }
}

// A stop during set-up (a reclaim notice while the image or the weights load) leaves no
// checkpoint: there is no step to save. It used to say "stopping ... with a checkpoint" all the
// same, and then neither way on worked: --resume latest found no checkpoint (exit 2), a plain
// rerun found the report (exit 5), and --force dropped the stopped process's rented time. Now
// each of the three starts at step 1, trains as an unbroken run does, and keeps the stopped
// process as the report's first segment, billed.
TEST_F(Signals, AfterAStopDuringSetUpARerunStartsCleanlyAndKeepsTheStoppedSegment) {
  std::vector<std::string> straight_args = run_args("straight.json");
  straight_args[8] = "train.checkpoint.dir=" + (dir_ / "ck-straight").string();
  Spawned straight(straight_args, dir_);
  ASSERT_EQ(straight.wait(), 0) << straight.err();
  const json unbroken = report("straight.json");
  for (const std::vector<std::string>& rerun :
       {std::vector<std::string>{}, std::vector<std::string>{"--resume", "latest"},
        std::vector<std::string>{"--force"}}) {
    std::string how = "plain rerun";
    if (!rerun.empty()) how = rerun[0];
    SCOPED_TRACE(how);
    fs::remove_all(dir_ / "ck");
    fs::remove(dir_ / "r.json");
    {
      Spawned run(run_args("r.json"), dir_);
      ASSERT_TRUE(run.spawned());
      ASSERT_TRUE(run.handles_soon(SIGTERM));
      ASSERT_EQ(::kill(run.pid(), SIGTERM), 0);
      ASSERT_EQ(run.wait(), 4) << run.err();
      EXPECT_EQ(run.err().find("with a checkpoint"), std::string::npos) << run.err();
      EXPECT_NE(run.err().find("nothing to checkpoint"), std::string::npos) << run.err();
      EXPECT_NE(run.err().find("no checkpoint written; run the same command again"),
                std::string::npos)
          << run.err();
    }
    const json stopped = report("r.json");
    ASSERT_EQ(stopped["steps"].size(), 0u);
    ASSERT_EQ(stopped["segments"].size(), 1u);
    std::vector<std::string> argv = run_args("r.json");
    argv.insert(argv.end(), rerun.begin(), rerun.end());
    Spawned again(argv, dir_);
    ASSERT_EQ(again.wait(), 0) << again.err();
    const json r = report("r.json");
    EXPECT_EQ(r["run"]["status"], "completed");
    ASSERT_EQ(r["steps"].size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(r["steps"][i]["loss"], unbroken["steps"][i]["loss"]) << "step " << i + 1;
      EXPECT_EQ(r["steps"][i]["segment"], 2);
    }
    ASSERT_EQ(r["segments"].size(), 2u);
    EXPECT_EQ(r["segments"][0], stopped["segments"][0]) << "the stopped process, as it was";
    EXPECT_EQ(r["segments"][1]["first_step"], 1);
    EXPECT_EQ(r["segments"][1]["status"], "completed");
    EXPECT_EQ(r["timing"]["total_run_seconds"].get<double>(),
              r["segments"][0]["run_seconds"].get<double>() +
                  r["segments"][1]["run_seconds"].get<double>());
  }
}

// Two runs started together with the same -o: the second used to train every step and then exit
// 5, discarding its report. The report's path is now taken before any work: the second is
// refused at once, and the first is unaffected.
// A stop signal during the last step: the first signal's line promises a checkpoint after the
// step in flight, but after the last step there is nothing left to resume, and the run completed
// without a word on it (a review). Now it says so; the report is the completed run's.
TEST_F(Signals, AStopDuringTheLastStepSaysTheRunCompletesInstead) {
  const ftbench::e2e::Outcome r = ftbench::e2e::run_ftbench(
      "run configs/ci-tiny.yaml --set output.progress=off --set train.checkpoint.dir=" +
          shell_quote((dir_ / "ck").string()) + " -o " + shell_quote((dir_ / "r.json").string()),
      dir_, "FTBENCH_INJECT_RANK_FAULT=0:8:sigterm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.err + r.out)
                .find("SIGTERM came during the last step (8 of 8): nothing is left to stop; the "
                      "run completes and writes its report"),
            std::string::npos)
      << r.err << r.out;
  EXPECT_EQ(report("r.json")["run"]["status"], "completed");
}

// A stop signal while `run` waits (at most 10 s) for a FIFO spec's writer: the wait went on to
// its end and the run exited 2 for the FIFO (a review). Now the wait ends at the signal, exit 4,
// nothing run.
TEST_F(Signals, AStopWhileWaitingForAFifosWriterEndsTheWait) {
  const fs::path fifo = dir_ / "spec.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Spawned run({FTBENCH_BINARY, "run", fifo.string(), "-o", (dir_ / "r.json").string()}, dir_);
  ASSERT_TRUE(run.spawned());
  ASSERT_TRUE(run.handles_soon(SIGTERM));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto sent = Clock::now();
  ::kill(run.pid(), SIGTERM);
  EXPECT_EQ(run.wait(30.0), 4) << run.err();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - sent).count(), 3.0);
  EXPECT_NE(run.err().find(fifo.string() + ": stopped by a signal while waiting for the FIFO's "
                                           "writer; nothing was run"),
            std::string::npos)
      << run.err();
  EXPECT_FALSE(fs::exists(dir_ / "r.json"));
}

TEST_F(Signals, ASecondRunWithTheSameReportPathIsRefusedBeforeItTrains) {
  Spawned first(run_args("same.json", 400), dir_);
  ASSERT_TRUE(first.spawned());
  ASSERT_TRUE(first.wait_for_out("steps,")) << first.err();
  std::vector<std::string> argv = run_args("same.json", 400);
  argv[8] = "train.checkpoint.dir=" + (dir_ / "ck2").string();
  std::string command;
  for (const std::string& a : argv) command += shell_quote(a) + " ";
  const ftbench::e2e::Outcome second = ftbench::e2e::run_ftbench(
      command.substr(shell_quote(FTBENCH_BINARY).size() + 1), dir_, "", 120.0);
  EXPECT_EQ(second.exit_code, 5) << second.err;
  EXPECT_NE(second.err.find("another ftbench process is writing it now"), std::string::npos)
      << second.err;
  EXPECT_EQ(second.err.find("step 1/"), std::string::npos) << "the second run trained";
  ASSERT_EQ(::kill(first.pid(), SIGTERM), 0);
  EXPECT_EQ(first.wait(), 4) << first.err();
  EXPECT_EQ(report("same.json")["run"]["status"], "interrupted");
  EXPECT_FALSE(fs::exists(dir_ / ".same.json.lock")) << "the claim outlived the run";
}

// As PID 1 (a container's entry point) a signal without a handler is dropped by the kernel: the
// spot notice was lost and the provider's SIGKILL found no checkpoint. The run now stops as
// anywhere else, and a second signal ends it at once.
TEST_F(Signals, AsPid1TheRunStopsAndASecondSignalEndsIt) {
  // A PID namespace of its own (util-linux's unshare): as root, or in a user namespace of its
  // own where the kernel lets unprivileged users make one. Where neither is allowed (a
  // container without CAP_SYS_ADMIN) there is nothing to install that would help: skipped.
  std::vector<std::string> unshare = {"unshare", "--pid", "--fork", "--kill-child"};
  if (::geteuid() != 0) unshare.insert(unshare.begin() + 1, {"--user", "--map-root-user"});
  std::string probe;
  for (const std::string& a : unshare) probe += a + " ";
  if (std::system((probe + "true 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "this machine allows no PID namespace: " << probe;
  }
  for (const bool second : {false, true}) {
    SCOPED_TRACE(second ? "two signals" : "one signal");
    const std::string name = second ? "pid1-twice.json" : "pid1.json";
    std::vector<std::string> argv = unshare;
    for (const std::string& a : run_args(name, 400)) argv.push_back(a);
    Spawned unshare(argv, dir_);
    ASSERT_TRUE(unshare.spawned());
    // The run is unshare's child, PID 1 of its namespace: found through /proc.
    pid_t init = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (init == 0 && Clock::now() < deadline) {
      std::ifstream children("/proc/" + std::to_string(unshare.pid()) + "/task/" +
                             std::to_string(unshare.pid()) + "/children");
      children >> init;
      if (init == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_NE(init, 0);
    std::ifstream status("/proc/" + std::to_string(init) + "/status");
    std::string line;
    bool pid1 = false;
    while (std::getline(status, line)) {
      if (line.rfind("NSpid:", 0) == 0) pid1 = line.substr(line.find_last_of(" \t") + 1) == "1";
    }
    EXPECT_TRUE(pid1) << "not PID 1 in its namespace";
    if (second) {
      ASSERT_TRUE(unshare.wait_for_out("steps,")) << unshare.out();  // the run has started
    } else {
      unshare.at(0.4);  // while LibTorch loads
    }
    ASSERT_EQ(::kill(init, SIGTERM), 0);
    if (second) {
      ASSERT_TRUE(unshare.wait_for_err("SIGTERM received")) << unshare.err();
      ASSERT_EQ(::kill(init, SIGTERM), 0);
    }
    const int code = unshare.wait(60.0);
    EXPECT_FALSE(unshare.timed_out) << "the signal was lost; stderr: " << unshare.err();
    if (second) {
      EXPECT_EQ(code, 128 + SIGTERM) << unshare.err();
      EXPECT_NE(unshare.err().find("a second stop signal: ending at once"), std::string::npos)
          << unshare.err();
    } else {
      EXPECT_EQ(code, 4) << unshare.err();
      EXPECT_EQ(report(name)["run"]["status"], "interrupted");
    }
  }
}

// SIGTERM, then SIGINT (or the other way round): the second stop request, of either kind, ends
// the run at once; it used to be recorded and ignored.
TEST_F(Signals, ASecondSignalOfTheOtherKindEndsTheRunAtOnce) {
  for (const auto& [first, second] : {std::pair{SIGTERM, SIGINT}, std::pair{SIGINT, SIGTERM}}) {
    Spawned run(run_args("twice.json", 400), dir_);
    ASSERT_TRUE(run.spawned());
    ASSERT_TRUE(run.wait_for_out("steps,")) << run.out();
    ASSERT_EQ(::kill(run.pid(), first), 0);
    ASSERT_TRUE(run.wait_for_err(" received: stopping after the step")) << run.err();
    const auto sent = Clock::now();
    ASSERT_EQ(::kill(run.pid(), second), 0);
    const int code = run.wait(60.0);
    EXPECT_EQ(code, 128 + second) << run.err();
    // Not a timed assertion: how long the second signal took to end it, for the record.
    std::printf("second signal to exit: %.3f s\n",
                std::chrono::duration<double>(Clock::now() - sent).count());
  }
}

// `ftbench run ... | head -2` ended with SIGPIPE (141) at the first log line after head left:
// no report, no checkpoint. Logging never kills a run.
TEST_F(Signals, AClosedStdoutDoesNotKillTheRun) {
  const fs::path script = dir_ / "pipe.sh";
  std::string command;
  for (const std::string& a : run_args("piped.json")) command += shell_quote(a) + " ";
  std::ofstream(script) << "cd " << shell_quote(FTBENCH_SOURCE_DIR) << " && " << command
                        << "--set output.log_every_steps=1 2>"
                        << shell_quote((dir_ / "err").string())
                        << " | head -2 >/dev/null; echo \"${PIPESTATUS[0]}\"\n";
  Spawned bash({"bash", script.string()}, dir_);
  ASSERT_TRUE(bash.spawned());
  EXPECT_EQ(bash.wait(), 0);
  EXPECT_EQ(bash.out(), "0\n") << slurp(dir_ / "err");
  EXPECT_EQ(report("piped.json")["run"]["status"], "completed");
  EXPECT_EQ(report("piped.json")["steps"].size(), 4u);
}

// Under `ulimit -f 64` the first checkpoint hit SIGXFSZ: exit 153, no message, a temporary
// folder left. The write now fails with EFBIG and says which file, and nothing is left behind.
TEST_F(Signals, AFileSizeLimitFailsTheRunWithAMessage) {
  const fs::path script = dir_ / "limit.sh";
  std::string command;
  for (const std::string& a : run_args("limited.json", 8)) command += shell_quote(a) + " ";
  std::ofstream(script) << "ulimit -f 64\ncd " << shell_quote(FTBENCH_SOURCE_DIR) << " && exec "
                        << command << "--set train.checkpoint.every_steps=2\n";
  Spawned bash({"bash", script.string()}, dir_);
  ASSERT_TRUE(bash.spawned());
  const int code = bash.wait();
  EXPECT_EQ(bash.signal, 0) << "killed by signal " << bash.signal;
  EXPECT_EQ(code, 3) << bash.err();
  EXPECT_NE(bash.err().find("File too large"), std::string::npos) << bash.err();
  EXPECT_NE(bash.err().find((dir_ / "ck").string()), std::string::npos) << bash.err();
  for (const auto& entry : fs::directory_iterator(dir_ / "ck")) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos)
        << "left behind: " << entry.path();
  }
}

// Commands with nothing to save end at once on a stop signal, as PID 1 too.
TEST_F(Signals, GemmEndsAtOnceOnAStopSignal) {
  Spawned gemm({FTBENCH_BINARY, "gemm", "--device", "cpu", "--dtype", "fp32", "--shapes",
                "1024:1024:1024", "--iterations", "100000", "--max-seconds", "600"},
               dir_);
  ASSERT_TRUE(gemm.spawned());
  gemm.at(0.3);
  ASSERT_EQ(::kill(gemm.pid(), SIGINT), 0);
  EXPECT_EQ(gemm.wait(60.0), 128 + SIGINT) << gemm.err();
  EXPECT_FALSE(gemm.timed_out);
}

}  // namespace
