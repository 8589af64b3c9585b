// Checks that every leaf field of a report JSON is documented in docs/report-schema.md at its
// own place: its full dotted path, read from the page's structure, not its last name found
// anywhere (`loss` of `steps` does not document `evaluations[].loss`). Shared by the
// end-to-end tests that write reports; tests/e2e/report_docs_test.cpp tests the reading.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ftbench::e2e {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A path with array elements unmarked: "timing.phases[].memory" -> "timing.phases.memory".
// Reports mark them ("steps[].loss"), the page names an array's section after the array.
inline std::string without_element_marks(std::string path) {
  for (std::size_t at = path.find("[]"); at != std::string::npos; at = path.find("[]", at)) {
    path.erase(at, 2);
  }
  return path;
}

// The `quoted` names of a piece of Markdown, in order: "`first_step`, `last_step`" gives both.
inline std::vector<std::string> code_spans(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t open = text.find('`'); open != std::string::npos;) {
    const std::size_t close = text.find('`', open + 1);
    if (close == std::string::npos) break;
    out.push_back(text.substr(open + 1, close - open - 1));
    open = text.find('`', close + 1);
  }
  return out;
}

// The fields docs/report-schema.md documents, as full dotted paths without element marks
// ("run.name", "steps.loss", "timing.phases.memory.peak_rss_bytes"), read from its structure:
// - a heading "## `x`" or "### `x.y`" names the object the tables under it describe, "## Top
//   level" the report itself; under any other level-2 heading no object (its tables are about
//   types or versions), and any other level-3 heading ("Which steps count") stays in the
//   object of the level-2 heading above it;
// - a line "Each element of `f`:" makes the tables after it, up to the next heading, describe
//   the elements of that object's array f;
// - a table whose first header cell is "field" (or "variables", the names of
//   environment.variables) documents each `name` of its rows' first cells under that object.
// Fenced code blocks are skipped.
inline std::set<std::string> documented_report_fields(const std::string& markdown) {
  std::set<std::string> out;
  std::istringstream in(markdown);
  std::string line;
  bool in_code = false;
  bool has_object = false;  // the current heading names an object (or the top level)
  std::string level2;       // the object of the last level-2 heading ("" = top level)
  bool level2_has_object = false;
  std::string heading_object;  // the object the last heading names
  std::string object;          // where the tables now belong: it, or its array's elements
  bool in_field_table = false;
  bool previous_was_table = false;
  auto under = [](const std::string& parent, const std::string& name) {
    return parent.empty() ? name : parent + "." + name;
  };
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_code = !in_code;
      continue;
    }
    if (in_code) continue;
    const bool is_table = line.rfind("|", 0) == 0;
    if (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0) {
      const bool level3 = line.rfind("### ", 0) == 0;
      const std::string title = line.substr(level3 ? 4 : 3);
      const std::vector<std::string> names = code_spans(title);
      if (names.size() == 1 && title == "`" + names[0] + "`") {
        object = without_element_marks(names[0]);
        has_object = true;
      } else if (!level3) {
        object = "";
        has_object = title == "Top level";
      } else {
        object = level2;
        has_object = level2_has_object;
      }
      if (!level3) {
        level2 = object;
        level2_has_object = has_object;
      }
      heading_object = object;
    } else if (line.rfind("Each element of `", 0) == 0 && has_object) {
      object = under(heading_object, without_element_marks(code_spans(line).at(0)));
    } else if (is_table && has_object) {
      std::vector<std::string> cells;
      std::stringstream row(line.substr(1));
      for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
      const std::string first = cells.empty() ? "" : cells[0];
      if (!previous_was_table) {  // the header row
        in_field_table = first.find(" field ") != std::string::npos ||
                         first.find(" variables ") != std::string::npos;
      } else if (in_field_table && first.find("---") == std::string::npos) {
        for (const std::string& name : code_spans(first)) {
          out.insert(under(object, without_element_marks(name)));
        }
      }
    }
    previous_was_table = is_table;
  }
  return out;
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

// The leaf paths of `report` that `documented` lacks; the spec (documented in docs/spec.md)
// aside.
inline std::vector<std::string> undocumented_fields(const nlohmann::json& report,
                                                    const std::set<std::string>& documented) {
  std::set<std::string> paths;
  leaf_paths(report, "", paths);
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    if (path == "spec" || path.rfind("spec.", 0) == 0) continue;
    if (documented.count(without_element_marks(path)) == 0) out.push_back(path);
  }
  return out;
}

// Each leaf field of a report is documented in docs/report-schema.md at its own path.
inline void expect_documented(const nlohmann::json& j) {
  const std::set<std::string> documented = documented_report_fields(
      read_text(std::filesystem::path(FTBENCH_SOURCE_DIR) / "docs/report-schema.md"));
  ASSERT_GT(documented.size(), 100u) << "docs/report-schema.md was not read";
  for (const std::string& path : undocumented_fields(j, documented)) {
    ADD_FAILURE() << path << " is not documented in docs/report-schema.md";
  }
}

}  // namespace ftbench::e2e
