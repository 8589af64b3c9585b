#include "train/dist/launch.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::dist {
namespace {

using Env = std::map<std::string, std::string>;

// The message of the LaunchError `env` raises ("" when it raises none).
std::string error_of(const Env& env) {
  try {
    launch_from_environment(env);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

std::string hostlist_error(const std::string& list) {
  try {
    expand_hostlist(list, "SLURM_JOB_NODELIST", 1000);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

Env torchrun_env(int rank, int world) {
  return {{"RANK", std::to_string(rank)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"GROUP_RANK", "0"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"TORCHELASTIC_RUN_ID", "none"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
}

Env srun_env() {
  return {{"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", "5"},
          {"SLURM_NTASKS", "8"},
          {"SLURM_STEP_NUM_TASKS", "8"},
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},
          {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_STEP_NODELIST", "gpu[07-08]"},
          {"SLURM_JOB_NODELIST", "gpu[07-08]"},
          {"SLURM_JOB_ID", "4242"}};
}

TEST(Launch, NoLauncherIsOneProcess) {
  const Launch l = launch_from_environment({});
  EXPECT_EQ(l.kind, LaunchKind::kSingle);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.world_size, 1);
  EXPECT_FALSE(l.distributed());
  EXPECT_EQ(describe(l), "one process");
}

TEST(Launch, TorchrunGivesEveryField) {
  const Launch l = launch_from_environment(torchrun_env(1, 2));
  EXPECT_EQ(l.kind, LaunchKind::kTorchrun);
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.world_size, 2);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 2);
  EXPECT_EQ(l.master_addr, "127.0.0.1");
  EXPECT_EQ(l.master_port, 29500);
  EXPECT_TRUE(l.agent_store);
  EXPECT_EQ(l.store_prefix(), "ftbench/none/attempt_0/");
  EXPECT_EQ(describe(l),
            "torchrun, rank 1 of 2 (local 1 of 2, node 0), store 127.0.0.1:29500 (torchrun's "
            "agent)");
}

TEST(Launch, ARestartedAttemptHasItsOwnStoreKeys) {
  Env env = torchrun_env(0, 2);
  env["TORCHELASTIC_RESTART_COUNT"] = "3";
  env["TORCHELASTIC_RUN_ID"] = "job7";
  EXPECT_EQ(launch_from_environment(env).store_prefix(), "ftbench/job7/attempt_3/");
}

TEST(Launch, WithoutTheAgentStoreRankZeroServes) {
  Env env = torchrun_env(0, 2);
  env.erase("TORCHELASTIC_USE_AGENT_STORE");
  EXPECT_FALSE(launch_from_environment(env).agent_store);
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_FALSE(launch_from_environment(env).agent_store);
}

TEST(Launch, OwnLauncherIsLocal) {
  Env env = torchrun_env(0, 4);
  env["FTBENCH_LAUNCH"] = "local";
  EXPECT_EQ(launch_from_environment(env).kind, LaunchKind::kLocal);
}

TEST(Launch, WorldOfOneNeedsNoRendezvous) {
  const Launch l = launch_from_environment({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(l.kind, LaunchKind::kTorchrun);
  EXPECT_FALSE(l.distributed());
  EXPECT_EQ(l.master_port, 0);
}

TEST(Launch, PartialOrInconsistentTorchrunVariablesAreRefused) {
  EXPECT_EQ(error_of({{"RANK", "0"}}),
            "RANK is set but WORLD_SIZE is not: a launcher sets both (torchrun: RANK and "
            "WORLD_SIZE); unset the one left over from another job, or set the other");
  EXPECT_EQ(error_of({{"LOCAL_RANK", "0"}}),
            "LOCAL_RANK is set but RANK and WORLD_SIZE are not: a launcher sets all three "
            "(torchrun does); unset LOCAL_RANK, or set RANK and WORLD_SIZE");
  Env env = torchrun_env(0, 2);
  env["RANK"] = "2";
  EXPECT_EQ(error_of(env),
            "RANK=\"2\" is outside the job: WORLD_SIZE is 2, so ranks run from 0 to 1");
  env = torchrun_env(0, 2);
  env["WORLD_SIZE"] = "two";
  EXPECT_EQ(error_of(env), "WORLD_SIZE=\"two\": expected a whole number from 1 to 65536");
  env["WORLD_SIZE"] = "0";
  EXPECT_EQ(error_of(env), "WORLD_SIZE=\"0\": expected a whole number from 1 to 65536");
  env = torchrun_env(0, 2);
  env["RANK"] = "-1";
  EXPECT_EQ(error_of(env), "RANK=\"-1\": expected a whole number from 0 to 65535");
  env = torchrun_env(0, 2);
  env.erase("MASTER_ADDR");
  EXPECT_EQ(error_of(env),
            "MASTER_ADDR is not set: a torchrun job of several processes meets at "
            "MASTER_ADDR:MASTER_PORT");
  env = torchrun_env(0, 2);
  env["MASTER_PORT"] = "70000";
  EXPECT_EQ(error_of(env), "MASTER_PORT=\"70000\": expected a whole number from 1 to 65535");
  env = torchrun_env(0, 2);
  env.erase("LOCAL_RANK");
  EXPECT_EQ(error_of(env),
            "LOCAL_RANK is not set: it says which of the node's GPUs this rank uses");
  env = torchrun_env(0, 2);
  env["LOCAL_WORLD_SIZE"] = "4";
  EXPECT_EQ(error_of(env), "LOCAL_WORLD_SIZE=4 is larger than WORLD_SIZE=2");
  env = torchrun_env(0, 2);
  env["LOCAL_RANK"] = "2";
  EXPECT_EQ(error_of(env),
            "LOCAL_RANK=\"2\" is outside the job: LOCAL_WORLD_SIZE is 2, so ranks run from 0 to "
            "1");
}

TEST(Launch, SrunGivesRankNodeAndItsFirstHost) {
  const Launch l = launch_from_environment(srun_env());
  EXPECT_EQ(l.kind, LaunchKind::kSlurm);
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 4);
  EXPECT_EQ(l.node_rank, 1);
  EXPECT_EQ(l.master_addr, "gpu07");
  EXPECT_EQ(l.master_port, 15000 + 4242);
  EXPECT_FALSE(l.agent_store);
  EXPECT_EQ(l.store_prefix(), "ftbench/4242.0/attempt_0/");
}

// Splitting within a node needs to know the node: given (GROUP_RANK, SLURM_NODEID), or implied
// by a job on one node.
TEST(Launch, TheNodeIsKnownWhenGivenOrWhenTheJobIsOnOneNode) {
  EXPECT_TRUE(launch_from_environment({}).node_known);
  Env env = torchrun_env(3, 4);
  env["LOCAL_WORLD_SIZE"] = "2";
  env["LOCAL_RANK"] = "1";
  env["GROUP_RANK"] = "1";
  EXPECT_TRUE(launch_from_environment(env).node_known);
  env.erase("GROUP_RANK");
  const Launch unknown = launch_from_environment(env);
  EXPECT_FALSE(unknown.node_known);
  EXPECT_EQ(unknown.node_rank, 0);
  env = torchrun_env(1, 2);
  env.erase("GROUP_RANK");
  EXPECT_TRUE(launch_from_environment(env).node_known);  // one node of 2 ranks
  EXPECT_TRUE(launch_from_environment(srun_env()).node_known);
  env = srun_env();
  env.erase("SLURM_NODEID");
  env["SLURM_PROCID"] = "1";
  EXPECT_FALSE(launch_from_environment(env).node_known);  // 4 tasks on the node, 8 in the step
}

TEST(Launch, SrunTakesAGivenMasterAndPort) {
  Env env = srun_env();
  env["MASTER_ADDR"] = "10.0.0.5";
  env["MASTER_PORT"] = "29400";
  const Launch l = launch_from_environment(env);
  EXPECT_EQ(l.master_addr, "10.0.0.5");
  EXPECT_EQ(l.master_port, 29400);
}

TEST(Launch, UnevenTasksPerNodeGiveThisNodesCount) {
  Env env = srun_env();
  env["SLURM_STEP_NUM_TASKS"] = "7";
  env["SLURM_STEP_TASKS_PER_NODE"] = "4,3";
  env["SLURM_PROCID"] = "4";
  env["SLURM_LOCALID"] = "0";
  EXPECT_EQ(launch_from_environment(env).local_world_size, 3);
}

TEST(Launch, ABatchScriptWithoutSrunIsOneProcess) {
  // sbatch's own shell: SLURM_PROCID=0 of SLURM_NTASKS=8, but no job step.
  Env env = srun_env();
  env.erase("SLURM_STEP_ID");
  env.erase("SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(launch_from_environment(env).kind, LaunchKind::kSingle);
}

TEST(Launch, TorchrunUnderSrunIsTorchrunsJob) {
  // srun starts one torchrun per node (2 tasks); torchrun's 8 ranks are the job.
  Env env = srun_env();
  env["SLURM_STEP_NUM_TASKS"] = "2";
  env["SLURM_PROCID"] = "1";
  for (const auto& [k, v] : torchrun_env(6, 8)) env[k] = v;
  env["LOCAL_RANK"] = "2";
  env["LOCAL_WORLD_SIZE"] = "4";
  const Launch l = launch_from_environment(env);
  EXPECT_EQ(l.kind, LaunchKind::kTorchrun);
  EXPECT_EQ(l.rank, 6);
  EXPECT_EQ(l.world_size, 8);
}

TEST(Launch, StaleTorchrunVariablesUnderSrunAreAConflict) {
  Env env = srun_env();
  for (const auto& [k, v] : torchrun_env(0, 8)) env[k] = v;
  EXPECT_EQ(error_of(env),
            "RANK=0 but SLURM_PROCID=5 for the same 8 processes: both torchrun's and srun's "
            "variables describe this process; unset RANK, WORLD_SIZE and LOCAL_RANK to run "
            "under srun, or start torchrun from srun with one task per node");
}

TEST(Launch, SrunProblemsAreNamed) {
  Env env = srun_env();
  env["SLURM_PROCID"] = "8";
  EXPECT_EQ(error_of(env),
            "SLURM_PROCID=\"8\" is outside the job: SLURM_STEP_NUM_TASKS is 8, so ranks run from "
            "0 to 7");
  env = srun_env();
  env.erase("SLURM_JOB_ID");
  EXPECT_EQ(error_of(env),
            "neither MASTER_PORT nor SLURM_JOB_ID is set: set MASTER_PORT to a free port, the "
            "same for every task");
  env = srun_env();
  env.erase("SLURM_STEP_NODELIST");
  env["SLURM_JOB_NODELIST"] = "gpu[07-08";
  EXPECT_EQ(error_of(env),
            "SLURM_JOB_NODELIST=\"gpu[07-08\": a '[' without its ']'; expected host names like "
            "gpu[01-04,07],login1");
  env = srun_env();
  env["SLURM_STEP_TASKS_PER_NODE"] = "4(x)";
  EXPECT_EQ(error_of(env),
            "SLURM_STEP_TASKS_PER_NODE=\"4(x)\": \"4(x)\" is not a task count; expected counts "
            "like 4(x2),3");
  env = srun_env();
  env["SLURM_STEP_TASKS_PER_NODE"] = "4";
  EXPECT_EQ(error_of(env), "SLURM_STEP_TASKS_PER_NODE=\"4\" names 1 node, but SLURM_NODEID is 1");
}

// Found by a review: each of these was accepted, or said something other than what was given.
TEST(Launch, ValuesAreCheckedAsGivenAndTheWholeHostListIsRead) {
  Env env = torchrun_env(0, 2);
  env["RANK"] = "+1";
  EXPECT_EQ(error_of(env), "RANK=\"+1\": expected a whole number from 0 to 65535");
  env["RANK"] = "02";
  EXPECT_EQ(error_of(env),
            "RANK=\"02\" is outside the job: WORLD_SIZE is 2, so ranks run from 0 to 1");
  // A world of one needs no rendezvous, whatever MASTER_* say.
  EXPECT_EQ(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "29500"}}), "");
  // The whole node list is checked, not only its first host.
  Env slurm = srun_env();
  slurm.erase("SLURM_STEP_NODELIST");
  slurm["SLURM_JOB_NODELIST"] = "gpu1,[";
  EXPECT_EQ(error_of(slurm),
            "SLURM_JOB_NODELIST=\"gpu1,[\": a '[' without its ']'; expected host names like "
            "gpu[01-04,07],login1");
  // A node's task count larger than the step's.
  slurm = srun_env();
  slurm["SLURM_STEP_NUM_TASKS"] = "2";
  slurm["SLURM_PROCID"] = "1";
  slurm["SLURM_NODEID"] = "0";
  slurm["SLURM_STEP_TASKS_PER_NODE"] = "4";
  slurm["SLURM_LOCALID"] = "3";
  EXPECT_EQ(error_of(slurm),
            "SLURM_STEP_TASKS_PER_NODE=\"4\" gives node 0 4 tasks, more than the step's 2 "
            "(SLURM_STEP_NUM_TASKS)");
}

// Two job steps of one allocation on one node get different ports.
TEST(PortFromJobId, DiffersBetweenTheStepsOfAJob) {
  Env a = srun_env();
  Env b = srun_env();
  b["SLURM_STEP_ID"] = "1";
  EXPECT_NE(launch_from_environment(a).master_port, launch_from_environment(b).master_port);
  EXPECT_EQ(launch_from_environment(a).master_port, 15000 + 4242);
}

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("gpu[01-03,07],login1", "V", 100),
            (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}));
  EXPECT_EQ(expand_hostlist("node7", "V", 100), (std::vector<std::string>{"node7"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[08-09]", "V", 100),
            (std::vector<std::string>{"r1n08", "r1n09", "r2n08", "r2n09"}));
  EXPECT_EQ(expand_hostlist("a[8-10]-ib", "V", 100),
            (std::vector<std::string>{"a8-ib", "a9-ib", "a10-ib"}));
  EXPECT_EQ(expand_hostlist("gpu[001-100000]", "V", 2),
            (std::vector<std::string>{"gpu001", "gpu002"}));
  EXPECT_EQ(expand_hostlist("x[1-3],y", "V", 1), (std::vector<std::string>{"x1"}));
}

TEST(Hostlist, MalformedListsAreRefused) {
  const std::string tail = "; expected host names like gpu[01-04,07],login1";
  EXPECT_EQ(hostlist_error("gpu[05-01]"),
            "SLURM_JOB_NODELIST=\"gpu[05-01]\": the range \"05-01\" runs backwards" + tail);
  EXPECT_EQ(
      hostlist_error("gpu[a-b]"),
      "SLURM_JOB_NODELIST=\"gpu[a-b]\": \"a-b\" is not a number or a range of numbers" + tail);
  EXPECT_EQ(hostlist_error("gpu[]"), "SLURM_JOB_NODELIST=\"gpu[]\": an empty bracket" + tail);
  EXPECT_EQ(hostlist_error("gpu[1,]"),
            "SLURM_JOB_NODELIST=\"gpu[1,]\": \"\" is not a number or a range of numbers" + tail);
  EXPECT_EQ(hostlist_error("gpu1]"), "SLURM_JOB_NODELIST=\"gpu1]\": a ']' without its '['" + tail);
  EXPECT_EQ(hostlist_error("a,,b"), "SLURM_JOB_NODELIST=\"a,,b\": an empty host name" + tail);
  EXPECT_EQ(hostlist_error(""),
            "SLURM_JOB_NODELIST is empty: expected host names like gpu[01-04,07]");
}

TEST(TasksPerNode, ExpandsRepeats) {
  EXPECT_EQ(expand_tasks_per_node("4(x2),3", "V"), (std::vector<int64_t>{4, 4, 3}));
  EXPECT_EQ(expand_tasks_per_node("1", "V"), (std::vector<int64_t>{1}));
}

TEST(DeviceIndex, LocalRankOrTheOnlyVisibleGpu) {
  Launch l = launch_from_environment(torchrun_env(1, 2));
  EXPECT_EQ(device_index(l, 8), 1);
  EXPECT_EQ(device_index(l, 1), 0);  // CUDA_VISIBLE_DEVICES gave this rank its own GPU
  l.local_rank = 3;
  try {
    device_index(l, 2);
    FAIL() << "no error for local rank 3 on a machine with 2 GPUs";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()),
              "torchrun, rank 1 of 2 (local 3 of 2, node 0), store 127.0.0.1:29500 (torchrun's "
              "agent): local rank 3 needs GPU 3, but 2 GPUs are visible; start at most 2 "
              "processes per node, or show each process its own GPU (CUDA_VISIBLE_DEVICES, "
              "ROCR_VISIBLE_DEVICES)");
  }
}

TEST(PortFromJobId, IsStableAndInRange) {
  EXPECT_EQ(port_from_job_id(0), 15000);
  EXPECT_EQ(port_from_job_id(4242), 19242);
  EXPECT_EQ(port_from_job_id(20000), 15000);
  EXPECT_EQ(port_from_job_id(123456789), 15000 + 123456789 % 20000);
}

}  // namespace
}  // namespace ftbench::dist
