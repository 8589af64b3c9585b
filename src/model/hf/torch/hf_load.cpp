#include "model/hf/torch/hf_load.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/utils.h>

#include "model/torch/safetensors_dtype.h"
#include "spec/canonical.h"
#include "spec/checkpoint_config.h"
#include "util/io/safetensors.h"
#include "util/io/sha256.h"

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

// A tensor of the checkpoint, checked, with where it goes.
struct Planned {
  const io::SafetensorsReader* reader = nullptr;
  const io::TensorInfo* info = nullptr;
  Destination destination;
  int64_t unit = -1;  // the split base's unit it belongs to; -1: none (a norm, or a whole base)
};

// Rows of `planned`'s destination, converted from the mapped bytes in one copy.
void copy_in(const Planned& planned) {
  const io::TensorInfo& t = *planned.info;
  const at::Tensor source =
      at::from_blob(const_cast<void*>(planned.reader->tensor_data(t)), t.shape,
                    at::TensorOptions().dtype(model::weight_scalar_type(t.dtype)));
  at::Tensor target = planned.destination.tensor;
  if (t.shape.size() == 2) target = target.narrow(0, planned.destination.first_row, t.shape[0]);
  target.copy_(source);
}

// The checkpoint's files in the order transformers reads them, and the index's file of each
// tensor (empty for a single model.safetensors).
std::pair<std::vector<std::string>, std::map<std::string, std::string>> checkpoint_files(
    const std::string& dir) {
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    std::map<std::string, std::string> shard_of =
        parse_shard_index(spec::read_hf_file(index_path.string()), index_path.string());
    // In file-name order (model-00001-of-0000N first).
    std::set<std::string> names;
    for (const auto& [name, file] : shard_of) names.insert(file);
    return {std::vector<std::string>(names.begin(), names.end()), shard_of};
  }
  if (fs::exists(fs::path(dir) / "model.safetensors", ec)) return {{"model.safetensors"}, {}};
  throw spec::HfCheckpointError(fmt::format(
      "{}: no model.safetensors or model.safetensors.index.json (a Hugging Face checkpoint "
      "folder in safetensors format is expected)",
      dir));
}

// Every file of a checkpoint mapped and every tensor checked against the model before any is
// copied: where each goes, the statistics and the weights fingerprint's records.
class CheckpointPlan {
 public:
  CheckpointPlan(Llama& model, const spec::ModelSpec& shape)
      : model_(model),
        shape_(shape),
        where_(destinations(model, shape)),
        units_(model->base_units()) {
    for (const HfTensor& t : hf_llama_tensors(shape)) {
      expected_[t.name] = t.shape;
      expected_order_.push_back(t.name);
    }
  }

  void add_file(const std::string& path, const std::string& file,
                const std::map<std::string, std::string>& shard_of) {
    try {
      readers_.push_back(std::make_unique<io::SafetensorsReader>(path));
    } catch (const io::SafetensorsError& e) {
      throw spec::HfCheckpointError(e.what());
    }
    ++stats_.files;
    for (const io::TensorInfo& t : readers_.back()->index().tensors) {
      if (t.name.size() >= 20 && t.name.rfind("rotary_emb.inv_freq") == t.name.size() - 19) {
        continue;  // a buffer older transformers saved; recomputed from rope_theta
      }
      // Some exporters write the output head of a tied model too; transformers ties it to the
      // embedding and never reads it, and so does ftbench.
      if (shape_.tie_embeddings && t.name == "lm_head.weight") continue;
      add_tensor(path, file, shard_of, t);
    }
  }

