#include "spec/spec_loader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "spec/checkpoint_config.h"
#include "spec/choices.h"
#include "spec/derived.h"
#include "spec/limits.h"
#include "spec/presets.h"
#include "spec/spec_fields.h"
#include "spec/spec_reader.h"
#include "spec/yaml_document.h"
#include "util/io/whole_file.h"
#include "util/text/did_you_mean.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"
#include "util/text/trim.h"

namespace ftbench::spec {

namespace {

using detail::AfterTheDocument;
using detail::has_content;
using detail::kSecondDocument;
using detail::load_one_document;

// ---------------------------------------------------------------------------------------------
// Message text.

// Shortest text that reads back as the same double ("0.05", "1", "1e-08").
std::string number_text(double value) { return fmt::format("{}", value); }

using text::closest;
using text::describe;
using text::join;
using text::not_one_of_message;
using text::quoted;
using text::unknown_name_message;

// ---------------------------------------------------------------------------------------------
// Scalar parsing (util/text/parse_number.h).

using detail::is_plain_scalar;
using detail::kOverrideFile;
using detail::Location;
using detail::SpecReader;

// ---------------------------------------------------------------------------------------------
// Reading the YAML tree into the structs.

// Binds YAML key names to struct fields: a visitor of spec_fields.h. Run with a
// default-constructed binder it only lists the names (for "did you mean" and --set path
// checks), run with a key from the file it reads that key's value into the matching field.
class KeyBinder {
 public:
  KeyBinder() = default;
  KeyBinder(SpecReader* reader, std::string key, std::string path, YAML::Node value, Location loc)
      : reader_(reader),
        key_(std::move(key)),
        path_(std::move(path)),
        value_(std::move(value)),
        loc_(std::move(loc)) {}

  void field(std::string_view name, int64_t& out) {
    if (take(name)) reader_->read_int(value_, path_, loc_, out);
  }
  void field(std::string_view name, uint64_t& out) {
    if (take(name)) reader_->read_uint(value_, path_, loc_, out);
  }
  void field(std::string_view name, double& out) {
    if (take(name)) reader_->read_number(value_, path_, loc_, out);
  }
  void field(std::string_view name, std::optional<double>& out) {
    if (take(name)) reader_->read_optional_number(value_, path_, loc_, out);
  }
  void field(std::string_view name, bool& out) {
    if (take(name)) reader_->read_bool(value_, path_, loc_, out);
  }
  void field(std::string_view name, std::string& out) {
    if (take(name)) reader_->read_string(value_, path_, loc_, out);
  }
  void field(std::string_view name, std::vector<std::string>& out) {
    if (take(name)) reader_->read_string_list(value_, path_, loc_, out);
  }
  void field(std::string_view name, std::optional<RopeScaling>& out);
  void field(std::string_view name, CheckpointSpec& out);

  bool matched() const { return matched_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  bool take(std::string_view name) {
    if (reader_ == nullptr) {
      names_.emplace_back(name);
      return false;
    }
    if (matched_ || name != key_) return false;
    matched_ = true;
    return true;
  }

  SpecReader* reader_ = nullptr;
  std::string key_;
  std::string path_;
  YAML::Node value_;
  Location loc_;
  bool matched_ = false;
  std::vector<std::string> names_;
};

template <class Spec>
std::vector<std::string> key_names() {
  KeyBinder lister;
  Spec unused;
  visit_fields(lister, unused);
  return lister.names();
}

// The section names in order, and each section's keys.
struct SectionLister {
  std::vector<std::string> names;
  std::string_view wanted;
  std::vector<std::string> keys;

