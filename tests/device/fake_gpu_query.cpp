// A GPU query module that answers with made-up devices, so that the loader, the report's device
// facts and `ftbench devices` are tested on machines without a GPU. Steered by environment
// variables read at every call:
//   FTBENCH_FAKE_GPU_DEVICES  devices to report (default 2); 0: fails as a runtime without a
//                             device does
//   FTBENCH_FAKE_GPU_RUNTIME  the runtime it claims to drive (default "cuda")
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ftbench/device/gpu_query_abi.h"

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

}  // extern "C"
