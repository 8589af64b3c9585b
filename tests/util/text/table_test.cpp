// Tables (text, Markdown, CSV), number formatting and "did you mean" hints, with exact strings.
#include "util/text/table.h"

#include <cstddef>
#include <limits>
#include <locale>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "util/text/did_you_mean.h"
#include "util/text/units.h"

namespace ftbench::text {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Removes ANSI SGR sequences ("\033[...m").
std::string strip_ansi(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\033') {
      const std::size_t end = s.find('m', i);
      if (end == std::string::npos) break;
      i = end;
      continue;
    }
    out += s[i];
  }
  return out;
}

// 2 rows x 3 columns; the middle column right-aligned, the last row's last cell empty.
Table cost_table() {
  Table t;
  t.header = {"run", "cost", "note"};
  t.align = {Align::kLeft, Align::kRight, Align::kLeft};
  t.rows = {{"H100", Cell("$0.891", Color::kGreen), "ok"},
            {"MI300X", Cell("$1.35", Color::kRed), ""}};
  return t;
}

// A global C++ locale with ',' as decimal point and '.' grouping (as de_DE has) changes nothing:
// tables and numbers are written the same everywhere.
class CommaDecimal : public std::numpunct<char> {
 protected:
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

TEST(UnitsLocale, NumbersIgnoreTheGlobalLocale) {
  const std::locale previous =
      std::locale::global(std::locale(std::locale::classic(), new CommaDecimal));
  const std::string usd = format_usd(1234.5);
  const std::string duration = format_duration(1080.0);
  const std::string percent = format_percent(0.52, true);
  const std::string number = format_number(0.891);
  Table t;
  t.header = {"a"};
  t.rows = {{Cell(format_number(2.5))}};
  const std::string csv = render_csv(t);
  std::locale::global(previous);
  EXPECT_EQ(usd, "$1,234.50");
  EXPECT_EQ(duration, "18.0 min");
  EXPECT_EQ(percent, "+52.0%");
  EXPECT_EQ(number, "0.891");
  EXPECT_EQ(csv, "a\n2.5\n");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// render_text

TEST(TableText, ExactLayoutWithoutColour) {
  // Widths: 6 ("MI300X"), 6 ("$0.891"), 4 ("note"); two spaces between columns; the rule spans
  // 6 + 2 + 6 + 2 + 4 = 20; trailing spaces trimmed (the empty last cell of row 2).
  const std::string expected =
      "run       cost  note\n"
      "--------------------\n"
      "H100    $0.891  ok\n"
      "MI300X   $1.35\n";
  EXPECT_EQ(render_text(cost_table(), false), expected);
}

TEST(TableText, ColourAddsCodesButNotWidth) {
  const std::string plain = render_text(cost_table(), false);
  const std::string coloured = render_text(cost_table(), true);
  EXPECT_NE(coloured, plain);
  EXPECT_NE(coloured.find("\033[1mrun\033[0m"), std::string::npos);  // header bold
  EXPECT_NE(coloured.find("\033[32m$0.891\033[0m"), std::string::npos);
  EXPECT_NE(coloured.find("\033[31m$1.35\033[0m"), std::string::npos);
  EXPECT_EQ(strip_ansi(coloured), plain);
}

TEST(TableText, MissingAlignIsLeftAndShortRowsArePadded) {
  Table t;
  t.header = {"a", "bb", "c"};
  t.rows = {{"xxx"}, {"y", "z", "w"}};
  const std::string expected =
      "a    bb  c\n"
      "----------\n"
      "xxx\n"
      "y    z   w\n";
  EXPECT_EQ(render_text(t, false), expected);
}

TEST(TableText, Utf8WidthCountsCodePoints) {
  Table t;
  t.header = {"x", "y"};
  t.align = {Align::kRight, Align::kLeft};
  t.rows = {{"±0.5", "a"}, {"1.25", "b"}, {"—", "c"}};
  const std::string expected =
      "   x  y\n"
      "-------\n"
      "±0.5  a\n"
      "1.25  b\n"
      "   —  c\n";
  EXPECT_EQ(render_text(t, false), expected);
}

// Text from shared files (a catalog's region, a report's run name) cannot drive the terminal:
// every control character is shown escaped, in the header and the cells, and the columns are
// as wide as the escaped text.
TEST(TableText, ControlCharactersAreEscapedAndWidthsFollow) {
  Table t;
  t.header = {"name\x1B[2J", "n"};
  t.align = {Align::kLeft, Align::kRight};
  t.rows = {{"\x1B]0;pwned\x07", "1"},
            {"\xC2\x9B"
             "31m",
             "22"},
            {"a\xE2\x80\xAE"
             "b\xFF",
             "3"}};
  const std::string out = render_text(t, false);
  for (const char c : out) {
    EXPECT_TRUE(c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F))
        << "raw control byte " << static_cast<int>(c) << " in:\n"
        << out;
  }
  EXPECT_EQ(out.find("\xC2\x9B"), std::string::npos);
  EXPECT_EQ(out.find("\xE2\x80\xAE"), std::string::npos);
  // Every line as wide as the rule: the escapes were counted at the width they print.
  EXPECT_EQ(out,
            "name\\x1B[2J        n\n"
            "--------------------\n"
            "\\x1B]0;pwned\\x07   1\n"
            "\\u009B31m         22\n"
            "a\\u202Eb\\xFF       3\n");
}

TEST(TableText, DisplayWidth) {
  EXPECT_EQ(display_width(""), 0u);
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("±"), 1u);
  EXPECT_EQ(display_width("—"), 1u);
  EXPECT_EQ(display_width("±0.5 %"), 6u);
  EXPECT_EQ(display_width("héllo"), 5u);
}

