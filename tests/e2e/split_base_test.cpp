// A job whose frozen base is split across its ranks (distributed.shard_base), end to end on CPU
// (Gloo over 127.0.0.1): 2 and 4 ranks train what one process trains, every block gathered twice
// per micro-batch; a split within each of two nodes (torchrun's variables, as two machines'
// torchrun would set them); training and the merged export bit for bit those of the whole base;
// an out-of-memory fallback on one rank; a stop and a bit-exact resume; a lost rank; ranks that
// would split differently refused. ci-tiny at micro-batch 2 x accumulation 4 (8 steps), as
// distributed_test.cpp runs it.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"
#include "job_files.h"
#include "report_docs.h"

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
constexpr int kSteps = 8;
constexpr int kMicroBatchesPerStep = 4;
constexpr int kLayers = 2;  // the tiny preset's
// Gathers of one micro-batch's training pass: each block twice, the embedding and the (frozen,
// untied) head once.
constexpr int kGathersPerMicroBatch = 2 * kLayers + 2;

class SplitBase : public ::testing::Test {
 protected:
  fs::path dir() const { return scratch_.path(); }
  std::string in_dir(const std::string& name) const { return shell_quote((dir() / name).string()); }

  // `ftbench run` of the job with `extra` arguments, in `ranks` ranks through the launcher.
  Outcome run(int ranks, const std::string& extra, const std::string& env = "") {
    const std::string launch = ranks > 1 ? "--nproc-per-node " + std::to_string(ranks) + " " : "";
    return run_ftbench("run " + launch + kJob + " " + extra, dir(), env, 120.0);
  }

  // Each step's loss of `got` within 1e-5 relative of `want`'s.
  static void expect_same_losses(const nlohmann::json& want, const nlohmann::json& got,
                                 const std::string& label) {
    ASSERT_EQ(got["steps"].size(), want["steps"].size()) << label;
    for (std::size_t i = 0; i < want["steps"].size(); ++i) {
      const double l = want["steps"][i]["loss"].get<double>();
      EXPECT_NEAR(got["steps"][i]["loss"].get<double>(), l, 1e-5 * std::abs(l))
          << label << ", step " << i + 1;
    }
  }

  ScratchDir scratch_{"ftbench-split"};
};

TEST_F(SplitBase, TwoAndFourRanksTrainWhatOneProcessTrains) {
  ASSERT_EQ(
      run(1, "-o " + in_dir("one.json") + " --set output.adapter=" + in_dir("one-a")).exit_code, 0);
  const nlohmann::json one = read_json(dir() / "one.json");
  const auto one_adapter = read_f32_tensors(dir() / "one-a" / "adapter_model.safetensors");
  // The whole base in bytes (fp32): what a rank holds without a split.
  const int64_t whole_bytes = 4 * one["parameters"]["base"].get<int64_t>();
  struct Case {
    int ranks;
    std::string how;
    std::string extra;
  };
  for (const Case& c : {Case{2, "node", ""}, Case{4, "all", ""},
                        Case{2, "all", " --set model.activation_checkpointing=true"}}) {
    const std::string name = std::to_string(c.ranks) + c.how + (c.extra.empty() ? "" : "-ac");
    const Outcome o = run(c.ranks, "-o " + in_dir(name + ".json") +
                                       " --set output.adapter=" + in_dir(name + "-a") +
                                       " --set distributed.shard_base=" + c.how + c.extra);
    ASSERT_EQ(o.exit_code, 0) << name << "\n" << o.err;
    const std::string log = o.out + o.err;
    EXPECT_NE(log.find("base split over " + std::to_string(c.ranks) + " ranks (" + c.how +
                       "): this rank holds "),
              std::string::npos)
        << log;
    const nlohmann::json many = read_json(dir() / (name + ".json"));
    expect_same_losses(one, many, name);
    ftbench::e2e::expect_tensors_close(
        one_adapter, read_f32_tensors(dir() / (name + "-a") / "adapter_model.safetensors"), 1e-5,
        name);
    // The split is how the job runs, not which job (activation checkpointing is the job's).
    if (c.extra.empty()) {
      EXPECT_EQ(many["spec_fingerprint"], one["spec_fingerprint"]) << name;
    }

    const nlohmann::json& d = many["distributed"];
    EXPECT_EQ(d["shard_base"], c.how);
    ASSERT_EQ(d["ranks"].size(), static_cast<std::size_t>(c.ranks));
    for (const nlohmann::json& rank : d["ranks"]) {
      EXPECT_EQ(rank["shard_group_size"], c.ranks) << name;
      // Each rank runs 4 / ranks micro-batches a step; every block twice in each.
      EXPECT_EQ(rank["gathers"], kSteps * (kMicroBatchesPerStep / c.ranks) * kGathersPerMicroBatch)
          << name;
      EXPECT_GT(rank["gather_bytes"].get<int64_t>(), 0) << name;
      // A 1/ranks share, plus the norms (whole on every rank) and the padding: within 2 %.
      const double held = rank["base_bytes"].get<double>() * c.ranks;
      EXPECT_GE(held, double(whole_bytes)) << name;
      EXPECT_LE(held, 1.02 * double(whole_bytes)) << name;
      // CPU: the counted tensor bytes (schema 1.9), the rank's share of the base among them.
      EXPECT_GT(rank["peak_allocated_bytes"].get<int64_t>(), rank["base_bytes"].get<int64_t>())
          << name;
    }
    ftbench::e2e::expect_documented(many);
  }
}

