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

namespace {

template <class T>
YamlValue<T> problem_at(const YAML::Node& node, std::string problem) {
  YamlValue<T> out;
  out.problem = std::move(problem);
  out.at = node;
  return out;
}

template <class T>
YamlValue<T> value_of(T value) {
  YamlValue<T> out;
  out.value = std::move(value);
  return out;
}

// A number, finite or not (1e999, .inf, .nan): so that such a value is said as not finite rather
// than as no number.
bool is_any_number(const YAML::Node& node) {
  double any = 0.0;
  return is_plain_scalar(node) && parse_any_double(node.Scalar(), any);
}

// "" when `text` is UTF-8.
std::string utf8_problem(const std::string& text, std::string_view why_utf8) {
  const std::optional<std::size_t> at = first_invalid_utf8(text);
  if (!at) return "";
  return fmt::format("expected UTF-8 text, found {} (byte {} is not UTF-8; {})", quoted(text),
                     *at + 1, why_utf8);
}

}  // namespace

YamlValue<int64_t> read_yaml_int(const YAML::Node& node) {
  int64_t value = 0;
  const std::errc ec =
      is_plain_scalar(node) ? parse_int(node.Scalar(), value) : std::errc::invalid_argument;
  if (ec == std::errc()) return value_of(value);
  return problem_at<int64_t>(node, (ec == std::errc::result_out_of_range
                                        ? "expected an integer in the 64-bit range, found "
                                        : "expected an integer, found ") +
                                       describe(node));
}

YamlValue<uint64_t> read_yaml_uint(const YAML::Node& node) {
  if (!is_plain_scalar(node)) {
    return problem_at<uint64_t>(node, "expected an integer >= 0, found " + describe(node));
  }
  int64_t as_signed = 0;
  if (parse_int(node.Scalar(), as_signed) == std::errc() && as_signed < 0) {
    return problem_at<uint64_t>(node, fmt::format("must be an integer >= 0, found {}", as_signed));
  }
  uint64_t value = 0;
  const std::errc ec = parse_uint(node.Scalar(), value);
  if (ec == std::errc()) return value_of(value);
  return problem_at<uint64_t>(
      node, (ec == std::errc::result_out_of_range ? "expected an integer below 2^64, found "
                                                  : "expected an integer >= 0, found ") +
                describe(node));
}

YamlValue<double> read_yaml_number(const YAML::Node& node) {
  double value = 0.0;
  if (is_plain_scalar(node) && parse_double(node.Scalar(), value) == std::errc()) {
    return value_of(value);
  }
  return problem_at<double>(node, (is_any_number(node) ? "expected a finite number, found "
                                                       : "expected a number, found ") +
                                      describe(node));
}

YamlValue<bool> read_yaml_bool(const YAML::Node& node) {
  if (is_plain_scalar(node) && node.Scalar() == "true") return value_of(true);
  if (is_plain_scalar(node) && node.Scalar() == "false") return value_of(false);
  return problem_at<bool>(node, "expected true or false, found " + describe(node));
}

YamlValue<std::string> read_yaml_string(const YAML::Node& node, std::string_view why_utf8) {
  if (!node.IsScalar()) {
    return problem_at<std::string>(node, "expected a string, found " + describe(node));
  }
  std::string problem = utf8_problem(node.Scalar(), why_utf8);
  if (!problem.empty()) return problem_at<std::string>(node, std::move(problem));
  return value_of(node.Scalar());
}

YamlValue<std::vector<std::string>> read_yaml_string_list(const YAML::Node& node,
                                                          std::string_view why_utf8) {
  using List = std::vector<std::string>;
  if (!node.IsSequence()) {
    return problem_at<List>(node, "expected a list of strings, found " + describe(node));
  }
  List items;
  for (const YAML::Node& item : node) {
    // The first such item only: a key's problem is said once.
    std::string problem =
        item.IsScalar() ? utf8_problem(item.Scalar(), why_utf8)
                        : "expected a list of strings, found an item that is " + describe(item);
    if (!problem.empty()) {
      YamlValue<List> out = problem_at<List>(item, std::move(problem));
      out.at_item = true;
      return out;
    }
    items.push_back(item.Scalar());
  }
  return value_of(std::move(items));
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

// Why a catalog's or a datasheet's strings must be UTF-8.
constexpr std::string_view kPrintedAsJson =
    "catalogs are printed as JSON too, which holds UTF-8 only";

std::optional<std::string> Fields::string(const std::string& name) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  return take(*f, read_yaml_string(f->value, kPrintedAsJson));
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
  return take(*f, read_yaml_string_list(f->value, kPrintedAsJson));
}

std::optional<double> Fields::positive_number(const std::string& name) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  const YamlValue<double> read = read_yaml_number(f->value);
  if (read.value && *read.value > 0.0) return read.value;
  // A number that is not finite (.inf, 1e999) or not > 0 is said with the bound it breaks.
  const bool number = read.value || is_any_number(f->value);
  fail(*f, number ? "expected a finite number > 0, found " + describe(f->value) : read.problem);
  return std::nullopt;
}

std::optional<int64_t> Fields::integer(const std::string& name, int64_t min) {
  const Field* f = find(name);
  if (f == nullptr) return std::nullopt;
  const std::optional<int64_t> value = take(*f, read_yaml_int(f->value));
  if (value && *value < min) {
    fail(*f, fmt::format("must be an integer >= {}, found {}", min, *value));
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
