#include "ftbench/hf/hf_load.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/utils.h>

#include "ftbench/io/safetensors.h"
#include "ftbench/model/safetensors_dtype.h"
#include "ftbench/spec/canonical.h"

namespace ftbench::hf {
using model::DecoderLayer;
using model::Llama;
namespace fs = std::filesystem;
namespace {

// Where an HF tensor goes: rows [first_row, first_row + rows) of one of our parameters.
struct Destination {
  at::Tensor tensor;
  int64_t first_row = 0;
};

std::map<std::string, Destination> destinations(Llama& model, const spec::ModelSpec& m) {
  const int64_t head_dim = m.dim / m.n_heads;
  const int64_t kv_dim = m.n_kv_heads * head_dim;
  std::map<std::string, Destination> out;
  out["model.embed_tokens.weight"] = {model->embedding, 0};
  for (size_t i = 0; i < model->layers.size(); ++i) {
    DecoderLayer& layer = model->layers[i];
    const std::string p = fmt::format("model.layers.{}.", i);
    out[p + "self_attn.q_proj.weight"] = {layer->qkv->weight, 0};
    out[p + "self_attn.k_proj.weight"] = {layer->qkv->weight, m.dim};
    out[p + "self_attn.v_proj.weight"] = {layer->qkv->weight, m.dim + kv_dim};
    out[p + "self_attn.o_proj.weight"] = {layer->o->weight, 0};
    out[p + "mlp.gate_proj.weight"] = {layer->gate_up->weight, 0};
    out[p + "mlp.up_proj.weight"] = {layer->gate_up->weight, m.ffn_dim};
    out[p + "mlp.down_proj.weight"] = {layer->down->weight, 0};
    out[p + "input_layernorm.weight"] = {layer->attn_norm->weight, 0};
    out[p + "post_attention_layernorm.weight"] = {layer->mlp_norm->weight, 0};
  }
  out["model.norm.weight"] = {model->final_norm->weight, 0};
  if (!m.tie_embeddings) out["lm_head.weight"] = {model->lm_head->weight, 0};
  return out;
}

}  // namespace

HfLoadStats load_hf_weights(Llama& model, const std::string& dir, const spec::ModelSpec& shape) {
  const std::vector<HfTensor> expected = hf_llama_tensors(shape);
  std::map<std::string, std::vector<int64_t>> expected_shape;
  for (const HfTensor& t : expected) expected_shape[t.name] = t.shape;
  std::map<std::string, Destination> where = destinations(model, shape);

  // The files, each with the tensors it is to hold (from the index) or holds (one file).
  std::vector<std::string> files;
  std::map<std::string, std::string> shard_of;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    shard_of = parse_shard_index(read_hf_file(index_path.string()), index_path.string());
    // In file-name order (model-00001-of-0000N first), as transformers reads them.
    std::set<std::string> names;
    for (const auto& [name, file] : shard_of) names.insert(file);
    files.assign(names.begin(), names.end());
  } else if (fs::exists(fs::path(dir) / "model.safetensors", ec)) {
    files.push_back("model.safetensors");
  } else {
    throw HfCheckpointError(fmt::format(
        "{}: no model.safetensors or model.safetensors.index.json (a Hugging Face checkpoint "
        "folder in safetensors format is expected)",
        dir));
  }

  HfLoadStats stats;
  std::set<std::string> loaded;
  std::map<std::string, std::string> fingerprint_records;  // by name: sorted
  torch::NoGradGuard no_grad;
  for (const std::string& file : files) {
    const std::string path = (fs::path(dir) / file).string();
    std::unique_ptr<io::SafetensorsReader> reader;
    try {
      reader = std::make_unique<io::SafetensorsReader>(path);
    } catch (const io::SafetensorsError& e) {
      throw HfCheckpointError(e.what());
    }
    ++stats.files;
    for (const io::TensorInfo& t : reader->index().tensors) {
      if (t.name.size() >= 20 && t.name.rfind("rotary_emb.inv_freq") == t.name.size() - 19) {
        continue;  // a buffer older transformers saved; recomputed from rope_theta
      }
      // Some exporters write the output head of a tied model too; transformers ties it to the
      // embedding and never reads it, and so does ftbench.
      if (shape.tie_embeddings && t.name == "lm_head.weight") continue;
      const auto dest = where.find(t.name);
      if (dest == where.end()) {
        throw HfCheckpointError(fmt::format(
            "{}: unexpected tensor \"{}\": not part of a Llama of this config.json's shape", path,
            t.name));
      }
      if (!shard_of.empty()) {
        const auto listed = shard_of.find(t.name);
        if (listed == shard_of.end()) {
          throw HfCheckpointError(
              fmt::format("{}: tensor \"{}\" is not in the index (model.safetensors.index.json)",
                          path, t.name));
        }
        if (listed->second != file) {
          throw HfCheckpointError(fmt::format("{}: tensor \"{}\" is in {}, the index says {}", path,
                                              t.name, file, listed->second));
        }
      }
      if (!loaded.insert(t.name).second) {
        throw HfCheckpointError(fmt::format("{}: tensor \"{}\" appears twice", path, t.name));
      }
      const std::vector<int64_t>& want = expected_shape.at(t.name);
      if (t.shape != want) {
        throw HfCheckpointError(
            fmt::format("{}: tensor \"{}\" has shape [{}], config.json implies [{}]", path, t.name,
                        fmt::join(t.shape, ", "), fmt::join(want, ", ")));
      }
      const at::ScalarType dtype = model::weight_scalar_type(t.dtype);
      if (dtype == at::ScalarType::Undefined) {
        throw HfCheckpointError(fmt::format("{}: tensor \"{}\" is {}; expected F32, F16 or BF16",
                                            path, t.name, t.dtype));
      }
      // A view of the mapped bytes, converted into the destination rows in one copy.
      const at::Tensor source = at::from_blob(const_cast<void*>(reader->tensor_data(t)), t.shape,
                                              at::TensorOptions().dtype(dtype));
      at::Tensor target = dest->second.tensor;
      if (t.shape.size() == 2) target = target.narrow(0, dest->second.first_row, t.shape[0]);
      target.copy_(source);
      const auto* bytes = static_cast<const char*>(reader->tensor_data(t));
      const size_t size = static_cast<size_t>(t.end - t.begin);
      const size_t edge = std::min<size_t>(size, 4096);
      std::string& record = fingerprint_records[t.name];
      record =
          fmt::format("{}{}{}{}{}{}", t.name, '\0', t.dtype, '\0', fmt::join(t.shape, ","), '\0');
      record.append(bytes, edge);
      record.append(bytes + size - edge, edge);
      ++stats.tensors;
      stats.bytes += static_cast<int64_t>(t.end - t.begin);
    }
  }
  std::vector<std::string> missing;
  for (const HfTensor& t : expected) {
    if (!loaded.count(t.name)) missing.push_back(t.name);
  }
  if (!missing.empty()) {
    const size_t shown = std::min<size_t>(missing.size(), 4);
    throw HfCheckpointError(fmt::format(
        "{}: {} tensor{} missing: {}{}", dir, missing.size(), missing.size() == 1 ? "" : "s",
        fmt::join(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
        missing.size() > shown ? ", ..." : ""));
  }
  std::string all;
  for (const auto& [name, record] : fingerprint_records) all += record;
  stats.fingerprint = spec::sha256_hex(all);
  return stats;
}

}  // namespace ftbench::hf
