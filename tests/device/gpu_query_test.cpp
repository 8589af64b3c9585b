#include "device/gpu_query.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "../scoped_env.h"

namespace ftbench::device {
namespace {

namespace fs = std::filesystem;

using ftbench::tests::ScopedEnv;

ModuleSearch only(const std::string& path) {
  ModuleSearch s;
  s.override_path = path;
  return s;
}

std::string load_error(GpuRuntime runtime, const ModuleSearch& search) {
  try {
    GpuQuery::load(runtime, search);
  } catch (const GpuQueryError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no GpuQueryError";
  return "";
}

TEST(GpuQueryModule, CandidatesInOrder) {
  ModuleSearch s;
  s.executable_path = "/opt/ftbench/bin/ftbench";
  s.build_path = "/src/build/src/libftbench_cuda_query.so";
  EXPECT_EQ(module_candidates(GpuRuntime::kCuda, s),
            (std::vector<std::string>{"/opt/ftbench/bin/libftbench_cuda_query.so",
                                      "/opt/ftbench/lib/ftbench/libftbench_cuda_query.so",
                                      "/src/build/src/libftbench_cuda_query.so"}));
  s.build_path = "";
  EXPECT_EQ(module_candidates(GpuRuntime::kHip, s),
            (std::vector<std::string>{"/opt/ftbench/bin/libftbench_hip_query.so",
                                      "/opt/ftbench/lib/ftbench/libftbench_hip_query.so"}));
  // The override is the only place looked at when it is set.
  s.override_path = "/x/my_query.so";
  EXPECT_EQ(module_candidates(GpuRuntime::kHip, s), (std::vector<std::string>{"/x/my_query.so"}));
}

TEST(GpuQueryModule, DefaultSearchReadsTheVariable) {
  EXPECT_STREQ(module_env_variable(GpuRuntime::kCuda), "FTBENCH_CUDA_QUERY_LIBRARY");
  EXPECT_STREQ(module_env_variable(GpuRuntime::kHip), "FTBENCH_HIP_QUERY_LIBRARY");
  const ScopedEnv env("FTBENCH_HIP_QUERY_LIBRARY", "/somewhere/libq.so");
  const ModuleSearch s = default_module_search(GpuRuntime::kHip);
  EXPECT_EQ(s.override_path, "/somewhere/libq.so");
  EXPECT_FALSE(s.executable_path.empty());
  EXPECT_EQ(
      default_module_search(GpuRuntime::kCuda).override_path,
      std::getenv("FTBENCH_CUDA_QUERY_LIBRARY") ? std::getenv("FTBENCH_CUDA_QUERY_LIBRARY") : "");
}

TEST(GpuQueryModule, MissingModuleNamesEveryPlaceLookedAt) {
  const fs::path dir = fs::temp_directory_path() / ("ftbench-gpuq-" + std::to_string(::getpid()));
  ModuleSearch s;
  s.executable_path = (dir / "bin/ftbench").string();
  s.build_path = (dir / "build/libftbench_cuda_query.so").string();
  const std::string message = load_error(GpuRuntime::kCuda, s);
  EXPECT_NE(message.find("libftbench_cuda_query.so not found"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "bin/libftbench_cuda_query.so").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find((dir / "lib/ftbench/libftbench_cuda_query.so").string()),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(s.build_path), std::string::npos) << message;
  EXPECT_NE(message.find("set FTBENCH_CUDA_QUERY_LIBRARY"), std::string::npos) << message;
  EXPECT_EQ(message.find("built none"), std::string::npos) << message;

  // A build that found no toolkit says so.
  s.build_path = "";
  EXPECT_NE(load_error(GpuRuntime::kHip, s).find("configured without a HIP runtime"),
            std::string::npos);
}

TEST(GpuQueryModule, OverrideToAMissingFileIsAnError) {
  EXPECT_EQ(load_error(GpuRuntime::kCuda, only("/nonexistent/libq.so")),
            "FTBENCH_CUDA_QUERY_LIBRARY=/nonexistent/libq.so: no such file");
}

TEST(GpuQueryModule, RefusesALibraryThatIsNotAQueryModule) {
  const std::string message = load_error(GpuRuntime::kCuda, only(FTBENCH_NOT_A_QUERY_MODULE));
  EXPECT_EQ(message, std::string(FTBENCH_NOT_A_QUERY_MODULE) +
                         " is not an ftbench GPU query module (no ftbench_gpu_query_abi_version)");
}

TEST(GpuQueryModule, RefusesAFileThatIsNoLibrary) {
  const std::string message = load_error(GpuRuntime::kCuda, only(FTBENCH_SOURCE_DIR "/README.md"));
  EXPECT_EQ(
      message.rfind("cannot load the cuda query module " FTBENCH_SOURCE_DIR "/README.md: ", 0), 0u)
      << message;
}

TEST(GpuQueryModule, RefusesAModuleOfTheOtherRuntime) {
  const ScopedEnv runtime("FTBENCH_FAKE_GPU_RUNTIME", "hip");
  EXPECT_EQ(load_error(GpuRuntime::kCuda, only(FTBENCH_FAKE_GPU_QUERY)),
            std::string(FTBENCH_FAKE_GPU_QUERY) + " queries the hip runtime, not cuda");
}

TEST(GpuQueryModule, AsksTheModule) {
  const std::unique_ptr<GpuQuery> q =
      GpuQuery::load(GpuRuntime::kCuda, only(FTBENCH_FAKE_GPU_QUERY));
  EXPECT_EQ(q->path(), FTBENCH_FAKE_GPU_QUERY);
  EXPECT_EQ(q->device_count().devices, 2);
  EXPECT_EQ(q->device_count().error, "");
  EXPECT_EQ(q->versions().driver, "13.0");
  EXPECT_EQ(q->versions().runtime, "12.8");
  const GpuDevice d = q->device(1);
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.name, "Fake H200");
  EXPECT_EQ(d.arch, "sm_90");
  EXPECT_EQ(d.pci_bus_id, "0000:1C:00.0");
  EXPECT_EQ(d.memory_bytes, 150754820096);
  EXPECT_EQ(d.multiprocessor_count, 132);
  EXPECT_EQ(d.l2_cache_bytes, 52428800);
  EXPECT_EQ(d.clock_khz, 1980000);
  EXPECT_FALSE(d.memory_clock_khz.has_value());  // -1 from the module: unknown
  EXPECT_EQ(d.memory_bus_width_bits, 5120);
  const GpuMemoryInfo m = q->memory_info(1);
  EXPECT_EQ(m.total_bytes, 150754820096);
  EXPECT_EQ(m.used_bytes(), int64_t{2} << 30);
  try {
    q->device(2);
    FAIL() << "no error for device 2";
  } catch (const GpuQueryError& e) {
    EXPECT_STREQ(e.what(), "cuda device 2: fakeErrorInvalidDevice: invalid device ordinal");
  }
}

TEST(GpuQueryModule, NoDeviceGivesTheRuntimesMessage) {
  const ScopedEnv none("FTBENCH_FAKE_GPU_DEVICES", "0");
  const std::unique_ptr<GpuQuery> q =
      GpuQuery::load(GpuRuntime::kCuda, only(FTBENCH_FAKE_GPU_QUERY));
  EXPECT_EQ(q->device_count().devices, 0);
  EXPECT_EQ(q->device_count().error, "fakeErrorNoDevice: no fake device is detected");

  const GpuSurvey s = survey_gpus(GpuRuntime::kCuda, only(FTBENCH_FAKE_GPU_QUERY));
  EXPECT_EQ(s.status, GpuSurvey::Status::kNoDevice);
  EXPECT_EQ(s.message, "fakeErrorNoDevice: no fake device is detected");
  EXPECT_EQ(s.module_path, FTBENCH_FAKE_GPU_QUERY);
  EXPECT_EQ(s.runtime_version, "12.8");
  EXPECT_TRUE(s.devices.empty());
}

TEST(GpuQueryModule, SurveyListsEveryDeviceWithItsMemory) {
  const ScopedEnv runtime("FTBENCH_FAKE_GPU_RUNTIME", "hip");
  const GpuSurvey s = survey_gpus(GpuRuntime::kHip, only(FTBENCH_FAKE_GPU_QUERY));
  EXPECT_EQ(s.status, GpuSurvey::Status::kDevices);
  EXPECT_EQ(s.message, "");
  EXPECT_EQ(s.driver_version, "6.3.42134");
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].properties.arch, "gfx942:sramecc+:xnack-");
  EXPECT_EQ(s.devices[0].properties.multiprocessor_count, 304);
  ASSERT_TRUE(s.devices[1].memory.has_value());
  EXPECT_EQ(s.devices[1].memory->free_bytes, 150754820096 - (int64_t{2} << 30));
}

