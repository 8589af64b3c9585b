// The issues a spec gives, as strings that one EXPECT_EQ checks whole, for the spec tests.
#pragma once

#include <string>
#include <vector>

#include "spec/spec_loader.h"

namespace ftbench::spec {

// Every field of an issue in one string, so one EXPECT_EQ checks file, line, key path and
// message exactly: "file:line [key.path] message".
inline std::string Show(const SpecIssue& issue) {
  return issue.file + ":" + std::to_string(issue.line) + " [" + issue.key_path + "] " +
         issue.message;
}

// The issues of `yaml` (as file "t.yaml") with `overrides`, in order; none when it loads.
inline std::vector<std::string> IssuesOf(const std::string& yaml,
                                         const std::vector<std::string>& overrides = {}) {
  std::vector<std::string> shown;
  try {
    load_spec_from_string(yaml, "t.yaml", overrides);
  } catch (const SpecError& e) {
    for (const SpecIssue& issue : e.issues()) shown.push_back(Show(issue));
  }
  return shown;
}

}  // namespace ftbench::spec
