// Base weights from a Hugging Face Llama checkpoint folder (spec key model.checkpoint) into
// ftbench's model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "model/hf/checkpoint_layout.h"
#include "model/torch/llama.h"

namespace ftbench::hf {

struct HfLoadStats {
  int64_t tensors = 0;
  int64_t bytes = 0;  // bytes of tensor data read from the files
  int64_t files = 0;
  // Lower-case hex SHA-256 over every tensor, in name order, of: its name, NUL, dtype, NUL,
  // shape as "d0,d1,...", NUL, its first and last min(4096, size) bytes. Identifies the
  // weights without reading them twice: the same checkpoint anywhere gives the same value;
  // other weights of the same shape differ (unless they agree at every tensor's ends).
  std::string fingerprint;
};

// Copies every base weight of `dir` (model.safetensors, or the shards model.safetensors.index
// .json names) into `model`, which must have been built with the checkpoint's shape: each file
// is mapped and each tensor converted straight into the model's dtype and device slice (q, k,
// v into the fused qkv weight, gate and up into gate_up), shard by shard, so no second copy of
// the model is held in host memory. Refuses, naming the file and the tensor: a missing tensor,
// an unexpected one (except rotary inv_freq buffers), a wrong shape, a dtype other than F32,
// F16 or BF16; every tensor is checked before any is copied. The adapters are left as they are.
// A split base (model::LlamaImpl::base_units()) is filled unit by unit: each unit given memory,
// its tensors copied in, then handed to `filled` (which keeps a rank's slice and frees it).
HfLoadStats load_hf_weights(model::Llama& model, const std::string& dir,
                            const spec::ModelSpec& shape,
                            const std::function<void(int64_t unit)>& filled = {});

}  // namespace ftbench::hf