  // Refuses a checkpoint that lacks tensors the model needs.
  void check_complete(const std::string& dir) const {
    std::vector<std::string> missing;
    for (const std::string& name : expected_order_) {
      if (!loaded_.count(name)) missing.push_back(name);
    }
    if (missing.empty()) return;
    const size_t shown = std::min<size_t>(missing.size(), 4);
    throw spec::HfCheckpointError(fmt::format(
        "{}: {} tensor{} missing: {}{}", dir, missing.size(), missing.size() == 1 ? "" : "s",
        fmt::join(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
        missing.size() > shown ? ", ..." : ""));
  }

  // A whole base: file by file, in the order the files hold them. A split base: unit by unit,
  // each whole only while its tensors are copied in, then handed to `filled`. A file is unmapped
  // once its last tensor is in, so that its pages leave the process's resident memory.
  void copy(const std::function<void(int64_t unit)>& filled) {
    torch::NoGradGuard no_grad;
    std::map<const io::SafetensorsReader*, int64_t> left;
    for (const Planned& planned : plan_) ++left[planned.reader];
    auto copy_one = [&](const Planned& planned) {
      copy_in(planned);
      if (--left[planned.reader] > 0) return;
      for (std::unique_ptr<io::SafetensorsReader>& r : readers_) {
        if (r.get() == planned.reader) r.reset();
      }
    };
    for (const Planned& planned : plan_) {
      if (planned.unit < 0) copy_one(planned);
    }
    for (std::size_t u = 0; u < units_.size(); ++u) {
      units_[u].allocate();
      units_[u].zero_gaps();
      for (const Planned& planned : plan_) {
        if (planned.unit == static_cast<int64_t>(u)) copy_one(planned);
      }
      if (filled) filled(static_cast<int64_t>(u));
    }
  }

  HfLoadStats stats() const {
    HfLoadStats out = stats_;
    std::string all;
    for (const auto& [name, record] : fingerprint_records_) all += record;
    out.fingerprint = io::sha256_hex(all);
    return out;
  }

 private:
  void add_tensor(const std::string& path, const std::string& file,
                  const std::map<std::string, std::string>& shard_of, const io::TensorInfo& t) {
    const auto dest = where_.find(t.name);
    if (dest == where_.end()) {
      throw spec::HfCheckpointError(fmt::format(
          "{}: unexpected tensor \"{}\": not part of a Llama of this config.json's shape", path,
          t.name));
    }
    if (!shard_of.empty()) {
      const auto listed = shard_of.find(t.name);
      if (listed == shard_of.end()) {
        throw spec::HfCheckpointError(fmt::format(
            "{}: tensor \"{}\" is not in the index (model.safetensors.index.json)", path, t.name));
      }
      if (listed->second != file) {
        throw spec::HfCheckpointError(fmt::format("{}: tensor \"{}\" is in {}, the index says {}",
                                                  path, t.name, file, listed->second));
      }
    }
    if (!loaded_.insert(t.name).second) {
      throw spec::HfCheckpointError(fmt::format("{}: tensor \"{}\" appears twice", path, t.name));
    }
    const std::vector<int64_t>& want = expected_.at(t.name);
    if (t.shape != want) {
      throw spec::HfCheckpointError(
          fmt::format("{}: tensor \"{}\" has shape [{}], config.json implies [{}]", path, t.name,
                      fmt::join(t.shape, ", "), fmt::join(want, ", ")));
    }
    if (model::weight_scalar_type(t.dtype) == at::ScalarType::Undefined) {
      throw spec::HfCheckpointError(
          fmt::format("{}: tensor \"{}\" is {}; expected F32, F16 or BF16", path, t.name, t.dtype));
    }
    plan_.push_back(
        {readers_.back().get(), &t, dest->second, model_->unit_of(dest->second.tensor)});
    const auto* bytes = static_cast<const char*>(readers_.back()->tensor_data(t));
    const size_t size = static_cast<size_t>(t.end - t.begin);
    const size_t edge = std::min<size_t>(size, 4096);
    std::string& record = fingerprint_records_[t.name];
    record =
        fmt::format("{}{}{}{}{}{}", t.name, '\0', t.dtype, '\0', fmt::join(t.shape, ","), '\0');
    record.append(bytes, edge);
    record.append(bytes + size - edge, edge);
    ++stats_.tensors;
    stats_.bytes += static_cast<int64_t>(t.end - t.begin);
  }

  Llama& model_;
  const spec::ModelSpec& shape_;
  std::map<std::string, std::vector<int64_t>> expected_;
  std::vector<std::string> expected_order_;  // as hf_llama_tensors lists them
  std::map<std::string, Destination> where_;
  std::vector<model::BaseUnit>& units_;
  std::vector<std::unique_ptr<io::SafetensorsReader>> readers_;
  std::vector<Planned> plan_;
  std::set<std::string> loaded_;
  std::map<std::string, std::string> fingerprint_records_;  // by name: sorted
  HfLoadStats stats_;
};

}  // namespace

HfLoadStats load_hf_weights(Llama& model, const std::string& dir, const spec::ModelSpec& shape,
                            const std::function<void(int64_t unit)>& filled) {
  const auto [files, shard_of] = checkpoint_files(dir);
  CheckpointPlan plan(model, shape);
  for (const std::string& file : files) {
    plan.add_file((fs::path(dir) / file).string(), file, shard_of);
  }
  plan.check_complete(dir);
  plan.copy(filled);
  return plan.stats();
}

}  // namespace ftbench::hf
