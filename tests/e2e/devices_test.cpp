// End to end: `ftbench devices` asks the real query modules, or the fake one (tests/device) in
// their place, as a user would (torch-free `ftbench`).
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

struct Result {
  int exit_code = -1;
  std::string out;  // stdout only
};

// `env` is prepended to the command: "NAME=value NAME2=value2".
Result ftbench(const std::string& args, const std::string& env = "") {
  const std::string cmd = "cd '" FTBENCH_SOURCE_DIR "' && env " + env + " '" FTBENCH_BINARY "' " +
                          args + " 2>/dev/null";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(Devices, EachBackendAnswersOnOneLine) {
  const Result r = ftbench("devices");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Without a GPU: "no device (<the runtime's error>)"; with one: the count; without a module
  // (no toolkit at configure time): why not.
  const std::regex answer(
      "^(cuda|rocm): (no device \\(.+\\)|[0-9]+ devices?|not available \\(.+\\))$");
  int backends = 0;
  std::string line;
  for (size_t start = 0, end; start < r.out.size(); start = end + 1) {
    end = r.out.find('\n', start);
    line = r.out.substr(start, end - start);
    if (line.rfind("cuda:", 0) == 0 || line.rfind("rocm:", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, answer)) << line;
      ++backends;
    }
  }
  EXPECT_EQ(backends, 2) << r.out;
  EXPECT_NE(r.out.find("\nlibtorch: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nenvironment: "), std::string::npos) << r.out;
}

TEST(Devices, ListsWhatTheModuleReports) {
  const Result r = ftbench("devices", "FTBENCH_CUDA_QUERY_LIBRARY='" FTBENCH_FAKE_GPU_QUERY "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cuda: 2 devices\n"
                       "  0: Fake H200, sm_90, 132 SMs, 140.4 GiB (139.4 GiB free), L2 50 MiB, "
                       "1980 MHz, memory bus 5120-bit, PCI 0000:1B:00.0\n"
                       "  1: Fake H200"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  CUDA runtime 12.8, driver 13.0"), std::string::npos) << r.out;
}

TEST(Devices, JsonAnswer) {
  const Result r = ftbench(
      "devices --json", "FTBENCH_CUDA_QUERY_LIBRARY='" FTBENCH_FAKE_GPU_QUERY
                        "' FTBENCH_FAKE_GPU_DEVICES=0 FTBENCH_HIP_QUERY_LIBRARY=/nonexistent.so");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["backends"].size(), 2u);
  const auto& cuda = j["backends"][0];
  EXPECT_EQ(cuda["backend"], "cuda");
  EXPECT_EQ(cuda["status"], "no_device");
  EXPECT_EQ(cuda["message"], "fakeErrorNoDevice: no fake device is detected");
  EXPECT_EQ(cuda["module"], FTBENCH_FAKE_GPU_QUERY);
  EXPECT_EQ(cuda["runtime_version"], "12.8");
  EXPECT_TRUE(cuda["devices"].empty());
  const auto& rocm = j["backends"][1];
  EXPECT_EQ(rocm["backend"], "rocm");
  EXPECT_EQ(rocm["status"], "no_module");
  EXPECT_EQ(rocm["message"], "FTBENCH_HIP_QUERY_LIBRARY=/nonexistent.so: no such file");
  EXPECT_TRUE(rocm["module"].is_null());
  EXPECT_TRUE(j.contains("libtorch"));
  EXPECT_TRUE(j["variables"].is_object());
}

TEST(Devices, RecordsAllowListedVariablesAndNoSecret) {
  const Result r = ftbench("devices --json",
                           "HF_TOKEN=hf_secret_value AWS_SECRET_ACCESS_KEY=aws_secret_value "
                           "PYTORCH_TUNABLEOP_ENABLED=1 OMP_NUM_THREADS=3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["variables"]["PYTORCH_TUNABLEOP_ENABLED"], "1");
  EXPECT_EQ(j["variables"]["OMP_NUM_THREADS"], "3");
  EXPECT_FALSE(j["variables"].contains("HF_TOKEN"));
  EXPECT_EQ(r.out.find("secret_value"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("HF_TOKEN"), std::string::npos) << r.out;
}

}  // namespace
