#include "util/text/messages.h"

#include <cstdint>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#if __has_include(<yaml-cpp/depthguard.h>)
#include <yaml-cpp/depthguard.h>
#define FTBENCH_YAML_HAS_DEPTH_GUARD 1
#endif

#include "util/text/did_you_mean.h"

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

std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

namespace {

// The code point of the well-formed UTF-8 sequence of `n` bytes at s[i].
char32_t code_point(std::string_view s, std::size_t i, std::size_t n) {
  const auto byte = [&](std::size_t k) { return static_cast<char32_t>(s[i + k]) & 0xFF; };
  switch (n) {
    case 1:
      return byte(0);
    case 2:
      return (byte(0) & 0x1F) << 6 | (byte(1) & 0x3F);
    case 3:
      return (byte(0) & 0x0F) << 12 | (byte(1) & 0x3F) << 6 | (byte(2) & 0x3F);
    default:
      return (byte(0) & 0x07) << 18 | (byte(1) & 0x3F) << 12 | (byte(2) & 0x3F) << 6 |
             (byte(3) & 0x3F);
  }
}

// C1 controls (some terminals take U+009B for CSI and U+009D for OSC, as ESC [ and ESC ]) and
// the bidirectional controls that reorder what is shown (CVE-2021-42574, "Trojan Source").
bool is_terminal_control(char32_t c) {
  return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// Appends `s` to `out` escaped as printable() says; with `cut`, a character the cut split is
// left out instead of shown as broken bytes.
void append_printable(std::string& out, std::string_view s, bool cut) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      if (n == 0 && cut && s.size() - i < 4) break;  // a character cut by the limit
      out += fmt::format("\\x{:02X}", c);
      ++i;
      continue;
    }
    const char32_t cp = code_point(s, i, n);
    if (is_terminal_control(cp)) {
      out += fmt::format("\\u{:04X}", static_cast<uint32_t>(cp));
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_printable(out, s, /*cut=*/false);
  return out;
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMaxBytes = 200;
  constexpr std::size_t kKeptBytes = 160;
  const bool cut = s.size() > kMaxBytes;
  std::string out = "\"";
  append_printable(out, cut ? s.substr(0, kKeptBytes) : s, cut);
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

std::string whole_number_message(int64_t lo, int64_t hi, std::string_view found) {
  const std::string shown =
      found.size() > 64
          ? fmt::format("{}... ({} bytes)", printable(found.substr(0, 48)), found.size())
          : printable(found);
  return fmt::format("expected a whole number from {} to {}, found {}", lo, hi, shown);
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
