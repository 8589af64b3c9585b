// Figures as JSON values for every file and output ftbench writes. JSON has no NaN or infinity:
// an unknown figure (nullopt) or one that is not finite is written as null.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

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

// An optional value as JSON: null when empty, and by the rules above for a number.
template <typename T>
struct nlohmann::adl_serializer<std::optional<T>> {
  template <typename Json>
  static void to_json(Json& j, const std::optional<T>& value) {
    if constexpr (std::is_floating_point_v<T>) {
      j = value && std::isfinite(*value) ? Json(*value) : Json(nullptr);
    } else {
      j = value ? Json(*value) : Json(nullptr);
    }
  }
};

// Writes the listed members of `object` into the JSON object `json`, each under its own name,
// in the order listed: a key can not drift from the member it holds. A member may be anything
// nlohmann writes, an optional (above) or a type with its own to_json. (nlohmann's
// NLOHMANN_JSON_TO names its arguments nlohmann_json_j and nlohmann_json_t.)
#define FTBENCH_JSON_MEMBERS(json, object, ...)                              \
  [](auto& nlohmann_json_j, const auto& nlohmann_json_t) {                   \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__)) \
  }(json, object)

// The JSON form of a struct written as FTBENCH_JSON_MEMBERS writes it: nlohmann's
// NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE for ordered_json and for writing only (nlohmann 3.11.2,
// Debian 12's, defines that macro for nlohmann::json alone). Used in the struct's namespace, so
// that nlohmann finds the function.
#define FTBENCH_JSON_WRITER(Type, ...)                                    \
  inline void to_json(nlohmann::ordered_json& json, const Type& object) { \
    json = nlohmann::ordered_json::object();                              \
    FTBENCH_JSON_MEMBERS(json, object, __VA_ARGS__);                      \
  }
