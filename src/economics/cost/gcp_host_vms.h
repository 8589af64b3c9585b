// Private to src/economics/cost: the host VM that Google Cloud bills beside a GPU. SkyPilot's GCP
// catalog prices a GPU row alone (AcceleratorName set, InstanceType empty) and lists the VMs as
// rows of their own; GCP bills both. This is SkyPilot's own choice of host
// (sky/catalog/gcp_catalog.py,
// `_ACC_INSTANCE_TYPE_DICTS` and `_NUM_ACC_TO_NUM_CPU`, read 2026-12-06): the machine types
// GCP attaches the GPU to (A2, A3, A4, G2), or else the cheapest N1 VM of the zone with enough
// vCPUs and 4 GiB of memory per vCPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ftbench::cost::detail {

// What hosts `count` GPUs named `accelerator` (SkyPilot's name, matched ignoring case): either
// the machine types GCP sells them in, or (empty list) an N1 VM of at least `n1_vcpus` vCPUs
// and `n1_memory_gib`. nullopt: a TPU (its price is the whole TPU VM's) or a count SkyPilot
// does not launch.
struct HostRule {
  std::vector<std::string_view> machine_types;
  double n1_vcpus = 0.0;
  double n1_memory_gib = 0.0;
};
std::optional<HostRule> gcp_host_rule(std::string_view accelerator, int64_t gpus);

// The families an N1 host is taken from (n1-standard, n1-highmem, n1-highcpu).
bool is_gcp_n1_host(std::string_view instance_type);
// Whether `instance_type` is one of the machine types of any rule: the rows worth keeping while
// a file is read.
bool is_gcp_gpu_machine_type(std::string_view instance_type);

}  // namespace ftbench::cost::detail
