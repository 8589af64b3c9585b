// How this process was started: alone, by torchrun, by Slurm's srun, or by ftbench's own
// `run --nproc-per-node N`, and its place in the job (rank, world size, node, the rendezvous
// address). Pure: read from a copy of the environment, so every launcher's contract is tested
// without launching anything.
//
//   torchrun --nproc-per-node 2 --no-python ftbench run SPEC
//     RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1
//     MASTER_PORT=29500 TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RESTART_COUNT=0
//     -> {kTorchrun, rank 1 of 2, local rank 1 of 2, 127.0.0.1:29500, agent store (client)}
//   srun -N2 --ntasks-per-node 4 ftbench run SPEC
//     SLURM_STEP_ID=0 SLURM_PROCID=5 SLURM_STEP_NUM_TASKS=8 SLURM_LOCALID=1 SLURM_NODEID=1
//     SLURM_STEP_TASKS_PER_NODE=4(x2) SLURM_STEP_NODELIST=gpu[07-08] SLURM_JOB_ID=4242
//     -> {kSlurm, rank 5 of 8, local rank 1 of 4 on node 1, gpu07:<port from the job id>}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/text/spellings.h"

namespace ftbench::dist {

enum class LaunchKind {
  kSingle,    // one process: no launcher's variables
  kTorchrun,  // torchrun (or anything that sets its RANK/WORLD_SIZE contract)
  kSlurm,     // a Slurm job step (srun)
  kLocal,     // ftbench run --nproc-per-node N: torchrun's variables plus FTBENCH_LAUNCH=local
};

inline constexpr text::Spelling<LaunchKind> kLaunchKindSpellings[] = {
    {LaunchKind::kSingle, "single"},
    {LaunchKind::kTorchrun, "torchrun"},
    {LaunchKind::kSlurm, "slurm"},
    {LaunchKind::kLocal, "local"},
};

// The largest job accepted (the report's bound on run.world_size).
inline constexpr int64_t kMaxWorldSize = 65536;

// A launch environment that cannot describe a job: what is missing or inconsistent, naming the
// variables and their values. Exit code 2.
class LaunchError : public BadInput {
 public:
  explicit LaunchError(const std::string& message) : BadInput(message) {}
};

struct Launch {
  LaunchKind kind = LaunchKind::kSingle;
  int64_t rank = 0;  // 0 <= rank < world_size
  int64_t world_size = 1;
  int64_t local_rank = 0;  // within the node: 0 <= local_rank < local_world_size
  int64_t local_world_size = 1;
  int64_t node_rank = 0;  // GROUP_RANK (torchrun) or SLURM_NODEID
  // Whether node_rank was given (GROUP_RANK, SLURM_NODEID) or follows from the job being on one
  // node (LOCAL_WORLD_SIZE equal to WORLD_SIZE): what splitting within a node needs.
  bool node_known = true;
  std::string master_addr;  // the rendezvous host; empty for kSingle
  int master_port = 0;      // 1..65535; 0 for kSingle
  // torchrun's agent already serves the store at master_addr:master_port
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank, rank 0 too, connects as a client.
  bool agent_store = false;
  int64_t restart_count = 0;  // TORCHELASTIC_RESTART_COUNT: the store keys of a restarted
                              // attempt must not meet the failed attempt's
  std::string run_id;         // TORCHELASTIC_RUN_ID or SLURM_JOB_ID; may be empty
  // Where each variable came from, for messages: "RANK=1", "SLURM_PROCID=5".
  std::string rank_source;

  bool distributed() const { return world_size > 1; }
  // The prefix of every store key this job writes: "ftbench/<run id>/attempt_<n>/".
  std::string store_prefix() const;
};

// The variables this reads, by exact name; `environment_snapshot` copies only these.
const std::vector<std::string_view>& launch_variables();

// `environ`'s values of launch_variables().
std::map<std::string, std::string> environment_snapshot();

// The launch `env` describes. Precedence: torchrun's variables (RANK, WORLD_SIZE) when present,
// so torchrun started by srun is torchrun's job; else a Slurm job step (SLURM_STEP_ID set: srun;
// a batch script's own shell has SLURM_PROCID but is one process); else one process. Throws
// LaunchError for a partial or inconsistent set: RANK without WORLD_SIZE, a rank outside the
// world, a non-number, no MASTER_ADDR/MASTER_PORT for a job of several processes, torchrun's
// RANK contradicting srun's SLURM_PROCID for the same world, a malformed Slurm node list.
Launch launch_from_environment(const std::map<std::string, std::string>& env);

// Slurm's host list syntax, expanded in order: "gpu[01-03,07],login1" -> gpu01 gpu02 gpu03 gpu07
// login1; several bracket groups multiply ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2); a range keeps
// its lower bound's zero padding. At most `max_hosts` are returned (the first ones). Throws
// LaunchError naming `variable` and the text for an unmatched bracket, an empty item or range,
// a range that runs backwards or a non-digit inside brackets.
std::vector<std::string> expand_hostlist(std::string_view list, std::string_view variable,
                                         std::size_t max_hosts);

// Slurm's tasks-per-node syntax: "4(x2),3" -> 4 4 3. Throws LaunchError naming `variable`.
std::vector<int64_t> expand_tasks_per_node(std::string_view list, std::string_view variable);

// The master port Slurm jobs use when MASTER_PORT is unset: 15000 + (job id + 7919 x step id)
// mod 20000, so that two jobs, or two steps of one job, on one node rarely meet, and every rank
// of a step derives the same port.
int port_from_job_id(int64_t job_id, int64_t step_id = 0);

// The GPU a rank uses: local_rank, or 0 when exactly one is visible (Slurm and container
// masking: CUDA_VISIBLE_DEVICES names the rank's own GPU). Throws LaunchError when local_rank
// names a GPU that is not there.
int64_t device_index(const Launch& launch, int64_t visible_devices);

// One line for logs and errors: "torchrun, rank 1 of 2 (local 1 of 2, node 0), store
// 127.0.0.1:29500 (agent's)".
std::string describe(const Launch& launch);

}  // namespace ftbench::dist
