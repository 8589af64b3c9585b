// The reader of one run spec's YAML tree: the issues of one load, where every key came from
// (file and line, or --set), and each kind of scalar read strictly (util/text/parse_number.h).
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
#include "util/text/parse_number.h"

namespace ftbench::spec::detail {

// The file name issues carry when the value came from a --set override.
inline constexpr std::string_view kOverrideFile = "--set";

// A scalar as written, not a quoted or tagged one ("!"): only those are numbers and booleans.
inline bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

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

  void read_int(const YAML::Node& v, const std::string& path, const Location& loc, int64_t& out) {
    if (!is_plain_scalar(v)) {
      add(path, loc, "expected an integer, found " + text::describe(v));
      return;
    }
    const std::errc ec = text::parse_int(v.Scalar(), out);
    if (ec == std::errc::result_out_of_range) {
      add(path, loc, "expected an integer in the 64-bit range, found " + text::describe(v));
    } else if (ec != std::errc()) {
      add(path, loc, "expected an integer, found " + text::describe(v));
    }
  }

  void read_uint(const YAML::Node& v, const std::string& path, const Location& loc, uint64_t& out) {
    int64_t as_signed = 0;
    if (is_plain_scalar(v) && text::parse_int(v.Scalar(), as_signed) == std::errc() &&
        as_signed < 0) {
      add(path, loc, fmt::format("must be an integer >= 0, found {}", as_signed));
      return;
    }
    if (!is_plain_scalar(v)) {
      add(path, loc, "expected an integer >= 0, found " + text::describe(v));
      return;
    }
    const std::errc ec = text::parse_uint(v.Scalar(), out);
    if (ec == std::errc::result_out_of_range) {
      add(path, loc, "expected an integer below 2^64, found " + text::describe(v));
    } else if (ec != std::errc()) {
      add(path, loc, "expected an integer >= 0, found " + text::describe(v));
    }
  }

  void read_number(const YAML::Node& v, const std::string& path, const Location& loc, double& out) {
    if (!is_plain_scalar(v)) {
      add(path, loc, "expected a number, found " + text::describe(v));
      return;
    }
    const std::errc ec = text::parse_double(v.Scalar(), out);
    if (ec == std::errc::result_out_of_range) {
      add(path, loc, "expected a finite number, found " + text::describe(v));
    } else if (ec != std::errc()) {
      add(path, loc, "expected a number, found " + text::describe(v));
    }
  }

  void read_optional_number(const YAML::Node& v, const std::string& path, const Location& loc,
                            std::optional<double>& out) {
    if (v.IsNull()) {
      out.reset();
      return;
    }
    double value = 0.0;
    if (!is_plain_scalar(v) || text::parse_double(v.Scalar(), value) != std::errc()) {
      add(path, loc, "expected a number or null, found " + text::describe(v));
      return;
    }
    out = value;
  }

  // YAML 1.1 also reads yes/no/on/off as booleans; only true/false are accepted so that
  // `progress: on` (a string key elsewhere) can never be confused with a flag.
  void read_bool(const YAML::Node& v, const std::string& path, const Location& loc, bool& out) {
    if (is_plain_scalar(v) && v.Scalar() == "true") {
      out = true;
    } else if (is_plain_scalar(v) && v.Scalar() == "false") {
      out = false;
    } else {
      add(path, loc, "expected true or false, found " + text::describe(v));
    }
  }

  void read_string(const YAML::Node& v, const std::string& path, const Location& loc,
                   std::string& out) {
    if (!v.IsScalar()) {
      add(path, loc, "expected a string, found " + text::describe(v));
      return;
    }
    // Every string ends up in the report's JSON, which holds UTF-8 only: a path or name in
    // another encoding is refused here, not after the run when the report cannot be written.
    const std::string& text = v.Scalar();
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t n = text::utf8_sequence_length(text, i);
      if (n == 0) {
        add(path, loc,
            fmt::format("expected UTF-8 text, found {} (byte {} is not UTF-8; the report is "
                        "JSON, which holds UTF-8 only)",
                        text::quoted(text), i + 1));
        return;
      }
      i += n;
    }
    out = text;
  }

  void read_string_list(const YAML::Node& v, const std::string& path, const Location& loc,
                        std::vector<std::string>& out) {
    if (!v.IsSequence()) {
      add(path, loc, "expected a list, found " + text::describe(v));
      return;
    }
    std::vector<std::string> items;
    for (const YAML::Node& item : v) {
      // The first such item only: a key's problem is reported once.
      if (!item.IsScalar()) {
        add(path, where(path, item),
            "expected a list of strings, found an item that is " + text::describe(item));
        return;
      }
      items.push_back(item.Scalar());
    }
    out = std::move(items);
  }

 private:
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
