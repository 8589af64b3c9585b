// One YAML document from a text: what follows it (a second document, content no document
// holds) is said rather than parsed, for the run spec and its --set values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace ftbench::spec::detail {

inline const std::string kSecondDocument = "a second YAML document (after \"---\")";

// True when `text` holds anything but white space and comments.
bool has_content(std::string_view text);

// What follows the first document of a text, if anything.
struct AfterTheDocument {
  std::string problem;  // "" when nothing: kSecondDocument, or content that is no document
  int64_t line = 0;     // 1-based; 0 when unknown
};

// The one document of `text` (a null node when it has none); `after` says what follows it.
// Throws YAML::Exception for invalid YAML.
YAML::Node load_one_document(const std::string& text, AfterTheDocument& after);

}  // namespace ftbench::spec::detail
