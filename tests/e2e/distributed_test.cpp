// A job of several processes, end to end on CPU (Gloo over 127.0.0.1): through the launcher
// (`ftbench run --nproc-per-node N`), through torchrun's raw variables, and with torchrun's agent
// store; N ranks against one process at the same effective batch; a rank that dies, hangs or
// gets SIGTERM. ci-tiny at micro-batch 2 x accumulation 4 (8 steps), so 1, 2 and 4 ranks run the
// same job.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"
#include "job_files.h"
#include "report_docs.h"
#include "spawned.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::free_port;
using ftbench::e2e::Outcome;
using ftbench::e2e::read_f32_tensors;
using ftbench::e2e::read_json;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;
using ftbench::e2e::shell_quote;
using ftbench::e2e::slurp;

constexpr const char* kJob =
    "configs/ci-tiny.yaml --set train.micro_batch_size=2 --set train.grad_accum_steps=4";

class DataParallel : public ::testing::Test {
 protected:
  fs::path dir() const { return scratch_.path(); }
  std::string in_dir(const std::string& name) const { return shell_quote((dir() / name).string()); }

  // `ftbench run` of the job with `extra` arguments, in `ranks` ranks through the launcher.
  Outcome run(int ranks, const std::string& extra, const std::string& env = "",
              double timeout_seconds = 120.0) {
    const std::string launch = ranks > 1 ? "--nproc-per-node " + std::to_string(ranks) + " " : "";
    return run_ftbench("run " + launch + kJob + " " + extra, dir(), env, timeout_seconds);
  }

  ScratchDir scratch_{"ftbench-dp"};
};

TEST_F(DataParallel, TwoAndFourRanksTrainWhatOneProcessTrains) {
  std::map<int, nlohmann::json> reports;
  std::map<int, std::map<std::string, std::vector<float>>> adapters;
  for (const int ranks : {1, 2, 4}) {
    const std::string name = "r" + std::to_string(ranks);
    const Outcome o = run(ranks, "-o " + in_dir(name + ".json") +
                                     " --set output.adapter=" + in_dir(name + "-adapter"));
    ASSERT_EQ(o.exit_code, 0) << ranks << " ranks\n" << o.err;
    reports[ranks] = read_json(dir() / (name + ".json"));
    adapters[ranks] = read_f32_tensors(dir() / (name + "-adapter") / "adapter_model.safetensors");
    // Only rank 0 writes: one report, one adapter export, one summary.
    EXPECT_EQ(reports[ranks]["run"]["world_size"], ranks);
  }
  const nlohmann::json& one = reports[1];
  ASSERT_EQ(one["steps"].size(), 8u);
  EXPECT_TRUE(one["distributed"].is_null());
  // Every rank's record, gathered by rank 0; each field documented.
  for (const int ranks : {2, 4}) {
    const nlohmann::json& d = reports[ranks]["distributed"];
    EXPECT_EQ(d["launch"], "local");
    EXPECT_EQ(d["backend"], "gloo");
    ASSERT_EQ(d["ranks"].size(), static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      const nlohmann::json& rec = d["ranks"][r];
      EXPECT_EQ(rec["rank"], r);
      EXPECT_EQ(rec["device"], "cpu");
      EXPECT_EQ(rec["steps"].size(), 8u);
      EXPECT_EQ(rec["collective_calls"], 16);  // the token counts and the gradients, each step
      EXPECT_EQ(rec["collective_bytes"], d["ranks"][0]["collective_bytes"]);
    }
    // Rank 0's own step times are the report's.
    EXPECT_EQ(d["ranks"][0]["steps"][3]["wall_seconds"],
              reports[ranks]["steps"][3]["wall_seconds"]);
    EXPECT_NEAR(d["tokens_per_second_per_device"].get<double>() * ranks,
                reports[ranks]["summary"]["tokens_per_second"]["real"].get<double>(), 1e-6);
  }
  ftbench::e2e::expect_documented(reports[2]);
  for (const int ranks : {2, 4}) {
    const nlohmann::json& many = reports[ranks];
    ASSERT_EQ(many["steps"].size(), 8u) << ranks;
    EXPECT_EQ(many["spec_fingerprint"], one["spec_fingerprint"]);
    for (std::size_t i = 0; i < 8; ++i) {
      const nlohmann::json& a = one["steps"][i];
      const nlohmann::json& b = many["steps"][i];
      // The same examples, counted over every rank.
      EXPECT_EQ(b["real_tokens"], a["real_tokens"]) << ranks << " ranks, step " << i + 1;
      EXPECT_EQ(b["loss_tokens"], a["loss_tokens"]) << ranks << " ranks, step " << i + 1;
      const double la = a["loss"].get<double>();
      EXPECT_NEAR(b["loss"].get<double>(), la, 1e-5 * std::abs(la)) << ranks << " ranks";
    }
    ftbench::e2e::expect_tensors_close(adapters[1], adapters[ranks], 1e-5,
                                       std::to_string(ranks) + " ranks");
  }
}

