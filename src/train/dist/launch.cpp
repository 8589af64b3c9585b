#include "train/dist/launch.h"

#include <cstdlib>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::dist {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<std::string> get(const Env& env, std::string_view name) {
  const auto it = env.find(std::string(name));
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// A variable's whole value as a non-negative integer within [low, high].
int64_t read_count(std::string_view name, const std::string& value, int64_t low, int64_t high) {
  int64_t n = 0;
  // Digits only: "+1" and " 1" are no launcher's spelling of a rank.
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  const std::errc ec = digits ? text::parse_int(value, n) : std::errc::invalid_argument;
  if (ec != std::errc{} || n < low || n > high) {
    throw LaunchError(fmt::format("{}={}: expected a whole number from {} to {}", name,
                                  text::quoted(value), low, high));
  }
  return n;
}

std::optional<int64_t> read_optional(const Env& env, std::string_view name, int64_t low,
                                     int64_t high) {
  const std::optional<std::string> v = get(env, name);
  if (!v) return std::nullopt;
  return read_count(name, *v, low, high);
}

int64_t read_required(const Env& env, std::string_view name, int64_t low, int64_t high,
                      std::string_view why) {
  const std::optional<int64_t> v = read_optional(env, name, low, high);
  if (!v) throw LaunchError(fmt::format("{} is not set: {}", name, why));
  return *v;
}

int read_port(std::string_view name, const std::string& value) {
  return static_cast<int>(read_count(name, value, 1, 65535));
}

constexpr int64_t kMaxRank = kMaxWorldSize - 1;

// "RANK=\"02\"": the variable as it was given.
std::string given(const Env& env, std::string_view name) {
  return fmt::format("{}={}", name, text::quoted(get(env, name).value_or("")));
}

void check_rank(std::string_view what, int64_t rank, std::string_view size_name, int64_t size) {
  if (rank >= size) {
    throw LaunchError(fmt::format("{} is outside the job: {} is {}, so ranks run from 0 to {}",
                                  what, size_name, size, size - 1));
  }
}

std::string master_addr_of(const Env& env, std::string_view kind) {
  const std::optional<std::string> addr = get(env, "MASTER_ADDR");
  if (!addr) {
    throw LaunchError(fmt::format(
        "MASTER_ADDR is not set: a {} job of several processes meets at MASTER_ADDR:MASTER_PORT",
        kind));
  }
  if (addr->empty()) throw LaunchError("MASTER_ADDR is empty: expected a host name or address");
  return *addr;
}

Launch torchrun_launch(const Env& env) {
  Launch l;
  l.kind = get(env, "FTBENCH_LAUNCH") == std::optional<std::string>("local")
               ? LaunchKind::kLocal
               : LaunchKind::kTorchrun;
  const std::string_view who = l.kind == LaunchKind::kLocal ? "local" : "torchrun";
  const bool has_rank = env.count("RANK") > 0;
  const bool has_world = env.count("WORLD_SIZE") > 0;
  if (has_rank != has_world) {
    throw LaunchError(fmt::format(
        "{} is set but {} is not: a launcher sets both (torchrun: RANK and WORLD_SIZE); unset "
        "the one left over from another job, or set the other",
        has_rank ? "RANK" : "WORLD_SIZE", has_rank ? "WORLD_SIZE" : "RANK"));
  }
  l.world_size = read_count("WORLD_SIZE", env.at("WORLD_SIZE"), 1, kMaxWorldSize);
  l.rank = read_count("RANK", env.at("RANK"), 0, kMaxRank);
  check_rank(given(env, "RANK"), l.rank, "WORLD_SIZE", l.world_size);
  l.rank_source = fmt::format("RANK={}", l.rank);
  l.local_world_size =
      read_optional(env, "LOCAL_WORLD_SIZE", 1, kMaxWorldSize).value_or(l.world_size);
  if (l.local_world_size > l.world_size) {
    throw LaunchError(fmt::format("LOCAL_WORLD_SIZE={} is larger than WORLD_SIZE={}",
                                  l.local_world_size, l.world_size));
  }
  if (l.world_size > 1) {
    l.local_rank = read_required(env, "LOCAL_RANK", 0, kMaxRank,
                                 "it says which of the node's GPUs this rank uses");
  } else {
    l.local_rank = read_optional(env, "LOCAL_RANK", 0, kMaxRank).value_or(0);
  }
  check_rank(given(env, "LOCAL_RANK"), l.local_rank, "LOCAL_WORLD_SIZE", l.local_world_size);
  const std::optional<int64_t> group_rank = read_optional(env, "GROUP_RANK", 0, kMaxRank);
  l.node_rank = group_rank.value_or(0);
  l.node_known = group_rank.has_value() || l.local_world_size == l.world_size;
  l.restart_count = read_optional(env, "TORCHELASTIC_RESTART_COUNT", 0, 1'000'000).value_or(0);
  l.run_id = get(env, "TORCHELASTIC_RUN_ID").value_or("");
  const std::optional<std::string> agent = get(env, "TORCHELASTIC_USE_AGENT_STORE");
  l.agent_store = agent == std::optional<std::string>("True") ||
                  agent == std::optional<std::string>("true") ||
                  agent == std::optional<std::string>("1");
  // A world of one meets nobody: MASTER_* are not read.
  if (l.world_size > 1) {
    l.master_addr = master_addr_of(env, who);
    const std::optional<std::string> port = get(env, "MASTER_PORT");
    if (!port) {
      throw LaunchError(
          fmt::format("MASTER_PORT is not set: a {} job of several processes meets at "
                      "MASTER_ADDR:MASTER_PORT",
                      who));
    }
    l.master_port = read_port("MASTER_PORT", *port);
  }
  // srun starting ftbench directly while stale torchrun variables are exported: the same world
  // seen twice with two different ranks is two launchers at once.
  const std::optional<std::string> procid = get(env, "SLURM_PROCID");
  const std::optional<std::string> step_tasks = get(env, "SLURM_STEP_NUM_TASKS");
  if (env.count("SLURM_STEP_ID") > 0 && procid && step_tasks &&
      *step_tasks == std::to_string(l.world_size) && *procid != std::to_string(l.rank)) {
    throw LaunchError(fmt::format(
        "RANK={} but SLURM_PROCID={} for the same {} processes: both torchrun's and srun's "
        "variables describe this process; unset RANK, WORLD_SIZE and LOCAL_RANK to run under "
        "srun, or start torchrun from srun with one task per node",
        l.rank, *procid, l.world_size));
  }
  return l;
}

