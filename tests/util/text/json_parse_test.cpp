// text::parse_json_text: the one parse of every JSON file ftbench reads.
#include "util/text/json_parse.h"

#include <string>

#include <gtest/gtest.h>

namespace ftbench::text {
namespace {

struct Failed {
  JsonTextError error;
};

JsonTextError error_of(std::string_view text) {
  try {
    parse_json_text<nlohmann::json>(text, [](const JsonTextError& e) { throw Failed{e}; });
  } catch (const Failed& f) {
    return f.error;
  }
  ADD_FAILURE() << "parsed: " << text;
  return {};
}

TEST(JsonParse, ParsesJson) {
  const auto j = parse_json_text<nlohmann::ordered_json>(
      R"({"b": [1, 2.5, "x"], "a": null})", [](const JsonTextError&) { throw Failed{}; });
  EXPECT_EQ(j.dump(), R"({"b":[1,2.5,"x"],"a":null})");
}

TEST(JsonParse, TellsEachWayAParseFailsApart) {
  const JsonTextError syntax = error_of("{\"a\": tru}");
  EXPECT_EQ(syntax.kind, JsonTextError::Kind::kSyntax);
  EXPECT_EQ(syntax.byte, 10u);
  EXPECT_EQ(syntax.reason,
            "syntax error while parsing value - invalid literal; last read: '\"a\": tru}'");

  const JsonTextError range = error_of(R"({"a": [1, 1e999]})");
  EXPECT_EQ(range.kind, JsonTextError::Kind::kOutOfRange);
  EXPECT_EQ(range.byte, 0u);
  EXPECT_EQ(range.reason, "a[1]: number out of range: 1e999");

  const JsonTextError deep = error_of(std::string(129, '[') + std::string(129, ']'));
  EXPECT_EQ(deep.kind, JsonTextError::Kind::kTooDeep);
  EXPECT_EQ(deep.byte, 128u);
  EXPECT_EQ(deep.reason, json_too_deep_message(128));
}

// nlohmann's parser stops at a NUL byte as at the end of the text: what follows it would be
// ignored (a report with garbage after a NUL read as valid; found by a review).
TEST(JsonParse, ANulByteIsASyntaxErrorWhereverItIs) {
  const JsonTextError after = error_of(std::string("{\"a\": 1}\0garbage", 16));
  EXPECT_EQ(after.kind, JsonTextError::Kind::kSyntax);
  EXPECT_EQ(after.byte, 9u);
  EXPECT_EQ(after.reason, "a NUL byte, which no JSON text holds");
  EXPECT_EQ(error_of(std::string("{\"a\":\0 1}", 9)).byte, 6u);
  EXPECT_EQ(error_of(std::string("\0", 1)).byte, 1u);
  // In a string, the parser's own words.
  const JsonTextError in_string = error_of(std::string("{\"a\": \"x\0y\"}", 12));
  EXPECT_EQ(in_string.kind, JsonTextError::Kind::kSyntax);
  EXPECT_NE(in_string.reason.find("(NUL) must be escaped"), std::string::npos) << in_string.reason;
}

// nlohmann keeps an object's last value for a key given twice, without a word; every file ftbench
// reads says one thing per key or is refused, naming the key's path and its byte (issue 39).
TEST(JsonParse, AKeyGivenTwiceIsRefusedWithItsPathAndByte) {
  const JsonTextError twice = error_of(R"({"a": 1, "b": {"c": 2, "c": 3}})");
  EXPECT_EQ(twice.kind, JsonTextError::Kind::kDuplicateKey);
  EXPECT_EQ(twice.byte, 24u);  // the second "c"'s opening quote, 1-based
  EXPECT_EQ(twice.reason, "b.c: a key given twice in one object");
  // Keys compare as the strings they are, escapes read.
  const JsonTextError escaped = error_of(R"({"a": 1, "\u0061": 2})");
  EXPECT_EQ(escaped.reason, "a: a key given twice in one object");
  EXPECT_EQ(escaped.byte, 10u);
  // A string value that looks like a key is not one.
  const JsonTextError after = error_of("{\"x\": \"\\\"y\\\": 1\",\n \"y\": 1, \"y\": 2}");
  EXPECT_EQ(after.reason, "y: a key given twice in one object");
  EXPECT_EQ(after.byte, 28u);
  // One key in each of two objects is no duplicate.
  EXPECT_EQ(parse_json_text<nlohmann::json>(R"([{"a": 1}, {"a": 2}])",
                                            [](const JsonTextError&) { throw Failed{}; })
                .size(),
            2u);
}

}  // namespace
}  // namespace ftbench::text
