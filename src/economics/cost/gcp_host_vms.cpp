#include "economics/cost/gcp_host_vms.h"

#include <algorithm>
#include <cctype>

namespace ftbench::cost::detail {

namespace {

struct MachineTypes {
  std::string_view accelerator;
  int64_t gpus;
  std::vector<std::string_view> machine_types;
};

// GCP attaches these GPUs only to their own machine types
// (https://cloud.google.com/compute/docs/gpus; SkyPilot's `_ACC_INSTANCE_TYPE_DICTS`).
const std::vector<MachineTypes>& machine_type_table() {
  static const std::vector<MachineTypes> table = {
      {"A100", 1, {"a2-highgpu-1g"}},
      {"A100", 2, {"a2-highgpu-2g"}},
      {"A100", 4, {"a2-highgpu-4g"}},
      {"A100", 8, {"a2-highgpu-8g"}},
      {"A100", 16, {"a2-megagpu-16g"}},
      {"A100-80GB", 1, {"a2-ultragpu-1g"}},
      {"A100-80GB", 2, {"a2-ultragpu-2g"}},
      {"A100-80GB", 4, {"a2-ultragpu-4g"}},
      {"A100-80GB", 8, {"a2-ultragpu-8g"}},
      {"L4",
       1,
       {"g2-standard-4", "g2-standard-8", "g2-standard-12", "g2-standard-16", "g2-standard-32"}},
      {"L4", 2, {"g2-standard-24"}},
      {"L4", 4, {"g2-standard-48"}},
      {"L4", 8, {"g2-standard-96"}},
      {"H100", 1, {"a3-highgpu-1g"}},
      {"H100", 2, {"a3-highgpu-2g"}},
      {"H100", 4, {"a3-highgpu-4g"}},
      {"H100", 8, {"a3-highgpu-8g"}},
      {"H100-MEGA", 8, {"a3-megagpu-8g"}},
      {"H200", 8, {"a3-ultragpu-8g"}},
      {"B200", 8, {"a4-highgpu-8g"}},
  };
  return table;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// vCPUs of the N1 host for other GPUs (SkyPilot's `_NUM_ACC_TO_NUM_CPU`, itself after AWS's
// p2, p3 and g4dn); 0 for a count it does not list.
double n1_vcpus(std::string_view accelerator, int64_t gpus) {
  struct Row {
    std::string_view accelerator;
    int64_t gpus;
    double vcpus;
  };
  static const Row rows[] = {{"K80", 1, 4},      {"K80", 2, 8},      {"K80", 4, 16},
                             {"K80", 8, 32},     {"K80", 16, 64},    {"V100", 1, 8},
                             {"V100", 2, 16},    {"V100", 4, 32},    {"V100", 8, 64},
                             {"T4", 1, 4},       {"T4", 2, 8},       {"T4", 4, 48},
                             {"P100", 1, 8},     {"P100", 2, 16},    {"P100", 4, 32},
                             {"P100", 8, 64},    {"DEFAULT", 1, 8},  {"DEFAULT", 2, 16},
                             {"DEFAULT", 4, 32}, {"DEFAULT", 8, 64}, {"DEFAULT", 16, 128}};
  const bool listed = std::any_of(std::begin(rows), std::end(rows), [&](const Row& r) {
    return equal_ignoring_case(r.accelerator, accelerator);
  });
  const std::string_view key = listed ? accelerator : std::string_view("DEFAULT");
  for (const Row& r : rows) {
    if (equal_ignoring_case(r.accelerator, key) && r.gpus == gpus) return r.vcpus;
  }
  return 0.0;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::optional<HostRule> gcp_host_rule(std::string_view accelerator, int64_t gpus) {
  if (starts_with(accelerator, "tpu-")) return std::nullopt;
  bool dedicated = false;
  for (const MachineTypes& row : machine_type_table()) {
    if (!equal_ignoring_case(row.accelerator, accelerator)) continue;
    dedicated = true;
    if (row.gpus == gpus) return HostRule{row.machine_types, 0.0, 0.0};
  }
  if (dedicated) return std::nullopt;  // e.g. 3 x H100: no such machine type
  const double vcpus = n1_vcpus(accelerator, gpus);
  if (vcpus == 0.0) return std::nullopt;
  return HostRule{{}, vcpus, 4.0 * vcpus};
}

bool is_gcp_n1_host(std::string_view instance_type) {
  return starts_with(instance_type, "n1-standard-") || starts_with(instance_type, "n1-highmem-") ||
         starts_with(instance_type, "n1-highcpu-");
}

bool is_gcp_gpu_machine_type(std::string_view instance_type) {
  for (const MachineTypes& row : machine_type_table()) {
    for (std::string_view type : row.machine_types) {
      if (type == instance_type) return true;
    }
  }
  return false;
}

}  // namespace ftbench::cost::detail
