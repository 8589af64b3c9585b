#include "device/gpu_query.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "util/text/trim.h"

namespace ftbench::device {
namespace {

constexpr size_t kErrorSize = 512;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<int64_t> known(int64_t value) {
  return value >= 0 ? std::optional<int64_t>(value) : std::nullopt;
}

#ifdef FTBENCH_CUDA_QUERY_BUILD_PATH
constexpr const char* kCudaBuildPath = FTBENCH_CUDA_QUERY_BUILD_PATH;
#else
constexpr const char* kCudaBuildPath = "";
#endif
#ifdef FTBENCH_HIP_QUERY_BUILD_PATH
constexpr const char* kHipBuildPath = FTBENCH_HIP_QUERY_BUILD_PATH;
#else
constexpr const char* kHipBuildPath = "";
#endif

const char* runtime_name(GpuRuntime runtime) {
  return runtime == GpuRuntime::kCuda ? "cuda" : "hip";
}

const char* toolkit_name(GpuRuntime runtime) {
  return runtime == GpuRuntime::kCuda ? "CUDA toolkit"
                                      : "HIP runtime (hip_runtime_api.h, libamdhip64)";
}

}  // namespace

const char* backend_name(GpuRuntime runtime) {
  return runtime == GpuRuntime::kCuda ? "cuda" : "rocm";
}

const char* module_env_variable(GpuRuntime runtime) {
  return runtime == GpuRuntime::kCuda ? "FTBENCH_CUDA_QUERY_LIBRARY" : "FTBENCH_HIP_QUERY_LIBRARY";
}

const char* module_file_name(GpuRuntime runtime) {
  return runtime == GpuRuntime::kCuda ? "libftbench_cuda_query.so" : "libftbench_hip_query.so";
}

std::vector<std::string> module_candidates(GpuRuntime runtime, const ModuleSearch& search) {
  std::vector<std::string> out;
  auto add = [&out](std::string path) {
    if (!path.empty() && std::find(out.begin(), out.end(), path) == out.end()) {
      out.push_back(std::move(path));
    }
  };
  if (!search.override_path.empty()) return {search.override_path};
  if (!search.executable_path.empty()) {
    const std::filesystem::path dir = std::filesystem::path(search.executable_path).parent_path();
    add((dir / module_file_name(runtime)).string());
    add((dir.parent_path() / "lib/ftbench" / module_file_name(runtime)).string());
  }
  add(search.build_path);
  return out;
}

ModuleSearch default_module_search(GpuRuntime runtime) {
  ModuleSearch search;
  if (const char* env = std::getenv(module_env_variable(runtime)); env != nullptr) {
    search.override_path = env;
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) search.executable_path = self.string();
  search.build_path = runtime == GpuRuntime::kCuda ? kCudaBuildPath : kHipBuildPath;
  return search;
}

std::string format_runtime_version(GpuRuntime runtime, int version) {
  if (version <= 0) return "";
  if (runtime == GpuRuntime::kCuda) {
    return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
  }
  return fmt::format("{}.{}.{}", version / 10000000, (version / 100000) % 100, version % 100000);
}

std::string parse_nvidia_kernel_module_version(const std::string& text) {
  const size_t at = text.find("Kernel Module");
  if (at == std::string::npos) return "";
  std::istringstream words(text.substr(at, text.find('\n', at) - at));
  std::string word;
  while (words >> word) {
    const bool version = std::isdigit(static_cast<unsigned char>(word.front())) != 0 &&
                         word.find('.') != std::string::npos &&
                         word.find_first_not_of("0123456789.") == std::string::npos;
    if (version) return word;
  }
  return "";
}

std::string kernel_driver_version(GpuRuntime runtime) {
  if (runtime == GpuRuntime::kCuda) {
    return parse_nvidia_kernel_module_version(read_text("/proc/driver/nvidia/version"));
  }
  const std::string version = read_text("/sys/module/amdgpu/version");
  return std::string(text::trim(version, text::kWhitespace));
}

struct GpuQuery::Api {
  decltype(&ftbench_gpu_device_count) device_count = nullptr;
  decltype(&ftbench_gpu_versions) versions = nullptr;
  decltype(&ftbench_gpu_device_properties) device_properties = nullptr;
  decltype(&ftbench_gpu_memory_info) memory_info = nullptr;
  decltype(&ftbench_gpu_power_open) power_open = nullptr;
  decltype(&ftbench_gpu_power_read) power_read = nullptr;
};

GpuQuery::GpuQuery(GpuRuntime runtime, std::string path, std::unique_ptr<Api> api)
    : runtime_(runtime), path_(std::move(path)), api_(std::move(api)) {}

GpuQuery::~GpuQuery() = default;

std::unique_ptr<GpuQuery> GpuQuery::load(GpuRuntime runtime, const ModuleSearch& search) {
  const std::vector<std::string> candidates = module_candidates(runtime, search);
  std::string tried;
  for (const std::string& candidate : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) {
      tried += (tried.empty() ? "" : ", ") + candidate;
      continue;
    }
    // Local: the runtime's symbols stay out of the program's namespace (LibTorch brings its
    // own). Never closed (see the header).
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      throw GpuQueryError(fmt::format("cannot load the {} query module {}: {}",
                                      runtime_name(runtime), candidate, ::dlerror()));
    }
    auto symbol = [&](const char* name) {
      void* address = ::dlsym(handle, name);
      if (address == nullptr) {
        throw GpuQueryError(
            fmt::format("{} is not an ftbench GPU query module (no {})", candidate, name));
      }
      return address;
    };
    using AbiVersionFn = decltype(&ftbench_gpu_query_abi_version);
    using RuntimeFn = decltype(&ftbench_gpu_query_runtime);
    const int abi = reinterpret_cast<AbiVersionFn>(symbol("ftbench_gpu_query_abi_version"))();
    if (abi != FTBENCH_GPU_QUERY_ABI_VERSION) {
      throw GpuQueryError(fmt::format(
          "{} is a GPU query module of interface version {}; this ftbench needs version {}",
          candidate, abi, FTBENCH_GPU_QUERY_ABI_VERSION));
    }
    const std::string drives = reinterpret_cast<RuntimeFn>(symbol("ftbench_gpu_query_runtime"))();
    if (drives != runtime_name(runtime)) {
      throw GpuQueryError(fmt::format("{} queries the {} runtime, not {}", candidate, drives,
                                      runtime_name(runtime)));
    }
    auto api = std::make_unique<Api>();
    api->device_count =
        reinterpret_cast<decltype(api->device_count)>(symbol("ftbench_gpu_device_count"));
    api->versions = reinterpret_cast<decltype(api->versions)>(symbol("ftbench_gpu_versions"));
    api->device_properties =
        reinterpret_cast<decltype(api->device_properties)>(symbol("ftbench_gpu_device_properties"));
    api->memory_info =
        reinterpret_cast<decltype(api->memory_info)>(symbol("ftbench_gpu_memory_info"));
    api->power_open = reinterpret_cast<decltype(api->power_open)>(symbol("ftbench_gpu_power_open"));
    api->power_read = reinterpret_cast<decltype(api->power_read)>(symbol("ftbench_gpu_power_read"));
    return std::unique_ptr<GpuQuery>(new GpuQuery(runtime, candidate, std::move(api)));
  }
  if (!search.override_path.empty()) {
    throw GpuQueryError(
        fmt::format("{}={}: no such file", module_env_variable(runtime), search.override_path));
  }
  std::string message =
      fmt::format("{} not found (looked at {}; set {} to its path)", module_file_name(runtime),
                  tried.empty() ? "nothing" : tried, module_env_variable(runtime));
  if (search.build_path.empty()) {
    message += fmt::format(": this ftbench was configured without a {}, so it built none",
                           toolkit_name(runtime));
  }
  throw GpuQueryError(message);
}

