// A GPU query module that answers with made-up devices, so that the loader, the report's device
// facts and `ftbench devices` are tested on machines without a GPU. Steered by environment
// variables read at every call:
//   FTBENCH_FAKE_GPU_DEVICES  devices to report (default 2); 0: fails as a runtime without a
//                             device does
//   FTBENCH_FAKE_GPU_RUNTIME  the runtime it claims to drive (default "cuda")
// and, for the power sensor (ABI version 2):
//   FTBENCH_FAKE_GPU_POWER_OPEN_ERROR  ftbench_gpu_power_open fails with this message
//   FTBENCH_FAKE_GPU_ENERGY_MJ  the counter's readings, comma-separated, read k taking entry k
//                               and the last one past the end ("1000,1030,5"); "fail": that
//                               read fails; "none": the device has no counter. Unset: 50000 mJ
//                               more at every read.
//   FTBENCH_FAKE_GPU_POWER_MW   the same for power; unset: 500000 mW; "none": no power reading
// ftbench_gpu_power_open starts both scripts again, for every device.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "device/gpu_query_abi.h"

namespace {

int devices() {
  const char* env = std::getenv("FTBENCH_FAKE_GPU_DEVICES");
  return env != nullptr ? std::atoi(env) : 2;
}

bool hip() {
  const char* env = std::getenv("FTBENCH_FAKE_GPU_RUNTIME");
  return env != nullptr && std::strcmp(env, "hip") == 0;
}

int fail(const char* message, char* error, size_t error_size) {
  std::snprintf(error, error_size, "%s", message);
  return 100;
}

// One script entry: a value, a failed read, or no such figure.
struct Entry {
  enum Kind { kValue, kFail, kNone } kind = kValue;
  int64_t value = 0;
};

// Entry `k` of the script in variable `name`; `fallback` when it is unset.
Entry scripted(const char* name, int64_t k, Entry fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr) return fallback;
  std::vector<std::string> items;
  std::string item;
  for (const char* c = env;; ++c) {
    if (*c == ',' || *c == '\0') {
      items.push_back(item);
      item.clear();
      if (*c == '\0') break;
    } else {
      item.push_back(*c);
    }
  }
  const std::string& at = items[k < static_cast<int64_t>(items.size()) ? k : items.size() - 1];
  if (at == "fail") return {Entry::kFail, 0};
  if (at == "none") return {Entry::kNone, 0};
  return {Entry::kValue, std::atoll(at.c_str())};
}

std::mutex power_lock;
int64_t reads[64] = {0};  // reads of each device since the last ftbench_gpu_power_open

}  // namespace

extern "C" {

int ftbench_gpu_query_abi_version(void) { return FTBENCH_GPU_QUERY_ABI_VERSION; }

const char* ftbench_gpu_query_runtime(void) { return hip() ? "hip" : "cuda"; }

int ftbench_gpu_device_count(int* count, char* error, size_t error_size) {
  *count = 0;
  if (devices() <= 0)
    return fail("fakeErrorNoDevice: no fake device is detected", error, error_size);
  *count = devices();
  return 0;
}

int ftbench_gpu_versions(int* driver_version, int* runtime_version, char*, size_t) {
  *driver_version = hip() ? 60342134 : 13000;
  *runtime_version = hip() ? 60342134 : 12080;
  return 0;
}

int ftbench_gpu_device_properties(int index, ftbench_gpu_device* out, char* error,
                                  size_t error_size) {
  std::memset(out, 0, sizeof(*out));
  if (index < 0 || index >= devices()) {
    return fail("fakeErrorInvalidDevice: invalid device ordinal", error, error_size);
  }
  std::snprintf(out->name, sizeof(out->name), "%s", hip() ? "Fake MI300X" : "Fake H200");
  std::snprintf(out->arch, sizeof(out->arch), "%s", hip() ? "gfx942:sramecc+:xnack-" : "sm_90");
  std::snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "0000:%02X:00.0", 0x1B + index);
  out->total_memory_bytes = 150754820096;
  out->multiprocessor_count = hip() ? 304 : 132;
  out->l2_cache_bytes = 52428800;
  out->clock_khz = 1980000;
  out->memory_clock_khz = -1;  // "the runtime does not say"
  out->memory_bus_width_bits = 5120;
  return 0;
}

int ftbench_gpu_memory_info(int index, int64_t* free_bytes, int64_t* total_bytes, char* error,
                            size_t error_size) {
  if (index < 0 || index >= devices()) {
    return fail("fakeErrorInvalidDevice: invalid device ordinal", error, error_size);
  }
  *total_bytes = 150754820096;
  *free_bytes = *total_bytes - (int64_t{1} << 30) * (index + 1);
  return 0;
}

int ftbench_gpu_power_open(int index, ftbench_gpu_power_sensor* out, char* error,
                           size_t error_size) {
  std::memset(out, 0, sizeof(*out));
  if (const char* e = std::getenv("FTBENCH_FAKE_GPU_POWER_OPEN_ERROR")) {
    return fail(e, error, error_size);
  }
  if (index < 0 || index >= devices() || index >= 64) {
    return fail("fakeErrorInvalidDevice: invalid device ordinal", error, error_size);
  }
  const std::lock_guard<std::mutex> lock(power_lock);
  for (int64_t& r : reads) r = 0;
  std::snprintf(out->library, sizeof(out->library), "%s",
                hip() ? "libfake_amd_smi.so" : "libfake-nvidia-ml.so.1");
  if (scripted("FTBENCH_FAKE_GPU_ENERGY_MJ", 0, {}).kind != Entry::kNone) {
    std::snprintf(out->energy_source, sizeof(out->energy_source), "%s",
                  hip() ? "fake_amdsmi_get_energy_count" : "fakeDeviceGetTotalEnergyConsumption");
  }
  if (scripted("FTBENCH_FAKE_GPU_POWER_MW", 0, {}).kind != Entry::kNone) {
    std::snprintf(out->power_source, sizeof(out->power_source), "%s",
                  hip() ? "fake_amdsmi_get_power_info" : "fakeDeviceGetPowerUsage");
  }
  return 0;
}

int ftbench_gpu_power_read(int index, ftbench_gpu_power_reading* out, char* error,
                           size_t error_size) {
  out->energy_millijoules = -1;
  out->power_milliwatts = -1;
  if (index < 0 || index >= devices() || index >= 64) {
    return fail("fakeErrorInvalidDevice: invalid device ordinal", error, error_size);
  }
  const std::lock_guard<std::mutex> lock(power_lock);
  const int64_t k = reads[index]++;
  const Entry energy = scripted("FTBENCH_FAKE_GPU_ENERGY_MJ", k, {Entry::kValue, 50000 * k});
  const Entry power = scripted("FTBENCH_FAKE_GPU_POWER_MW", k, {Entry::kValue, 500000});
  if (energy.kind == Entry::kFail || power.kind == Entry::kFail) {
    return fail("fakeErrorPowerRead: scripted failure", error, error_size);
  }
  if (energy.kind == Entry::kValue) out->energy_millijoules = energy.value;
  if (power.kind == Entry::kValue) out->power_milliwatts = power.value;
  return 0;
}

}  // extern "C"
