// Tables for the terminal, Markdown and CSV, and the output formats of cost, compare and catalog.
// Numbers are formatted by the caller (util/text/units.h), always in the "C" locale.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/text/spellings.h"

namespace ftbench::text {

enum class Format { kTable, kMarkdown, kJson, kCsv };
inline constexpr Spelling<Format> kFormatSpellings[] = {{Format::kTable, "table"},
                                                        {Format::kMarkdown, "markdown"},
                                                        {Format::kJson, "json"},
                                                        {Format::kCsv, "csv"}};
// "table", "markdown", "json", "csv"; nullopt for anything else.
std::optional<Format> parse_format(std::string_view name);

enum class Color { kNone, kGreen, kRed, kYellow, kBold, kDim };
enum class Align { kLeft, kRight };

struct Cell {
  std::string text;
  Color color = Color::kNone;
  Cell() = default;
  Cell(std::string t, Color c = Color::kNone) : text(std::move(t)), color(c) {}  // NOLINT
  Cell(const char* t, Color c = Color::kNone) : text(t), color(c) {}             // NOLINT
};

struct Table {
  std::vector<std::string> header;
  std::vector<Align> align;  // per column; missing entries are kLeft
  std::vector<std::vector<Cell>> rows;
};

// Whether to colour terminal output: `mode` is "auto" (colour when stdout is a terminal,
// NO_COLOR is unset and TERM is not "dumb"), "always" or "never".
bool use_color(std::string_view mode);

// Wraps `text` in the ANSI sequence of `color` when `enabled`.
std::string paint(const std::string& text, Color color, bool enabled);

// Every renderer writes the header and the cells through text::printable(): control
// characters (a catalog's or a report's strings may hold an OSC or CSI sequence), C1 and
// bidirectional controls and bytes that are not UTF-8 are shown escaped ("\x1B[2J", "\u009B"),
// never passed to the terminal; widths are those of the escaped text.

// Aligned columns separated by two spaces, a dashed rule under the header. Widths count UTF-8
// code points, so "±" and "—" keep columns straight. Colour codes only when `color`.
std::string render_text(const Table& table, bool color);
// GitHub-flavoured Markdown: header and cells as literal text (text::markdown_literal: no HTML,
// entity, link, image, emphasis or code from a report's or a catalog's strings; controls shown
// escaped; a cell cut at kMaxMarkdownText bytes), and '|' in them escaped.
std::string render_markdown(const Table& table);
// RFC 4180 quoting (fields with a comma or a quote quoted, quotes doubled) with "\n" line ends,
// as Unix tools and pandas expect, rather than RFC 4180's CRLF. A CR or LF in a cell is
// escaped like every control character, so each record is one line.
std::string render_csv(const Table& table);
// Label-value lines without a header ("run time    18.0 min ..."): the first cell of each row,
// padded to the longest label plus two spaces, then the second. The header is not printed.
std::string render_fields(const Table& table);

// Length in UTF-8 code points.
std::size_t display_width(std::string_view text);

}  // namespace ftbench::text
