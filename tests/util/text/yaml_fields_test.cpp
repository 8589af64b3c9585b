// The one strict reading of YAML values (util/text/yaml_fields.h) that the run spec, the
// catalog and the datasheets share: each kind's value and each problem, word for word.
#include "util/text/yaml_fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ftbench::text {
namespace {

YAML::Node value_of(const std::string& yaml) { return YAML::Load("k: " + yaml)["k"]; }

template <class T>
std::string problem(const YamlValue<T>& read) {
  EXPECT_FALSE(read.value.has_value());
  return read.problem;
}

TEST(YamlValues, IntegersAreDecimalPlainScalarsInRange) {
  EXPECT_EQ(read_yaml_int(value_of("42")).value, 42);
  EXPECT_EQ(read_yaml_int(value_of("-7")).value, -7);
  EXPECT_EQ(read_yaml_int(value_of("+5")).value, 5);
  EXPECT_EQ(problem(read_yaml_int(value_of("2.5"))), "expected an integer, found \"2.5\"");
  EXPECT_EQ(problem(read_yaml_int(value_of("0x10"))), "expected an integer, found \"0x10\"");
  EXPECT_EQ(problem(read_yaml_int(value_of("'8'"))),
            "expected an integer, found the quoted string \"8\"");
  EXPECT_EQ(problem(read_yaml_int(value_of("[1]"))), "expected an integer, found a list");
  EXPECT_EQ(problem(read_yaml_int(value_of("9223372036854775808"))),
            "expected an integer in the 64-bit range, found \"9223372036854775808\"");
  EXPECT_EQ(read_yaml_int(value_of("9223372036854775807")).value, INT64_MAX);
}

TEST(YamlValues, UnsignedIntegersSayANegativeValueAsSuch) {
  EXPECT_EQ(read_yaml_uint(value_of("18446744073709551615")).value, UINT64_MAX);
  EXPECT_EQ(problem(read_yaml_uint(value_of("-3"))), "must be an integer >= 0, found -3");
  EXPECT_EQ(problem(read_yaml_uint(value_of("18446744073709551616"))),
            "expected an integer below 2^64, found \"18446744073709551616\"");
  EXPECT_EQ(problem(read_yaml_uint(value_of("1.5"))), "expected an integer >= 0, found \"1.5\"");
  EXPECT_EQ(problem(read_yaml_uint(value_of("{}"))), "expected an integer >= 0, found a mapping");
}

TEST(YamlValues, NumbersAreFiniteAndANumberThatIsNotIsSaidSo) {
  EXPECT_EQ(read_yaml_number(value_of("2.5e-3")).value, 2.5e-3);
  EXPECT_EQ(read_yaml_number(value_of("-1")).value, -1.0);
  EXPECT_EQ(problem(read_yaml_number(value_of("fast"))), "expected a number, found \"fast\"");
  EXPECT_EQ(problem(read_yaml_number(value_of("\"1\""))),
            "expected a number, found the quoted string \"1\"");
  EXPECT_EQ(problem(read_yaml_number(value_of("1e999"))),
            "expected a finite number, found \"1e999\"");
  EXPECT_EQ(problem(read_yaml_number(value_of(".inf"))),
            "expected a finite number, found \".inf\"");
  EXPECT_EQ(problem(read_yaml_number(value_of(".NaN"))),
            "expected a finite number, found \".NaN\"");
}

TEST(YamlValues, BooleansAreTrueOrFalseOnly) {
  EXPECT_EQ(read_yaml_bool(value_of("true")).value, true);
  EXPECT_EQ(read_yaml_bool(value_of("false")).value, false);
  for (const char* other : {"yes", "on", "True", "1"}) {
    EXPECT_EQ(problem(read_yaml_bool(value_of(other))),
              "expected true or false, found \"" + std::string(other) + "\"");
  }
}

TEST(YamlValues, StringsAreScalarsInUtf8AndSayWhyUtf8) {
  EXPECT_EQ(read_yaml_string(value_of("'8'"), "why").value, "8");
  EXPECT_EQ(read_yaml_string(value_of("12"), "why").value, "12");
  EXPECT_EQ(problem(read_yaml_string(value_of("~"), "why")), "expected a string, found null");
  // Raw bytes, not YAML's "\xFF" escape (which is U+00FF, written as UTF-8).
  EXPECT_EQ(problem(read_yaml_string(value_of("a\xFF"
                                              "b"),
                                     "the report is JSON")),
            "expected UTF-8 text, found \"a\\xFFb\" (byte 2 is not UTF-8; the report is JSON)");
}

TEST(YamlValues, StringListsNameTheItemThatIsWrong) {
  EXPECT_EQ(read_yaml_string_list(value_of("[q, k]"), "why").value,
            (std::vector<std::string>{"q", "k"}));
  EXPECT_EQ(read_yaml_string_list(value_of("[]"), "why").value, std::vector<std::string>{});
  const YamlValue<std::vector<std::string>> scalar = read_yaml_string_list(value_of("q"), "why");
  EXPECT_EQ(problem(scalar), "expected a list of strings, found \"q\"");
  EXPECT_FALSE(scalar.at_item);

  const YAML::Node list = YAML::Load("k:\n  - q\n  - [x]\n  - {}\n")["k"];
  const YamlValue<std::vector<std::string>> nested = read_yaml_string_list(list, "why");
  EXPECT_EQ(problem(nested), "expected a list of strings, found an item that is a list");
  ASSERT_TRUE(nested.at_item);
  EXPECT_EQ(line_of(nested.at), 3);  // the first wrong item's line, not the key's

  const YamlValue<std::vector<std::string>> bytes =
      read_yaml_string_list(value_of("[ok, \xC3]"), "JSON");
  EXPECT_EQ(problem(bytes), "expected UTF-8 text, found \"\\xC3\" (byte 1 is not UTF-8; JSON)");
  EXPECT_TRUE(bytes.at_item);
}

TEST(YamlValues, TheCatalogsFieldsSayTheSameAtTheKeysLine) {
  Issues issues("c.yaml");
  const YAML::Node map =
      YAML::Load("n: 9223372036854775808\np: .inf\nq: -2\ns: [a, [b]]\nt: 3\nu: 0.5\n");
  Fields f(issues, map, "x", {"n", "p", "q", "s", "t", "u"});
  EXPECT_FALSE(f.integer("n", 0).has_value());
  EXPECT_FALSE(f.positive_number("p").has_value());
  EXPECT_FALSE(f.positive_number("q").has_value());
  EXPECT_FALSE(f.string_list("s").has_value());
  EXPECT_FALSE(f.integer("t", 4).has_value());
  EXPECT_EQ(f.positive_number("u"), 0.5);
  EXPECT_EQ(issues.text(),
            "c.yaml:1: x.n: expected an integer in the 64-bit range, found "
            "\"9223372036854775808\"\n"
            "c.yaml:2: x.p: expected a finite number > 0, found \".inf\"\n"
            "c.yaml:3: x.q: expected a finite number > 0, found \"-2\"\n"
            "c.yaml:4: x.s: expected a list of strings, found an item that is a list\n"
            "c.yaml:5: x.t: must be an integer >= 4, found 3");
}

}  // namespace
}  // namespace ftbench::text
