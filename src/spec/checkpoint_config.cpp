#include "spec/checkpoint_config.h"

#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "spec/limits.h"
#include "util/io/whole_file.h"
#include "util/text/json_parse.h"

namespace ftbench::spec {
namespace {

using Json = nlohmann::json;

class ConfigReader {
 public:
  // `prefix`: the path of a nested object ("rope_scaling."), for the messages.
  ConfigReader(const Json& j, const std::string& source, std::string prefix = "")
      : j_(j), source_(source), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw HfCheckpointError(fmt::format("{}: {}{}: {}", source_, prefix_, key, message));
  }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  // An integer in [1, max]: the bound keeps sizes far above any real model (Llama 3.1 405B:
  // hidden 16,384, 126 layers, FFN 53,248, vocabulary 128,256) from overflowing what is computed
  // from them.
  int64_t positive_integer(const char* key, int64_t max = kMaxSize) const {
    if (!has(key)) fail(key, "missing (expected an integer >= 1)");
    const Json& v = j_.at(key);
    const bool in_range = v.is_number_unsigned()
                              ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= uint64_t(max)
                          : v.is_number_integer() ? v.get<int64_t>() >= 1 && v.get<int64_t>() <= max
                                                  : false;
    if (!in_range) {
      fail(key, fmt::format("expected an integer in [1, {}], found {}", max, v.dump()));
    }
    return v.get<int64_t>();
  }
  static constexpr int64_t kMaxSize = kMaxModelSize;  // 16,777,216
  static constexpr int64_t kMaxLayers = kMaxModelLayers;
  double positive_number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0.0)) {
      fail(key, "expected a number > 0, found " + v.dump());
    }
    return v.get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, "expected true or false, found " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }
  std::vector<int64_t> token_ids(const char* key) const {
    if (!has(key)) return {};
    const Json& v = j_.at(key);
    std::vector<int64_t> ids;
    for (const Json& id : v.is_array() ? v : Json::array({v})) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0) {
        fail(key, "expected a token id or a list of them, found " + v.dump());
      }
      ids.push_back(id.get<int64_t>());
    }
    return ids;
  }

 private:
  const Json& j_;
  const std::string& source_;
  std::string prefix_;
};

}  // namespace

std::string read_hf_file(const std::string& path) {
  try {
    return io::read_whole_file(path, io::kHfJsonFile);
  } catch (const io::FileReadError& e) {
    throw HfCheckpointError(path + ": cannot read: " + e.reason());
  }
}

Json parse_hf_json_object(std::string_view text, const std::string& source) {
  const Json j = text::parse_json_text<Json>(text, [&](const text::JsonTextError& e) {
    using Kind = text::JsonTextError::Kind;
    const bool syntax = e.kind == Kind::kSyntax || e.kind == Kind::kOutOfRange;
    throw HfCheckpointError(source + (syntax ? ": not valid JSON: " : ": ") + e.reason);
  });
  if (!j.is_object()) throw HfCheckpointError(source + ": expected a JSON object");
  return j;
}

