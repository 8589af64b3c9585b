// LibTorch's element types under the names safetensors files give them ("F32", "BF16", ...):
// one table for the checkpoint writer, the PEFT export and the Hugging Face loaders.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <c10/core/ScalarType.h>

namespace ftbench::model {

// "F32", "BF16", "F16", "F64", "I64" or "U8"; nullopt for another type.
std::optional<std::string> safetensors_dtype_name(at::ScalarType type);

// The floating-point types a model's weights may be stored in: F32, BF16 and F16; Undefined
// for any other name.
at::ScalarType weight_scalar_type(std::string_view safetensors_dtype);

}  // namespace ftbench::model
