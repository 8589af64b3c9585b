// Numbers from the text of a YAML scalar or a flag: locale-independent (std::from_chars) and
// strict, decimal only, so YAML 1.1's 0x / 0o / 1_000 forms and "1e3" for an integer are
// refused rather than guessed at. A leading '+' is allowed ("+5"), "+-5" is not. The run spec
// and the catalog read their numbers through these.
#pragma once

#include <cstdint>
#include <string_view>
#include <system_error>

namespace ftbench::text {

// The whole of `s` as an integer: std::errc() on success, else invalid_argument (not an
// integer) or result_out_of_range.
std::errc parse_int(std::string_view s, int64_t& out);
std::errc parse_uint(std::string_view s, uint64_t& out);  // no sign: "-0" is refused

// A finite double: result_out_of_range beyond the double range or for inf/nan.
std::errc parse_double(std::string_view s, double& out);

// Any double, YAML's .inf / +.inf / -.inf / .nan spellings (any case) included, and values
// beyond the double range as infinity, so that a caller can say "not finite" rather than "not a
// number"; false when `s` is not a number.
bool parse_any_double(std::string_view s, double& out);

}  // namespace ftbench::text