// The number of tasks on node `node` from the first of `names` that is set.
std::optional<int64_t> tasks_on_node(const Env& env, int64_t node,
                                     std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    const std::optional<std::string> v = get(env, name);
    if (!v) continue;
    const std::vector<int64_t> counts = expand_tasks_per_node(*v, name);
    if (node >= static_cast<int64_t>(counts.size())) {
      throw LaunchError(fmt::format("{}={} names {} node{}, but SLURM_NODEID is {}", name,
                                    text::quoted(*v), counts.size(), counts.size() == 1 ? "" : "s",
                                    node));
    }
    return counts[static_cast<std::size_t>(node)];
  }
  return std::nullopt;
}

Launch slurm_launch(const Env& env) {
  Launch l;
  l.kind = LaunchKind::kSlurm;
  const char* why = "srun sets it for every task of a job step";
  l.rank = read_required(env, "SLURM_PROCID", 0, kMaxRank, why);
  l.rank_source = fmt::format("SLURM_PROCID={}", l.rank);
  const std::string_view world_name =
      env.count("SLURM_STEP_NUM_TASKS") > 0 ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  l.world_size = read_required(env, world_name, 1, kMaxWorldSize, why);
  check_rank(given(env, "SLURM_PROCID"), l.rank, world_name, l.world_size);
  const std::optional<int64_t> node_id = read_optional(env, "SLURM_NODEID", 0, kMaxRank);
  l.node_rank = node_id.value_or(0);
  l.local_rank = read_optional(env, "SLURM_LOCALID", 0, kMaxRank).value_or(0);
  std::string_view per_node_name;
  for (std::string_view name :
       {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    if (env.count(std::string(name)) > 0) {
      per_node_name = name;
      break;
    }
  }
  l.local_world_size = per_node_name.empty()
                           ? l.world_size
                           : tasks_on_node(env, l.node_rank, {per_node_name}).value_or(1);
  if (l.local_world_size > l.world_size) {
    throw LaunchError(fmt::format("{}={} gives node {} {} tasks, more than the step's {} ({})",
                                  per_node_name, text::quoted(get(env, per_node_name).value_or("")),
                                  l.node_rank, l.local_world_size, l.world_size, world_name));
  }
  check_rank(given(env, "SLURM_LOCALID"), l.local_rank,
             "the node's task count (SLURM_STEP_TASKS_PER_NODE)", l.local_world_size);
  l.node_known = node_id.has_value() || l.local_world_size == l.world_size;
  l.run_id = get(env, "SLURM_JOB_ID").value_or(get(env, "SLURM_JOBID").value_or(""));
  if (const std::optional<std::string> step = get(env, "SLURM_STEP_ID")) {
    l.run_id += "." + *step;
  }
  if (!l.distributed()) return l;

  if (const std::optional<std::string> addr = get(env, "MASTER_ADDR")) {
    l.master_addr = master_addr_of(env, "Slurm");
  } else {
    for (std::string_view name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      const std::optional<std::string> list = get(env, name);
      if (!list) continue;
      // The whole list is read, so a malformed one is refused wherever its fault lies.
      l.master_addr = expand_hostlist(*list, name, std::size_t{1} << 20).front();
      break;
    }
    if (l.master_addr.empty()) {
      throw LaunchError(
          "neither MASTER_ADDR nor SLURM_JOB_NODELIST is set: a Slurm job of several tasks "
          "meets on its first node or at MASTER_ADDR");
    }
  }
  if (const std::optional<std::string> port = get(env, "MASTER_PORT")) {
    l.master_port = read_port("MASTER_PORT", *port);
  } else {
    const std::optional<std::string> job = get(env, "SLURM_JOB_ID");
    if (!job) {
      throw LaunchError(
          "neither MASTER_PORT nor SLURM_JOB_ID is set: set MASTER_PORT to a free port, the "
          "same for every task");
    }
    // The job step too: two steps of one allocation may share a node.
    int64_t step = 0;
    if (const std::optional<std::string> s = get(env, "SLURM_STEP_ID")) {
      if (text::parse_int(*s, step) != std::errc{} || step < 0) step = 0;
    }
    l.master_port = port_from_job_id(read_count("SLURM_JOB_ID", *job, 0, INT64_MAX), step);
  }
  return l;
}

// One item of a host list (no top-level comma), expanded into `out`, at most max_hosts in all.
void expand_item(std::string_view item, std::string_view variable, std::string_view whole,
                 std::size_t max_hosts, std::vector<std::string>& out) {
  auto bad = [&](std::string_view what) {
    return LaunchError(fmt::format("{}={}: {}; expected host names like gpu[01-04,07],login1",
                                   variable, text::quoted(whole), what));
  };
  const std::size_t open = item.find('[');
  if (open == std::string_view::npos) {
    if (item.find(']') != std::string_view::npos) throw bad("a ']' without its '['");
    out.emplace_back(item);
    return;
  }
  const std::size_t close = item.find(']', open);
  if (close == std::string_view::npos) throw bad("a '[' without its ']'");
  const std::string_view prefix = item.substr(0, open);
  if (prefix.find(']') != std::string_view::npos) throw bad("a ']' without its '['");
  const std::string_view ranges = item.substr(open + 1, close - open - 1);
  const std::string_view rest = item.substr(close + 1);
  if (ranges.empty()) throw bad("an empty bracket");
  std::size_t start = 0;
  while (start <= ranges.size()) {
    const std::size_t comma = std::min(ranges.find(',', start), ranges.size());
    const std::string_view range = ranges.substr(start, comma - start);
    const std::size_t dash = range.find('-');
    const std::string_view low_text = range.substr(0, dash);
    const std::string_view high_text =
        dash == std::string_view::npos ? low_text : range.substr(dash + 1);
    uint64_t low = 0;
    uint64_t high = 0;
    if (low_text.empty() || high_text.empty() || text::parse_uint(low_text, low) != std::errc{} ||
        text::parse_uint(high_text, high) != std::errc{}) {
      throw bad(fmt::format("{} is not a number or a range of numbers",
                            text::quoted(range.empty() ? std::string_view("") : range)));
    }
    if (high < low) throw bad(fmt::format("the range {} runs backwards", text::quoted(range)));
    for (uint64_t n = low; n <= high && out.size() < max_hosts; ++n) {
      std::string digits = std::to_string(n);
      if (digits.size() < low_text.size()) {
        digits.insert(0, low_text.size() - digits.size(), '0');
      }
      std::vector<std::string> tails;
      expand_item(rest, variable, whole, max_hosts - out.size(), tails);
      for (std::string& tail : tails) out.push_back(std::string(prefix) + digits + tail);
    }
    if (out.size() >= max_hosts) return;
    start = comma + 1;
  }
}

}  // namespace

