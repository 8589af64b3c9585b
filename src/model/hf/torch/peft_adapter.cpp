#include "model/hf/torch/peft_adapter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "model/hf/checkpoint_layout.h"
#include "model/hf/peft_config.h"
#include "model/torch/safetensors_dtype.h"
#include "spec/checkpoint_config.h"
#include "util/io/output_file.h"
#include "util/io/remove_tree.h"
#include "util/io/safetensors.h"
#include "util/text/spellings.h"

namespace ftbench::hf {
using model::DecoderLayer;
using model::LinearSlice;
using model::Llama;
using model::LoraConfig;
using model::LoraLinear;
using model::LoraLinearImpl;
namespace fs = std::filesystem;
namespace {

constexpr const char* kAdapterConfig = "adapter_config.json";
constexpr const char* kAdapterWeights = "adapter_model.safetensors";
// PeftModelForCausalLM -> LoraModel -> the transformers model: the prefix of every saved key.
constexpr const char* kPeftPrefix = "base_model.model.";
constexpr const char* kWriteKind = "export";

// One linear slice an adapter may sit on, under its HF module path.
struct AdapterSlot {
  std::string module;  // "model.layers.0.self_attn.q_proj", ..., "lm_head"
  LoraLinearImpl* linear = nullptr;
  size_t slice = 0;
  std::string slice_name;  // q, k, v, o, gate, up, down, output
  int64_t out_features = 0;
  int64_t in_features = 0;
};

// Every slot in the order PEFT's state_dict lists them: per layer q, k, v, o, gate, up, down,
// then lm_head.
std::vector<AdapterSlot> adapter_slots(Llama& model) {
  std::vector<AdapterSlot> slots;
  auto add = [&](const std::string& prefix, LoraLinearImpl& linear) {
    for (size_t i = 0; i < linear.slices().size(); ++i) {
      const LinearSlice& s = linear.slices()[i];
      slots.push_back({prefix + hf_module_name(s.name), &linear, i, s.name, s.out_features,
                       linear.weight.size(1)});
    }
  };
  for (size_t i = 0; i < model->layers.size(); ++i) {
    DecoderLayer& layer = model->layers[i];
    const std::string p = fmt::format("model.layers.{}.", i);
    add(p + "self_attn.", *layer->qkv);
    add(p + "self_attn.", *layer->o);
    add(p + "mlp.", *layer->gate_up);
    add(p + "mlp.", *layer->down);
  }
  add("", *model->lm_head);
  return slots;
}

// The caller's shape must be the model's: it names the tensors and writes config.json.
void check_shape(Llama& model, const spec::ModelSpec& shape, const char* function) {
  const int64_t layers = static_cast<int64_t>(model->layers.size());
  if (layers != shape.n_layers || model->embedding.size(0) != shape.vocab_size ||
      model->embedding.size(1) != shape.dim) {
    throw std::invalid_argument(
        fmt::format("{}: the shape (layers {}, dim {}, vocab {}) is not the model's ({}, {}, {})",
                    function, shape.n_layers, shape.dim, shape.vocab_size, layers,
                    model->embedding.size(1), model->embedding.size(0)));
  }
}

bool targets(const spec::LoraSpec& lora, const std::string& slice) {
  return std::find(lora.targets.begin(), lora.targets.end(), slice) != lora.targets.end();
}

// What is wrong with `slot` for a model built with `lora`, or "" when nothing.
std::string slot_mismatch(const AdapterSlot& slot, const spec::LoraSpec& lora) {
  const at::Tensor& a = slot.linear->lora_a[slot.slice];
  const bool targeted = targets(lora, slot.slice_name);
  if (targeted != a.defined()) {
    return fmt::format("{} {} an adapter, but lora.targets {} \"{}\"", slot.module,
                       a.defined() ? "has" : "has no", targeted ? "lists" : "does not list",
                       slot.slice_name);
  }
  if (!targeted) return "";
  const LoraConfig& cfg = slot.linear->slices()[slot.slice].lora;
  if (a.size(0) != lora.rank || cfg.alpha != lora.alpha) {
    return fmt::format("{}'s adapter has rank {} and alpha {}, lora has rank {} and alpha {}",
                       slot.module, a.size(0), cfg.alpha, lora.rank, lora.alpha);
  }
  return "";
}

// Exports hold weights only: F32, BF16 or F16.
std::string safetensors_dtype(at::ScalarType t) {
  if (t != at::kFloat && t != at::kBFloat16 && t != at::kHalf) {
    throw std::invalid_argument(fmt::format("cannot export tensors of dtype {}", toString(t)));
  }
  return *model::safetensors_dtype_name(t);
}

std::string torch_dtype_name(at::ScalarType t) {
  constexpr text::Spelling<at::ScalarType> kTorchDtypeSpellings[] = {
      {at::kFloat, "float32"}, {at::kBFloat16, "bfloat16"}, {at::kHalf, "float16"}};
  if (const auto name = text::find_spelling(kTorchDtypeSpellings, t)) return std::string(*name);
  throw std::invalid_argument(fmt::format("cannot export tensors of dtype {}", toString(t)));
}

// Writes `text` to `path`, fsync'd; std::runtime_error "<path>: <what failed>: <strerror>".
void write_text_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error(path.string() + ": cannot create: " + std::strerror(errno));
  }
  if (!io::write_all(fd, text, kWriteKind)) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error(path.string() + ": cannot write: " + std::strerror(error));
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error(path.string() + ": cannot write (fsync): " + std::strerror(error));
  }
  if (::close(fd) != 0) {
    throw std::runtime_error(path.string() + ": cannot write (close): " + std::strerror(errno));
  }
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The folder-level half of an export: `fill` writes the files into a fresh temporary folder
// next to `dir`; the folder then replaces `dir` (write_peft_adapter's header has the rules).
ExportStats write_folder_atomically(
    const std::string& dir, bool replace,
    const std::function<void(const fs::path&, ExportStats&)>& fill) {
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();  // "out/adapter/"
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") {
    throw std::invalid_argument(fmt::format("{}: not a folder name to export to", dir));
  }
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  const bool exists = fs::symlink_status(target, ec).type() != fs::file_type::not_found && !ec;
  if (exists && !replace) {
    throw io::FileExistsError(fmt::format("{} exists; pass --force to replace it", dir));
  }
  fs::create_directories(parent, ec);
  if (ec) {
    throw std::runtime_error(fmt::format("{}: cannot export: {}: cannot create: {}", dir,
                                         parent.string(), ec.message()));
  }
  const fs::path temp = parent / fmt::format(".{}.tmp-{}", name, ::getpid());
  const fs::path aside = parent / fmt::format(".{}.old-{}", name, ::getpid());
  io::remove_tree(temp, ec);
  ExportStats stats;
  try {
    if (!fs::create_directory(temp, ec) || ec) {
      throw std::runtime_error(
          fmt::format("{}: cannot create: {}", temp.string(), ec ? ec.message() : "it exists"));
    }
    fill(temp, stats);
    for (const fs::directory_entry& entry : fs::directory_iterator(temp)) {
      stats.bytes += static_cast<int64_t>(entry.file_size());
    }
    sync_directory(temp);
    // rename() cannot replace a non-empty folder: the old one is moved aside first, and back if
    // the new one cannot take its place.
    if (exists && ::rename(target.c_str(), aside.c_str()) != 0) {
      throw std::runtime_error(fmt::format("{}: cannot move aside to replace it: {}",
                                           target.string(), std::strerror(errno)));
    }
    if (::rename(temp.c_str(), target.c_str()) != 0) {
      const int error = errno;
      if (exists) ::rename(aside.c_str(), target.c_str());
      throw std::runtime_error(
          fmt::format("{}: cannot rename into place: {}", target.string(), std::strerror(error)));
    }
    sync_directory(parent);
  } catch (const std::exception& e) {
    io::remove_tree(temp, ec);
    throw std::runtime_error(fmt::format("{}: cannot export: {}", dir, e.what()));
  }
  if (exists) io::remove_tree(aside, ec);  // best effort: the new folder is complete either way
  return stats;
}

