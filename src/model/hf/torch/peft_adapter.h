// Trained adapters out of ftbench and back in, in Hugging Face's formats: a PEFT LoRA adapter
// folder (adapter_config.json + adapter_model.safetensors, what peft's PeftModel.from_pretrained
// loads onto the base model), and the merged model (W + alpha/r B A) as a transformers
// checkpoint folder that load_hf_weights, transformers and vLLM read.
//
// Rotary layout: ftbench's apply_rope (src/model/torch/layers.cpp) rotates the pairs (i, i +
// head_dim / 2) of each head, HF's rotate_half layout, and load_hf_weights copies q_proj and k_proj
// rows as they are. So the rows of ftbench's q and k weights, and of their LoRA B matrices, are
// HF's rows: nothing is permuted on the way out or in. (A model whose rotary used the interleaved
// Meta layout would have to permute them.)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/torch/llama.h"
#include "spec/checkpoint_config.h"
#include "spec/run_spec.h"
#include "util/error.h"
#include "util/io/output_file.h"

namespace ftbench::hf {

struct ExportStats {
  int64_t tensors = 0;  // tensors written
  int64_t bytes = 0;    // total size of the files written (JSON included)
};

// Writes `dir`: adapter_config.json (peft_adapter_config_json(lora, base_model)) and
// adapter_model.safetensors holding, for every adapted slice, its A [rank, in] and B [out, rank]
// under PEFT's key names (base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight, ...,
// base_model.model.lm_head.lora_B.weight), in the adapters' dtype as trained, with __metadata__
// {"format": "pt"}. `model` must have been built with `shape` and `lora` (std::invalid_argument
// otherwise, as for the other two functions' `shape`).
//
// Atomic: the files are written into a hidden temporary folder next to `dir` (.<name>.tmp-<pid>),
// each fsync'd, the folder fsync'd, then renamed to `dir` and the parent fsync'd. When `dir`
// exists: io::FileExistsError (exit 5) unless `replace`; with it, the old folder is moved aside and
// removed only once the new one is complete and in place. Any write error (full disk, no
// permission): std::runtime_error "<dir>: cannot export: <path>: <reason>" (strerror), the
// temporary folder removed and `dir` as it was. Writes go through io::write_all, kind "export"
// (FTBENCH_INJECT_WRITE_FAILURE).
ExportStats write_peft_adapter(model::Llama& model, const spec::ModelSpec& shape,
                               const spec::LoraSpec& lora, const std::string& base_model,
                               const std::string& dir, bool replace);

// Reads the PEFT adapter folder `dir` into the model's adapters (converted to the adapter
// parameters' dtype and device). The adapter's config must ask for `lora`'s rank, alpha and
// targets (dropout, a training setting, is not compared), and the model must have been built
// with `lora`: else spec::HfCheckpointError naming what differs. Every key of
// adapter_model.safetensors is checked before any is copied, so a refused adapter leaves the model
// as it was: an unexpected key, a targeted module without its lora_A or lora_B, a wrong shape, a
// dtype other than F32, F16 or BF16 -> spec::HfCheckpointError naming the file and the key. With
// lm_head targeted, base_model.model.lm_head.base_layer.weight, which peft's save_pretrained adds
// then, replaces the model's LM head weight (with tied embeddings, the embedding too), as
// PeftModel.from_pretrained replaces it.
void load_peft_adapter(model::Llama& model, const spec::ModelSpec& shape,
                       const spec::LoraSpec& lora, const std::string& dir);

// Writes `dir` as a transformers checkpoint of the merged model: config.json (hf_config_json,
// torch_dtype the base dtype) and the weights under HF's names in the base dtype, every adapted
// linear merged as W + (alpha / rank) B A (LoraLinearImpl::merged_slice). One model.safetensors
// when everything fits in `max_shard_bytes`, else model-00001-of-0000N.safetensors shards of at
// most that many tensor bytes each (a larger tensor gets a shard of its own) and
// model.safetensors.index.json ({"metadata": {"total_size": tensor bytes}, "weight_map": {name:
// file}}), as transformers' save_pretrained writes them. Tied embeddings with an adapter on the
// output layer are written untied (lm_head.weight merged, the embedding as it was, config
// tie_word_embeddings false): what the model with its adapter computes, where merging into the
// shared tensor would change the input embedding too. Streams: one tensor at a
// time is merged, moved to the host and written, so host memory holds one tensor, not a second
// copy of the model. Same atomic and exists rules, and errors, as write_peft_adapter.
// `source_checkpoint` (the folder the base weights came from; "" for none): its config.json's
// bos/eos/pad token ids and max_position_embeddings go into the written config.json, and its
// generation_config.json and tokenizer files (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json, tokenizer.model, added_tokens.json, chat_template.jinja) are copied,
// so that the merged folder loads and generates as the original.
// A split base (model::LlamaImpl::base_gathers()): each unit is gathered while its tensors are
// written, so every other rank of the group must follow the pass at the same time
// (LlamaImpl::follow_pass(GatherPass::kMergedExport)); a failure here still makes every gather.
ExportStats write_merged_hf(model::Llama& model, const spec::ModelSpec& shape,
                            const std::string& dir, bool replace,
                            int64_t max_shard_bytes = 5'000'000'000,
                            const std::string& source_checkpoint = "");

}  // namespace ftbench::hf
