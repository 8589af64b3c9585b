// The fixture of the tests that check ftbench's Hugging Face interop against the NumPy
// references of tests/reference/ (hf_checkpoint.py writes checkpoints and adapters,
// llama_numpy.py computes the float64 logits): Debian's /usr/bin/python3 with numpy (skipped
// without it, except on CI (ci_env.h), where that fails), a scratch folder per test, and the script
// runner. A subclass may run the scripts with another interpreter that has NumPy (python_; the
// tests against transformers and peft use FTBENCH_PYTHON, model/hf/hf_python.h) and set it before
// calling SetUp(). Needs FTBENCH_SOURCE_DIR defined by CMake.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "../../../ci_env.h"
#include "report/report_io.h"
#include "util/io/remove_tree.h"

namespace ftbench::hf {

class NumpyReferenceTest : public ::testing::Test {
 protected:
  static constexpr const char* kPython = "/usr/bin/python3";

  void SetUp() override {
    if (std::system(("'" + python_ + "' -c 'import numpy' 2>/dev/null").c_str()) != 0) {
      if (test_env::on_ci()) FAIL() << "numpy is missing on CI";
      GTEST_SKIP() << "no numpy for " << python_;
    }
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("ftbench-") + test->test_suite_name() + "-" + std::to_string(::getpid()) +
            "-" + test->name());
    ftbench::io::remove_tree(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { ftbench::io::remove_tree(dir_); }

  // Runs tests/reference/<args> (args start with the script's name and a closing quote:
  // "hf_checkpoint.py' make ..."); its exit code, its output in log().
  int python(const std::string& args) {
    const std::string cmd = "'" + python_ + "' '" FTBENCH_SOURCE_DIR "/tests/reference/" + args +
                            " > '" + (dir_ / "py.log").string() + "' 2>&1";
    return WEXITSTATUS(std::system(cmd.c_str()));
  }
  std::string log() { return report::read_whole_file((dir_ / "py.log").string()); }

  std::string python_ = kPython;
  std::filesystem::path dir_;
};

}  // namespace ftbench::hf
