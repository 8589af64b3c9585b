#include "ftbench/text/messages.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "ftbench/text/json_errors.h"

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

TEST(Quoted, LongTextIsCutWithItsLength) {
  EXPECT_EQ(text::quoted(std::string(200, 'n')), "\"" + std::string(200, 'n') + "\"");
  EXPECT_EQ(text::quoted(std::string(8 << 20, 'n')),
            "\"" + std::string(160, 'n') + "\" (cut; 8388608 bytes in all)");
  // A character that straddles the cut is left out rather than shown as broken bytes.
  EXPECT_EQ(text::quoted(std::string(159, 'x') + "\xE2\x82\xAC" + std::string(100, 'y')),
            "\"" + std::string(159, 'x') + "\" (cut; 262 bytes in all)");
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