TEST(TableText, PaintAndUseColor) {
  EXPECT_EQ(paint("x", Color::kGreen, false), "x");
  EXPECT_EQ(paint("x", Color::kNone, true), "x");
  EXPECT_EQ(paint("x", Color::kGreen, true), "\033[32mx\033[0m");
  EXPECT_EQ(paint("x", Color::kRed, true), "\033[31mx\033[0m");
  EXPECT_EQ(paint("x", Color::kYellow, true), "\033[33mx\033[0m");
  EXPECT_EQ(paint("x", Color::kBold, true), "\033[1mx\033[0m");
  EXPECT_EQ(paint("x", Color::kDim, true), "\033[2mx\033[0m");
  EXPECT_TRUE(use_color("always"));
  EXPECT_FALSE(use_color("never"));
}

// ---------------------------------------------------------------------------------------------
// render_markdown, render_csv, parse_format

TEST(TableMarkdown, EscapesPipesAndAligns) {
  Table t;
  t.header = {"a|b", "n"};
  t.align = {Align::kLeft, Align::kRight};
  t.rows = {{"x|y", "1"}, {"line\nbreak"}};
  const std::string expected =
      "| a\\|b | n |\n"
      "|---|---:|\n"
      "| x\\|y | 1 |\n"
      "| line\\\\x0Abreak |  |\n";
  EXPECT_EQ(render_markdown(t), expected);
}

TEST(TableMarkdown, ControlCharactersAreEscaped) {
  Table t;
  t.header = {"run\x1B[2J"};
  t.rows = {{"\x1B]0;x\x07|\xC2\x9B\xE2\x81\xA6"}};
  EXPECT_EQ(render_markdown(t),
            "| run\\\\x1B\\[2J |\n"
            "|---|\n"
            "| \\\\x1B\\]0;x\\\\x07\\|\\\\u009B\\\\u2066 |\n");
}

// Cells hold strings of reports and catalogs: shown as text in every Markdown table, not
// rendered as HTML, entities, links, images or emphasis (text::markdown_literal).
TEST(TableMarkdown, CellsAreLiteralText) {
  Table t;
  t.header = {"<b>gpu</b>", "source"};
  t.rows = {{"<script>alert(1)</script>", "[click](http://e.example) & ![x](http://e.example/x)"},
            {"<img src=x onerror=alert(1)>", "&lt;b&gt; *a* _b_ `c` ~d~"}};
  EXPECT_EQ(
      render_markdown(t),
      "| \\<b\\>gpu\\</b\\> | source |\n"
      "|---|---|\n"
      "| \\<script\\>alert(1)\\</script\\> | \\[click\\](http://e.example) \\& "
      "!\\[x\\](http://e.example/x) |\n"
      "| \\<img src=x onerror=alert(1)\\> | \\&lt;b\\&gt; \\*a\\* \\_b\\_ \\`c\\` \\~d\\~ |\n");
}

TEST(TableMarkdown, ReferenceTable) {
  const std::string expected =
      "| run | cost | note |\n"
      "|---|---:|---|\n"
      "| H100 | $0.891 | ok |\n"
      "| MI300X | $1.35 |  |\n";
  EXPECT_EQ(render_markdown(cost_table()), expected);
}

