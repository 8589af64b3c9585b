#include "util/text/yaml_fields.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "util/text/parse_number.h"

namespace ftbench::text {

int64_t line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : static_cast<int64_t>(mark.line) + 1;
}

bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

std::string item_path(std::string_view section, std::size_t index) {
  return fmt::format("{}[{}]", section, index);
}

void Issues::add(int64_t line, std::string path, std::string message) {
  issues_.push_back(Issue{line, std::move(path), std::move(message)});
}

std::string Issues::text() const {
  std::vector<Issue> sorted = issues_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Issue& a, const Issue& b) { return a.line < b.line; });
  std::string out;
  for (const Issue& issue : sorted) {
    if (!out.empty()) out += '\n';
    out += file_;
    if (issue.line > 0) out += ':' + std::to_string(issue.line);
    out += ": ";
    if (!issue.path.empty()) out += issue.path + ": ";
    out += issue.message;
  }
  return out;
}

Fields::Fields(Issues& issues, const YAML::Node& map, const std::string& path,
               const std::vector<std::string>& allowed)
    : issues_(issues), path_(path), line_(line_of(map)) {
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      issues_.add(line_of(key), path, "expected a key name, found " + describe(key));
      continue;
    }
    const std::string name = key.Scalar();
    const std::string key_path = path + "." + name;
    const int64_t line = line_of(key);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      issues_.add(line, key_path, unknown_name_message("key", name, allowed));
      continue;
    }
    const auto [it, inserted] = fields_.emplace(name, Field{entry.second, line, key_path});
    if (!inserted) {
      issues_.add(
          line, key_path,
          fmt::format("duplicate key {} (first given at line {})", quoted(name), it->second.line));
    }
  }
}

const Field* Fields::find(const std::string& name) const {
  const auto it = fields_.find(name);
  return it == fields_.end() ? nullptr : &it->second;
}

void Fields::require(const std::string& name, std::string_view why) {
  if (has(name)) return;
  std::string message = "missing required key " + quoted(name);
  if (!why.empty()) message += fmt::format(" ({})", why);
  issues_.add(line_, path_, std::move(message));
}

void Fields::fail(const Field& field, std::string message) {
  issues_.add(field.line, field.path, std::move(message));
}

std::optional<std::string> Fields::string(const std::string& name) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  if (!f->value.IsScalar()) {
    fail(*f, "expected a string, found " + describe(f->value));
    return std::nullopt;
  }
  if (!utf8(*f, f->value.Scalar())) return std::nullopt;
  return f->value.Scalar();
}

bool Fields::utf8(const Field& field, const std::string& value) {
  if (const auto at = first_invalid_utf8(value)) {
    fail(field, fmt::format("expected UTF-8 text, found {} (byte {} is not UTF-8; catalogs "
                            "are printed as JSON too, which holds UTF-8 only)",
                            quoted(value), *at + 1));
    return false;
  }
  return true;
}

std::optional<std::string> Fields::nonempty_string(const std::string& name) {
  std::optional<std::string> value = string(name);
  if (value && value->empty()) {
    fail(*find(name), "expected a non-empty string, found \"\"");
    return std::nullopt;
  }
  return value;
}

std::optional<std::vector<std::string>> Fields::string_list(const std::string& name) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  if (!f->value.IsSequence()) {
    fail(*f, "expected a list of strings, found " + describe(f->value));
    return std::nullopt;
  }
  std::vector<std::string> items;
  for (const YAML::Node& item : f->value) {
    if (!item.IsScalar()) {
      fail(*f, "expected a list of strings, found an item that is " + describe(item));
      return std::nullopt;
    }
    if (!utf8(*f, item.Scalar())) return std::nullopt;
    items.push_back(item.Scalar());
  }
  return items;
}

std::optional<double> Fields::positive_number(const std::string& name) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  double value = 0.0;
  if (!is_plain_scalar(f->value) || !parse_any_double(f->value.Scalar(), value)) {
    fail(*f, "expected a number, found " + describe(f->value));
    return std::nullopt;
  }
  if (!std::isfinite(value) || value <= 0.0) {
    fail(*f, "expected a finite number > 0, found " + describe(f->value));
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> Fields::integer(const std::string& name, int64_t min) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  int64_t value = 0;
  if (!is_plain_scalar(f->value) || parse_int(f->value.Scalar(), value) != std::errc()) {
    fail(*f, "expected an integer, found " + describe(f->value));
    return std::nullopt;
  }
  if (value < min) {
    fail(*f, fmt::format("must be an integer >= {}, found {}", min, value));
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> Fields::choice(const std::string& name,
                                          const std::vector<std::string>& allowed) {
  std::optional<std::string> value = string(name);
  if (!value) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    fail(*find(name), not_one_of_message(*value, allowed));
    return std::nullopt;
  }
  return value;
}

}  // namespace ftbench::text