std::string Launch::store_prefix() const {
  return fmt::format("ftbench/{}/attempt_{}/", run_id.empty() ? "job" : run_id, restart_count);
}

const std::vector<std::string_view>& launch_variables() {
  static const std::vector<std::string_view> names = {
      "RANK",
      "WORLD_SIZE",
      "LOCAL_RANK",
      "LOCAL_WORLD_SIZE",
      "GROUP_RANK",
      "MASTER_ADDR",
      "MASTER_PORT",
      "TORCHELASTIC_RESTART_COUNT",
      "TORCHELASTIC_RUN_ID",
      "TORCHELASTIC_USE_AGENT_STORE",
      "FTBENCH_LAUNCH",
      "SLURM_STEP_ID",
      "SLURM_PROCID",
      "SLURM_NTASKS",
      "SLURM_STEP_NUM_TASKS",
      "SLURM_LOCALID",
      "SLURM_NODEID",
      "SLURM_STEP_TASKS_PER_NODE",
      "SLURM_TASKS_PER_NODE",
      "SLURM_NTASKS_PER_NODE",
      "SLURM_STEP_NODELIST",
      "SLURM_JOB_NODELIST",
      "SLURM_NODELIST",
      "SLURM_JOB_ID",
      "SLURM_JOBID",
  };
  return names;
}

