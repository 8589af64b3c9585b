#include "model/hf/peft_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/hf/checkpoint_layout.h"
#include "spec/checkpoint_config.h"

namespace ftbench::hf {
namespace {

using Json = nlohmann::json;

struct ModuleName {
  const char* slice;
  const char* hf;
};
// ftbench's slice order, which is also the order targets are given back in.
constexpr std::array<ModuleName, 8> kModules = {{{"q", "q_proj"},
                                                 {"k", "k_proj"},
                                                 {"v", "v_proj"},
                                                 {"o", "o_proj"},
                                                 {"gate", "gate_proj"},
                                                 {"up", "up_proj"},
                                                 {"down", "down_proj"},
                                                 {"output", "lm_head"}}};

std::string supported_modules() {
  std::vector<std::string> names;
  for (const ModuleName& m : kModules) names.emplace_back(m.hf);
  return fmt::format("{}", fmt::join(names, ", "));
}

class AdapterConfigReader {
 public:
  AdapterConfigReader(const Json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw spec::HfCheckpointError(fmt::format("{}: {}: {}", source_, key, message));
  }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const Json& at(const char* key) const { return j_.at(key); }

  // A flag that must be false (or absent) for the merge W + (alpha / r) B A to hold.
  void require_false(const char* key, const char* why) const {
    if (!has(key)) return;
    const Json& v = j_.at(key);
    if (!v.is_boolean()) fail(key, "expected true or false, found " + v.dump());
    if (v.get<bool>()) fail(key, fmt::format("true is not supported ({}); expected false", why));
  }
  // A setting that must be null, absent, or empty.
  void require_empty(const char* key, const char* expected, const char* why) const {
    if (!has(key)) return;
    const Json& v = j_.at(key);
    if ((v.is_object() || v.is_array()) && v.empty()) return;
    fail(key, fmt::format("expected {} ({}), found {}", expected, why, v.dump()));
  }