// Moves `t` to the host, contiguous, and appends it to `writer`.
void write_tensor(io::SafetensorsWriter& writer, const at::Tensor& t) {
  const at::Tensor host = t.to(at::kCPU).contiguous();
  writer.write_next(host.data_ptr(), static_cast<uint64_t>(host.nbytes()));
}

}  // namespace

ExportStats write_peft_adapter(Llama& model, const spec::ModelSpec& shape,
                               const spec::LoraSpec& lora, const std::string& base_model,
                               const std::string& dir, bool replace) {
  check_shape(model, shape, "write_peft_adapter");
  std::vector<AdapterSlot> adapted;
  for (const AdapterSlot& slot : adapter_slots(model)) {
    const std::string mismatch = slot_mismatch(slot, lora);
    if (!mismatch.empty()) {
      throw std::invalid_argument(
          "write_peft_adapter: the model was not built with this "
          "LoraSpec: " +
          mismatch);
    }
    if (slot.linear->lora_a[slot.slice].defined()) adapted.push_back(slot);
  }
  if (adapted.empty()) throw std::invalid_argument("write_peft_adapter: the model has no adapter");

  std::vector<io::TensorLayout> layout;
  for (const AdapterSlot& slot : adapted) {
    const at::Tensor& a = slot.linear->lora_a[slot.slice];
    const at::Tensor& b = slot.linear->lora_b[slot.slice];
    layout.push_back({kPeftPrefix + slot.module + ".lora_A.weight",
                      safetensors_dtype(a.scalar_type()), a.sizes().vec()});
    layout.push_back({kPeftPrefix + slot.module + ".lora_B.weight",
                      safetensors_dtype(b.scalar_type()), b.sizes().vec()});
  }
  const std::string config = peft_adapter_config_json(lora, base_model);
  return write_folder_atomically(dir, replace, [&](const fs::path& temp, ExportStats& stats) {
    torch::NoGradGuard no_grad;
    io::SafetensorsWriter writer((temp / kAdapterWeights).string(), layout, {{"format", "pt"}},
                                 kWriteKind);
    for (const AdapterSlot& slot : adapted) {
      write_tensor(writer, slot.linear->lora_a[slot.slice]);
      write_tensor(writer, slot.linear->lora_b[slot.slice]);
      stats.tensors += 2;
    }
    writer.finish();
    write_text_file(temp / kAdapterConfig, config);
  });
}

