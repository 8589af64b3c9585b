#include "util/text/container_image.h"

#include <fmt/format.h>

#include "util/text/messages.h"

namespace ftbench::text {

std::string container_image_problem(std::string_view v) {
  if (v.empty()) return "";
  if (v.size() > 255) return fmt::format("longer than 255 characters ({})", v.size());
  for (char c : v) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/' ||
                         c == ':' || c == '@';
    if (!allowed) {
      return "a character no image reference has: " + text::quoted(std::string_view(&c, 1));
    }
  }
  if (v.find("://") != std::string_view::npos) return "a URL, not an image reference";
  const std::size_t at = v.find('@');
  if (at != std::string_view::npos) {
    // name@algorithm:hex, the digest form: nothing but the digest after the one "@".
    const std::string_view digest = v.substr(at + 1);
    const std::size_t colon = digest.find(':');
    bool is_digest =
        at > 0 && colon != std::string_view::npos && colon > 0 && digest.size() - colon - 1 >= 32;
    for (std::size_t i = 0; is_digest && i < digest.size(); ++i) {
      const char c = digest[i];
      if (i < colon) {
        is_digest = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      } else if (i > colon) {
        is_digest = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }
    }
    if (!is_digest) return "\"@\" not followed by a digest such as sha256:<64 hex digits>";
  }
  return "";
}

}  // namespace ftbench::text
