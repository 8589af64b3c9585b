#include "util/text/json_errors.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

namespace ftbench::text {
namespace {

// The first `n` bytes of `s`, moved back so that no UTF-8 character is cut.
std::string_view head(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// The last `n` bytes of `s`, moved forward so that no UTF-8 character is cut.
std::string_view tail(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t start = s.size() - n;
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  return s.substr(start);
}

// A SAX reader that keeps the path to the value being read and stops at the first error.
class PathTracker : public nlohmann::json_sax<nlohmann::json> {
 public:
  // `stop_at_duplicate_key`: also stop at the first key an object gives twice.
  explicit PathTracker(bool stop_at_duplicate_key = false)
      : stop_at_duplicate_key_(stop_at_duplicate_key) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& key) override {
    ++keys_read_;
    frames_.back().key = key;
    frames_.back().has_key = true;
    if (stop_at_duplicate_key_ && !frames_.back().keys.insert(key).second) {
      duplicate_key_ = true;
      return false;
    }
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    failed_ = true;
    return false;
  }

  bool failed() const { return failed_; }
  bool found_duplicate_key() const { return duplicate_key_; }
  // Keys read so far, the one being read included.
  std::size_t keys_read() const { return keys_read_; }
  // A key written after a dot: a letter or '_', then letters, digits and '_'.
  static bool is_name(const std::string& key) {
    if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
    return std::all_of(key.begin(), key.end(), [](char c) {
      return c == '_' || std::isalnum(static_cast<unsigned char>(c));
    });
  }
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.array) {
        out += "[" + std::to_string(f.index) + "]";
      } else if (!f.has_key) {
        // An object whose first key is not read yet: the path ends at the object.
      } else if (is_name(f.key)) {
        out += (out.empty() ? "" : ".") + f.key;
      } else {
        // As a JSON string: a quote, a backslash or a control byte in the key stays unambiguous
        // (text::quoted leaves '"' and '\\' as they are).
        out +=
            "[" +
            nlohmann::json(f.key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
            "]";
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool array = false;
    std::size_t index = 0;
    std::string key;
    bool has_key = false;
    std::set<std::string> keys;  // an object's keys so far, when duplicates are looked for
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    frames_.push_back({array, 0, "", false, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }
  std::vector<Frame> frames_;
  bool stop_at_duplicate_key_ = false;
  bool failed_ = false;
  bool duplicate_key_ = false;
  std::size_t keys_read_ = 0;
};

// The offset of the opening quote of the n-th (0-based) key in `text`, valid JSON: a string that
// white space and then ':' follow (outside strings, '"' only ever opens one).
std::size_t nth_key_offset(std::string_view text, std::size_t n) {
  std::size_t keys = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    const std::size_t open = i;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\') ++i;
    }
    std::size_t next = i + 1;
    while (next < text.size() &&
           (text[next] == ' ' || text[next] == '\t' || text[next] == '\n' || text[next] == '\r')) {
      ++next;
    }
    if (next < text.size() && text[next] == ':' && keys++ == n) return open;
  }
  return 0;
}

}  // namespace

std::string json_error_path(std::string_view text) {
  PathTracker tracker;
  nlohmann::json::sax_parse(text, &tracker);
  return tracker.failed() ? tracker.path() : "";
}

std::optional<JsonDuplicateKey> json_duplicate_key(std::string_view text) {
  PathTracker tracker(/*stop_at_duplicate_key=*/true);
  nlohmann::json::sax_parse(text, &tracker);
  if (!tracker.found_duplicate_key()) return std::nullopt;
  return JsonDuplicateKey{tracker.path(), nth_key_offset(text, tracker.keys_read() - 1)};
}

std::string json_error_at(std::string_view text, std::string_view what) {
  const std::string path = json_error_path(text);
  return (path.empty() ? "" : path + ": ") + json_error_reason(what);
}

std::optional<std::size_t> json_too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  std::optional<std::size_t> at;
  for_each_byte_outside_strings(text, [&](std::size_t i, char c) {
    if (c == '[' || c == '{') {
      if (++depth > max_depth) at = i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    return !at;
  });
  return at;
}

std::string json_too_deep_message(std::size_t offset, int max_depth) {
  return "arrays or objects nested deeper than " + std::to_string(max_depth) + " levels (at byte " +
         std::to_string(offset + 1) + ")";
}

std::string json_error_reason(std::string_view what) {
  std::string_view reason = what;
  if (!reason.empty() && reason.front() == '[') {
    const std::size_t end = reason.find("] ");
    if (end != std::string_view::npos) reason.remove_prefix(end + 2);
  }
  constexpr std::string_view kParseError = "parse error";
  if (reason.substr(0, kParseError.size()) == kParseError) {
    const std::size_t colon = reason.find(": ");
    if (colon != std::string_view::npos) reason.remove_prefix(colon + 2);
  }
  constexpr std::string_view kOverflow = "number overflow parsing '";
  if (reason.substr(0, kOverflow.size()) == kOverflow && reason.back() == '\'') {
    const std::string_view number =
        reason.substr(kOverflow.size(), reason.size() - kOverflow.size() - 1);
    return "number out of range: " + std::string(head(number, 64));
  }

  constexpr std::string_view kLastRead = "last read: '";
  constexpr std::size_t kKeep = 32;
  const std::size_t start = reason.find(kLastRead);
  if (start == std::string_view::npos) return std::string(reason);
  const std::size_t excerpt_start = start + kLastRead.size();
  // The excerpt ends at the last "'" before the parser's "; expected ..." (or the end).
  std::size_t excerpt_end = reason.rfind("'; ");
  if (excerpt_end == std::string_view::npos || excerpt_end < excerpt_start) {
    excerpt_end = reason.rfind('\'');
  }
  if (excerpt_end == std::string_view::npos || excerpt_end < excerpt_start) {
    return std::string(reason);
  }
  const std::string_view excerpt = reason.substr(excerpt_start, excerpt_end - excerpt_start);
  if (excerpt.size() <= 2 * kKeep + 16) return std::string(reason);
  return std::string(reason.substr(0, excerpt_start)) + std::string(head(excerpt, kKeep)) + "...(" +
         std::to_string(excerpt.size()) + " bytes)..." + std::string(tail(excerpt, kKeep)) +
         std::string(reason.substr(excerpt_end));
}

}  // namespace ftbench::text