GpuQuery::Count GpuQuery::device_count() const {
  char error[kErrorSize] = {0};
  int count = 0;
  if (api_->device_count(&count, error, sizeof(error)) != 0) return {0, error};
  return {count, ""};
}

GpuQuery::Versions GpuQuery::versions() const {
  char error[kErrorSize] = {0};
  int driver = 0;
  int runtime = 0;
  if (api_->versions(&driver, &runtime, error, sizeof(error)) != 0) return {};
  return {format_runtime_version(runtime_, driver), format_runtime_version(runtime_, runtime)};
}

GpuDevice GpuQuery::device(int64_t index) const {
  char error[kErrorSize] = {0};
  ftbench_gpu_device d{};
  if (api_->device_properties(static_cast<int>(index), &d, error, sizeof(error)) != 0) {
    throw GpuQueryError(fmt::format("{} device {}: {}", backend_name(runtime_), index, error));
  }
  GpuDevice out;
  out.index = index;
  out.name = d.name;
  out.arch = d.arch;
  out.pci_bus_id = d.pci_bus_id;
  out.memory_bytes = known(d.total_memory_bytes);
  out.multiprocessor_count = known(d.multiprocessor_count);
  out.l2_cache_bytes = known(d.l2_cache_bytes);
  out.clock_khz = known(d.clock_khz);
  out.memory_clock_khz = known(d.memory_clock_khz);
  out.memory_bus_width_bits = known(d.memory_bus_width_bits);
  return out;
}

