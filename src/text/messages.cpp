#include "ftbench/text/messages.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "ftbench/text/did_you_mean.h"

namespace ftbench::text {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string unknown_name_message(std::string_view what, std::string_view got,
                                 const std::vector<std::string>& known) {
  if (auto hint = closest(got, known)) {
    return fmt::format("unknown {} {}; did you mean {}?", what, quoted(got), quoted(*hint));
  }
  return fmt::format("unknown {} {}; valid {}s: {}", what, quoted(got), what, join(known));
}

std::string not_one_of_message(std::string_view got, const std::vector<std::string>& allowed) {
  std::string message = fmt::format("expected one of {}, found {}", join(allowed), quoted(got));
  if (auto hint = closest(got, allowed)) {
    message += fmt::format("; did you mean {}?", quoted(*hint));
  }
  return message;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return (node.Tag() == "!" ? "the quoted string " : "") + quoted(node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

}  // namespace ftbench::text