TEST(TableCsv, QuotesCommaAndQuoteEscapesLineBreaks) {
  Table t;
  t.header = {"name", "value"};
  t.rows = {{"a,b", "say \"hi\""}, {"two\nlines", "plain"}, {"cr\rhere"}};
  const std::string expected =
      "name,value\n"
      "\"a,b\",\"say \"\"hi\"\"\"\n"
      "two\\x0Alines,plain\n"
      "cr\\x0Dhere,\n";
  EXPECT_EQ(render_csv(t), expected);
}

// CSV too: a file opened with cat or less is a terminal's input like any other output.
TEST(TableCsv, ControlCharactersAreEscaped) {
  Table t;
  t.header = {"region\x07"};
  t.rows = {{"\x1B]0;x\x07,\xC2\x9B"}};
  EXPECT_EQ(render_csv(t),
            "region\\x07\n"
            "\"\\x1B]0;x\\x07,\\u009B\"\n");
}

TEST(TableFields, LabelsArePaddedToTheLongestAndEscaped) {
  Table t;
  t.rows = {{"run", "ci-tiny\x1B[2J"},
            {"until the first step ended", "$0.149 (2.3% of the run)"},
            {"per epoch", "$1.00"}};
  EXPECT_EQ(render_fields(t),
            "run                         ci-tiny\\x1B[2J\n"
            "until the first step ended  $0.149 (2.3% of the run)\n"
            "per epoch                   $1.00\n");
}

TEST(TableCsv, PlainFieldsAreNotQuoted) {
  const std::string expected =
      "run,cost,note\n"
      "H100,$0.891,ok\n"
      "MI300X,$1.35,\n";
  EXPECT_EQ(render_csv(cost_table()), expected);
}

