#include "util/text/table.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "util/text/markdown.h"
#include "util/text/messages.h"

namespace ftbench::text {
namespace {

// The table with every header and cell made printable(): text from shared files (a catalog's
// region, a report's run name) cannot drive the terminal, and widths are those of what prints.
Table printable_table(const Table& table) {
  Table out;
  out.align = table.align;
  out.header.reserve(table.header.size());
  for (const std::string& h : table.header) out.header.push_back(printable(h));
  out.rows.reserve(table.rows.size());
  for (const auto& row : table.rows) {
    std::vector<Cell> cells;
    cells.reserve(row.size());
    for (const Cell& cell : row) cells.emplace_back(printable(cell.text), cell.color);
    out.rows.push_back(std::move(cells));
  }
  return out;
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
  return parse_spelling(kFormatSpellings, name);
}

bool use_color(std::string_view mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (std::getenv("NO_COLOR") != nullptr) return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

std::string paint(const std::string& text, Color color, bool enabled) {
  if (!enabled || color == Color::kNone) return text;
  const char* code = "";
  switch (color) {
    case Color::kGreen:
      code = "\033[32m";
      break;
    case Color::kRed:
      code = "\033[31m";
      break;
    case Color::kYellow:
      code = "\033[33m";
      break;
    case Color::kBold:
      code = "\033[1m";
      break;
    case Color::kDim:
      code = "\033[2m";
      break;
    case Color::kNone:
      break;
  }
  return code + text + "\033[0m";
}

std::size_t display_width(std::string_view text) {
  std::size_t n = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string render_text(const Table& raw, bool color) {
  const Table table = printable_table(raw);
  const std::size_t columns = table.header.size();
  std::vector<std::size_t> width(columns, 0);
  for (std::size_t c = 0; c < columns; ++c) width[c] = display_width(table.header[c]);
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < columns && c < row.size(); ++c) {
      width[c] = std::max(width[c], display_width(row[c].text));
    }
  }
  auto align_of = [&](std::size_t c) {
    return c < table.align.size() ? table.align[c] : Align::kLeft;
  };
  auto line = [&](const std::vector<Cell>& cells) {
    std::string out;
    for (std::size_t c = 0; c < columns; ++c) {
      const Cell cell = c < cells.size() ? cells[c] : Cell();
      const std::string pad(width[c] - display_width(cell.text), ' ');
      const bool last = c + 1 == columns;
      if (align_of(c) == Align::kRight) {
        out += pad + paint(cell.text, cell.color, color);
      } else {
        out += paint(cell.text, cell.color, color);
        if (!last) out += pad;
      }
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<Cell> header;
  for (const std::string& h : table.header) header.emplace_back(h, Color::kBold);
  std::string out = line(header);
  std::size_t total = 0;
  for (std::size_t c = 0; c < columns; ++c) total += width[c] + (c + 1 < columns ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& row : table.rows) out += line(row);
  return out;
}

std::string render_markdown(const Table& table) {
  // Literal text (markdown_literal escapes controls as printable() does), then the cell's '|'.
  auto escape = [](const std::string& s) {
    std::string out;
    for (const char c : markdown_literal(s)) {
      if (c == '|') out += '\\';
      out += c;
    }
    return out;
  };
  std::string out = "|";
  for (const std::string& h : table.header) out += " " + escape(h) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < table.header.size(); ++c) {
    const bool right = c < table.align.size() && table.align[c] == Align::kRight;
    out += right ? "---:|" : "---|";
  }
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (std::size_t c = 0; c < table.header.size(); ++c) {
      out += " " + (c < row.size() ? escape(row[c].text) : std::string()) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string render_fields(const Table& raw) {
  const Table table = printable_table(raw);
  std::size_t width = 0;
  for (const auto& row : table.rows) {
    if (!row.empty()) width = std::max(width, display_width(row[0].text));
  }
  std::string out;
  for (const auto& row : table.rows) {
    const std::string label = row.empty() ? std::string() : row[0].text;
    const std::string value = row.size() > 1 ? row[1].text : std::string();
    std::string line = label + std::string(width - display_width(label) + 2, ' ') + value;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_csv(const Table& raw) {
  const Table table = printable_table(raw);
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (const char c : s) {
      if (c == '"') out += '"';
      out += c;
    }
    return out + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) out += ',';
      out += field(cells[c]);
    }
    return out + "\n";
  };
  std::string out = line(table.header);
  for (const auto& row : table.rows) {
    std::vector<std::string> cells;
    for (std::size_t c = 0; c < table.header.size(); ++c) {
      cells.push_back(c < row.size() ? row[c].text : std::string());
    }
    out += line(cells);
  }
  return out;
}

}  // namespace ftbench::text
