// Checks that every leaf key of a report JSON is documented in docs/report-schema.md; shared by
// the end-to-end tests that write reports.
#pragma once

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ftbench::e2e {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every leaf path of a report JSON, arrays collapsed to their first element ("steps[].loss").
inline void leaf_paths(const nlohmann::json& j, const std::string& prefix,
                       std::set<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      leaf_paths(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else if (j.is_array() && !j.empty() && (j[0].is_object() || j[0].is_array())) {
    leaf_paths(j[0], prefix + "[]", out);
  } else {
    out.insert(prefix);
  }
}

// Each leaf key of a report is documented in docs/report-schema.md as `key` (or `x.key`).
inline void expect_documented(const nlohmann::json& j) {
  const std::string doc =
      read_text(std::filesystem::path(FTBENCH_SOURCE_DIR) / "docs/report-schema.md");
  std::set<std::string> paths;
  leaf_paths(j, "", paths);
  for (const std::string& path : paths) {
    if (path.rfind("spec.", 0) == 0) continue;  // the spec is documented in docs/spec.md
    const std::string key = path.substr(path.find_last_of(".]") + 1);
    const bool documented = doc.find("`" + key + "`") != std::string::npos ||
                            doc.find("." + key + "`") != std::string::npos;
    EXPECT_TRUE(documented) << path << " is not documented";
  }
}

}  // namespace ftbench::e2e
