// Whether the tests run on CI. A test that would be skipped for want of something
// scripts/setup.sh installs (NumPy, spm_train, a GPU runtime's query module, the virtual
// environment of PyPI's torch, transformers, peft, tokenizers and sentencepiece) fails instead
// there, so that CI never passes with it left out. The rule, the same
// in every test and script that applies it (docs/ci.md, "Skips and CI"): CI is set to a
// non-empty value other than 0 and false (any case). CI services set CI=true; CI=0 or CI=false
// turns it off.
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>

namespace ftbench::test_env {

inline bool on_ci() {
  const char* value = std::getenv("CI");
  if (value == nullptr) return false;
  std::string v = value;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !v.empty() && v != "0" && v != "false";
}

}  // namespace ftbench::test_env