  template <class Spec>
  void section(const char* name, const Spec&) {
    names.emplace_back(name);
    if (name == wanted) keys = key_names<Spec>();
  }
};

std::vector<std::string> section_names() {
  SectionLister lister;
  const RunSpec defaults;
  visit_sections(lister, defaults);
  return lister.names;
}

std::vector<std::string> section_keys(std::string_view section) {
  SectionLister lister;
  lister.wanted = section;
  const RunSpec defaults;
  visit_sections(lister, defaults);
  return lister.keys;
}

// The shape keys a "custom" model must give; rope_scaling (default none) and tie_embeddings
// (default false) have natural defaults and stay optional.
std::vector<std::string> required_custom_keys() {
  return {"dim",        "n_layers",    "n_heads",  "n_kv_heads", "ffn_dim",
          "vocab_size", "max_seq_len", "norm_eps", "rope_theta"};
}

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Reads every key of the mapping `node` (at key path `prefix`) into the fields of `out`
// (spec_fields.h). Unknown and duplicate keys are issues; `given`, when set, receives the names
// that were present.
template <class Spec>
void read_mapping(SpecReader& r, const std::string& prefix, const YAML::Node& node, Spec& out,
                  std::set<std::string>* given = nullptr) {
  if (!node.IsMap()) return;
  std::map<std::string, int64_t> first_line;
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      r.add(prefix, r.where(prefix, key), "expected a key name, found " + describe(key));
      continue;
    }
    const std::string name = key.Scalar();
    const std::string path = prefix + "." + name;
    const Location loc = r.where(path, key);
    const auto [seen, inserted] = first_line.emplace(name, loc.line);
    if (!inserted) {
      r.add(path, loc,
            fmt::format("duplicate key {} (first given at line {})", text::quoted(name),
                        seen->second));
      continue;
    }
    KeyBinder binder(&r, name, path, entry.second, loc);
    visit_fields(binder, out);
    if (!binder.matched()) {
      if (path == "model.init" || path == "model.checkpoint_path") {
        // Reserved until checkpoints could be loaded; a spec that still has them gets the way.
        r.add(path, loc,
              "was replaced by model.checkpoint: a Hugging Face checkpoint folder to load the "
              "base weights from (random weights without it)");
        continue;
      }
      r.add(path, loc, unknown_name_message("key", name, key_names<Spec>()));
      continue;
    }
    r.remember(path, loc);
    if (given != nullptr) given->insert(name);
  }
}

// A mapping given for rope_scaling starts from the preset's scaling (or the Llama 3.1 defaults
// when the preset has none), so `rope_scaling: {factor: 16}` changes one field only.
void KeyBinder::field(std::string_view name, std::optional<RopeScaling>& out) {
  if (!take(name)) return;
  if (value_.IsNull()) {
    out.reset();
    return;
  }
  if (!value_.IsMap()) {
    reader_->add(path_, loc_, "expected a mapping or null, found " + describe(value_));
    return;
  }
  RopeScaling scaling = out.value_or(RopeScaling{});
  read_mapping(*reader_, path_, value_, scaling);
  out = scaling;
}

// Keys not given keep their defaults, so `checkpoint: {every_steps: 50}` changes one field.
void KeyBinder::field(std::string_view name, CheckpointSpec& out) {
  if (!take(name)) return;
  if (!value_.IsMap()) {
    reader_->add(path_, loc_, "expected a mapping, found " + describe(value_));
    return;
  }
  read_mapping(*reader_, path_, value_, out);
}

// Reads a whole file of `kind` (util/io/whole_file.h: a size limit, no devices); on failure returns
// nullopt and the reason in `error`.
std::optional<std::string> read_file(const std::string& path, const io::FileKind& kind,
                                     std::string& error) {
  try {
    return io::read_whole_file(path, kind);
  } catch (const io::FileReadError& e) {
    error = e.reason();
    return std::nullopt;
  }
}

// The value of `key` in the model section when it is a plain scalar, else "".
std::string scalar_in(const YAML::Node& section, const char* key) {
  if (!section.IsMap()) return "";
  for (const auto& entry : section) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) {
      return entry.second.IsScalar() ? entry.second.Scalar() : "";
    }
  }
  return "";
}

// config.json of the checkpoint folder `dir`, parsed; nullopt after adding an issue at
// model.checkpoint. Read here, before anything runs, because the shape decides the job.
std::optional<HfConfig> read_checkpoint_config(SpecReader& r, const YAML::Node& section,
                                               const std::string& dir) {
  const std::string path = "model.checkpoint";
  Location loc = r.where(path, section);
  for (const auto& entry : section) {
    if (entry.first.IsScalar() && entry.first.Scalar() == "checkpoint") {
      loc = r.where(path, entry.first);
    }
  }
  namespace fs = std::filesystem;
  const fs::path file = fs::path(dir) / "config.json";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    r.add(path, loc,
          fmt::format("expected a Hugging Face checkpoint folder, found {}",
                      fs::exists(dir, ec) ? text::quoted(dir) + " (not a folder)"
                                          : text::quoted(dir) + " (no such folder)"));
    return std::nullopt;
  }
  if (!fs::exists(file, ec)) {
    r.add(path, loc,
          fmt::format("{}: no config.json (a Hugging Face checkpoint folder has one)", dir));
    return std::nullopt;
  }
  // A config.json is a few kB; anything far larger is not one (and is not read whole).
  std::string error;
  const std::optional<std::string> text = read_file(file.string(), io::kHfJsonFile, error);
  if (!text) {
    r.add(path, loc, fmt::format("{}: cannot read: {}", file.string(), error));
    return std::nullopt;
  }
  try {
    return parse_hf_config(*text, file.string());
  } catch (const HfCheckpointError& e) {
    r.add(path, loc, e.what());
    return std::nullopt;
  }
}

