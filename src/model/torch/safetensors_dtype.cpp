#include "model/torch/safetensors_dtype.h"

#include <array>
#include <utility>

namespace ftbench::model {
namespace {

constexpr std::array<std::pair<at::ScalarType, std::string_view>, 6> kNames = {{
    {at::kFloat, "F32"},
    {at::kBFloat16, "BF16"},
    {at::kHalf, "F16"},
    {at::kDouble, "F64"},
    {at::kLong, "I64"},
    {at::kByte, "U8"},
}};

}  // namespace

std::optional<std::string> safetensors_dtype_name(at::ScalarType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return std::string(name);
  }
  return std::nullopt;
}

at::ScalarType weight_scalar_type(std::string_view safetensors_dtype) {
  for (const auto& [t, name] : kNames) {
    const bool weight_type = t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
    if (weight_type && name == safetensors_dtype) return t;
  }
  return at::ScalarType::Undefined;
}

}  // namespace ftbench::model