 private:
  const Json& j_;
  const std::string& source_;
};

// lora_alpha as PEFT users write it: an integer when it is one (32, not 32.0).
Json number_json(double value) {
  if (std::nearbyint(value) == value && std::fabs(value) < 9.0e15) {
    return Json(static_cast<int64_t>(value));
  }
  return Json(value);
}

}  // namespace

const char* hf_module_name(const std::string& slice) {
  for (const ModuleName& m : kModules) {
    if (slice == m.slice) return m.hf;
  }
  return nullptr;
}

PeftAdapterConfig parse_peft_adapter_config(std::string_view text, const std::string& source) {
  const Json j = spec::parse_hf_json_object(text, source);
  const AdapterConfigReader r(j, source);

  if (!r.has("peft_type") || r.at("peft_type") != "LORA") {
    r.fail("peft_type",
           fmt::format("expected \"LORA\" (ftbench reads LoRA adapters only), found {}",
                       r.has("peft_type") ? r.at("peft_type").dump() : "none"));
  }
  PeftAdapterConfig c;
  spec::LoraSpec& lora = c.lora;
  if (!r.has("r")) r.fail("r", "missing (expected an integer >= 1)");
  if (!r.at("r").is_number_integer() || r.at("r").get<int64_t>() < 1) {
    r.fail("r", "expected an integer >= 1, found " + r.at("r").dump());
  }
  lora.rank = r.at("r").get<int64_t>();
  if (!r.has("lora_alpha")) r.fail("lora_alpha", "missing (expected a number > 0)");
  if (!r.at("lora_alpha").is_number() || !(r.at("lora_alpha").get<double>() > 0.0)) {
    r.fail("lora_alpha", "expected a number > 0, found " + r.at("lora_alpha").dump());
  }
  lora.alpha = r.at("lora_alpha").get<double>();
  lora.dropout = 0.0;
  if (r.has("lora_dropout")) {
    const Json& d = r.at("lora_dropout");
    if (!d.is_number() || !(d.get<double>() >= 0.0 && d.get<double>() < 1.0)) {
      r.fail("lora_dropout", "expected a number in [0, 1), found " + d.dump());
    }
    lora.dropout = d.get<double>();
  }

  const std::string expected_list = "a list of module names among " + supported_modules();
  if (!r.has("target_modules"))
    r.fail("target_modules", "missing (expected " + expected_list + ")");
  const Json& targets = r.at("target_modules");
  if (targets == "all-linear") {
    r.fail("target_modules", "\"all-linear\" is not supported; expected " + expected_list +
                                 " (all-linear is every one but lm_head)");
  }
  if (targets.is_string()) {
    r.fail("target_modules", fmt::format("a regular expression ({}) is not supported; expected {}",
                                         targets.dump(), expected_list));
  }
  if (!targets.is_array() || targets.empty()) {
    r.fail("target_modules", fmt::format("expected {}, found {}", expected_list, targets.dump()));
  }
  std::vector<bool> targeted(kModules.size(), false);
  for (const Json& t : targets) {
    const auto known = std::find_if(kModules.begin(), kModules.end(),
                                    [&](const ModuleName& m) { return t == m.hf; });
    if (known == kModules.end()) {
      r.fail("target_modules",
             fmt::format("unknown module {}; expected one of {}", t.dump(), supported_modules()));
    }
    targeted[static_cast<size_t>(known - kModules.begin())] = true;
  }
  lora.targets.clear();
  for (size_t i = 0; i < kModules.size(); ++i) {
    if (targeted[i]) lora.targets.emplace_back(kModules[i].slice);
  }

  r.require_false("use_dora", "DoRA rescales the merged weight");
  r.require_false("use_rslora", "rsLoRA scales by lora_alpha / sqrt(r)");
  r.require_false("fan_in_fan_out", "transposed Conv1D weights; Llama's are [out, in]");
  r.require_false("lora_bias", "a bias on lora_B; ftbench's Llama has no biases");
  if (r.has("bias") && r.at("bias") != "none") {
    r.fail("bias",
           "expected \"none\" (ftbench's Llama has no biases), found " + r.at("bias").dump());
  }
  r.require_empty("layers_to_transform", "null", "ftbench adapts every layer");
  r.require_empty("rank_pattern", "{}", "one r for every module");
  r.require_empty("alpha_pattern", "{}", "one lora_alpha for every module");
  r.require_empty("modules_to_save", "null", "whole modules saved next to the adapter");
  r.require_empty("exclude_modules", "null", "every layer's module is adapted");

  if (r.has("base_model_name_or_path")) {
    const Json& b = r.at("base_model_name_or_path");
    if (!b.is_string()) r.fail("base_model_name_or_path", "expected a string, found " + b.dump());
    c.base_model_name_or_path = b.get<std::string>();
  }
  return c;
}

std::string peft_adapter_config_json(const spec::LoraSpec& lora, const std::string& base_model) {
  std::vector<std::string> modules;
  for (const ModuleName& m : kModules) {
    if (std::find(lora.targets.begin(), lora.targets.end(), m.slice) != lora.targets.end()) {
      modules.emplace_back(m.hf);
    }
  }
  // nlohmann::json keeps object keys sorted, as PEFT's json.dumps(sort_keys=True).
  Json j = {{"alpha_pattern", Json::object()},
            {"auto_mapping", nullptr},
            {"base_model_name_or_path", base_model.empty() ? Json() : Json(base_model)},
            {"bias", "none"},
            {"fan_in_fan_out", false},
            {"inference_mode", true},
            {"init_lora_weights", true},
            {"layers_pattern", nullptr},
            {"layers_to_transform", nullptr},
            {"lora_alpha", number_json(lora.alpha)},
            {"lora_dropout", lora.dropout},
            {"modules_to_save", nullptr},
            {"peft_type", "LORA"},
            {"r", lora.rank},
            {"rank_pattern", Json::object()},
            {"revision", nullptr},
            {"target_modules", modules},
            {"task_type", "CAUSAL_LM"},
            {"use_dora", false},
            {"use_rslora", false}};
  return j.dump(2) + "\n";
}

std::string hf_config_json(const spec::ModelSpec& shape, const std::string& torch_dtype) {
  Json rope_scaling;  // null without scaling
  if (shape.rope_scaling) {
    const spec::RopeScaling& s = *shape.rope_scaling;
    rope_scaling = {{"factor", s.factor},
                    {"high_freq_factor", s.high_freq_factor},
                    {"low_freq_factor", s.low_freq_factor},
                    {"original_max_position_embeddings", s.original_max_position_embeddings},
                    {"rope_type", "llama3"}};
  }
  // Doubles are written by nlohmann's shortest round-trip formatting (1e-05, 500000.0), which
  // parses back to the same bits.
  const Json j = {{"architectures", {"LlamaForCausalLM"}},
                  {"attention_bias", false},
                  {"attention_dropout", 0.0},
                  {"head_dim", shape.dim / shape.n_heads},
                  {"hidden_act", "silu"},
                  {"hidden_size", shape.dim},
                  {"intermediate_size", shape.ffn_dim},
                  {"max_position_embeddings", shape.max_seq_len},
                  {"mlp_bias", false},
                  {"model_type", "llama"},
                  {"num_attention_heads", shape.n_heads},
                  {"num_hidden_layers", shape.n_layers},
                  {"num_key_value_heads", shape.n_kv_heads},
                  {"rms_norm_eps", shape.norm_eps},
                  {"rope_scaling", rope_scaling},
                  {"rope_theta", shape.rope_theta},
                  {"tie_word_embeddings", shape.tie_embeddings},
                  {"torch_dtype", torch_dtype},
                  {"use_cache", true},
                  {"vocab_size", shape.vocab_size}};
  return j.dump(2) + "\n";
}

}  // namespace ftbench::hf