std::map<std::string, std::string> environment_snapshot() {
  Env env;
  for (std::string_view name : launch_variables()) {
    if (const char* v = std::getenv(std::string(name).c_str())) env[std::string(name)] = v;
  }
  return env;
}

Launch launch_from_environment(const std::map<std::string, std::string>& env) {
  if (env.count("RANK") > 0 || env.count("WORLD_SIZE") > 0) return torchrun_launch(env);
  if (env.count("LOCAL_RANK") > 0 && env.count("SLURM_STEP_ID") == 0) {
    throw LaunchError(
        "LOCAL_RANK is set but RANK and WORLD_SIZE are not: a launcher sets all three "
        "(torchrun does); unset LOCAL_RANK, or set RANK and WORLD_SIZE");
  }
  if (env.count("SLURM_STEP_ID") > 0) return slurm_launch(env);
  return Launch{};
}

std::vector<std::string> expand_hostlist(std::string_view list, std::string_view variable,
                                         std::size_t max_hosts) {
  std::vector<std::string> hosts;
  if (list.empty()) {
    throw LaunchError(fmt::format("{} is empty: expected host names like gpu[01-04,07]", variable));
  }
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= list.size() && hosts.size() < max_hosts; ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i < list.size() && (list[i] != ',' || depth > 0)) continue;
    const std::string_view item = list.substr(start, i - start);
    if (item.empty()) {
      throw LaunchError(
          fmt::format("{}={}: an empty host name; expected host names like "
                      "gpu[01-04,07],login1",
                      variable, text::quoted(list)));
    }
    expand_item(item, variable, list, max_hosts - hosts.size(), hosts);
    start = i + 1;
  }
  return hosts;
}

std::vector<int64_t> expand_tasks_per_node(std::string_view list, std::string_view variable) {
  std::vector<int64_t> counts;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, comma - start);
    const std::size_t paren = item.find("(x");
    const std::string_view count_text = item.substr(0, paren);
    int64_t count = 0;
    int64_t repeat = 1;
    bool ok = !count_text.empty() && text::parse_int(count_text, count) == std::errc{} &&
              count >= 1 && count <= kMaxWorldSize;
    if (ok && paren != std::string_view::npos) {
      ok =
          item.back() == ')' &&
          text::parse_int(item.substr(paren + 2, item.size() - paren - 3), repeat) == std::errc{} &&
          repeat >= 1 && repeat <= kMaxWorldSize;
    }
    if (!ok || counts.size() + static_cast<std::size_t>(repeat) > std::size_t(kMaxWorldSize)) {
      throw LaunchError(fmt::format("{}={}: {} is not a task count; expected counts like 4(x2),3",
                                    variable, text::quoted(list), text::quoted(item)));
    }
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), count);
    start = comma + 1;
  }
  return counts;
}

int port_from_job_id(int64_t job_id, int64_t step_id) {
  // 7919 is prime to 20000: the steps of one job walk through every port before one repeats.
  return static_cast<int>(15000 + (job_id % 20000 + (step_id % 20000) * 7919) % 20000);
}

int64_t device_index(const Launch& launch, int64_t visible_devices) {
  if (visible_devices == 1) return 0;
  if (launch.local_rank >= visible_devices) {
    throw LaunchError(fmt::format(
        "{}: local rank {} needs GPU {}, but {} GPU{} visible; start at most {} process{} per "
        "node, or show each process its own GPU (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES)",
        describe(launch), launch.local_rank, launch.local_rank, visible_devices,
        visible_devices == 1 ? " is" : "s are", visible_devices, visible_devices == 1 ? "" : "es"));
  }
  return launch.local_rank;
}

std::string describe(const Launch& launch) {
  if (launch.kind == LaunchKind::kSingle) return "one process";
  std::string out =
      fmt::format("{}, rank {} of {} (local {} of {}, node {})",
                  text::spelling_of(kLaunchKindSpellings, launch.kind), launch.rank,
                  launch.world_size, launch.local_rank, launch.local_world_size, launch.node_rank);
  if (!launch.master_addr.empty()) {
    out += fmt::format(", store {}:{}{}", launch.master_addr, launch.master_port,
                       launch.agent_store ? " (torchrun's agent)" : "");
  }
  return out;
}

}  // namespace ftbench::dist
