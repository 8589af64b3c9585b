// `ftbench devices [--json]`: what the CUDA and HIP runtimes find on this machine, through
// ftbench's query modules (device/gpu_query.h), which LibTorch `ftbench run` would train with,
// and the allow-listed environment variables a report would record. Torch-free.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "device/gpu_query.h"
#include "device/recorded_environment.h"
#include "util/text/json_values.h"
#include "util/text/spellings.h"

namespace ftbench::cli {
namespace {

using OJson = nlohmann::ordered_json;
using device::GpuRuntime;
using device::GpuSurvey;

struct DevicesFlags {
  bool json = false;
};

constexpr text::Spelling<GpuSurvey::Status> kStatusSpellings[] = {
    {GpuSurvey::Status::kDevices, "devices"},
    {GpuSurvey::Status::kNoDevice, "no_device"},
    {GpuSurvey::Status::kNoModule, "no_module"}};

const char* status_name(GpuSurvey::Status status) {
  return text::spelling_of(kStatusSpellings, status).data();
}

OJson to_json(const GpuSurvey& s) {
  OJson devices = OJson::array();
  for (const GpuSurvey::Device& d : s.devices) {
    const device::GpuDevice& p = d.properties;
    devices.push_back({{"index", p.index},
                       {"name", p.name},
                       {"arch", p.arch},
                       {"pci_bus_id", p.pci_bus_id},
                       {"memory_bytes", text::optional_integer(p.memory_bytes)},
                       {"free_memory_bytes", d.memory ? OJson(d.memory->free_bytes) : nullptr},
                       {"multiprocessor_count", text::optional_integer(p.multiprocessor_count)},
                       {"l2_cache_bytes", text::optional_integer(p.l2_cache_bytes)},
                       {"clock_khz", text::optional_integer(p.clock_khz)},
                       {"memory_clock_khz", text::optional_integer(p.memory_clock_khz)},
                       {"memory_bus_width_bits", text::optional_integer(p.memory_bus_width_bits)}});
  }
  return {{"backend", device::backend_name(s.runtime)},
          {"status", status_name(s.status)},
          {"message", s.message},
          {"module", s.module_path.empty() ? OJson(nullptr) : OJson(s.module_path)},
          {"driver_version", s.driver_version},
          {"runtime_version", s.runtime_version},
          {"kernel_driver_version", s.kernel_driver_version},
          {"devices", std::move(devices)}};
}

std::string gib(int64_t bytes) { return fmt::format("{:.1f} GiB", double(bytes) / 1073741824.0); }

// "0: NVIDIA H200, sm_90, 132 SMs, 139.8 GiB (138.9 GiB free), L2 60 MiB, 1980 MHz, ..."
std::string device_line(GpuRuntime runtime, const GpuSurvey::Device& d) {
  const device::GpuDevice& p = d.properties;
  std::string line = fmt::format("{}: {}", p.index, p.name);
  if (!p.arch.empty()) line += ", " + p.arch;
  if (p.multiprocessor_count) {
    line += fmt::format(", {} {}", *p.multiprocessor_count,
                        runtime == GpuRuntime::kCuda ? "SMs" : "CUs");
  }
  if (p.memory_bytes) line += ", " + gib(*p.memory_bytes);
  if (d.memory) line += fmt::format(" ({} free)", gib(d.memory->free_bytes));
  if (p.l2_cache_bytes) line += fmt::format(", L2 {} MiB", *p.l2_cache_bytes / 1048576);
  if (p.clock_khz) line += fmt::format(", {} MHz", *p.clock_khz / 1000);
  if (p.memory_bus_width_bits) {
    line += fmt::format(", memory bus {}-bit", *p.memory_bus_width_bits);
  }
  if (p.memory_clock_khz) line += fmt::format(" at {} MHz", *p.memory_clock_khz / 1000);
  if (!p.pci_bus_id.empty()) line += ", PCI " + p.pci_bus_id;
  return line;
}

void print_text(const GpuSurvey& s) {
  const char* backend = device::backend_name(s.runtime);
  switch (s.status) {
    case GpuSurvey::Status::kNoModule:
      std::cout << fmt::format("{}: not available ({})\n", backend, s.message);
      return;
    case GpuSurvey::Status::kNoDevice:
      std::cout << fmt::format("{}: no device ({})\n", backend, s.message);
      break;
    case GpuSurvey::Status::kDevices:
      std::cout << fmt::format("{}: {} device{}\n", backend, s.devices.size(),
                               s.devices.size() == 1 ? "" : "s");
      for (const GpuSurvey::Device& d : s.devices) {
        std::cout << "  " << device_line(s.runtime, d) << "\n";
      }
      break;
  }
  std::string versions =
      fmt::format("{} runtime {}", s.runtime == GpuRuntime::kCuda ? "CUDA" : "HIP",
                  s.runtime_version.empty() ? "unknown" : s.runtime_version);
  if (!s.driver_version.empty()) versions += ", driver " + s.driver_version;
  if (!s.kernel_driver_version.empty()) versions += ", kernel driver " + s.kernel_driver_version;
  std::cout << fmt::format("  {}; module {}\n", versions, s.module_path);
}

}  // namespace

Action add_devices_command(CLI::App& app) {
  auto f = std::make_shared<DevicesFlags>();
  CLI::App* cmd = add_subcommand(app, "devices");
  cmd->add_flag("--json", f->json, "Print one JSON object instead of text");
  return [f]() {
    std::vector<GpuSurvey> surveys;
    for (GpuRuntime runtime : {GpuRuntime::kCuda, GpuRuntime::kHip}) {
      surveys.push_back(device::survey_gpus(runtime, device::default_module_search(runtime)));
    }
    const auto variables = device::recorded_variables();
#ifdef FTBENCH_LIBTORCH_VERSION
    const OJson libtorch = {{"version", FTBENCH_LIBTORCH_VERSION},
                            {"build", FTBENCH_LIBTORCH_BUILD}};
#else
    const OJson libtorch = nullptr;
#endif
    if (f->json) {
      OJson out;
      OJson backends = OJson::array();
      for (const GpuSurvey& s : surveys) backends.push_back(to_json(s));
      out["backends"] = std::move(backends);
      out["libtorch"] = libtorch;
      OJson env = OJson::object();
      for (const auto& [name, value] : variables) env[name] = value;
      out["variables"] = std::move(env);
      std::cout << out.dump(2) << "\n";
      return kExitOk;
    }
    for (const GpuSurvey& s : surveys) print_text(s);
    if (libtorch.is_null()) {
      std::cout << "libtorch: none (this ftbench was built without LibTorch: no `run`)\n";
    } else {
      std::cout << fmt::format("libtorch: {} ({} build)\n", libtorch["version"].get<std::string>(),
                               libtorch["build"].get<std::string>());
    }
    std::string env;
    for (const auto& [name, value] : variables) {
      env += fmt::format("{}{}={}", env.empty() ? "" : " ", name, value);
    }
    std::cout << "environment: " << (env.empty() ? "none of the recorded variables is set" : env)
              << "\n";
    return kExitOk;
  };
}

}  // namespace ftbench::cli
