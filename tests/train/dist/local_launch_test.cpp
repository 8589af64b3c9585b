#include "train/dist/local_launch.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "train/dist/launch.h"
#include "train/dist/rank_fault.h"

namespace ftbench::dist {
namespace {

using Args = std::vector<std::string>;

std::string take_error(Args args) {
  try {
    take_nproc_per_node(args);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

TEST(NprocPerNode, IsTakenOutOfTheCommandLine) {
  Args a = {"ftbench", "run", "--nproc-per-node", "4", "spec.yaml", "--force"};
  EXPECT_EQ(take_nproc_per_node(a), 4);
  EXPECT_EQ(a, (Args{"ftbench", "run", "spec.yaml", "--force"}));
  Args b = {"ftbench", "run", "spec.yaml", "--nproc-per-node=2"};
  EXPECT_EQ(take_nproc_per_node(b), 2);
  EXPECT_EQ(b, (Args{"ftbench", "run", "spec.yaml"}));
  Args c = {"ftbench", "run", "spec.yaml"};
  EXPECT_EQ(take_nproc_per_node(c), std::nullopt);
  EXPECT_EQ(c, (Args{"ftbench", "run", "spec.yaml"}));
  // After "--" it is an argument, not the launcher's flag.
  Args d = {"ftbench", "run", "--", "--nproc-per-node", "2"};
  EXPECT_EQ(take_nproc_per_node(d), std::nullopt);
  EXPECT_EQ(d.size(), 5u);
}

TEST(NprocPerNode, BadValuesAreRefused) {
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node", "0"}),
            "--nproc-per-node: expected a whole number from 1 to 1024, found 0");
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node=two"}),
            "--nproc-per-node: expected a decimal number, found \"two\"");
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node", "2000"}),
            "--nproc-per-node: expected a whole number from 1 to 1024, found 2000");
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node"}),
            "--nproc-per-node needs a value: the number of ranks to start");
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node=2", "--nproc-per-node", "2"}),
            "--nproc-per-node is given twice");
  // As every other number flag says them (a review): hex and an empty value.
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node", "0x10"}),
            "--nproc-per-node: expected a decimal number, found \"0x10\"");
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node="}),
            "--nproc-per-node: expected a value, found an empty string");
  EXPECT_EQ(take_error({"ftbench", "run", "--nproc-per-node", ""}),
            "--nproc-per-node: expected a value, found an empty string");
}

TEST(RankEnvironment, ReplacesLaunchVariablesAndSharesTheCores) {
  const std::vector<std::string> base = {"PATH=/bin", "RANK=7", "SLURM_PROCID=3", "HOME=/root"};
  EXPECT_EQ(
      rank_environment(base, 1, 4, 29500, 16),
      (std::vector<std::string>{"PATH=/bin", "HOME=/root", "RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=4",
                                "LOCAL_WORLD_SIZE=4", "GROUP_RANK=0", "MASTER_ADDR=127.0.0.1",
                                "MASTER_PORT=29500", "FTBENCH_LAUNCH=local", "OMP_NUM_THREADS=4"}));
  // A given OMP_NUM_THREADS is kept; fewer cores than ranks still give each one thread.
  const std::vector<std::string> env = rank_environment({"OMP_NUM_THREADS=3"}, 0, 2, 1234, 16);
  EXPECT_EQ(env.front(), "OMP_NUM_THREADS=3");
  EXPECT_EQ(std::count(env.begin(), env.end(), "OMP_NUM_THREADS=8"), 0);
  const std::vector<std::string> few = rank_environment({}, 0, 4, 1234, 2);
  EXPECT_EQ(few.back(), "OMP_NUM_THREADS=1");
  // What the ranks read back is the job rank_environment describes.
  std::map<std::string, std::string> parsed;
  for (const std::string& e : rank_environment(base, 2, 4, 29500, 16)) {
    parsed[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  }
  const Launch l = launch_from_environment(parsed);
  EXPECT_EQ(l.kind, LaunchKind::kLocal);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(l.master_port, 29500);
}

TEST(LauncherExitCode, TheFirstFailureIsTheCause) {
  EXPECT_EQ(launcher_exit_code({{0, 0, 0}, {1, 0, 0}}), 0);
  EXPECT_EQ(launcher_exit_code({{1, 9, 0}, {0, 3, 0}}), 9);
  EXPECT_EQ(launcher_exit_code({{0, 0, 0}, {1, 0, 9}, {2, 4, 0}}), 128 + 9);
  EXPECT_EQ(launcher_exit_code({{0, 4, 0}, {1, 4, 0}}), 4);
  EXPECT_EQ(launcher_exit_code({{0, 4, 0}, {1, 3, 0}}), 3);  // a stop, then a real failure
  EXPECT_EQ(describe(RankExit{1, 3, 0}), "rank 1 exited with code 3");
  EXPECT_EQ(describe(RankExit{0, 0, 9}), "rank 0 was killed by signal 9");
}

TEST(RankFault, ParsesAndRefuses) {
  const RankFault f = parse_rank_fault("1:3:hang");
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.kind, FaultKind::kHang);
  EXPECT_EQ(parse_rank_fault("0:1:sigterm").kind, FaultKind::kSigterm);
  try {
    parse_rank_fault("1:0:exit");
    FAIL() << "step 0 accepted";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()),
              "FTBENCH_INJECT_RANK_FAULT=\"1:0:exit\": STEP is not a whole number >= 1; "
              "expected RANK:STEP:KIND with KIND exit, hang or sigterm, e.g. 1:3:exit");
  }
  EXPECT_THROW(parse_rank_fault("1:3"), LaunchError);
  EXPECT_THROW(parse_rank_fault("1:3:crash"), LaunchError);
}

}  // namespace
}  // namespace ftbench::dist
