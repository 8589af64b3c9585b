// Base weights from a Hugging Face Llama checkpoint folder into ftbench's model (issue 7; the
// spec key that asks for it, model.checkpoint, is not wired into `run` yet).
#pragma once

#include <cstdint>
#include <string>

#include "ftbench/model/hf_config.h"
#include "ftbench/model/llama.h"

namespace ftbench::model {

struct HfLoadStats {
  int64_t tensors = 0;
  int64_t bytes = 0;  // bytes of tensor data read from the files
  int64_t files = 0;
};

// Copies every base weight of `dir` (model.safetensors, or the shards model.safetensors.index
// .json names) into `model`, which must have been built with the checkpoint's shape: each file
// is mapped and each tensor converted straight into the model's dtype and device slice (q, k,
// v into the fused qkv weight, gate and up into gate_up), shard by shard, so no second copy of
// the model is held in host memory. Refuses, naming the file and the tensor: a missing tensor,
// an unexpected one (except rotary inv_freq buffers), a wrong shape, a dtype other than F32,
// F16 or BF16. The adapters are left as they are.
HfLoadStats load_hf_weights(Llama& model, const std::string& dir, const spec::ModelSpec& shape);

}  // namespace ftbench::model
