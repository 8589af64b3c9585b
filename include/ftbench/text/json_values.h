// Figures as JSON values for every file and output ftbench writes. JSON has no NaN or infinity:
// an unknown figure (nullopt) or one that is not finite is written as null.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace ftbench::text {

inline nlohmann::ordered_json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

inline nlohmann::ordered_json optional_number(const std::optional<double>& value) {
  return value ? number_or_null(*value) : nlohmann::ordered_json(nullptr);
}

inline nlohmann::ordered_json optional_integer(const std::optional<int64_t>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace ftbench::text
