// The spellings of a choice, written once: a table beside the enum gives each value the one
// name that the spec, a report, a catalog or a flag reads and writes. Naming a value, parsing a
// name and the "expected one of ..." list all read that table, so no switch repeats it.
//
//   inline constexpr text::Spelling<Billing> kBillingSpellings[] = {
//       {Billing::kPerSecond, "per-second"}, {Billing::kPerMinute, "per-minute"}, ...};
//   text::spelling_of(kBillingSpellings, Billing::kPerHour)   -> "per-hour"
//   text::parse_spelling(kBillingSpellings, "per-hour")       -> Billing::kPerHour
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ftbench::text {

template <typename E>
struct Spelling {
  E value;
  std::string_view name;
};

// The name of `value`, or nullopt where the table has none (a partial table: the dtypes a file
// format can hold, say).
template <typename E, std::size_t N>
constexpr std::optional<std::string_view> find_spelling(const Spelling<E> (&table)[N], E value) {
  for (const Spelling<E>& s : table) {
    if (s.value == value) return s.name;
  }
  return std::nullopt;
}

// The name of `value` in a table that names every value (tests hold each such table complete);
// "unknown" for a value outside the enum.
template <typename E, std::size_t N>
constexpr std::string_view spelling_of(const Spelling<E> (&table)[N], E value) {
  return find_spelling(table, value).value_or("unknown");
}

// The value spelled exactly `name`, or nullopt.
template <typename E, std::size_t N>
constexpr std::optional<E> parse_spelling(const Spelling<E> (&table)[N], std::string_view name) {
  for (const Spelling<E>& s : table) {
    if (s.name == name) return s.value;
  }
  return std::nullopt;
}

// Every name, in table order: what text::not_one_of_message lists.
template <typename E, std::size_t N>
std::vector<std::string> spellings(const Spelling<E> (&table)[N]) {
  std::vector<std::string> names;
  names.reserve(N);
  for (const Spelling<E>& s : table) names.emplace_back(s.name);
  return names;
}

}  // namespace ftbench::text