HfConfig parse_hf_config(std::string_view text, const std::string& source) {
  const Json j = parse_hf_json_object(text, source);
  const ConfigReader r(j, source);
  const bool llama_type = j.contains("model_type") && j["model_type"] == "llama";
  bool llama_arch = false;
  if (j.contains("architectures") && j["architectures"].is_array()) {
    for (const Json& a : j["architectures"]) llama_arch = llama_arch || a == "LlamaForCausalLM";
  }
  if (!llama_type && !llama_arch) {
    r.fail("model_type", fmt::format("expected \"llama\" (a Llama checkpoint), found {}",
                                     j.contains("model_type") ? j["model_type"].dump() : "none"));
  }
  if (r.has("hidden_act") && j["hidden_act"] != "silu") {
    r.fail("hidden_act", "expected \"silu\" (SwiGLU), found " + j["hidden_act"].dump());
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (r.boolean(bias, false)) r.fail(bias, "expected false: ftbench's Llama has no biases");
  }

  HfConfig c;
  spec::ModelSpec& m = c.shape;
  m.preset = "custom";
  m.dim = r.positive_integer("hidden_size");
  m.n_layers = r.positive_integer("num_hidden_layers", ConfigReader::kMaxLayers);
  m.n_heads = r.positive_integer("num_attention_heads");
  m.n_kv_heads =
      r.has("num_key_value_heads") ? r.positive_integer("num_key_value_heads") : m.n_heads;
  m.ffn_dim = r.positive_integer("intermediate_size");
  m.vocab_size = r.positive_integer("vocab_size");
  m.max_seq_len = r.positive_integer("max_position_embeddings");
  m.norm_eps = r.positive_number("rms_norm_eps", 1e-6);
  m.rope_theta = r.positive_number("rope_theta", 10000.0);
  m.tie_embeddings = r.boolean("tie_word_embeddings", false);
  if (m.dim % m.n_heads != 0) {
    r.fail("hidden_size",
           fmt::format("{} is not a multiple of num_attention_heads {}", m.dim, m.n_heads));
  }
  if (m.dim % m.n_heads == 0 && (m.dim / m.n_heads) % 2 != 0) {
    r.fail("hidden_size",
           fmt::format("{} / num_attention_heads {} = {} per head, which is odd: rotary "
                       "embeddings rotate pairs of dimensions",
                       m.dim, m.n_heads, m.dim / m.n_heads));
  }
  if (m.n_heads % m.n_kv_heads != 0) {
    r.fail("num_key_value_heads",
           fmt::format("{} does not divide num_attention_heads {}", m.n_kv_heads, m.n_heads));
  }
  if (r.has("head_dim") && r.positive_integer("head_dim") != m.dim / m.n_heads) {
    r.fail("head_dim", fmt::format("expected hidden_size / num_attention_heads = {}, found {}",
                                   m.dim / m.n_heads, j["head_dim"].dump()));
  }
  // Transformers 5 writes the rotary settings as one object, rope_parameters (rope_type,
  // rope_theta and the scaling fields), where 4.x wrote rope_theta and rope_scaling; both read.
  const bool v5_rope = r.has("rope_parameters");
  const char* rope_key = v5_rope ? "rope_parameters" : "rope_scaling";
  if (v5_rope) {
    const Json& p = j["rope_parameters"];
    if (!p.is_object()) r.fail("rope_parameters", "expected an object, found " + p.dump());
    const ConfigReader rp(p, source, "rope_parameters.");
    const double theta = rp.positive_number("rope_theta", 10000.0);
    if (r.has("rope_theta") && theta != m.rope_theta) {
      r.fail("rope_theta",
             fmt::format("{} here, {} in rope_parameters.rope_theta", m.rope_theta, theta));
    }
    m.rope_theta = theta;
  }
  if (r.has(rope_key)) {
    const Json& s = j[rope_key];
    if (!s.is_object()) {
      r.fail(rope_key, "expected an object or null, found " + s.dump());
    }
    // rope_parameters always has a type; a rope_scaling object without one is not understood.
    const Json type = s.contains("rope_type") ? s["rope_type"]
                                              : s.value("type", v5_rope ? Json("default") : Json());
    if (type == "default") {
      // transformers' name for no scaling
    } else if (type != "llama3") {
      r.fail(std::string(rope_key) + ".rope_type",
             "expected \"llama3\" or \"default\" (the scalings ftbench implements), found " +
                 type.dump());
    } else {
      const ConfigReader rs(s, source, std::string(rope_key) + ".");
      spec::RopeScaling scaling;
      scaling.factor = rs.positive_number("factor", scaling.factor);
      scaling.low_freq_factor = rs.positive_number("low_freq_factor", scaling.low_freq_factor);
      scaling.high_freq_factor = rs.positive_number("high_freq_factor", scaling.high_freq_factor);
      scaling.original_max_position_embeddings =
          rs.has("original_max_position_embeddings")
              ? rs.positive_integer("original_max_position_embeddings")
              : scaling.original_max_position_embeddings;
      m.rope_scaling = scaling;
    }
  }
  // "dtype" since transformers 4.56, "torch_dtype" before.
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (!r.has(key) || !c.torch_dtype.empty()) continue;
    if (!j[key].is_string()) r.fail(key, "expected a string, found " + j[key].dump());
    c.torch_dtype = j[key].get<std::string>();
  }
  c.bos_token_ids = r.token_ids("bos_token_id");
  c.eos_token_ids = r.token_ids("eos_token_id");
  return c;
}

}  // namespace ftbench::spec
