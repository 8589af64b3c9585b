// The reader of one run spec's YAML tree: the issues of one load, where every key came from
// (file and line, or --set), and each kind of value read strictly, as every YAML file is read
// (util/text/yaml_fields.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "spec/spec_loader.h"
#include "util/text/messages.h"
#include "util/text/yaml_fields.h"

namespace ftbench::spec::detail {

// The file name issues carry when the value came from a --set override.
inline constexpr std::string_view kOverrideFile = "--set";

using text::is_plain_scalar;

struct Location {
  std::string file;
  int64_t line = 0;  // 1-based; 0 = unknown (absent key, --set)
};

// Collects the issues of one load and remembers where every key came from, so that validate()'s
// location-free issues can be pinned to a file and line afterwards.
class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  void mark_overridden(const std::string& path) { overridden_.insert(path); }

  // --set when `path` or a mapping above it was replaced by an override, else the file and the
  // node's 1-based line.
  Location where(const std::string& path, const YAML::Node& node) const {
    if (is_overridden(path)) return Location{std::string(kOverrideFile), 0};
    const YAML::Mark mark = node.Mark();
    return Location{file_, mark.is_null() ? 0 : static_cast<int64_t>(mark.line) + 1};
  }

  Location where_absent(const std::string& path) const {
    if (is_overridden(path)) return Location{std::string(kOverrideFile), 0};
    return Location{file_, 0};
  }

  void remember(const std::string& path, const Location& loc) { locations_[path] = loc; }

  const std::map<std::string, Location>& locations() const { return locations_; }

  Location location_of(const std::string& path) const {
    const auto it = locations_.find(path);
    return it != locations_.end() ? it->second : where_absent(path);
  }

  void add(const std::string& path, const Location& loc, std::string message) {
    paths_with_issues_.insert(path);
    // A file of a million bad keys is refused with the first hundred problems, not all of them.
    if (issues_.size() >= kMaxIssues) {
      ++issues_not_shown_;
      return;
    }
    issues_.push_back(SpecIssue{loc.file, path, loc.line, std::move(message)});
  }

  static constexpr std::size_t kMaxIssues = 100;
  int64_t issues_not_shown() const { return issues_not_shown_; }

  bool has_issue_at(const std::string& path) const { return paths_with_issues_.count(path) > 0; }

  std::vector<SpecIssue>& issues() { return issues_; }

  // Each reads `v` as util/text/yaml_fields.h reads every YAML value, into `out`, or adds the
  // problem at `loc` (at the item's own line for an item of a list).
  void read_int(const YAML::Node& v, const std::string& path, const Location& loc, int64_t& out) {
    take(text::read_yaml_int(v), path, loc, out);
  }

  void read_uint(const YAML::Node& v, const std::string& path, const Location& loc, uint64_t& out) {
    take(text::read_yaml_uint(v), path, loc, out);
  }

  void read_number(const YAML::Node& v, const std::string& path, const Location& loc, double& out) {
    take(text::read_yaml_number(v), path, loc, out);
  }

  // null clears the value.
  void read_optional_number(const YAML::Node& v, const std::string& path, const Location& loc,
                            std::optional<double>& out) {
    if (v.IsNull()) {
      out.reset();
      return;
    }
    text::YamlValue<double> read = text::read_yaml_number(v);
    if (!read.value) {
      add(path, loc, "expected a number or null, found " + text::describe(v));
      return;
    }
    out = *read.value;
  }

  void read_bool(const YAML::Node& v, const std::string& path, const Location& loc, bool& out) {
    take(text::read_yaml_bool(v), path, loc, out);
  }

  void read_string(const YAML::Node& v, const std::string& path, const Location& loc,
                   std::string& out) {
    take(text::read_yaml_string(v, kReportIsJson), path, loc, out);
  }

  void read_string_list(const YAML::Node& v, const std::string& path, const Location& loc,
                        std::vector<std::string>& out) {
    take(text::read_yaml_string_list(v, kReportIsJson), path, loc, out);
  }

 private:
  // Why a spec's strings must be UTF-8: every one ends up in the report.
  static constexpr std::string_view kReportIsJson = "the report is JSON, which holds UTF-8 only";

  template <class T>
  void take(text::YamlValue<T> read, const std::string& path, const Location& loc, T& out) {
    if (read.value) {
      out = std::move(*read.value);
    } else {
      add(path, read.at_item ? where(path, read.at) : loc, std::move(read.problem));
    }
  }

  bool is_overridden(const std::string& path) const {
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
      if (overridden_.count(path.substr(0, dot)) > 0) return true;
    }
    return overridden_.count(path) > 0;
  }

  std::string file_;
  std::set<std::string> overridden_;
  std::map<std::string, Location> locations_;
  std::vector<SpecIssue> issues_;
  int64_t issues_not_shown_ = 0;
  std::set<std::string> paths_with_issues_;
};

}  // namespace ftbench::spec::detail
