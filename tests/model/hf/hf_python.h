// The Python that has Hugging Face's own libraries, for the tests that check ftbench's interop
// against them (tests/reference/hf_transformers.py, peft_reference.py and
// scripts/reference/check_hf.py): the interpreter of the pinned virtual environment
// (scripts/python-env.sh: torch, transformers, peft, safetensors, numpy), which ctest passes as
// the environment variable FTBENCH_PYTHON (CMake cache variable of the same name, default
// .venv/bin/python). Where it is not set, not there or lacks a package, the tests are skipped,
// except on CI (ci_env.h), where that is a failure (docs/ci.md, "Skips and CI").
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ftbench::test_env {

// `text` as one word for /bin/sh.
inline std::string hf_shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// FTBENCH_PYTHON when it has every package the references import; else "" with `why` saying
// what is missing. Asks importlib for the packages without importing them (importing torch and
// transformers takes some 10 s).
inline std::string hf_python(std::string& why) {
  const char* env = std::getenv("FTBENCH_PYTHON");
  if (env == nullptr || *env == '\0') {
    why = "FTBENCH_PYTHON is not set (ctest sets it from the CMake cache variable FTBENCH_PYTHON)";
    return "";
  }
  const std::string python = env;
  if (::access(python.c_str(), X_OK) != 0) {
    why = "FTBENCH_PYTHON " + python + " is not an executable (scripts/python-env.sh makes it)";
    return "";
  }
  const std::string cmd =
      hf_shell_quote(python) +
      " -c 'import importlib.util as u; print(\" \".join(m for m in (\"torch\", "
      "\"transformers\", \"peft\", \"safetensors\", \"numpy\") if u.find_spec(m) is None))' "
      "2>&1";
  std::string missing;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    why = "cannot run " + python;
    return "";
  }
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) missing += buffer;
  const int status = ::pclose(pipe);
  while (!missing.empty() && (missing.back() == '\n' || missing.back() == ' ')) missing.pop_back();
  if (status != 0 || !missing.empty()) {
    why = python + " lacks " + (missing.empty() ? std::string("a working interpreter") : missing) +
          " (scripts/python-env.sh installs them)";
    return "";
  }
  return python;
}

// The command line that runs tests/reference/<script_and_args> (already quoted as the shell
// needs) with `python`, offline (nothing may be downloaded), its output into `log_file`.
inline std::string hf_python_command(const std::string& python, const std::string& source_dir,
                                     const std::string& script_and_args,
                                     const std::string& log_file) {
  return "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 " +
         hf_shell_quote(python) + " " + hf_shell_quote(source_dir + "/tests/reference/") +
         script_and_args + " > " + hf_shell_quote(log_file) + " 2>&1";
}

}  // namespace ftbench::test_env