GpuMemoryInfo GpuQuery::memory_info(int64_t index) const {
  char error[kErrorSize] = {0};
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
  if (api_->memory_info(static_cast<int>(index), &free_bytes, &total_bytes, error, sizeof(error)) !=
      0) {
    throw GpuQueryError(
        fmt::format("{} device {} memory: {}", backend_name(runtime_), index, error));
  }
  return {free_bytes, total_bytes};
}

PowerSensor GpuQuery::power_sensor(int64_t index) const {
  char error[kErrorSize] = {0};
  ftbench_gpu_power_sensor sensor{};
  if (api_->power_open(static_cast<int>(index), &sensor, error, sizeof(error)) != 0) {
    throw GpuQueryError(
        fmt::format("{} device {} power: {}", backend_name(runtime_), index, error));
  }
  return {sensor.library, sensor.energy_source, sensor.power_source};
}

PowerSample GpuQuery::read_power(int64_t index) const {
  char error[kErrorSize] = {0};
  ftbench_gpu_power_reading reading{-1, -1};
  PowerSample out;
  if (api_->power_read(static_cast<int>(index), &reading, error, sizeof(error)) != 0) {
    out.error = error;
    return out;
  }
  out.energy_millijoules = known(reading.energy_millijoules);
  out.power_milliwatts = known(reading.power_milliwatts);
  return out;
}

void fill_device_info(const GpuQuery& query, int64_t index, DeviceFacts& info) {
  const GpuDevice d = query.device(index);
  info.name = d.name;
  info.arch = d.arch;
  info.memory_bytes = d.memory_bytes;
  info.multiprocessor_count = d.multiprocessor_count;
  info.l2_cache_bytes = d.l2_cache_bytes;
  info.clock_khz = d.clock_khz;
  info.memory_clock_khz = d.memory_clock_khz;
  info.memory_bus_width_bits = d.memory_bus_width_bits;
  info.pci_bus_id = d.pci_bus_id;
  const GpuQuery::Versions versions = query.versions();
  info.driver_version = versions.driver;
  info.runtime_version = versions.runtime;
  info.kernel_driver_version = kernel_driver_version(query.runtime());
}

GpuSurvey survey_gpus(GpuRuntime runtime, const ModuleSearch& search) {
  GpuSurvey s;
  s.runtime = runtime;
  s.kernel_driver_version = kernel_driver_version(runtime);
  std::unique_ptr<GpuQuery> query;
  try {
    query = GpuQuery::load(runtime, search);
  } catch (const GpuQueryError& e) {
    s.status = GpuSurvey::Status::kNoModule;
    s.message = e.what();
    return s;
  }
  s.module_path = query->path();
  const GpuQuery::Versions versions = query->versions();
  s.driver_version = versions.driver;
  s.runtime_version = versions.runtime;
  const GpuQuery::Count count = query->device_count();
  if (count.devices == 0) {
    s.status = GpuSurvey::Status::kNoDevice;
    s.message = count.error.empty() ? "the runtime reports 0 devices" : count.error;
    return s;
  }
  s.status = GpuSurvey::Status::kDevices;
  for (int64_t i = 0; i < count.devices; ++i) {
    GpuSurvey::Device d;
    try {
      d.properties = query->device(i);
    } catch (const GpuQueryError& e) {
      d.properties.index = i;
      d.properties.name = std::string("unknown (") + e.what() + ")";
    }
    try {
      d.memory = query->memory_info(i);
    } catch (const GpuQueryError&) {
    }
    s.devices.push_back(std::move(d));
  }
  return s;
}

}  // namespace ftbench::device