void load_peft_adapter(Llama& model, const spec::ModelSpec& shape, const spec::LoraSpec& lora,
                       const std::string& dir) {
  check_shape(model, shape, "load_peft_adapter");  // tensor shapes come from its adapters
  const fs::path config_path = fs::path(dir) / kAdapterConfig;
  const PeftAdapterConfig config =
      parse_peft_adapter_config(spec::read_hf_file(config_path.string()), config_path.string());
  std::vector<std::string> differences;
  if (config.lora.rank != lora.rank) {
    differences.push_back(
        fmt::format("r is {}, the model's lora.rank {}", config.lora.rank, lora.rank));
  }
  if (config.lora.alpha != lora.alpha) {
    differences.push_back(
        fmt::format("lora_alpha is {}, the model's lora.alpha {}", config.lora.alpha, lora.alpha));
  }
  std::vector<std::string> wanted = lora.targets;
  std::vector<std::string> found = config.lora.targets;
  std::sort(wanted.begin(), wanted.end());
  std::sort(found.begin(), found.end());
  if (wanted != found) {
    auto hf_names = [](const std::vector<std::string>& slices) {
      std::vector<std::string> out;
      for (const std::string& s : slices) {
        const char* hf = hf_module_name(s);
        out.push_back(hf != nullptr ? hf : s);
      }
      return out;
    };
    std::vector<std::string> ordered;  // the model's targets in ftbench's order, as HF names
    for (const char* s : {"q", "k", "v", "o", "gate", "up", "down", "output"}) {
      if (targets(lora, s)) ordered.push_back(s);
    }
    differences.push_back(fmt::format("target_modules is [{}], the model's lora.targets [{}]",
                                      fmt::join(hf_names(config.lora.targets), ", "),
                                      fmt::join(hf_names(ordered), ", ")));
  }
  if (!differences.empty()) {
    throw spec::HfCheckpointError(fmt::format("{}: the adapter does not fit the model's LoRA: {}",
                                              config_path.string(), fmt::join(differences, "; ")));
  }

  // Every expected key: its destination parameter.
  std::map<std::string, at::Tensor> destination;
  std::vector<std::string> targeted_modules;
  for (const AdapterSlot& slot : adapter_slots(model)) {
    const std::string mismatch = slot_mismatch(slot, lora);
    if (!mismatch.empty()) {
      throw spec::HfCheckpointError(
          fmt::format("{}: the model was not built with the adapter's LoRA: {}", dir, mismatch));
    }
    if (!slot.linear->lora_a[slot.slice].defined()) continue;
    destination[kPeftPrefix + slot.module + ".lora_A.weight"] = slot.linear->lora_a[slot.slice];
    destination[kPeftPrefix + slot.module + ".lora_B.weight"] = slot.linear->lora_b[slot.slice];
  }
  // peft's save_pretrained adds the LM head's base weight when lm_head is a target (its
  // save_embedding_layers "auto" counts lm_head as an embedding layer), and
  // PeftModel.from_pretrained loads it over the model's head: the same here. Optional.
  const std::string head_base_key = std::string(kPeftPrefix) + "lm_head.base_layer.weight";
  if (targets(lora, "output")) destination[head_base_key] = model->lm_head->weight;
  for (const std::string& s : config.lora.targets) targeted_modules.push_back(hf_module_name(s));

  const std::string path = (fs::path(dir) / kAdapterWeights).string();
  std::unique_ptr<io::SafetensorsReader> reader;
  try {
    reader = std::make_unique<io::SafetensorsReader>(path);
  } catch (const io::SafetensorsError& e) {
    throw spec::HfCheckpointError(e.what());
  }
  // Check every key before copying any, so that a refused adapter leaves the model unchanged.
  std::vector<std::pair<const io::TensorInfo*, at::Tensor>> copies;
  for (const io::TensorInfo& t : reader->index().tensors) {
    const auto dest = destination.find(t.name);
    if (dest == destination.end()) {
      const bool named = t.name.find(".default.") != std::string::npos;
      throw spec::HfCheckpointError(fmt::format(
          "{}: unexpected key \"{}\": expected {}<module>.lora_A.weight or .lora_B.weight of a "
          "targeted module (target_modules: {}){}",
          path, t.name, kPeftPrefix, fmt::join(targeted_modules, ", "),
          named ? "; \".default.\" is the adapter's name in a live PEFT model's state_dict, "
                  "which save_pretrained leaves out"
                : ""));
    }
    const std::vector<int64_t> want = dest->second.sizes().vec();
    if (t.shape != want) {
      throw spec::HfCheckpointError(fmt::format("{}: key \"{}\" has shape [{}], expected [{}]",
                                                path, t.name, fmt::join(t.shape, ", "),
                                                fmt::join(want, ", ")));
    }
    if (model::weight_scalar_type(t.dtype) == at::ScalarType::Undefined) {
      throw spec::HfCheckpointError(
          fmt::format("{}: key \"{}\" is {}; expected F32, F16 or BF16", path, t.name, t.dtype));
    }
    copies.emplace_back(&t, dest->second);
  }
  std::vector<std::string> missing;
  for (const auto& [name, tensor] : destination) {
    if (name != head_base_key && reader->index().find(name) == nullptr) missing.push_back(name);
  }
  if (!missing.empty()) {
    const size_t shown = std::min<size_t>(missing.size(), 4);
    throw spec::HfCheckpointError(fmt::format(
        "{}: {} key{} missing: {}{}", path, missing.size(), missing.size() == 1 ? "" : "s",
        fmt::join(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
        missing.size() > shown ? ", ..." : ""));
  }
  torch::NoGradGuard no_grad;
  for (const auto& [info, target] : copies) {
    const at::Tensor source =
        at::from_blob(const_cast<void*>(reader->tensor_data(*info)), info->shape,
                      at::TensorOptions().dtype(model::weight_scalar_type(info->dtype)));
    at::Tensor(target).copy_(source);
  }
}

namespace {

// How to make each HF tensor, merged, on the model's device, and the unit of a split base it is
// made from (-1: a norm, whole on every rank, or any tensor of a whole base).
struct MergedSources {
  std::map<std::string, std::function<at::Tensor()>> make;
  std::map<std::string, int64_t> unit_of;
};

MergedSources merged_sources(Llama& model) {
  MergedSources out;
  // `name` made by `make` from the base weight `base`: its unit is base's.
  auto add = [&](const std::string& name, const at::Tensor& base,
                 std::function<at::Tensor()> make) {
    out.make[name] = std::move(make);
    out.unit_of[name] = model->unit_of(base);
  };
  add("model.embed_tokens.weight", model->embedding, [&] { return model->embedding; });
  for (size_t i = 0; i < model->layers.size(); ++i) {
    DecoderLayer& layer = model->layers[i];
    const std::string p = fmt::format("model.layers.{}.", i);
    auto merged = [&](const char* name, LoraLinear& linear, size_t slice) {
      add(p + name, linear->weight, [&linear, slice] { return linear->merged_slice(slice); });
    };
    merged("self_attn.q_proj.weight", layer->qkv, 0);
    merged("self_attn.k_proj.weight", layer->qkv, 1);
    merged("self_attn.v_proj.weight", layer->qkv, 2);
    merged("self_attn.o_proj.weight", layer->o, 0);
    merged("mlp.gate_proj.weight", layer->gate_up, 0);
    merged("mlp.up_proj.weight", layer->gate_up, 1);
    merged("mlp.down_proj.weight", layer->down, 0);
    add(p + "input_layernorm.weight", layer->attn_norm->weight,
        [&layer] { return layer->attn_norm->weight; });
    add(p + "post_attention_layernorm.weight", layer->mlp_norm->weight,
        [&layer] { return layer->mlp_norm->weight; });
  }
  add("model.norm.weight", model->final_norm->weight, [&] { return model->final_norm->weight; });
  add("lm_head.weight", model->lm_head->weight, [&] { return model->lm_head->merged_slice(0); });
  return out;
}

// Shards as transformers cuts them: consecutive tensors, a new shard when the next tensor would
// take this one past the limit.
struct ShardPlan {
  std::vector<std::vector<size_t>> shards;  // indices into the tensors, shard by shard
  int64_t total_bytes = 0;
  std::string file_name(size_t shard) const {
    return shards.size() == 1
               ? std::string("model.safetensors")
               : fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, shards.size());
  }
};

ShardPlan plan_shards(const std::vector<HfTensor>& tensors, int64_t element_bytes,
                      int64_t max_shard_bytes) {
  ShardPlan plan;
  int64_t shard_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t bytes = element_bytes;
    for (int64_t d : tensors[i].shape) bytes *= d;
    if (plan.shards.empty() ||
        (!plan.shards.back().empty() && shard_bytes + bytes > max_shard_bytes)) {
      plan.shards.emplace_back();
      shard_bytes = 0;
    }
    plan.shards.back().push_back(i);
    shard_bytes += bytes;
    plan.total_bytes += bytes;
  }
  return plan;
}

