#include "data/hf_tokenizer_parts.h"

#include "util/io/whole_file.h"
#include "util/text/json_parse.h"

namespace ftbench::data::detail {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// are shifted to U+0100 and up, in byte order. Returns the code point of each byte.
std::array<uint32_t, 256> byte_to_code_point() {
  std::array<uint32_t, 256> cp{};
  uint32_t next_shifted = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    cp[b] = printable ? b : next_shifted++;
  }
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid (overlong forms,
// surrogates and code points above U+10FFFF included). `cp` receives the code point.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t len = 0;
  uint32_t min = 0;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Throws TokenizerError naming the offset of the first byte that is not valid UTF-8.
void check_utf8(std::string_view text) {
  uint32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_sequence(text, i, cp);
    if (len == 0) {
      throw TokenizerError(fmt::format(
          "text is not valid UTF-8: byte 0x{:02X} at offset {} does not start a valid sequence",
          static_cast<unsigned char>(text[i]), i));
    }
    i += len;
  }
}

// Unicode White_Space, as Rust's char::is_whitespace (used for lstrip / rstrip of added tokens).
bool is_unicode_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

std::string_view trim_space_end(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    uint32_t cp = 0;
    if (utf8_sequence(s, start, cp) == 0 || !is_unicode_space(cp)) break;
    end = start;
  }
  return s.substr(0, end);
}

std::string_view trim_space_start(std::string_view s) {
  size_t start = 0;
  uint32_t cp = 0;
  while (start < s.size()) {
    const size_t len = utf8_sequence(s, start, cp);
    if (len == 0 || !is_unicode_space(cp)) break;
    start += len;
  }
  return s.substr(start);
}

Regex::Regex(const std::string& pattern, const std::string& where) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                        PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code_ == nullptr) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(error, message.data(), message.size());
    throw TokenizerError(fmt::format("{}: regex cannot be compiled at offset {}: {}", where, offset,
                                     reinterpret_cast<const char*>(message.data())));
  }
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
}

std::string read_file(const std::filesystem::path& path) {
  try {
    return io::read_whole_file(path.string(), io::kTokenizerFile);
  } catch (const io::FileReadError& e) {
    throw TokenizerError(fmt::format("{}: cannot be read: {}", path.string(), e.reason()));
  }
}

nlohmann::json parse_json(const std::string& text, const std::string& source) {
  using ftbench::text::JsonTextError;
  return ftbench::text::parse_json_text<nlohmann::json>(text, [&](const JsonTextError& e) {
    throw TokenizerError(
        e.kind == JsonTextError::Kind::kSyntax
            ? fmt::format("{}: invalid JSON at byte {}: {}", source, e.byte, e.reason)
            : fmt::format("{}: {}", source, e.reason));
  });
}

std::string TokenizerFields::type_of(const nlohmann::json& j, const std::string& where) const {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    // The type's name, not the value: a model object holds the whole vocabulary, and dumping a
    // deeply nested value would recurse as deep.
    const char* found = !j.is_object()        ? j.type_name()
                        : !j.contains("type") ? "no \"type\""
                                              : j["type"].type_name();
    fail(fmt::format("{}: expected an object with a string \"type\", found {}{}", where,
                     j.is_object() && j.contains("type") ? "a \"type\" that is a " : "", found));
  }
  return j["type"].get<std::string>();
}

bool TokenizerFields::bool_or(const nlohmann::json& j, const char* key, bool fallback,
                              const std::string& where) const {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) {
    fail(fmt::format("{}: expected true or false, found {}", join(where, key), j[key].dump()));
  }
  return j[key].get<bool>();
}

}  // namespace ftbench::data::detail
