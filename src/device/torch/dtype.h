// The element types a spec names (model.dtype, a lora.dtype other than "base", logits --dtype),
// named once for the model, the backend's support check and the checkpoint's tensors.
#pragma once

#include <string>

#include <c10/core/ScalarType.h>

namespace ftbench::device {

// bf16 -> kBFloat16, fp16 -> kHalf, fp32 -> kFloat; std::invalid_argument for another name.
at::ScalarType scalar_type_of(const std::string& dtype);

}  // namespace ftbench::device