// A shape key the spec gives next to model.checkpoint must say what config.json says.
void check_against_checkpoint(SpecReader& r, const ModelSpec& given_values,
                              const ModelSpec& from_config, const std::set<std::string>& given,
                              const std::string& dir) {
  const auto check = [&](const char* key, const std::string& spec_value,
                         const std::string& config_value) {
    if (given.count(key) == 0 || spec_value == config_value) return;
    const std::string path = std::string("model.") + key;
    r.add(path, r.location_of(path),
          fmt::format("{} here, {} in {}/config.json: a checkpoint's shape comes from its "
                      "config.json; remove the key",
                      spec_value, config_value, dir));
  };
  const auto num = [](double v) { return number_text(v); };
  const auto scaling = [](const std::optional<RopeScaling>& s) -> std::string {
    if (!s) return "null";
    return fmt::format(
        "{{factor: {}, low_freq_factor: {}, high_freq_factor: {}, "
        "original_max_position_embeddings: {}}}",
        s->factor, s->low_freq_factor, s->high_freq_factor, s->original_max_position_embeddings);
  };
  const ModelSpec& a = given_values;
  const ModelSpec& b = from_config;
  check("dim", std::to_string(a.dim), std::to_string(b.dim));
  check("n_layers", std::to_string(a.n_layers), std::to_string(b.n_layers));
  check("n_heads", std::to_string(a.n_heads), std::to_string(b.n_heads));
  check("n_kv_heads", std::to_string(a.n_kv_heads), std::to_string(b.n_kv_heads));
  check("ffn_dim", std::to_string(a.ffn_dim), std::to_string(b.ffn_dim));
  check("vocab_size", std::to_string(a.vocab_size), std::to_string(b.vocab_size));
  check("norm_eps", num(a.norm_eps), num(b.norm_eps));
  check("rope_theta", num(a.rope_theta), num(b.rope_theta));
  check("rope_scaling", scaling(a.rope_scaling), scaling(b.rope_scaling));
  check("tie_embeddings", a.tie_embeddings ? "true" : "false", b.tie_embeddings ? "true" : "false");
}

