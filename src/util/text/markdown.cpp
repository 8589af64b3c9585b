#include "util/text/markdown.h"

#include <fmt/format.h>

#include "util/text/messages.h"

namespace ftbench::text {

std::string markdown_literal(std::string_view text, std::size_t max_bytes) {
  std::string out;
  std::string shown = printable(text);
  if (shown.size() > max_bytes) {
    // Cut at a UTF-8 character's start, and say so.
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
    shown = shown.substr(0, cut) + fmt::format("… ({} bytes in all)", shown.size());
  }
  for (char c : shown) {
    static constexpr std::string_view kSpecial = "\\`*_[]<>~&";
    if (kSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace ftbench::text
