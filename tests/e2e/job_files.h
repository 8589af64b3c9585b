// Shared by the e2e tests of jobs of several processes: a free loopback port for a rendezvous,
// and the files the jobs write read back (reports, safetensors exports).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../free_port.h"
#include "ftbench_process.h"

namespace ftbench::e2e {

using test_env::free_port;

// Runs `ranks` processes of ftbench-bin (FTBENCH_BINARY) with torchrun's variables, as torchrun
// would start them on ranks / local_world nodes of local_world each (rank r: LOCAL_RANK r mod
// local_world, GROUP_RANK r / local_world), meeting at 127.0.0.1:`port`, every one in the source
// tree (so that configs/ resolves) under `timeout`; `args_of(r)` is rank r's command line after
// "ftbench", `env` more variables for all. Rank r's output goes to `dir`/rank<r>.log and its exit
// code to `dir`/rc<r>. Returns once all ended: system()'s status of the shell. Without
// `group_rank`, GROUP_RANK is left unset (a launch that does not say which node a rank is on).
inline int run_torchrun_ranks(int ranks, int local_world, int port,
                              const std::filesystem::path& dir,
                              const std::function<std::string(int)>& args_of,
                              const std::string& env = "", int timeout_seconds = 120,
                              bool group_rank = true) {
  std::string script = "cd " + shell_quote(FTBENCH_SOURCE_DIR) + " || exit 1; ";
  for (int r = 0; r < ranks; ++r) {
    const std::string rank = std::to_string(r);
    script += "(RANK=" + rank + " LOCAL_RANK=" + std::to_string(r % local_world) +
              (group_rank ? " GROUP_RANK=" + std::to_string(r / local_world) : std::string()) +
              " WORLD_SIZE=" + std::to_string(ranks) +
              " LOCAL_WORLD_SIZE=" + std::to_string(local_world) +
              " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
              " TORCHELASTIC_RESTART_COUNT=0 " + env + " timeout " +
              std::to_string(timeout_seconds) + " " + shell_quote(FTBENCH_BINARY) + " " +
              args_of(r) + " >" + shell_quote((dir / ("rank" + rank + ".log")).string()) +
              " 2>&1; echo $? >" + shell_quote((dir / ("rc" + rank)).string()) + ") & ";
  }
  script += "wait";
  return std::system(("sh -c " + shell_quote(script)).c_str());
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  return nlohmann::json::parse(slurp(p));
}

// The tensors of a safetensors file as fp32 values by name (the adapters are fp32 here).
inline std::map<std::string, std::vector<float>> read_f32_tensors(const std::filesystem::path& p) {
  const std::string bytes = slurp(p);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), sizeof(header));
  const nlohmann::json h = nlohmann::json::parse(bytes.substr(8, header));
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(t["dtype"], "F32") << name;
    const auto begin = t["data_offsets"][0].get<std::size_t>();
    const auto end = t["data_offsets"][1].get<std::size_t>();
    std::vector<float> v((end - begin) / sizeof(float));
    std::memcpy(v.data(), bytes.data() + 8 + header + begin, end - begin);
    out[name] = std::move(v);
  }
  return out;
}

// Every tensor of `got` within `relative` x the largest magnitude of the same tensor of `want`.
inline void expect_tensors_close(const std::map<std::string, std::vector<float>>& want,
                                 const std::map<std::string, std::vector<float>>& got,
                                 double relative, const std::string& label) {
  EXPECT_EQ(got.size(), want.size()) << label;
  for (const auto& [name, w] : want) {
    const auto g = got.find(name);
    if (g == got.end()) {
      ADD_FAILURE() << label << ": " << name << " is missing";
      continue;
    }
    ASSERT_EQ(g->second.size(), w.size()) << label << ", " << name;
    double max_abs = 0.0;
    double max_diff = 0.0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      max_abs = std::max(max_abs, double(std::abs(w[i])));
      max_diff = std::max(max_diff, double(std::abs(g->second[i] - w[i])));
    }
    EXPECT_LE(max_diff, relative * max_abs) << label << ", " << name;
  }
}

}  // namespace ftbench::e2e