ModelSpec read_model(SpecReader& r, const YAML::Node& section) {
  // The preset decides the starting shape, and it may come after the keys it provides defaults
  // for, so it is looked up first; read_mapping() below reports its problems, if any. A
  // checkpoint folder's config.json takes the preset's place.
  const std::string checkpoint = scalar_in(section, "checkpoint");
  std::string preset = scalar_in(section, "preset");
  const bool preset_given = !preset.empty();
  if (!preset_given) preset = ModelSpec{}.preset;
  std::optional<HfConfig> config;
  // A value that is not UTF-8 is refused when the key is read (below); not looked up.
  const bool utf8 = !text::first_invalid_utf8(checkpoint).has_value();
  if (!checkpoint.empty() && utf8) config = read_checkpoint_config(r, section, checkpoint);
  ModelSpec model = find_preset(preset).value_or(ModelSpec{});
  model.preset = preset;
  if (config) {
    model = config->shape;
    model.preset = "custom";
  }
  std::set<std::string> given;
  read_mapping(r, "model", section, model, &given);
  // Before the policies the key was a bool: true recomputed every layer, false nothing. Read
  // here, so that the two spellings of a policy are one job (canonical form, fingerprint).
  if (model.activation_checkpointing == "true") {
    model.activation_checkpointing = choice::checkpointing::kFull;
  } else if (model.activation_checkpointing == "false") {
    model.activation_checkpointing = choice::checkpointing::kNone;
  }
  if (!checkpoint.empty()) {
    if (preset_given && preset != "custom" && !find_preset(preset)) {
      std::vector<std::string> names = preset_names();
      names.push_back("custom");
      r.add("model.preset", r.location_of("model.preset"), not_one_of_message(preset, names));
    }
    // A preset may stay in the file when it describes the checkpoint (the reference recipe
    // names llama3.1-8b and the real weights come with --set model.checkpoint=...).
    const std::optional<ModelSpec> named = find_preset(preset);
    if (preset_given && preset != "custom" && named && config) {
      std::vector<std::string> differ;
      const ModelSpec& a = *named;
      const ModelSpec& b = config->shape;
      const auto add = [&](const char* key, auto x, auto y) {
        if (x != y) differ.push_back(fmt::format("{} {} vs {}", key, x, y));
      };
      add("dim", a.dim, b.dim);
      add("n_layers", a.n_layers, b.n_layers);
      add("n_heads", a.n_heads, b.n_heads);
      add("n_kv_heads", a.n_kv_heads, b.n_kv_heads);
      add("ffn_dim", a.ffn_dim, b.ffn_dim);
      add("vocab_size", a.vocab_size, b.vocab_size);
      add("norm_eps", a.norm_eps, b.norm_eps);
      add("rope_theta", a.rope_theta, b.rope_theta);
      add("rope_scaling", a.rope_scaling.has_value(), b.rope_scaling.has_value());
      if (a.rope_scaling && b.rope_scaling) {
        add("rope_scaling.factor", a.rope_scaling->factor, b.rope_scaling->factor);
        add("rope_scaling.original_max_position_embeddings",
            a.rope_scaling->original_max_position_embeddings,
            b.rope_scaling->original_max_position_embeddings);
      }
      add("tie_embeddings", a.tie_embeddings, b.tie_embeddings);
      if (!differ.empty()) {
        r.add("model.preset", r.location_of("model.preset"),
              fmt::format("{} is not the shape of {}/config.json ({}); remove model.preset (the "
                          "checkpoint gives the shape)",
                          preset, checkpoint, fmt::join(differ, ", ")));
      }
    }
    if (config) check_against_checkpoint(r, model, config->shape, given, checkpoint);
    model.preset = "custom";
  } else if (model.preset == "custom") {
    for (const std::string& key : required_custom_keys()) {
      if (given.count(key) == 0) {
        const std::string path = "model." + key;
        r.add(path, r.where_absent(path), "required when model.preset is \"custom\"");
      }
    }
  }
  return model;
}

RunSpec read_run_spec(SpecReader& r, const YAML::Node& root) {
  RunSpec spec;
  const YAML::Node empty(YAML::NodeType::Map);
  bool model_read = false;
  bool tokenizer_given = false;
  std::map<std::string, int64_t> first_line;
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      r.add("", r.where("", key), "expected a section name, found " + describe(key));
      continue;
    }
    const std::string name = key.Scalar();
    const Location loc = r.where(name, key);
    if (!contains(section_names(), name)) {
      r.add(name, loc, unknown_name_message("section", name, section_names()));
      continue;
    }
    const auto [seen, inserted] = first_line.emplace(name, loc.line);
    if (!inserted) {
      r.add(name, loc,
            fmt::format("duplicate section {} (first given at line {})", text::quoted(name),
                        seen->second));
      continue;
    }
    r.remember(name, loc);
    const YAML::Node& value = entry.second;
    // An empty section ("lora:" alone) is null in YAML and means "all defaults".
    if (!value.IsMap() && !value.IsNull()) {
      r.add(name, loc, "expected a mapping of keys, found " + describe(value));
    }
    const YAML::Node& body = value.IsMap() ? value : empty;
    if (name == "model") {
      spec.model = read_model(r, body);
      model_read = true;
    } else if (name == "lora") {
      read_mapping(r, name, body, spec.lora);
    } else if (name == "data") {
      read_mapping(r, name, body, spec.data);
      tokenizer_given = body.IsMap() && body["tokenizer"].IsDefined();
    } else if (name == "train") {
      read_mapping(r, name, body, spec.train);
    } else if (name == "backend") {
      read_mapping(r, name, body, spec.backend);
    } else if (name == "distributed") {
      read_mapping(r, name, body, spec.distributed);
    } else if (name == "output") {
      read_mapping(r, name, body, spec.output);
    }
  }
  if (!model_read) spec.model = read_model(r, empty);
  // Pre-tokenized data needs no tokenizer unless the spec names one: its ids are checked against
  // the model's vocabulary. Other data files are tokenized with the checkpoint's own tokenizer
  // unless the spec names one (synthetic data is made of byte tokens).
  const bool file = spec.data.source == choice::data_source::kFile;
  if (!tokenizer_given && file && spec.data.format == choice::data_format::kTokenized) {
    spec.data.tokenizer = choice::tokenizer::kNone;
  } else if (!spec.model.checkpoint.empty() && !tokenizer_given && file) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir(spec.model.checkpoint);
    if (fs::is_regular_file(dir / "tokenizer.json", ec)) {
      spec.data.tokenizer = spec.model.checkpoint;
    } else if (fs::is_regular_file(dir / "tokenizer.model", ec)) {
      spec.data.tokenizer = (dir / "tokenizer.model").string();
    } else {
      r.add("data.tokenizer", r.where_absent("data.tokenizer"),
            fmt::format("required: {} holds no tokenizer.json or tokenizer.model to tokenize "
                        "data.path with",
                        spec.model.checkpoint));
    }
  }
  return spec;
}

