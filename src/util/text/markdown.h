// Text as literal Markdown: the one escaper of every Markdown output (cost, compare, catalog,
// plan and gate --format markdown, report --markdown; text::render_markdown's cells).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ftbench::text {

// Text from a report or a catalog (a run name, a device or CPU name, a path, an offer's
// provider or source, an error) as literal Markdown: the characters that would start a link or
// an image ([ ]), an HTML tag (< >), an entity or character reference (&), emphasis (* _ ~) or
// code (`), and the backslash, are backslash-escaped, and control characters shown escaped
// (text::printable), so that a file's strings cannot inject markup into a rendered page or a
// comment. A table cell's "|" is render_markdown's to escape.
// Text longer than kMaxMarkdownText bytes is cut there and says how long it was, so that a
// file's strings cannot make a comment longer than a CI service takes (GitHub: 65,536).
inline constexpr std::size_t kMaxMarkdownText = 300;
// ftbench's own lines (a compare verdict, which names the reports' devices) are longer than any
// one string of a file: cut at this instead.
inline constexpr std::size_t kMaxMarkdownLine = 4096;
std::string markdown_literal(std::string_view text, std::size_t max_bytes = kMaxMarkdownText);

}  // namespace ftbench::text