// Splitting the base changes nothing the ranks compute: two ranks with the base split train
// and export bit for bit what two ranks with the whole base do, and the merged export (every
// unit gathered from every rank while rank 0 writes) is the same file.
TEST_F(SplitBase, TwoRanksTrainAndExportBitForBitWhatTheyDoWithTheWholeBase) {
  for (const std::string how : {"none", "node"}) {
    const Outcome o = run_ftbench(
        "run --nproc-per-node 2 configs/ci-tiny.yaml "
        "--set distributed.shard_base=" +
            how + " -o " + in_dir(how + ".json") + " --set output.merged=" + in_dir(how + "-m") +
            " --set output.adapter=" + in_dir(how + "-a"),
        dir(), "", 120.0);
    ASSERT_EQ(o.exit_code, 0) << o.err;
  }
  const std::string whole = slurp(dir() / "none-m" / "model.safetensors");
  ASSERT_GT(whole.size(), 100'000u);
  EXPECT_TRUE(whole == slurp(dir() / "node-m" / "model.safetensors"));
  EXPECT_TRUE(slurp(dir() / "none-a" / "adapter_model.safetensors") ==
              slurp(dir() / "node-a" / "adapter_model.safetensors"));
  const nlohmann::json none = read_json(dir() / "none.json");
  const nlohmann::json node = read_json(dir() / "node.json");
  for (std::size_t i = 0; i < none["steps"].size(); ++i) {
    EXPECT_EQ(node["steps"][i]["loss"], none["steps"][i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(node["steps"][i]["grad_norm"], none["steps"][i]["grad_norm"]) << "step " << i + 1;
  }
  EXPECT_EQ(node["exports"][1]["kind"], "merged");
  EXPECT_EQ(node["distributed"]["ranks"][1]["shard_group_size"], 2);
  EXPECT_EQ(none["distributed"]["ranks"][1]["shard_group_size"], 1);
  EXPECT_EQ(none["distributed"]["ranks"][0]["gathers"], 0);
}

// Two nodes of two ranks each, as each machine's torchrun would start them: `node` splits the
// base within each node (2 ranks a split), `all` across the four.
TEST_F(SplitBase, AcrossTwoNodesNodeSplitsWithinEachNode) {
  ASSERT_EQ(run(1, "-o " + in_dir("one.json")).exit_code, 0);
  const nlohmann::json one = read_json(dir() / "one.json");
  for (const std::string how : {"node", "all"}) {
    const std::string report = "n-" + how + ".json";
    ASSERT_EQ(ftbench::e2e::run_torchrun_ranks(4, 2, free_port(), dir(),
                                               [&](int) {
                                                 return std::string("run ") + kJob +
                                                        " --set distributed.shard_base=" + how +
                                                        " -o " + in_dir(report);
                                               }),
              0);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(slurp(dir() / ("rc" + std::to_string(r))), "0\n")
          << how << "\n"
          << slurp(dir() / ("rank" + std::to_string(r) + ".log"));
    }
    ASSERT_TRUE(fs::exists(dir() / report)) << slurp(dir() / "rank0.log");
    const nlohmann::json four = read_json(dir() / report);
    EXPECT_EQ(four["distributed"]["ranks"][3]["shard_group_size"], how == "node" ? 2 : 4);
    EXPECT_EQ(four["distributed"]["ranks"][3]["gathers"], kSteps * kGathersPerMicroBatch);
    expect_same_losses(one, four, how);
  }
}

// Splitting within each node needs to know the node: a job that spans nodes without GROUP_RANK
// is refused at once on every rank (exit 2), before any rank waits for another.
TEST_F(SplitBase, NodeIsRefusedWhereTheNodeIsNotKnown) {
  ASSERT_EQ(ftbench::e2e::run_torchrun_ranks(
                4, 2, free_port(), dir(),
                [&](int) {
                  return std::string("run ") + kJob + " --set distributed.shard_base=node -o " +
                         in_dir("u.json");
                },
                "", 60, /*group_rank=*/false),
            0);
  for (int r = 0; r < 4; ++r) {
    const std::string log = slurp(dir() / ("rank" + std::to_string(r) + ".log"));
    EXPECT_EQ(slurp(dir() / ("rc" + std::to_string(r))), "2\n") << log;
    EXPECT_NE(log.find("distributed.shard_base node splits the base among the ranks of each node, "
                       "and this job spans nodes (2 ranks here of 4) without saying which node "
                       "this rank is on: set GROUP_RANK (torchrun sets it) or SLURM_NODEID (srun "
                       "does), or use shard_base all"),
              std::string::npos)
        << log;
  }
  EXPECT_FALSE(fs::exists(dir() / "u.json"));
}

// FTBENCH_INJECT_OOM hits the micro-batch of one rank; that rank makes the rest of the step's
// gathers, all ranks learn of it through the gradient sum and redo the step at the smaller split
// together, as one process does.
TEST_F(SplitBase, AnOutOfMemoryOnOneRankFallsBackOnEveryRank) {
  const std::string oom = "FTBENCH_INJECT_OOM=step=1,micro_step=2,micro_batch=2";
  ASSERT_EQ(run(1, "-o " + in_dir("oom1.json"), oom).exit_code, 0);
  const Outcome o = run(2, "-o " + in_dir("oom2.json") + " --set distributed.shard_base=node", oom);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json one = read_json(dir() / "oom1.json");
  const nlohmann::json two = read_json(dir() / "oom2.json");
  ASSERT_EQ(two["batching"]["fallbacks"].size(), 1u);
  EXPECT_EQ(two["batching"]["micro_batch_size"], one["batching"]["micro_batch_size"]);
  EXPECT_EQ(two["batching"]["grad_accum_steps"], one["batching"]["grad_accum_steps"]);
  expect_same_losses(one, two, "after the fallback");
}

TEST_F(SplitBase, ASigtermStopsEveryRankAndTheResumeIsBitExact) {
  const std::string split = " --set distributed.shard_base=node";
  const std::string cp = " --set train.checkpoint.dir=" + in_dir("ck");
  ASSERT_EQ(run(2, "-o " + in_dir("unbroken.json") + split).exit_code, 0);
  const Outcome stopped =
      run(2, "-o " + in_dir("s.json") + split + cp, "FTBENCH_INJECT_RANK_FAULT=1:3:sigterm");
  EXPECT_EQ(stopped.exit_code, 4) << stopped.err;
  EXPECT_TRUE(fs::exists(dir() / "ck" / "step-00000003")) << stopped.err;
  const Outcome resumed = run(2, "-o " + in_dir("s.json") + split + cp + " --resume latest");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const nlohmann::json unbroken = read_json(dir() / "unbroken.json");
  const nlohmann::json both = read_json(dir() / "s.json");
  ASSERT_EQ(both["steps"].size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(both["steps"][i]["loss"], unbroken["steps"][i]["loss"]) << "step " << i + 1;
  }
}

// A rank lost while its peer waits for a gather: the job ends within the collective timeout,
// with the first failure's exit code, and rank 0's report says failed.
TEST_F(SplitBase, ALostRankEndsTheJob) {
  const Outcome o =
      run(2,
          "-o " + in_dir("k.json") +
              " --set distributed.shard_base=node --set distributed.timeout_seconds=5",
          "FTBENCH_INJECT_RANK_FAULT=1:3:exit FTBENCH_STOP_GRACE_SECONDS=2");
  EXPECT_EQ(o.exit_code, 9) << o.err;
  EXPECT_LT(o.seconds, 60.0);
  EXPECT_EQ(read_json(dir() / "k.json")["run"]["status"], "failed");
}

// distributed.* is outside the fingerprint, but a rank that would split the base differently
// would meet its peers' gathers with other collectives: refused on every rank right after the
// ranks meet, naming both settings.
TEST_F(SplitBase, RanksThatWouldSplitDifferentlyAreRefused) {
  ASSERT_EQ(ftbench::e2e::run_torchrun_ranks(
                2, 2, free_port(), dir(),
                [&](int r) {
                  return std::string("run ") + kJob +
                         (r == 1 ? " --set distributed.shard_base=node" : "") + " -o " +
                         in_dir("d.json");
                },
                "", 60),
            0);
  for (int r = 0; r < 2; ++r) {
    const std::string log = slurp(dir() / ("rank" + std::to_string(r) + ".log"));
    EXPECT_EQ(slurp(dir() / ("rc" + std::to_string(r))), "2\n") << log;
    EXPECT_NE(log.find("rank 1 runs the job differently from rank 0: its distributed section is "
                       "{\"backend\":\"auto\""),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("\"shard_base\":\"node\"}, rank 0's is"), std::string::npos) << log;
  }
  EXPECT_FALSE(fs::exists(dir() / "d.json"));
}

}  // namespace