// ---------------------------------------------------------------------------------------------
// --set overrides.

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

// True when `parts` names a section, a key of a section, or a field of a nested mapping
// (model.rope_scaling, train.checkpoint).
bool check_override_path(SpecReader& r, const std::string& path,
                         const std::vector<std::string>& parts) {
  const Location here{std::string(kOverrideFile), 0};
  if (!contains(section_names(), parts[0])) {
    r.add(path, here, unknown_name_message("section", parts[0], section_names()));
    return false;
  }
  if (parts.size() == 1) return true;
  const std::vector<std::string> keys = section_keys(parts[0]);
  if (!contains(keys, parts[1])) {
    r.add(path, here, unknown_name_message("key", parts[1], keys));
    return false;
  }
  if (parts.size() == 2) return true;
  const bool rope = parts[0] == "model" && parts[1] == "rope_scaling";
  const bool checkpoint = parts[0] == "train" && parts[1] == "checkpoint";
  if (rope || checkpoint) {
    const std::vector<std::string> nested_keys =
        rope ? key_names<RopeScaling>() : key_names<CheckpointSpec>();
    if (!contains(nested_keys, parts[2])) {
      r.add(path, here, unknown_name_message("key", parts[2], nested_keys));
      return false;
    }
    if (parts.size() == 3) return true;
    r.add(path, here, parts[0] + "." + parts[1] + "." + parts[2] + " has no sub-keys");
    return false;
  }
  r.add(path, here, parts[0] + "." + parts[1] + " has no sub-keys");
  return false;
}

// Writes the override into the YAML tree, so that it is read and validated exactly like a value
// from the file. `root` must be a mapping.
void apply_override(SpecReader& r, YAML::Node& root, const std::string& arg) {
  const Location here{std::string(kOverrideFile), 0};
  const size_t eq = arg.find('=');
  const std::string key = arg.substr(0, eq == std::string::npos ? 0 : eq);
  const std::string path(text::trim(key, text::kBlanks));
  const std::vector<std::string> parts = split_path(path);
  if (eq == std::string::npos || contains(parts, "")) {
    r.add("", here, fmt::format("expected key.path=value, found {}", text::quoted(arg)));
    return;
  }
  if (!check_override_path(r, path, parts)) return;
  const std::string text = arg.substr(eq + 1);
  YAML::Node value;
  try {
    AfterTheDocument after;
    value = load_one_document(text, after);
    if (!after.problem.empty()) {
      r.add(
          path, here,
          fmt::format("cannot parse value {} as YAML: {}", text::quoted(text),
                      after.problem == kSecondDocument ? after.problem + ": a value is one document"
                                                       : after.problem));
      return;
    }
  } catch (const YAML::Exception& e) {
    r.add(path, here,
          fmt::format("cannot parse value {} as YAML: {}", text::quoted(text),
                      ftbench::text::yaml_error_text(e)));
    return;
  }
  // yaml-cpp nodes are references: reset() moves the cursor, while assignment would overwrite
  // the node the cursor points at.
  YAML::Node cursor;
  cursor.reset(root);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!cursor[parts[i]].IsMap()) cursor[parts[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node child = cursor[parts[i]];
    cursor.reset(child);
  }
  cursor[parts.back()] = value;
  r.mark_overridden(path);
}

}  // namespace