// config.json, and what the source checkpoint says beyond the shape: its special token ids
// (transformers' defaults, 1 and 2, are wrong for Llama 3), and the files a user loads with the
// weights (name, text).
std::pair<std::string, std::vector<std::pair<std::string, std::string>>> merged_side_files(
    const spec::ModelSpec& out_shape, at::ScalarType dtype, const std::string& source_checkpoint) {
  std::string config = hf_config_json(out_shape, torch_dtype_name(dtype));
  std::vector<std::pair<std::string, std::string>> copied;
  if (source_checkpoint.empty()) return {config, copied};
  const fs::path from(source_checkpoint);
  std::error_code ec;
  if (fs::is_regular_file(from / "config.json", ec)) {
    const nlohmann::json source = nlohmann::json::parse(
        spec::read_hf_file((from / "config.json").string()), nullptr, /*allow_exceptions=*/false);
    nlohmann::json merged = nlohmann::json::parse(config);
    bool changed = false;
    // max_position_embeddings too: the spec's max_seq_len may have sized the rotary table
    // differently for the run, but the model's context is the checkpoint's.
    for (const char* key :
         {"bos_token_id", "eos_token_id", "pad_token_id", "max_position_embeddings"}) {
      if (source.is_object() && source.contains(key)) {
        merged[key] = source.at(key);
        changed = true;
      }
    }
    if (changed) config = merged.dump(2) + "\n";
  }
  for (const char* name :
       {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "tokenizer.model", "added_tokens.json", "chat_template.jinja"}) {
    if (fs::is_regular_file(from / name, ec)) {
      copied.emplace_back(name, spec::read_hf_file((from / name).string()));
    }
  }
  return {config, copied};
}