TEST(GpuQueryModule, SurveyWithoutAModuleSaysWhy) {
  const GpuSurvey s = survey_gpus(GpuRuntime::kHip, only("/nonexistent/libq.so"));
  EXPECT_EQ(s.status, GpuSurvey::Status::kNoModule);
  EXPECT_EQ(s.message, "FTBENCH_HIP_QUERY_LIBRARY=/nonexistent/libq.so: no such file");
  EXPECT_EQ(s.module_path, "");
}

TEST(GpuQueryModule, FillsTheReportsDeviceFacts) {
  const std::unique_ptr<GpuQuery> q =
      GpuQuery::load(GpuRuntime::kCuda, only(FTBENCH_FAKE_GPU_QUERY));
  DeviceFacts info;
  info.backend = "cuda";
  info.count = 2;
  info.index = 0;
  fill_device_info(*q, 0, info);
  EXPECT_EQ(info.backend, "cuda");
  EXPECT_EQ(info.count, 2);
  EXPECT_EQ(info.name, "Fake H200");
  EXPECT_EQ(info.arch, "sm_90");
  EXPECT_EQ(info.memory_bytes, 150754820096);
  EXPECT_EQ(info.multiprocessor_count, 132);
  EXPECT_EQ(info.l2_cache_bytes, 52428800);
  EXPECT_EQ(info.clock_khz, 1980000);
  EXPECT_FALSE(info.memory_clock_khz.has_value());
  EXPECT_EQ(info.memory_bus_width_bits, 5120);
  EXPECT_EQ(info.pci_bus_id, "0000:1B:00.0");
  EXPECT_EQ(info.driver_version, "13.0");
  EXPECT_EQ(info.runtime_version, "12.8");
  EXPECT_EQ(info.query_error, "");
}

TEST(GpuQueryVersions, FormatsAsEachRuntimeEncodes) {
  EXPECT_EQ(format_runtime_version(GpuRuntime::kCuda, 13000), "13.0");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kCuda, 12080), "12.8");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kCuda, 11020), "11.2");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kCuda, 0), "");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kHip, 50221153), "5.2.21153");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kHip, 60342134), "6.3.42134");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kHip, 70051831), "7.0.51831");
  EXPECT_EQ(format_runtime_version(GpuRuntime::kHip, -1), "");
}

TEST(GpuQueryVersions, NvidiaKernelModuleVersion) {
  EXPECT_EQ(parse_nvidia_kernel_module_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 "
                "UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "550.54.15");
  EXPECT_EQ(parse_nvidia_kernel_module_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release "
                "Build  (dvs-builder@U22-I3-AF03-09-1)  Sun Jul 27 07:09:17 UTC 2025\n"),
            "580.65.06");
  EXPECT_EQ(parse_nvidia_kernel_module_version(""), "");
  EXPECT_EQ(parse_nvidia_kernel_module_version("GCC version: 12.2.0\n"), "");
}

}  // namespace
}  // namespace ftbench::device
