#include "device/recorded_environment.h"

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "util/text/messages.h"

namespace ftbench::device {
namespace {

TEST(RecordedEnvironment, AllowListHasTheKnobsThatChangeSpeed) {
  const auto& names = recorded_variable_names();
  const std::set<std::string_view> listed(names.begin(), names.end());
  EXPECT_EQ(listed.size(), names.size()) << "a name is listed twice";
  for (const char* name :
       {"PYTORCH_TUNABLEOP_ENABLED", "PYTORCH_TUNABLEOP_TUNING", "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_HIP_ALLOC_CONF", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
        "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCH_BLAS_PREFER_HIPBLASLT", "HSA_XNACK",
        "NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG", "FTBENCH_FUSED_BLOCKS",
        "FTBENCH_GPU_KERNELS"}) {
    EXPECT_EQ(listed.count(name), 1u) << name;
  }
  // Fixed names only: nothing that looks like a pattern, and no credential.
  for (std::string_view name : names) {
    EXPECT_EQ(name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), name.npos) << name;
    for (const char* secretish : {"TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL", "AUTH"}) {
      EXPECT_EQ(name.find(secretish), name.npos) << name;
    }
  }
}

TEST(RecordedEnvironment, RecordsOnlyListedVariablesThatAreSet) {
  const std::map<std::string, std::string> env = {
      {"OMP_NUM_THREADS", "8"},
      {"HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz"},
      {"AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
      {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
      {"CUDA_VISIBLE_DEVICES", ""},
      {"NCCL_SOCKET_IFNAME", "eth0"},
      {"PYTORCH_TUNABLEOP_FILENAME", "/home/me/tuned.csv"},
  };
  const auto recorded = recorded_variables([&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  // In the allow-list's order; an empty value is set, so it is recorded.
  EXPECT_EQ(recorded, (std::vector<std::pair<std::string, std::string>>{
                          {"CUDA_VISIBLE_DEVICES", ""},
                          {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                          {"OMP_NUM_THREADS", "8"}}));
}

TEST(RecordedEnvironment, SecretsInTheProcessEnvironmentNeverReachTheRecord) {
  ::setenv("HF_TOKEN", "hf_secret_value_1234", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "aws_secret_value_5678", 1);
  ::setenv("OMP_PROC_BIND", "close", 1);
  const auto recorded = recorded_variables();
  bool proc_bind = false;
  for (const auto& [name, value] : recorded) {
    EXPECT_NE(name, "HF_TOKEN");
    EXPECT_NE(name, "AWS_SECRET_ACCESS_KEY");
    EXPECT_EQ(value.find("secret_value"), std::string::npos) << name;
    proc_bind = proc_bind || (name == "OMP_PROC_BIND" && value == "close");
  }
  EXPECT_TRUE(proc_bind);
  ::unsetenv("HF_TOKEN");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("OMP_PROC_BIND");
}

// The container's base image is read by its one name, whatever else is set, and is "" unset.
TEST(RecordedEnvironment, ContainerImageIsReadFromItsOneVariable) {
  std::map<std::string, std::string> env = {
      {"FTBENCH_CONTAINER_IMAGE", "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel"},
      {"HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz"},
  };
  const EnvLookup lookup = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(container_image(lookup), "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel");
  env.erase("FTBENCH_CONTAINER_IMAGE");
  EXPECT_EQ(container_image(lookup), "");
  // Not a speed knob: never among the recorded variables.
  for (std::string_view name : recorded_variable_names()) EXPECT_NE(name, kContainerImageVariable);
}

// Anyone can set the variable: what is not an image reference (a URL with a token in it,
// terminal escapes, a flood of text) is not recorded, and the problem says why without
// repeating the value.
TEST(RecordedEnvironment, ContainerImageThatIsNoImageReferenceIsNotRecorded) {
  std::string value;
  const EnvLookup lookup = [&value](const char*) -> const char* { return value.c_str(); };
  std::string problem;
  for (const std::string& good : std::vector<std::string>{
           "rocm/pytorch-training:v25.6", "nvcr.io/nvidia/pytorch:25.01-py3",
           "localhost:5000/ftbench:cuda", "pytorch/pytorch@sha256:" + std::string(64, 'a'),
           "ghcr.io/org/img:tag@sha256:" + std::string(64, '0')}) {
    value = good;
    EXPECT_EQ(container_image(lookup, &problem), good);
    EXPECT_EQ(problem, "") << good;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"registry.example/x:1\x1b[2J\nsecond", "a character no image reference has: \"\\x1B\""},
      {"https://u:TOKEN123@r/x", "a URL, not an image reference"},
      {"r/x:1 --privileged", "a character no image reference has: \" \""},
      {std::string(300, 'c'), "longer than 255 characters (300)"},
      {"r/x@md5", "\"@\" not followed by a digest such as sha256:<64 hex digits>"},
      {"u:pass@r/x:1", "\"@\" not followed by a digest such as sha256:<64 hex digits>"},
  };
  for (const auto& [v, why] : bad) {
    value = v;
    EXPECT_EQ(container_image(lookup, &problem), "") << v;
    // The value itself is not repeated: it may hold a credential (a review of issue 41 saw
    // "https://user:pw@x/y" printed in the warning, twice).
    EXPECT_EQ(problem,
              "FTBENCH_CONTAINER_IMAGE: expected a container image reference such as "
              "rocm/pytorch-training:v25.6, found " +
                  std::to_string(v.size()) + " characters that are not one (" + why +
                  "); not recorded");
  }
}

}  // namespace
}  // namespace ftbench::device