TEST(TableFormat, ParseFormat) {
  EXPECT_EQ(parse_format("table"), Format::kTable);
  EXPECT_EQ(parse_format("markdown"), Format::kMarkdown);
  EXPECT_EQ(parse_format("json"), Format::kJson);
  EXPECT_EQ(parse_format("csv"), Format::kCsv);
  EXPECT_EQ(parse_format(""), std::nullopt);
  EXPECT_EQ(parse_format("md"), std::nullopt);
  EXPECT_EQ(parse_format("CSV"), std::nullopt);
  EXPECT_EQ(parse_format("table "), std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// units

TEST(UnitsUsd, HeaderExamples) {
  EXPECT_EQ(format_usd(0.891), "$0.891");
  EXPECT_EQ(format_usd(1.35433), "$1.35");
  EXPECT_EQ(format_usd(2.97), "$2.97");
  EXPECT_EQ(format_usd(1234.5), "$1,234.50");
  EXPECT_EQ(format_usd(0.0001234), "$0.000123");
}

TEST(UnitsUsd, MoreValues) {
  EXPECT_EQ(format_usd(0.0), "$0.00");
  EXPECT_EQ(format_usd(0.297), "$0.297");
  EXPECT_EQ(format_usd(0.45144444444444445), "$0.451");
  EXPECT_EQ(format_usd(1.3543333333333334), "$1.35");
  EXPECT_EQ(format_usd(0.05), "$0.0500");
  EXPECT_EQ(format_usd(0.002376), "$0.00238");
  EXPECT_EQ(format_usd(12.0), "$12.00");
  EXPECT_EQ(format_usd(999.0), "$999.00");
  EXPECT_EQ(format_usd(1000.0), "$1,000.00");
  EXPECT_EQ(format_usd(1234567.891), "$1,234,567.89");
}

TEST(UnitsUsd, RoundingUpToTheNextPowerOfTenKeepsThreeSignificantDigits) {
  // 0.9999 to three significant digits is 1.00; 0.09996 is 0.100.
  EXPECT_EQ(format_usd(0.9999), "$1.00");
  EXPECT_EQ(format_usd(0.09996), "$0.100");
}

TEST(UnitsUsd, NegativeAndNonFinite) {
  EXPECT_EQ(format_usd(-0.891), "-$0.891");
  EXPECT_EQ(format_usd(-1234.5), "-$1,234.50");
  EXPECT_EQ(format_usd(-2.97), "-$2.97");
  EXPECT_EQ(format_usd(kNaN), "n/a");
  EXPECT_EQ(format_usd(kInf), "n/a");
  EXPECT_EQ(format_usd(-kInf), "n/a");
}

TEST(UnitsDuration, HeaderExamplesAndBoundaries) {
  EXPECT_EQ(format_duration(12.34), "12.3 s");
  EXPECT_EQ(format_duration(1080.0), "18.0 min");
  EXPECT_EQ(format_duration(9000.0), "2.50 h");
  EXPECT_EQ(format_duration(0.0), "0.0 s");
  EXPECT_EQ(format_duration(119.0), "119.0 s");
  EXPECT_EQ(format_duration(120.0), "2.0 min");
  EXPECT_EQ(format_duration(2040.0), "34.0 min");
  EXPECT_EQ(format_duration(7199.0), "120.0 min");
  EXPECT_EQ(format_duration(7200.0), "2.00 h");
  EXPECT_EQ(format_duration(3600.0 * 100), "100.00 h");
}

TEST(UnitsDuration, NegativeAndNonFinite) {
  EXPECT_EQ(format_duration(-30.0), "-30.0 s");
  EXPECT_EQ(format_duration(-1080.0), "-18.0 min");
  EXPECT_EQ(format_duration(-9000.0), "-2.50 h");
  EXPECT_EQ(format_duration(kNaN), "n/a");
  EXPECT_EQ(format_duration(kInf), "n/a");
}

// Binary units with two decimals from 1 KiB, whole bytes below it; the largest unit is TiB.
TEST(UnitsBytes, BinaryUnitsFromOneKibibyte) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(24'576), "24.00 KiB");
  EXPECT_EQ(format_bytes(16'060'522'496), "14.96 GiB");
  EXPECT_EQ(format_bytes(int64_t{5} << 50), "5120.00 TiB");
}

TEST(UnitsPercent, Values) {
  EXPECT_EQ(format_percent(0.5197), "52.0%");
  EXPECT_EQ(format_percent(0.5197, true), "+52.0%");
  EXPECT_EQ(format_percent(-0.125, true), "-12.5%");
  EXPECT_EQ(format_percent(-0.125), "-12.5%");
  EXPECT_EQ(format_percent(0.0), "0.0%");
  EXPECT_EQ(format_percent(0.0, true), "+0.0%");
  EXPECT_EQ(format_percent(1.0), "100.0%");
  // The reference run's cost ratio 1.520015: +52.0 %.
  EXPECT_EQ(format_percent(1.520014964459409 - 1.0, true), "+52.0%");
  EXPECT_EQ(format_percent(kNaN), "n/a");
  EXPECT_EQ(format_percent(kNaN, true), "n/a");
  EXPECT_EQ(format_percent(-kInf, true), "n/a");
}

TEST(UnitsNumber, ShortestRoundTrip) {
  EXPECT_EQ(format_number(0.891), "0.891");
  EXPECT_EQ(format_number(1e-05), "1e-05");
  EXPECT_EQ(format_number(2.0), "2");
  EXPECT_EQ(format_number(1.3543333333333334), "1.3543333333333334");
}

// ---------------------------------------------------------------------------------------------
// did you mean

TEST(TableDidYouMean, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("rank", "rank"), 0u);
  EXPECT_EQ(edit_distance("rnak", "rank"), 1u);  // adjacent transposition
  EXPECT_EQ(edit_distance("BF16", "bf16"), 0u);  // case-folded
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("alpha", "alhpa"), 1u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // optimal string alignment, not Damerau
}

TEST(TableDidYouMean, Closest) {
  const std::vector<std::string> keys = {"rank", "alpha", "dropout", "targets"};
  EXPECT_EQ(closest("rnak", keys), std::optional<std::string>("rank"));
  EXPECT_EQ(closest("ALPHA", keys), std::optional<std::string>("alpha"));
  EXPECT_EQ(closest("dropuot", keys), std::optional<std::string>("dropout"));
  EXPECT_EQ(closest("xyzzy", keys), std::nullopt);
  EXPECT_EQ(closest("rank", {}), std::nullopt);
  // Ties go to the earlier candidate.
  EXPECT_EQ(closest("ab", {"ac", "ad"}), std::optional<std::string>("ac"));
  EXPECT_EQ(closest("ab", {"ad", "ac"}), std::optional<std::string>("ad"));
  // Threshold max(2, len / 3): 9 letters allow 3 edits, not 4.
  EXPECT_EQ(closest("abcdefxyz", {"abcdefghi"}), std::optional<std::string>("abcdefghi"));
  EXPECT_EQ(closest("abcdewxyz", {"abcdefghi"}), std::nullopt);
}

}  // namespace ftbench::text