ExportStats write_merged(Llama& model, const spec::ModelSpec& shape, const std::string& dir,
                         bool replace, int64_t max_shard_bytes,
                         const std::string& source_checkpoint, model::BaseGathers* gathers) {
  if (max_shard_bytes < 1) {
    throw std::invalid_argument(
        fmt::format("write_merged_hf: max_shard_bytes must be >= 1, found {}", max_shard_bytes));
  }
  check_shape(model, shape, "write_merged_hf");
  const at::ScalarType dtype = model->embedding.scalar_type();
  spec::ModelSpec out_shape = shape;
  out_shape.tie_embeddings = !model->merged_head_apart();
  const MergedSources sources = merged_sources(model);
  const std::vector<HfTensor> tensors = hf_llama_tensors(out_shape);
  const std::string st_dtype = safetensors_dtype(dtype);
  const ShardPlan plan =
      plan_shards(tensors, io::safetensors_dtype_bytes(st_dtype), max_shard_bytes);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < plan.shards.size(); ++s) {
    for (size_t i : plan.shards[s]) weight_map[tensors[i].name] = plan.file_name(s);
  }
  // Not a structured binding: the writer's lambda captures them (C++17).
  const std::pair<std::string, std::vector<std::pair<std::string, std::string>>> side =
      merged_side_files(out_shape, dtype, source_checkpoint);

  // A split base: each unit gathered whole while its tensors are written, in the order the
  // other ranks follow (model::GatherPass::kMergedExport).
  int64_t whole = -1;
  auto need_unit = [&](const std::string& tensor) {
    const auto unit = sources.unit_of.find(tensor);
    if (gathers == nullptr || unit->second < 0 || unit->second == whole) return;
    if (whole >= 0) gathers->release(whole);
    whole = -1;
    gathers->gather(unit->second);
    whole = unit->second;
  };
  return write_folder_atomically(dir, replace, [&](const fs::path& temp, ExportStats& stats) {
    torch::NoGradGuard no_grad;
    write_text_file(temp / "config.json", side.first);
    for (const auto& [name, text] : side.second) write_text_file(temp / name, text);
    for (size_t s = 0; s < plan.shards.size(); ++s) {
      std::vector<io::TensorLayout> layout;
      for (size_t i : plan.shards[s]) {
        layout.push_back({tensors[i].name, st_dtype, tensors[i].shape});
      }
      io::SafetensorsWriter writer((temp / plan.file_name(s)).string(), layout, {{"format", "pt"}},
                                   kWriteKind);
      for (size_t i : plan.shards[s]) {
        need_unit(tensors[i].name);
        write_tensor(writer, sources.make.at(tensors[i].name)().to(dtype));
        ++stats.tensors;
      }
      writer.finish();
    }
    if (gathers != nullptr) gathers->complete_pass();
    if (plan.shards.size() > 1) {
      const nlohmann::json index = {{"metadata", {{"total_size", plan.total_bytes}}},
                                    {"weight_map", weight_map}};
      write_text_file(temp / "model.safetensors.index.json", index.dump(2) + "\n");
    }
  });
}

}  // namespace

ExportStats write_merged_hf(Llama& model, const spec::ModelSpec& shape, const std::string& dir,
                            bool replace, int64_t max_shard_bytes,
                            const std::string& source_checkpoint) {
  model::BaseGathers* gathers = model->base_gathers();
  if (gathers == nullptr) {
    return write_merged(model, shape, dir, replace, max_shard_bytes, source_checkpoint, nullptr);
  }
  // A split base: the other ranks follow this pass (model::LlamaImpl::follow_pass); whatever
  // fails here, its gathers are made to the end before the failure goes on, so they end too.
  gathers->begin_pass(model->gather_order(model::GatherPass::kMergedExport));
  try {
    return write_merged(model, shape, dir, replace, max_shard_bytes, source_checkpoint, gathers);
  } catch (...) {
    try {
      gathers->complete_pass();
    } catch (const std::exception&) {
      // The peers are gone too; the export's own failure is the one to report.
    }
    throw;
  }
}

}  // namespace ftbench::hf