RunSpec load_spec_from_string(const std::string& yaml_text, const std::string& source_name,
                              const std::vector<std::string>& overrides) {
  // No key needs a line this long; the YAML scanner takes about 0.2 s a megabyte of one value,
  // so such a line is refused before it is scanned.
  constexpr std::size_t kMaxLineBytes = 65'536;
  int64_t line_number = 1;
  for (std::size_t begin = 0; begin < yaml_text.size(); ++line_number) {
    std::size_t end = yaml_text.find('\n', begin);
    if (end == std::string::npos) end = yaml_text.size();
    if (end - begin > kMaxLineBytes) {
      throw SpecError({SpecIssue{source_name, "", line_number,
                                 fmt::format("{} bytes on one line; a spec line holds at most {} "
                                             "(a file pasted into a value?)",
                                             end - begin, kMaxLineBytes)}});
    }
    begin = end + 1;
  }
  YAML::Node root;
  try {
    AfterTheDocument after;
    root = load_one_document(yaml_text, after);
    if (!after.problem.empty()) {
      throw SpecError(
          {SpecIssue{source_name, "", after.line,
                     after.problem == kSecondDocument
                         ? after.problem + ": a spec is one document; only the first would be read"
                         : after.problem}});
    }
  } catch (const YAML::Exception& e) {
    const int64_t line = e.mark.is_null() ? 0 : static_cast<int64_t>(e.mark.line) + 1;
    throw SpecError(
        {SpecIssue{source_name, "", line, "invalid YAML: " + ftbench::text::yaml_error_text(e)}});
  }

  SpecReader reader(source_name);
  const std::string sections = "a mapping of sections (" + join(section_names()) + ")";
  if (!root.IsMap()) {
    // An empty file (or one of comments only) is a mistake (the wrong file, a failed write), not
    // a request for every default: refused, so that a run never benchmarks what nobody asked.
    if (!root.IsDefined() || (root.IsNull() && !has_content(yaml_text))) {
      throw SpecError(
          {SpecIssue{source_name, "", 0,
                     fmt::format("the spec is empty{}: expected {}",
                                 yaml_text.find('#') != std::string::npos ? " (only comments)" : "",
                                 sections)}});
    }
    reader.add("", reader.where("", root), "expected " + sections + ", found " + describe(root));
    root.reset(YAML::Node(YAML::NodeType::Map));
  }
  for (const std::string& override_text : overrides) {
    apply_override(reader, root, override_text);
  }

  RunSpec spec = read_run_spec(reader, root);
  spec.source_path = source_name;
  for (const auto& [key, loc] : reader.locations()) spec.key_origins[key] = {loc.file, loc.line};

  std::vector<SpecIssue> issues = std::move(reader.issues());
  for (SpecIssue& issue : validate(spec)) {
    // A key that could not be read keeps its default; a range issue about that default would
    // only repeat the first problem in a confusing way.
    if (reader.has_issue_at(issue.key_path)) continue;
    const Location loc = reader.location_of(issue.key_path);
    issue.file = loc.file;
    issue.line = loc.line;
    issues.push_back(std::move(issue));
  }
  if (issues.empty()) return spec;
  const auto more =
      reader.issues_not_shown() + static_cast<int64_t>(issues.size() > SpecReader::kMaxIssues
                                                           ? issues.size() - SpecReader::kMaxIssues
                                                           : 0);
  // In reading order: --set problems (no line) first, then the file's by line, then those of
  // keys the file does not give (defaults and preset values).
  const auto order = [](const SpecIssue& issue) {
    if (issue.file == kOverrideFile) return std::pair<int, int64_t>(0, 0);
    return issue.line > 0 ? std::pair<int, int64_t>(1, issue.line) : std::pair<int, int64_t>(2, 0);
  };
  std::stable_sort(issues.begin(), issues.end(),
                   [&](const SpecIssue& a, const SpecIssue& b) { return order(a) < order(b); });
  if (more > 0) {
    issues.resize(std::min(issues.size(), SpecReader::kMaxIssues));
    issues.push_back(SpecIssue{source_name, "", 0,
                               fmt::format("and {} more problems (the first {} are listed)", more,
                                           SpecReader::kMaxIssues)});
  }
  throw SpecError(std::move(issues));
}

SpecIssue issue_at(const RunSpec& spec, const std::string& key, std::string message) {
  const auto it = spec.key_origins.find(key);
  if (it == spec.key_origins.end()) return SpecIssue{spec.source_path, key, 0, std::move(message)};
  return SpecIssue{it->second.first, key, it->second.second, std::move(message)};
}

RunSpec load_spec(const std::string& path, const std::vector<std::string>& overrides) {
  std::string error;
  const std::optional<std::string> text = read_file(path, io::kRunSpecFile, error);
  if (!text) throw SpecError({SpecIssue{path, "", 0, "cannot read file: " + error}});
  return load_spec_from_string(*text, path, overrides);
}

}  // namespace ftbench::spec
