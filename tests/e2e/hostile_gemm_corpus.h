// The files of tests/hostile/gemm/: each is refused by `ftbench run --gemm FILE` before any
// training (hostile_run_test.cpp, which needs LibTorch). HostileCorpus.EveryFileHasACase
// (hostile_input_test.cpp) checks that every file of the folder is listed here.
#pragma once

#include <string>
#include <vector>

namespace ftbench::e2e {

inline const std::vector<std::string> kHostileGemmFiles = {
    "not-json.json",          "top-level-array.json", "no-schema.json", "future-schema.json",
    "schema-not-string.json", "truncated.json",       "nan.json",       "empty.json"};

}  // namespace ftbench::e2e