// One micro-batch per rank: the ranks' sum of two gradients is the one process's sum (addition
// of two numbers commutes), so the runs are equal bit for bit. One thread in every process: a
// GEMM split over another number of threads may round differently (on this project's AMD EPYC
// VM, 2 threads against 1 differed in the 7th digit of the gradient norm).
TEST_F(DataParallel, OneMicroBatchPerRankIsBitExact) {
  for (const int ranks : {1, 2}) {
    const Outcome o = run_ftbench("run " + std::string(ranks > 1 ? "--nproc-per-node 2 " : "") +
                                      "configs/ci-tiny.yaml --set backend.threads=1 -o " +
                                      in_dir("b" + std::to_string(ranks) + ".json"),
                                  dir());
    ASSERT_EQ(o.exit_code, 0) << o.err;
  }
  const nlohmann::json one = read_json(dir() / "b1.json");
  const nlohmann::json two = read_json(dir() / "b2.json");
  ASSERT_EQ(one["steps"].size(), two["steps"].size());
  for (std::size_t i = 0; i < one["steps"].size(); ++i) {
    EXPECT_EQ(two["steps"][i]["loss"], one["steps"][i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(two["steps"][i]["grad_norm"], one["steps"][i]["grad_norm"]) << "step " << i + 1;
  }
}

TEST_F(DataParallel, TorchrunsVariablesWithoutTheLauncher) {
  ASSERT_EQ(ftbench::e2e::run_torchrun_ranks(
                2, 2, free_port(), dir(),
                [&](int) { return std::string("run ") + kJob + " -o " + in_dir("t.json"); }),
            0);
  EXPECT_EQ(slurp(dir() / "rc0"), "0\n") << slurp(dir() / "rank0.log");
  EXPECT_EQ(slurp(dir() / "rc1"), "0\n") << slurp(dir() / "rank1.log");
  ASSERT_TRUE(fs::exists(dir() / "t.json")) << slurp(dir() / "rank0.log");
  const nlohmann::json two = read_json(dir() / "t.json");
  EXPECT_EQ(two["run"]["world_size"], 2);
  EXPECT_NE(slurp(dir() / "rank1.log").find("[rank 1] info torchrun, rank 1 of 2"),
            std::string::npos);
  ASSERT_EQ(run(1, "-o " + in_dir("one.json")).exit_code, 0);
  const nlohmann::json one = read_json(dir() / "one.json");
  ASSERT_EQ(two["steps"].size(), 8u);
  ASSERT_EQ(one["steps"].size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const double l = one["steps"][i]["loss"].get<double>();
    EXPECT_NEAR(two["steps"][i]["loss"].get<double>(), l, 1e-5 * std::abs(l)) << "step " << i + 1;
  }
}

// TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent serves the store and every rank, rank 0
// too, is its client. The agent here is a TCPStore server of the same LibTorch
// (ftbench_test_store_rank serve), the class torchrun's agent serves with; torchrun itself runs
// in tests/train/dist/torchrun/run.sh.
TEST_F(DataParallel, EveryRankIsAClientOfTorchrunsAgentStore) {
  const fs::path port_file = dir() / "port";
  const fs::path done = dir() / "done";
  const std::string start = shell_quote(FTBENCH_STORE_RANK) + " serve " +
                            shell_quote(port_file.string()) + " " + shell_quote(done.string()) +
                            " >" + in_dir("agent.log") + " 2>&1 &";
  ASSERT_EQ(std::system(start.c_str()), 0);
  for (int i = 0; i < 600 && !fs::exists(port_file); ++i) usleep(50'000);
  ASSERT_TRUE(fs::exists(port_file))
      << "the agent's store did not start: " << slurp(dir() / "agent.log");
  const std::string port = slurp(port_file);
  // Every rank in the source tree, so that configs/ resolves: "cd X && A & B" would leave B
  // where the test runs.
  std::string script = "cd " + shell_quote(FTBENCH_SOURCE_DIR) + " || exit 1; ";
  for (int r = 0; r < 2; ++r) {
    script += "(RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
              " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
              " TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RESTART_COUNT=1 "
              "TORCHELASTIC_RUN_ID=e2e timeout 120 " +
              shell_quote(FTBENCH_BINARY) + " run " + kJob + " -o " + in_dir("a.json") + " >" +
              in_dir("rank" + std::to_string(r) + ".log") + " 2>&1; echo $? >" +
              in_dir("rc" + std::to_string(r)) + ") & ";
  }
  script += "wait";
  const int status = std::system(("sh -c " + shell_quote(script)).c_str());
  std::ofstream(done.string()) << "done";
  ASSERT_EQ(status, 0);
  EXPECT_EQ(slurp(dir() / "rc0"), "0\n") << slurp(dir() / "rank0.log");
  EXPECT_EQ(slurp(dir() / "rc1"), "0\n") << slurp(dir() / "rank1.log");
  EXPECT_NE(slurp(dir() / "rank0.log").find("(torchrun's agent)"), std::string::npos);
  EXPECT_EQ(read_json(dir() / "a.json")["run"]["world_size"], 2);
}

TEST_F(DataParallel, AKilledRankEndsTheJobAndTheReportSaysWhichRank) {
  const Outcome o = run(2, "-o " + in_dir("k.json"), "FTBENCH_INJECT_RANK_FAULT=1:3:exit");
  EXPECT_EQ(o.exit_code, 9) << o.err;  // the first failure: rank 1's own exit
  EXPECT_LT(o.seconds, 60.0);
  EXPECT_NE(o.err.find("ftbench: rank 1 exited with code 9; stopping the other ranks"),
            std::string::npos)
      << o.err;
  const nlohmann::json r = read_json(dir() / "k.json");
  EXPECT_EQ(r["run"]["status"], "failed");
  const std::string error = r["run"]["error"];
  EXPECT_NE(error.find("rank 0 of 2: "), std::string::npos) << error;
  EXPECT_NE(error.find("rank 1 after step 3"), std::string::npos) << error;
  EXPECT_EQ(r["steps"].size(), 3u);
}

TEST_F(DataParallel, AHungRankFailsTheJobWithinTheTimeoutAndNoRankIsLeft) {
  const std::string report = (dir() / "h.json").string();
  const Outcome o = run(2, "-o " + shell_quote(report) + " --set distributed.timeout_seconds=2",
                        "FTBENCH_INJECT_RANK_FAULT=1:3:hang FTBENCH_STOP_GRACE_SECONDS=1");
  EXPECT_EQ(o.exit_code, 3) << o.err;
  EXPECT_LT(o.seconds, 60.0);
  EXPECT_NE(o.err.find("did not answer within distributed.timeout_seconds, 2 s"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("still running 1 s after the stop: killed"), std::string::npos) << o.err;
  EXPECT_EQ(read_json(report)["run"]["status"], "failed");
  // No rank of this job is left: none has the report's path on its command line (the bracket
  // keeps the pattern from matching the shell that runs pgrep).
  EXPECT_NE(
      std::system(
          ("pgrep -f " + shell_quote("[f]tbench-bin run .*" + report) + " >/dev/null").c_str()),
      0);
}

TEST_F(DataParallel, SigtermOnOneRankStopsEveryRankAtOneStepAndResumesBitExact) {
  const std::string cp = " --set train.checkpoint.dir=" + in_dir("ck");
  ASSERT_EQ(run(2, "-o " + in_dir("whole.json")).exit_code, 0);
  const Outcome stopped =
      run(2, "-o " + in_dir("s.json") + cp, "FTBENCH_INJECT_RANK_FAULT=1:3:sigterm");
  EXPECT_EQ(stopped.exit_code, 4) << stopped.err;
  // Both ranks stopped after step 3; rank 0 wrote the one checkpoint.
  EXPECT_NE(stopped.err.find("stopped by SIGTERM after step 3 of 8; checkpoint "),
            std::string::npos)
      << stopped.err;
  std::vector<std::string> saved;
  for (const auto& e : fs::directory_iterator(dir() / "ck")) {
    if (e.is_directory()) saved.push_back(e.path().filename().string());
  }
  EXPECT_EQ(saved, std::vector<std::string>{"step-00000003"});
  EXPECT_EQ(read_json(dir() / "s.json")["run"]["status"], "interrupted");

  // Another world size is refused, naming both.
  const Outcome other = run(1, "-o " + in_dir("s.json") + cp + " --resume latest");
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("saved by a job of 2 processes, this one has 1"), std::string::npos)
      << other.err;

  const Outcome resumed = run(2, "-o " + in_dir("s.json") + cp + " --resume latest");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const nlohmann::json whole = read_json(dir() / "whole.json");
  const nlohmann::json both = read_json(dir() / "s.json");
  ASSERT_EQ(both["steps"].size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(both["steps"][i]["loss"], whole["steps"][i]["loss"]) << "step " << i + 1;
  }
}

// A stop inside the profile window of a job of several ranks: rank 0 writes the profile (28
// steps of trace, over a second on a CPU) after the ranks met at the stop's barrier, so no rank
// waits on it there beyond distributed.timeout_seconds.
TEST_F(DataParallel, AStopInsideTheProfileWindowEndsEveryRankInterrupted) {
  const Outcome o =
      run(2, "-o " + in_dir("p.json") + " --set data.num_examples=640" +
                 " --set distributed.timeout_seconds=1 --set train.checkpoint.dir=" + in_dir("ck") +
                 " --profile-steps 3,80 --stop-after-steps 30");
  EXPECT_EQ(o.exit_code, 4) << o.err;
  EXPECT_EQ(o.err.find("barrier failed"), std::string::npos) << o.err;
  const nlohmann::json report = read_json(dir() / "p.json");
  EXPECT_EQ(report["run"]["status"], "interrupted");
  ASSERT_TRUE(report.contains("profile")) << report.dump();
  EXPECT_EQ(report["profile"]["last_step"], 30);
}

TEST_F(DataParallel, AnAccumulationThatDoesNotSplitIsRefusedBeforeTraining) {
  const Outcome o = run(3, "-o " + in_dir("x.json"));
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("--set: train.grad_accum_steps: 4 micro-batches per step do not split over "
                       "3 ranks: the key counts the job's micro-batches per optimizer step, over "
                       "every rank, so each rank runs grad_accum_steps / 3; use a multiple of 3 "
                       "(e.g. 6)"),
            std::string::npos)
      << o.err;
  EXPECT_FALSE(fs::exists(dir() / "x.json"));
}

// Ranks started with different specs or data (a stale copy on one node) are not one job: refused
// before any training, on every rank, naming the rank and what differs.
TEST_F(DataParallel, RanksOfDifferentJobsAreRefusedBeforeTraining) {
  for (const char* other : {"--set data.seed=7", "--set lora.rank=4", "--set train.epochs=2"}) {
    ASSERT_EQ(ftbench::e2e::run_torchrun_ranks(
                  2, 2, free_port(), dir(),
                  [&](int r) {
                    return std::string("run ") + kJob + " " + (r == 1 ? other : "") +
                           " --set distributed.timeout_seconds=20 -o " + in_dir("d.json") +
                           " --force";
                  },
                  "", 60),
              0);
    for (int r = 0; r < 2; ++r) {
      const std::string log = slurp(dir() / ("rank" + std::to_string(r) + ".log"));
      EXPECT_EQ(slurp(dir() / ("rc" + std::to_string(r))), "2\n") << other << "\n" << log;
      EXPECT_NE(log.find("rank 1 runs another job than rank 0"), std::string::npos) << other << "\n"
                                                                                    << log;
    }
    EXPECT_FALSE(fs::exists(dir() / "d.json")) << other;
  }
}

// A launcher killed outright (SIGKILL, an out-of-memory kill) takes its ranks with it, and a
// stop signal that reaches it twice in a row (GNU timeout sends it to the child and then to its
// group) is passed on once: the ranks stop with their checkpoint, not at once without one.
TEST_F(DataParallel, TheRanksEndWithTheirLauncherAndOneStopIsPassedOnOnce) {
  const std::string report = (dir() / "k.json").string();
  const std::string start = "cd " + shell_quote(FTBENCH_SOURCE_DIR) + " || exit 1; " +
                            shell_quote(FTBENCH_BINARY) + " run --nproc-per-node 2 " + kJob +
                            " --set train.epochs=200 -o " + shell_quote(report) +
                            " >/dev/null 2>&1 & echo $! >" + in_dir("pid");
  ASSERT_EQ(std::system(("sh -c " + shell_quote(start)).c_str()), 0);
  usleep(2'500'000);
  const std::string pid = slurp(dir() / "pid");
  ASSERT_FALSE(pid.empty());
  ASSERT_EQ(std::system(("kill -KILL " + pid).c_str()), 0);
  const std::string ranks_left =
      "pgrep -f " + shell_quote("[f]tbench-bin run .*" + report) + " >/dev/null";
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = std::system(ranks_left.c_str()) != 0;
    if (!gone) usleep(100'000);
  }
  EXPECT_TRUE(gone) << "ranks still running 30 s after their launcher was killed";

  // SIGINT twice within a few milliseconds: one stop, one checkpoint, exit 4.
  const std::string cp = (dir() / "ck").string();
  const std::string twice =
      "cd " + shell_quote(FTBENCH_SOURCE_DIR) + " || exit 1; " + shell_quote(FTBENCH_BINARY) +
      " run --nproc-per-node 2 " + kJob +
      " --set train.epochs=200 --set train.checkpoint.dir=" + shell_quote(cp) + " -o " +
      in_dir("t.json") + " >" + in_dir("t.log") +
      // Once the first step is logged (not after a fixed time: on a loaded machine the set-up can
      // take longer, and a stop in set-up saves no checkpoint), at most 60 s.
      " 2>&1 & p=$!; i=0; while ! grep -q 'step 1/' " + in_dir("t.log") +
      " && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; kill -INT $p; kill -INT " +
      "$p; wait $p; echo $? >" + in_dir("rc");
  ASSERT_EQ(std::system(("sh -c " + shell_quote(twice)).c_str()), 0);
  EXPECT_EQ(slurp(dir() / "rc"), "4\n") << slurp(dir() / "t.log");
  EXPECT_EQ(read_json(dir() / "t.json")["run"]["status"], "interrupted");
  ASSERT_TRUE(fs::is_directory(cp)) << slurp(dir() / "t.log");
  std::size_t saved = 0;
  for (const auto& e : fs::directory_iterator(cp)) saved += e.is_directory() ? 1 : 0;
  EXPECT_EQ(saved, 1u);
}

// FTBENCH_INJECT_OOM's micro_step is the job's micro-batch of the step, whichever rank runs it:
// the same rule makes the same fallbacks with one process and with two ranks.
TEST_F(DataParallel, AnInjectedOutOfMemoryFallsBackAsInOneProcess) {
  for (const int ranks : {1, 2}) {
    const std::string name = "oom" + std::to_string(ranks) + ".json";
    const Outcome o =
        run(ranks, "-o " + in_dir(name), "FTBENCH_INJECT_OOM=step=1,micro_step=2,micro_batch=2");
    ASSERT_EQ(o.exit_code, 0) << ranks << " ranks\n" << o.err;
  }
  const nlohmann::json one = read_json(dir() / "oom1.json");
  const nlohmann::json two = read_json(dir() / "oom2.json");
  ASSERT_EQ(one["batching"]["fallbacks"].size(), 1u);
  ASSERT_EQ(two["batching"]["fallbacks"].size(), 1u);
  EXPECT_EQ(two["batching"]["micro_batch_size"], one["batching"]["micro_batch_size"]);
  EXPECT_EQ(two["batching"]["grad_accum_steps"], one["batching"]["grad_accum_steps"]);
}

TEST_F(DataParallel, NcclIsRefusedWhereItCannotRun) {
  // ci-tiny runs on the CPU (backend.device: cpu): refused before the run starts, on every build
  // (the H200's CUDA build once refused it only at the backend, after writing a report).
  const Outcome o = run(2, "-o " + in_dir("n.json") + " --set distributed.backend=nccl");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("--set: distributed.backend: nccl moves GPU tensors, and this run is on "
                       "the CPU (backend.device: cpu): use auto or gloo"),
            std::string::npos)
      << o.err;
  EXPECT_FALSE(fs::exists(dir() / "n.json"));
  // A build without NCCL refuses it whatever the device.
  if (std::string(FTBENCH_LIBTORCH_BUILD) == "cpu") {
    const Outcome any = run(
        2, "-o " + in_dir("a.json") + " --set distributed.backend=nccl --set backend.device=auto");
    EXPECT_EQ(any.exit_code, 2) << any.err;
    EXPECT_NE(any.err.find("--set: distributed.backend: nccl: this ftbench was built without "
                           "c10d's NCCL group"),
              std::string::npos)
        << any.err;
    EXPECT_FALSE(fs::exists(dir() / "a.json"));
  }
}

TEST_F(DataParallel, HelpIsPrintedOnce) {
  const Outcome o = run_ftbench("run --nproc-per-node 2 --help", dir());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const std::string all = o.out + o.err;
  const std::size_t first = all.find("--nproc-per-node");
  ASSERT_NE(first, std::string::npos) << all;
  EXPECT_EQ(all.find("Usage", all.find("Usage") + 1), std::string::npos) << all;
}

TEST_F(DataParallel, ABadGraceIsRefused) {
  for (const char* grace : {"abc", "-5", ""}) {
    const Outcome o = run(2, "-o " + in_dir("g.json"),
                          std::string("FTBENCH_STOP_GRACE_SECONDS=") + shell_quote(grace));
    EXPECT_EQ(o.exit_code, 2) << grace << "\n" << o.err;
    EXPECT_NE(o.err.find(std::string("error: FTBENCH_STOP_GRACE_SECONDS=\"") + grace +
                         "\": expected a number of seconds from 0 to 86400"),
              std::string::npos)
        << o.err;
  }
}

TEST_F(DataParallel, TheLauncherRefusesToNestUnderTorchrun) {
  const Outcome o = run(2, "-o " + in_dir("n.json"),
                        "RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("error: --nproc-per-node starts ranks itself, but this process is already "
                       "one (torchrun, rank 0 of 1"),
            std::string::npos)
      << o.err;
}

}  // namespace

