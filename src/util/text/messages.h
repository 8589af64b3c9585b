// The wording of input errors, shared by every reader of user files (spec, catalog) so that
// messages read the same everywhere: `expected one of a, b, found "c"; did you mean "b"?`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Exception;
class Node;
}  // namespace YAML

namespace ftbench::text {

// Length in bytes of the well-formed UTF-8 character at s[i] (no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 when the bytes there are not one (i < s.size()).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// The index of the first byte of `s` that does not start a well-formed UTF-8 character, or
// nullopt when all of `s` is UTF-8.
std::optional<std::size_t> first_invalid_utf8(std::string_view s);

// `s` as it may reach a terminal: what a terminal would act on or mangle is written visibly
// instead. C0 controls (tab and line feed included) and DEL as \xNN ("\x1B[2J"), bytes that
// are not UTF-8 as \xNN, C1 controls (U+0080-U+009F; U+009B is CSI to some terminals) and the
// bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) as \uNNNN.
// Every other character, UTF-8 included, is kept. Every text printer of strings from files
// (tables, summaries, warnings, errors) goes through this or quoted().
std::string printable(std::string_view s);

// "\"text\"", escaped as printable() does, and text longer than 200 bytes is cut to its first
// 160 with the full length said: a hostile file's value must not flood or garble the error that
// quotes it.
std::string quoted(std::string_view s);

// "a, b, c".
std::string join(const std::vector<std::string>& items);

// `unknown <what> "got"; did you mean "x"?`, or `...; valid <what>s: a, b` without a close name.
std::string unknown_name_message(std::string_view what, std::string_view got,
                                 const std::vector<std::string>& known);

// `expected one of a, b, found "got"` with a "did you mean" hint when one is close.
std::string not_one_of_message(std::string_view got, const std::vector<std::string>& allowed);

// "expected a whole number from LO to HI, found FOUND": the one wording of a bounded whole
// number (command-line flags, launcher variables), FOUND as printable() writes it, cut to its
// first 48 bytes with its length said when longer than 64.
std::string whole_number_message(int64_t lo, int64_t hi, std::string_view found);

// What a YAML node is, for "expected X, found Y": null, a quoted scalar (called out as "the
// quoted string" when it was quoted in the file, since `"8"` is a string although it looks like
// the integer 8), a list, a mapping.
std::string describe(const YAML::Node& node);

// yaml-cpp's reason for a parse error, in words a user can act on: its depth limit answers
// "bad file", which here reads "lists or mappings nested too deeply".
std::string yaml_error_text(const YAML::Exception& e);

}  // namespace ftbench::text
