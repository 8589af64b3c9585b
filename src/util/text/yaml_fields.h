// YAML values read strictly, the one way every YAML file of ftbench is read (read_yaml_int and
// the others below: the value, or what is wrong with it, said the same way in every file); and
// a YAML file's mappings read key by key with them, every problem of a file collected and
// reported together by line ("file:12: offers[3].tier: expected ..."): the catalog's and the GPU
// datasheets' reader (economics/cost/catalog.h, device/gpus/datasheet.h). The run spec reads
// its values with the same functions, through its own collector (spec/spec_reader.h), which
// also knows where --set overrides came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "util/text/messages.h"

namespace ftbench::text {

// 1-based; 0 when yaml-cpp has no mark.
int64_t line_of(const YAML::Node& node);
// A scalar not tagged "!" (a quoted scalar is tagged so: `"8"` is not the number 8).
bool is_plain_scalar(const YAML::Node& node);
// "offers[3]".
std::string item_path(std::string_view section, std::size_t index);

// One YAML value read strictly: the value, or the problem ("expected an integer, found
// \"2.5\""), with the node it is at (the value, or the item of a list that is wrong).
template <class T>
struct YamlValue {
  std::optional<T> value;
  std::string problem;  // "" when value is set
  YAML::Node at;
  bool at_item = false;  // `at` is an item of the list, not the value itself
};

// Only plain scalars are numbers and booleans: a quoted "8" is a string. Decimal only
// (util/text/parse_number.h).
YamlValue<int64_t> read_yaml_int(const YAML::Node& node);
// An integer >= 0 up to 2^64 - 1.
YamlValue<uint64_t> read_yaml_uint(const YAML::Node& node);
// A finite number (.inf, .nan and 1e999 are refused as not finite).
YamlValue<double> read_yaml_number(const YAML::Node& node);
// true or false only: YAML 1.1 also reads yes/no/on/off as booleans, and `progress: on` (a
// string key elsewhere) must never be confused with a flag.
YamlValue<bool> read_yaml_bool(const YAML::Node& node);
// Any scalar, as written. Strings end up in JSON (a report, --format json), which holds UTF-8
// only, so other bytes are refused here; `why_utf8` says which JSON ("the report is JSON, which
// holds UTF-8 only").
YamlValue<std::string> read_yaml_string(const YAML::Node& node, std::string_view why_utf8);
// A list of such strings.
YamlValue<std::vector<std::string>> read_yaml_string_list(const YAML::Node& node,
                                                          std::string_view why_utf8);

struct Issue {
  int64_t line = 0;  // 1-based; 0 = the whole file
  std::string path;  // "offers[3].tier"; "" = the whole file
  std::string message;
};

// The problems of one file.
class Issues {
 public:
  explicit Issues(std::string file) : file_(std::move(file)) {}
  void add(int64_t line, std::string path, std::string message);
  bool empty() const { return issues_.empty(); }
  // In file order, one per line: "configs/catalog.yaml:12: offers[3].tier: expected ...".
  std::string text() const;

 private:
  std::string file_;
  std::vector<Issue> issues_;
};

struct Field {
  YAML::Node value;
  int64_t line = 0;
  std::string path;
};

// One mapping's keys, checked against the names it allows; the typed getters give nullopt for
// a key not given and for a value that is not what they read (the problem then added).
class Fields {
 public:
  // Unknown and repeated keys are reported; the others are kept for the getters.
  Fields(Issues& issues, const YAML::Node& map, const std::string& path,
         const std::vector<std::string>& allowed);

  bool has(const std::string& name) const { return fields_.count(name) > 0; }
  const Field* find(const std::string& name) const;
  int64_t line() const { return line_; }

  void require(const std::string& name, std::string_view why = {});
  void fail(const Field& field, std::string message);

  // Strings are also written as JSON (--format json), which holds UTF-8 only: other bytes are
  // refused here rather than by the JSON writer after the command has started.
  std::optional<std::string> string(const std::string& name);
  std::optional<std::string> nonempty_string(const std::string& name);
  std::optional<std::vector<std::string>> string_list(const std::string& name);
  // A finite number > 0 (prices, figures).
  std::optional<double> positive_number(const std::string& name);
  std::optional<int64_t> integer(const std::string& name, int64_t min);
  std::optional<std::string> choice(const std::string& name,
                                    const std::vector<std::string>& allowed);

 private:
  // The value read, or nullopt with its problem added (at the key's line).
  template <class T>
  std::optional<T> take(const Field& field, YamlValue<T> read) {
    if (!read.value) fail(field, std::move(read.problem));
    return std::move(read.value);
  }

  Issues& issues_;
  std::string path_;
  int64_t line_ = 0;
  std::map<std::string, Field> fields_;
};

// The items of one top-level list `name`: `read(item, path)` for each mapping item; a null
// value is an empty list.
template <class Read>
void read_list(Issues& issues, const std::string& name, const YAML::Node& value, Read read) {
  if (value.IsNull()) return;
  if (!value.IsSequence()) {
    issues.add(line_of(value), name, "expected a list, found " + describe(value));
    return;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const YAML::Node item = value[i];
    const std::string path = item_path(name, i);
    if (!item.IsMap()) {
      issues.add(line_of(item), path, "expected a mapping, found " + describe(item));
      continue;
    }
    read(item, path);
  }
}

}  // namespace ftbench::text
