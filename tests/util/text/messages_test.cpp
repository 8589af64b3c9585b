#include "util/text/messages.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "util/text/json_errors.h"

namespace ftbench::text {
namespace {

TEST(Quoted, PlainTextIsQuotedAsIs) {
  EXPECT_EQ(text::quoted("tiny"), "\"tiny\"");
  EXPECT_EQ(text::quoted(""), "\"\"");
  EXPECT_EQ(text::quoted("caf\xC3\xA9 \xE2\x82\xAC"),
            "\"caf\xC3\xA9 \xE2\x82\xAC\"");  // UTF-8 kept
}

TEST(Quoted, ControlBytesAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(text::quoted(std::string("ti\0ny", 5)), "\"ti\\x00ny\"");
  EXPECT_EQ(text::quoted("a\nb\x1B[31m"), "\"a\\x0Ab\\x1B[31m\"");
  EXPECT_EQ(text::quoted("\xC3(\xFF"), "\"\\xC3(\\xFF\"");
  EXPECT_EQ(text::quoted("\xED\xA0\x80"), "\"\\xED\\xA0\\x80\"");  // a UTF-16 surrogate
}

// What a terminal acts on, shown instead: C0 controls and DEL as \xNN, C1 controls (which some
// terminals take for CSI and OSC) and bidirectional controls as \uNNNN, bytes that are not
// UTF-8 as \xNN. Everything else, other UTF-8 included, is kept.
TEST(Printable, TerminalControlsAreShownEscaped) {
  EXPECT_EQ(text::printable("H100 \xC2\xB1 \xE2\x80\x94 caf\xC3\xA9"),
            "H100 \xC2\xB1 \xE2\x80\x94 caf\xC3\xA9");
  EXPECT_EQ(text::printable(""), "");
  EXPECT_EQ(text::printable("\x1B[2Jrun"), "\\x1B[2Jrun");
  EXPECT_EQ(text::printable("\x1B]0;pwned\x07us-east-1"), "\\x1B]0;pwned\\x07us-east-1");
  EXPECT_EQ(text::printable(std::string("a\0b\tc\nd\re\x7F", 10)),
            "a\\x00b\\x09c\\x0Ad\\x0De\\x7F");
  EXPECT_EQ(text::printable("\xC2\x9B"
                            "31m"),
            "\\u009B31m");                                                           // CSI, C1 form
  EXPECT_EQ(text::printable("\xC2\x80\xC2\x9F\xC2\xA0"), "\\u0080\\u009F\xC2\xA0");  // NBSP kept
  EXPECT_EQ(text::printable("a\xE2\x80\xAE"
                            "cba"),
            "a\\u202Ecba");  // right-to-left override
  EXPECT_EQ(text::printable("\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAC\xE2\x80\xAD"),
            "\\u202A\\u202B\\u202C\\u202D");
  EXPECT_EQ(text::printable("\xE2\x81\xA6\xE2\x81\xA7\xE2\x81\xA8\xE2\x81\xA9"),
            "\\u2066\\u2067\\u2068\\u2069");
  EXPECT_EQ(text::printable("\xE2\x80\x8E\xE2\x80\x8F\xD8\x9C"), "\\u200E\\u200F\\u061C");
  EXPECT_EQ(text::printable("\xC3(\xFF"), "\\xC3(\\xFF");
  EXPECT_EQ(text::printable("\xE2\x82"), "\\xE2\\x82");  // cut short
}

TEST(Quoted, TerminalControlsAreEscapedAsPrintableDoes) {
  EXPECT_EQ(text::quoted("\xC2\x9B"
                         "2J"),
            "\"\\u009B2J\"");
  EXPECT_EQ(text::quoted("\xE2\x80\xAE"
                         "x"),
            "\"\\u202Ex\"");
}

TEST(Quoted, LongTextIsCutWithItsLength) {
  EXPECT_EQ(text::quoted(std::string(200, 'n')), "\"" + std::string(200, 'n') + "\"");
  EXPECT_EQ(text::quoted(std::string(8 << 20, 'n')),
            "\"" + std::string(160, 'n') + "\" (cut; 8388608 bytes in all)");
  // A character that straddles the cut is left out rather than shown as broken bytes.
  EXPECT_EQ(text::quoted(std::string(159, 'x') + "\xE2\x82\xAC" + std::string(100, 'y')),
            "\"" + std::string(159, 'x') + "\" (cut; 262 bytes in all)");
}

// A whole number out of its bounds, in one wording for every flag and variable that has bounds,
// whatever CLI11's version says of its own ranges.
TEST(WholeNumberMessage, SaysTheBoundsAndWhatWasFound) {
  EXPECT_EQ(whole_number_message(1, 1024, "0"), "expected a whole number from 1 to 1024, found 0");
  EXPECT_EQ(whole_number_message(0, int64_t{1} << 40, "2.5"),
            "expected a whole number from 0 to 1099511627776, found 2.5");
  EXPECT_EQ(whole_number_message(-3, 3, "\x1b[2J"),
            "expected a whole number from -3 to 3, found \\x1B[2J");
  // A long value is cut to its first 48 bytes, its length said.
  EXPECT_EQ(
      whole_number_message(1, 9, std::string(10000, '7')),
      "expected a whole number from 1 to 9, found " + std::string(48, '7') + "... (10000 bytes)");
}

TEST(YamlErrorText, DepthLimitIsSaidInWords) {
  try {
    YAML::Load(std::string(100000, '['));
    FAIL() << "yaml-cpp accepted 100000 levels";
  } catch (const YAML::Exception& e) {
    EXPECT_EQ(yaml_error_text(e), "lists or mappings nested too deeply (hundreds of levels)");
  }
  try {
    YAML::Load("a: [1, 2");
    FAIL() << "no error";
  } catch (const YAML::Exception& e) {
    EXPECT_EQ(yaml_error_text(e), e.msg);
  }
}

// The path to where the parser stopped: nlohmann's out-of-range error has no position.
TEST(JsonErrorPath, NamesTheValueWhereParsingStopped) {
  EXPECT_EQ(json_error_path(R"({"a": 1, "b": {"c": [0, 1, 1e999]}})"), "b.c[2]");
  EXPECT_EQ(json_error_path(R"([{"text": "x"}, {"text": 1e400}])"), "[1].text");
  EXPECT_EQ(json_error_path(R"({"a": [[1], [2, {"b": -1e400}]]})"), "a[1][1].b");
  EXPECT_EQ(json_error_path("1e999"), "");
  EXPECT_EQ(json_error_path(R"({"a": 1})"), "");  // parses
  // A key that is no name is quoted in brackets, as the tokenizer's messages write it
  // (model.vocab["!"] in one message and model.vocab.! in another; found by a review).
  EXPECT_EQ(json_error_path(R"({"model": {"vocab": {"!": 1e999}}})"), R"(model.vocab["!"])");
  EXPECT_EQ(json_error_path(R"({"a b": {"": [1e999]}})"), R"(["a b"][""][0])");
  EXPECT_EQ(json_error_path(R"({"_x9": 1e999})"), "_x9");
  // An object that has no key yet ends the path (it read a[1][""]; a review).
  EXPECT_EQ(json_error_path(R"({"a": [1, {)"), "a[1]");
  EXPECT_EQ(json_duplicate_key(R"({"a": [{"b": 1, "c": 2, "b": 3}]})")->path, "a[0].b");
  EXPECT_EQ(json_duplicate_key(R"({"a": [{"b": 1, "c": 2, "b": 3}]})")->offset, 24u);
  EXPECT_FALSE(json_duplicate_key(R"({"a": {"b": 1}, "c": {"b": 1}})").has_value());
  // Written as JSON strings, so that no two keys read alike (a review).
  EXPECT_EQ(json_error_path(R"({"a\"]b": 1e999})"), R"(["a\"]b"])");
  EXPECT_EQ(json_error_path(R"({"\\x01": 1e999})"), R"(["\\x01"])");
  EXPECT_EQ(json_error_path(R"({"\u0001": 1e999})"), R"(["\u0001"])");
  EXPECT_EQ(json_error_at(R"({"x": 1e999})",
                          "[json.exception.out_of_range.406] number overflow parsing '1e999'"),
            "x: number out of range: 1e999");
}

TEST(JsonErrorReason, DropsTheLibraryPrefix) {
  EXPECT_EQ(json_error_reason("[json.exception.parse_error.101] parse error at line 1, column 2: "
                              "syntax error while parsing value - invalid literal; last read: "
                              "'th'"),
            "syntax error while parsing value - invalid literal; last read: 'th'");
  EXPECT_EQ(json_error_reason("[json.exception.out_of_range.406] number overflow parsing '1e999'"),
            "number out of range: 1e999");
  EXPECT_EQ(json_error_reason("plain text"), "plain text");
}

TEST(JsonErrorReason, CutsALongExcerpt) {
  const std::string what =
      "[json.exception.parse_error.101] parse error at line 2, column 70: syntax error while "
      "parsing value - invalid string: missing closing quote; last read: '\"" +
      std::string(1000, 'x') + "'";
  EXPECT_EQ(json_error_reason(what),
            "syntax error while parsing value - invalid string: missing closing quote; last "
            "read: '\"" +
                std::string(31, 'x') + "...(1001 bytes)..." + std::string(32, 'x') + "'");
}

TEST(JsonTooDeep, CountsBracketsOutsideStrings) {
  EXPECT_EQ(json_too_deep_at("{\"a\": [[1]]}", 3), std::nullopt);
  EXPECT_EQ(json_too_deep_at("{\"a\": [[1]]}", 2), std::optional<std::size_t>(7));
  EXPECT_EQ(json_too_deep_at("[\"[[[[\\\"[[[\"]", 1), std::nullopt);        // in a string, after \"
  EXPECT_EQ(json_too_deep_at("]]]][[", 1), std::optional<std::size_t>(5));  // never below 0
  EXPECT_EQ(json_too_deep_at(std::string(200000, '[')), std::optional<std::size_t>(128));
  EXPECT_EQ(json_too_deep_message(128),
            "arrays or objects nested deeper than 128 levels (at byte 129)");
}

}  // namespace
}  // namespace ftbench::text