namespace {

// Something that is not a c10d store on MASTER_PORT (another service, a half-dead peer): it
// accepts every connection, reads what comes and answers a line of its own (`banner`), or
// nothing at all.
class NotAStore {
 public:
  explicit NotAStore(bool banner) : banner_(banner) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(listener_, 16);
    thread_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) return;  // the listener was shut down
        char buffer[256];
        (void)::recv(fd, buffer, sizeof buffer, 0);
        const char reply[] = "SSH-2.0-OpenSSH_9.2\r\n";
        if (banner_) (void)::send(fd, reply, sizeof reply - 1, MSG_NOSIGNAL);
        connections_.push_back(fd);  // held open, as a service that waits for more would
      }
    });
  }
  ~NotAStore() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
    for (const int fd : connections_) ::close(fd);
  }
  int port() const { return port_; }

 private:
  bool banner_ = false;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::vector<int> connections_;
};

// A rank whose MASTER_PORT answers with something that is not a c10d store used to wait for good
// (150 s seen with init_timeout_seconds 10), deaf to SIGTERM. The init timeout now bounds the
// connection (exit 3, naming the store), and a stop signal during it ends the rank with exit 4.
TEST(Rendezvous, AStoreThatIsNotOneFailsWithinTheInitTimeoutOrStopsOnASignal) {
  const ScratchDir scratch("ftbench-not-a-store");
  for (const bool banner : {false, true}) {
    SCOPED_TRACE(banner ? "a service that answers a line of its own" : "a port that says nothing");
    const NotAStore service(banner);
    const std::string env =
        "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "
        "MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
        std::to_string(service.port()) + " TORCHELASTIC_RESTART_COUNT=0";
    const std::string args = std::string("run ") + kJob +
                             " --set distributed.init_timeout_seconds=3 -o " +
                             shell_quote((scratch.path() / "r.json").string());
    const Outcome r = run_ftbench(args, scratch.path(), env, 90.0);
    EXPECT_FALSE(r.timed_out) << "still waiting after 90 s: " << r.err;
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("the job's store at 127.0.0.1:" + std::to_string(service.port())),
              std::string::npos)
        << r.err;
    // Not a timed assertion: how long it took, for the record.
    std::printf("%s: ended after %.1f s\n", banner ? "banner" : "silent", r.seconds);
  }

  // SIGTERM while it waits (a long init timeout): exit 4.
  const NotAStore silent(false);
  const std::vector<std::pair<const char*, std::string>> vars = {
      {"RANK", "1"},
      {"LOCAL_RANK", "1"},
      {"WORLD_SIZE", "2"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(silent.port())},
      {"TORCHELASTIC_RESTART_COUNT", "0"}};
  for (const auto& [name, value] : vars) ::setenv(name, value.c_str(), 1);
  ftbench::e2e::Spawned rank(
      {FTBENCH_BINARY, "run", "configs/ci-tiny.yaml", "--set", "train.micro_batch_size=2", "--set",
       "train.grad_accum_steps=4", "--set", "distributed.init_timeout_seconds=600", "-o",
       (scratch.path() / "s.json").string()},
      scratch.path());
  for (const auto& [name, value] : vars) ::unsetenv(name);
  ASSERT_TRUE(rank.spawned());
  ASSERT_TRUE(rank.wait_for_out("rank 1 of 2", 60.0)) << rank.out() << rank.err();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_EQ(::kill(rank.pid(), SIGTERM), 0);
  const int code = rank.wait(60.0);
  EXPECT_FALSE(rank.timed_out) << "SIGTERM did not end the wait: " << rank.err();
  EXPECT_EQ(code, 4) << rank.err();
  EXPECT_NE(rank.err().find("stopped by SIGTERM during set-up"), std::string::npos) << rank.err();
}

}  // namespace
