#include "ftbench/text/messages.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#if __has_include(<yaml-cpp/depthguard.h>)
#include <yaml-cpp/depthguard.h>
#define FTBENCH_YAML_HAS_DEPTH_GUARD 1
#endif

#include "ftbench/text/did_you_mean.h"

namespace ftbench::text {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t extra = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    extra = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    extra = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    extra = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t k = 1; k <= extra; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
  }
  return extra + 1;
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMaxBytes = 200;
  constexpr std::size_t kKeptBytes = 160;
  const bool cut = s.size() > kMaxBytes;
  const std::string_view shown = cut ? s.substr(0, kKeptBytes) : s;
  std::string out = "\"";
  for (std::size_t i = 0; i < shown.size();) {
    const auto c = static_cast<unsigned char>(shown[i]);
    const std::size_t n = utf8_sequence_length(shown, i);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      if (n == 0 && cut && shown.size() - i < 4) break;  // a character cut by the limit
      out += fmt::format("\\x{:02X}", c);
      ++i;
    } else {
      out.append(shown.substr(i, n));
      i += n;
    }
  }
  out += "\"";
  if (cut) out += fmt::format(" (cut; {} bytes in all)", s.size());
  return out;
}

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

std::string yaml_error_text(const YAML::Exception& e) {
#ifdef FTBENCH_YAML_HAS_DEPTH_GUARD
  // Its depth() counts the parser's internal calls (several per level), not levels: no number.
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr) {
    return "lists or mappings nested too deeply (hundreds of levels)";
  }
#endif
  return e.msg;
}

}  // namespace ftbench::text
