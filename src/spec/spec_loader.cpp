#include "ftbench/spec/spec_loader.h"

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

#include "ftbench/io/whole_file.h"
#include "ftbench/spec/checkpoint_config.h"
#include "ftbench/spec/derived.h"
#include "ftbench/spec/limits.h"
#include "ftbench/spec/presets.h"
#include "ftbench/spec/spec_fields.h"
#include "ftbench/text/did_you_mean.h"
#include "ftbench/text/messages.h"

namespace ftbench::spec {

namespace {

// The file name issues carry when the value came from a --set override.
constexpr std::string_view kOverrideFile = "--set";

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
// Scalar parsing. Locale-independent (std::from_chars) and strict: decimal only, so YAML 1.1's
// 0x / 0o / 1_000 forms and "1e3" for an integer are rejected rather than guessed at.

bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

std::string_view strip_plus(std::string_view s) {
  if (s.size() > 1 && s.front() == '+' && s[1] != '-') s.remove_prefix(1);
  return s;
}

std::errc parse_int(std::string_view s, int64_t& out) {
  s = strip_plus(s);
  if (s.empty()) return std::errc::invalid_argument;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc()) return ec;
  return end == s.data() + s.size() ? std::errc() : std::errc::invalid_argument;
}

std::errc parse_uint(std::string_view s, uint64_t& out) {
  s = strip_plus(s);
  if (s.empty() || s.front() == '-') return std::errc::invalid_argument;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc()) return ec;
  return end == s.data() + s.size() ? std::errc() : std::errc::invalid_argument;
}

std::errc parse_double(std::string_view s, double& out) {
  s = strip_plus(s);
  if (s.empty()) return std::errc::invalid_argument;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc()) return ec;
  if (end != s.data() + s.size()) return std::errc::invalid_argument;
  return std::isfinite(out) ? std::errc() : std::errc::result_out_of_range;
}

// ---------------------------------------------------------------------------------------------
// Reading the YAML tree into the structs.

struct Location {
  std::string file;
  int64_t line = 0;  // 1-based; 0 = unknown (absent key, --set)
};

// Collects the issues of one load and remembers where every key came from, so that validate()'s
// location-free issues can be pinned to a file and line afterwards.
class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  void mark_overridden(const std::string& path) { overridden_.insert(path); }

  // --set when `path` or a mapping above it was replaced by an override, else the file and the
  // node's 1-based line.
  Location where(const std::string& path, const YAML::Node& node) const {
    if (is_overridden(path)) return Location{std::string(kOverrideFile), 0};
    const YAML::Mark mark = node.Mark();
    return Location{file_, mark.is_null() ? 0 : static_cast<int64_t>(mark.line) + 1};
  }

  Location where_absent(const std::string& path) const {
    if (is_overridden(path)) return Location{std::string(kOverrideFile), 0};
    return Location{file_, 0};
  }

  void remember(const std::string& path, const Location& loc) { locations_[path] = loc; }

  Location location_of(const std::string& path) const {
    const auto it = locations_.find(path);
    return it != locations_.end() ? it->second : where_absent(path);
  }

  void add(const std::string& path, const Location& loc, std::string message) {
    paths_with_issues_.insert(path);
    // A file of a million bad keys is refused with the first hundred problems, not all of them.
    if (issues_.size() >= kMaxIssues) {
      ++issues_not_shown_;
      return;
    }
    issues_.push_back(SpecIssue{loc.file, path, loc.line, std::move(message)});
  }

  static constexpr std::size_t kMaxIssues = 100;
  int64_t issues_not_shown() const { return issues_not_shown_; }

  bool has_issue_at(const std::string& path) const { return paths_with_issues_.count(path) > 0; }

  std::vector<SpecIssue>& issues() { return issues_; }

  void read_int(const YAML::Node& v, const std::string& path, const Location& loc, int64_t& out) {
    if (!is_plain_scalar(v)) {
      add(path, loc, "expected an integer, found " + describe(v));
      return;
    }
    const std::errc ec = parse_int(v.Scalar(), out);
    if (ec == std::errc::result_out_of_range) {
      add(path, loc, "expected an integer in the 64-bit range, found " + describe(v));
    } else if (ec != std::errc()) {
      add(path, loc, "expected an integer, found " + describe(v));
    }
  }

  void read_uint(const YAML::Node& v, const std::string& path, const Location& loc, uint64_t& out) {
    int64_t as_signed = 0;
    if (is_plain_scalar(v) && parse_int(v.Scalar(), as_signed) == std::errc() && as_signed < 0) {
      add(path, loc, fmt::format("must be an integer >= 0, found {}", as_signed));
      return;
    }
    if (!is_plain_scalar(v)) {
      add(path, loc, "expected an integer >= 0, found " + describe(v));
      return;
    }
    const std::errc ec = parse_uint(v.Scalar(), out);
    if (ec == std::errc::result_out_of_range) {
      add(path, loc, "expected an integer below 2^64, found " + describe(v));
    } else if (ec != std::errc()) {
      add(path, loc, "expected an integer >= 0, found " + describe(v));
    }
  }

  void read_number(const YAML::Node& v, const std::string& path, const Location& loc, double& out) {
    if (!is_plain_scalar(v)) {
      add(path, loc, "expected a number, found " + describe(v));
      return;
    }
    const std::errc ec = parse_double(v.Scalar(), out);
    if (ec == std::errc::result_out_of_range) {
      add(path, loc, "expected a finite number, found " + describe(v));
    } else if (ec != std::errc()) {
      add(path, loc, "expected a number, found " + describe(v));
    }
  }

  void read_optional_number(const YAML::Node& v, const std::string& path, const Location& loc,
                            std::optional<double>& out) {
    if (v.IsNull()) {
      out.reset();
      return;
    }
    double value = 0.0;
    if (!is_plain_scalar(v) || parse_double(v.Scalar(), value) != std::errc()) {
      add(path, loc, "expected a number or null, found " + describe(v));
      return;
    }
    out = value;
  }

  // YAML 1.1 also reads yes/no/on/off as booleans; only true/false are accepted so that
  // `progress: on` (a string key elsewhere) can never be confused with a flag.
  void read_bool(const YAML::Node& v, const std::string& path, const Location& loc, bool& out) {
    if (is_plain_scalar(v) && v.Scalar() == "true") {
      out = true;
    } else if (is_plain_scalar(v) && v.Scalar() == "false") {
      out = false;
    } else {
      add(path, loc, "expected true or false, found " + describe(v));
    }
  }

  void read_string(const YAML::Node& v, const std::string& path, const Location& loc,
                   std::string& out) {
    if (!v.IsScalar()) {
      add(path, loc, "expected a string, found " + describe(v));
      return;
    }
    // Every string ends up in the report's JSON, which holds UTF-8 only: a path or name in
    // another encoding is refused here, not after the run when the report cannot be written.
    const std::string& text = v.Scalar();
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t n = text::utf8_sequence_length(text, i);
      if (n == 0) {
        add(path, loc,
            fmt::format("expected UTF-8 text, found {} (byte {} is not UTF-8; the report is "
                        "JSON, which holds UTF-8 only)",
                        text::quoted(text), i + 1));
        return;
      }
      i += n;
    }
    out = text;
  }

  void read_string_list(const YAML::Node& v, const std::string& path, const Location& loc,
                        std::vector<std::string>& out) {
    if (!v.IsSequence()) {
      add(path, loc, "expected a list, found " + describe(v));
      return;
    }
    std::vector<std::string> items;
    bool ok = true;
    for (const YAML::Node& item : v) {
      if (!item.IsScalar()) {
        add(path, where(path, item),
            "expected a list of strings, found an item that is " + describe(item));
        ok = false;
        continue;
      }
      items.push_back(item.Scalar());
    }
    if (ok) out = std::move(items);
  }

 private:
  bool is_overridden(const std::string& path) const {
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
      if (overridden_.count(path.substr(0, dot)) > 0) return true;
    }
    return overridden_.count(path) > 0;
  }

  std::string file_;
  std::set<std::string> overridden_;
  std::map<std::string, Location> locations_;
  std::vector<SpecIssue> issues_;
  int64_t issues_not_shown_ = 0;
  std::set<std::string> paths_with_issues_;
};

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

// Reads a whole file of `kind` (io/whole_file.h: a size limit, no devices); on failure returns
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
  bool utf8 = true;
  for (std::size_t i = 0; utf8 && i < checkpoint.size();) {
    const std::size_t n = text::utf8_sequence_length(checkpoint, i);
    utf8 = n > 0;
    i += n;
  }
  if (!checkpoint.empty() && utf8) config = read_checkpoint_config(r, section, checkpoint);
  ModelSpec model = find_preset(preset).value_or(ModelSpec{});
  model.preset = preset;
  if (config) {
    model = config->shape;
    model.preset = "custom";
  }
  std::set<std::string> given;
  read_mapping(r, "model", section, model, &given);
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
    } else if (name == "output") {
      read_mapping(r, name, body, spec.output);
    }
  }
  if (!model_read) spec.model = read_model(r, empty);
  // Pre-tokenized data needs no tokenizer unless the spec names one: its ids are checked against
  // the model's vocabulary. Other data files are tokenized with the checkpoint's own tokenizer
  // unless the spec names one (synthetic data is made of byte tokens).
  if (!tokenizer_given && spec.data.source == "file" && spec.data.format == "tokenized") {
    spec.data.tokenizer = "none";
  } else if (!spec.model.checkpoint.empty() && !tokenizer_given && spec.data.source == "file") {
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
// Whole documents.

const std::string kSecondDocument = "a second YAML document (after \"---\")";

// True when `text` holds anything but white space and comments.
bool has_content(std::string_view text) {
  bool in_comment = false;
  for (const char c : text) {
    if (c == '\n') {
      in_comment = false;
    } else if (!in_comment && c == '#') {
      in_comment = true;
    } else if (!in_comment && c != ' ' && c != '\t' && c != '\r') {
      return true;
    }
  }
  return false;
}

// Whether `text` has a "---" marker at column 0 after some content (or a second one when it
// opens with one): where a second document would start. Its 1-based line, else 0.
int64_t second_marker_line(std::string_view text) {
  int64_t line = 0;
  bool content_seen = false;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = text.substr(start, end - start);
    ++line;
    const bool marker =
        l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && content_seen) return line;
    if (marker || (has_content(l) && l[0] != '%')) content_seen = true;  // not a %YAML directive
    start = end + 1;
  }
  return 0;
}

// Counts the documents a parser finds, remembering where the second starts.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) second_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  const YAML::Mark& second() const { return second_; }

 private:
  int documents_ = 0;
  YAML::Mark second_ = YAML::Mark::null_mark();
};

// What follows the first document of a text, if anything.
struct AfterTheDocument {
  std::string problem;  // "" when nothing: kSecondDocument, or content that is no document
  int64_t line = 0;     // 1-based; 0 when unknown
};

// The one document of `text` (a null node when it has none); `after` says what follows it.
// Throws YAML::Exception for invalid YAML. At most two documents are parsed: yaml-cpp's LoadAll
// never ends on some malformed streams (a lone ",", a fuzz finding), where the parser keeps
// finding empty documents without consuming anything.
YAML::Node load_one_document(const std::string& text, AfterTheDocument& after) {
  after = AfterTheDocument{};
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentCounter counter;
  if (parser.HandleNextDocument(counter) && parser.HandleNextDocument(counter)) {
    if (const int64_t marker = second_marker_line(text); marker > 0) {
      after.problem = kSecondDocument;
      after.line = marker;
    } else {
      after.problem = "invalid YAML: content the parser cannot place in the document";
      after.line = counter.second().is_null() ? 0 : counter.second().line + 1;
    }
    return YAML::Node();
  }
  return YAML::Load(text);
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

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
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
  const std::string path = eq == std::string::npos ? "" : trim(arg.substr(0, eq));
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

// ---------------------------------------------------------------------------------------------
// Validation of a filled spec.

// Issues without a line; the loader pins them to the key's line afterwards.
class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}

  void fail(const std::string& path, std::string message) {
    issues_.push_back(SpecIssue{file_, path, 0, std::move(message)});
  }

  void int_at_least(const std::string& path, int64_t value, int64_t min) {
    if (value < min) fail(path, fmt::format("must be an integer >= {}, found {}", min, value));
  }

  // [min, max]; `why` says where the ceiling comes from. True when in range.
  bool int_in_range(const std::string& path, int64_t value, int64_t min, int64_t max,
                    const char* why) {
    if (value < min) {
      fail(path, fmt::format("must be an integer >= {}, found {}", min, value));
      return false;
    }
    if (value > max) {
      fail(path, fmt::format("must be an integer <= {} ({}), found {}", max, why, value));
      return false;
    }
    return true;
  }

  void positive(const std::string& path, double value) {
    if (!(value > 0.0)) fail(path, "must be a number > 0, found " + number_text(value));
  }

  void at_least(const std::string& path, double value, double min) {
    if (!(value >= min)) {
      fail(path,
           fmt::format("must be a number >= {}, found {}", number_text(min), number_text(value)));
    }
  }

  // [0, 1) when `closed` is false, [0, 1] when true.
  void fraction(const std::string& path, double value, bool closed) {
    const bool ok = value >= 0.0 && (closed ? value <= 1.0 : value < 1.0);
    if (!ok) {
      fail(path, fmt::format("must be a number in [0, 1{}, found {}", closed ? "]" : ")",
                             number_text(value)));
    }
  }

  bool one_of(const std::string& path, const std::string& value,
              const std::vector<std::string>& allowed) {
    if (contains(allowed, value)) return true;
    fail(path, not_one_of_message(value, allowed));
    return false;
  }

  std::vector<SpecIssue> take() { return std::move(issues_); }

 private:
  std::string file_;
  std::vector<SpecIssue> issues_;
};

void validate_model(Checker& c, const ModelSpec& m, const DataSpec& d) {
  std::vector<std::string> presets = preset_names();
  presets.push_back("custom");
  // With model.checkpoint the shape is config.json's; a config.json that could not be read has
  // its issue at model.checkpoint and leaves the shape at zero.
  const bool shape_known =
      c.one_of("model.preset", m.preset, presets) && (m.checkpoint.empty() || m.dim > 0);
  c.one_of("model.dtype", m.dtype, {"bf16", "fp16", "fp32"});
  // An unknown preset leaves the shape at zero; reporting every dimension as well would bury
  // the one real mistake.
  if (!shape_known) return;
  // The bounds a checkpoint's config.json gets (hf/hf_config.h): with them every parameter and
  // FLOP count fits in 64 bits (spec/limits.h).
  constexpr const char* kSizeCeiling = "the largest size ftbench builds";
  c.int_in_range("model.dim", m.dim, 1, kMaxModelSize, kSizeCeiling);
  c.int_in_range("model.n_layers", m.n_layers, 1, kMaxModelLayers,
                 "the most layers ftbench builds");
  c.int_in_range("model.n_heads", m.n_heads, 1, kMaxModelSize, kSizeCeiling);
  c.int_in_range("model.n_kv_heads", m.n_kv_heads, 1, kMaxModelSize, kSizeCeiling);
  c.int_in_range("model.ffn_dim", m.ffn_dim, 1, kMaxModelSize, kSizeCeiling);
  // A tokenizer file's vocabulary is checked against the model when the run loads it.
  if (d.tokenizer == "byte" && m.vocab_size < 259) {
    c.fail("model.vocab_size",
           fmt::format("must be an integer >= 259 (the byte tokenizer's 256 bytes + BOS, EOS, "
                       "PAD), found {}",
                       m.vocab_size));
  } else {
    c.int_in_range("model.vocab_size", m.vocab_size, 1, kMaxModelSize, kSizeCeiling);
  }
  c.int_in_range("model.max_seq_len", m.max_seq_len, 1, kMaxModelSize, kSizeCeiling);
  c.positive("model.norm_eps", m.norm_eps);
  c.positive("model.rope_theta", m.rope_theta);
  if (m.rope_scaling) {
    const RopeScaling& s = *m.rope_scaling;
    c.at_least("model.rope_scaling.factor", s.factor, 1.0);
    c.positive("model.rope_scaling.low_freq_factor", s.low_freq_factor);
    if (!(s.low_freq_factor < s.high_freq_factor)) {
      c.fail("model.rope_scaling.low_freq_factor",
             fmt::format("must be < model.rope_scaling.high_freq_factor ({}), found {}",
                         number_text(s.high_freq_factor), number_text(s.low_freq_factor)));
    }
    c.int_at_least("model.rope_scaling.original_max_position_embeddings",
                   s.original_max_position_embeddings, 1);
  }
  // Divisibility only between values that passed their own range check, so that one bad value
  // gives one issue.
  if (m.dim >= 1 && m.n_heads >= 1) {
    if (m.dim % m.n_heads != 0) {
      c.fail("model.n_heads", fmt::format("{} does not divide model.dim {}", m.n_heads, m.dim));
    } else if ((m.dim / m.n_heads) % 2 != 0) {
      c.fail("model.dim",
             fmt::format("head dimension model.dim / model.n_heads = {} / {} = {} must be even "
                         "(rotary embeddings rotate pairs of dimensions)",
                         m.dim, m.n_heads, m.dim / m.n_heads));
    }
  }
  if (m.n_heads >= 1 && m.n_kv_heads >= 1 && m.n_heads % m.n_kv_heads != 0) {
    c.fail("model.n_kv_heads",
           fmt::format("{} does not divide model.n_heads {}", m.n_kv_heads, m.n_heads));
  }
}

void validate_lora(Checker& c, const LoraSpec& l, const std::string& model_dtype) {
  const std::vector<std::string> targets = {"q", "k", "v", "o", "gate", "up", "down", "output"};
  c.int_in_range("lora.rank", l.rank, 1, kMaxLoraRank, "the largest rank ftbench builds");
  c.positive("lora.alpha", l.alpha);
  c.fraction("lora.dropout", l.dropout, false);
  if (l.targets.empty()) {
    c.fail("lora.targets", "must list at least one of " + join(targets) + ", found an empty list");
  }
  std::set<std::string> seen;
  for (const std::string& target : l.targets) {
    if (!contains(targets, target)) {
      std::string message =
          fmt::format("unknown target {}; expected one of {}", text::quoted(target), join(targets));
      if (auto hint = closest(target, targets)) {
        message += fmt::format("; did you mean {}?", text::quoted(*hint));
      }
      c.fail("lora.targets", message);
    } else if (!seen.insert(target).second) {
      c.fail("lora.targets",
             fmt::format("target {} is listed more than once", text::quoted(target)));
    }
  }
  c.one_of("lora.dtype", l.dtype, {"bf16", "fp16", "fp32", "base"});
  // AdamW keeps its state in the adapters' dtype: in fp16, eps (1e-8) is below the smallest
  // subnormal and small squared gradients flush to zero, so updates blow up to inf or NaN.
  if (l.dtype == "fp16" || (l.dtype == "base" && model_dtype == "fp16")) {
    c.fail("lora.dtype",
           fmt::format("fp16 adapters are not supported: AdamW's state underflows in fp16; use "
                       "fp32 (the default) or bf16, found {}",
                       text::quoted(l.dtype == "base" ? "base (model.dtype fp16)" : l.dtype)));
  }
}

void validate_data(Checker& c, const DataSpec& d, const ModelSpec& m) {
  c.one_of("data.source", d.source, {"synthetic", "file"});
  if (d.tokenizer.empty()) {
    c.fail("data.tokenizer",
           "expected \"byte\", a tokenizer.json file or folder, a SentencePiece .model file, or "
           "\"none\" for pre-tokenized data, found \"\"");
  }
  if (d.tokenizer == "none" && d.format != "tokenized") {
    c.fail("data.tokenizer",
           fmt::format("none reads pre-tokenized data only: set data.format: tokenized, or give a "
                       "tokenizer for data.format {}",
                       text::quoted(d.format)));
  }
  if (d.source == "file" && d.path.empty()) {
    c.fail("data.path", "data.source is file: give the data file (.json or .jsonl)");
  }
  if (d.source == "synthetic" && d.tokenizer != "byte" && !d.tokenizer.empty() &&
      d.tokenizer != "none") {
    c.fail("data.tokenizer",
           fmt::format("synthetic data is generated in the byte tokenizer's tokens; use "
                       "\"byte\" or data.source: file, found {}",
                       text::quoted(d.tokenizer)));
  }
  if (d.source == "synthetic" && !d.path.empty()) {
    c.fail("data.path", fmt::format("is only read with data.source: file (data.source is "
                                    "synthetic), found {}",
                                    text::quoted(d.path)));
  }
  c.one_of("data.format", d.format, {"auto", "alpaca", "chat", "text", "tokenized"});
  c.int_at_least("data.max_examples", d.max_examples, 0);
  c.one_of("data.subset", d.subset, {"first", "random"});
  c.one_of("data.too_long", d.too_long, {"truncate", "drop"});
  c.one_of("data.on_error", d.on_error, {"fail", "skip"});
  if (d.source == "synthetic") {
    c.int_in_range("data.num_examples", d.num_examples, 1, kMaxSyntheticExamples,
                   "synthetic examples are generated before the first step");
  } else {
    c.int_at_least("data.num_examples", d.num_examples, 1);
  }
  c.int_at_least("data.seq_len", d.seq_len, 2);
  if (m.max_seq_len >= 1 && d.seq_len > m.max_seq_len) {
    c.fail("data.seq_len",
           fmt::format("must be <= model.max_seq_len ({}), found {}", m.max_seq_len, d.seq_len));
  }
  c.one_of("data.length_distribution", d.length_distribution, {"fixed", "uniform", "lognormal"});
  c.int_at_least("data.min_tokens", d.min_tokens, 2);
  if (d.min_tokens > d.max_tokens) {
    c.fail("data.min_tokens",
           fmt::format("must be <= data.max_tokens ({}), found {}", d.max_tokens, d.min_tokens));
  }
  if (d.max_tokens > d.seq_len) {
    c.fail("data.max_tokens",
           fmt::format("must be <= data.seq_len ({}), found {}", d.seq_len, d.max_tokens));
  }
  c.positive("data.lognormal_median_tokens", d.lognormal_median_tokens);
  c.at_least("data.lognormal_sigma", d.lognormal_sigma, 0.0);
  c.fraction("data.prompt_fraction", d.prompt_fraction, false);
  c.one_of("data.padding", d.padding, {"longest", "max_length", "pack"});
  c.fraction("data.validation_fraction", d.validation_fraction, false);
  if (d.validation_fraction > 0.0 && !d.validation_path.empty()) {
    c.fail("data.validation_path",
           "give data.validation_fraction or data.validation_path, not both");
  }
  if (d.source != "file" && (d.validation_fraction > 0.0 || !d.validation_path.empty())) {
    c.fail(d.validation_path.empty() ? "data.validation_fraction" : "data.validation_path",
           "validation data needs data.source: file");
  }
}

void validate_train(Checker& c, const TrainSpec& t, const DataSpec& d) {
  c.int_at_least("train.epochs", t.epochs, 1);
  c.int_at_least("train.max_steps", t.max_steps, 0);
  c.int_at_least("train.micro_batch_size", t.micro_batch_size, 1);
  c.int_at_least("train.grad_accum_steps", t.grad_accum_steps, 1);
  c.one_of("train.optimizer", t.optimizer, {"adamw"});
  c.positive("train.lr", t.lr);
  c.at_least("train.weight_decay", t.weight_decay, 0.0);
  c.fraction("train.beta1", t.beta1, false);
  c.fraction("train.beta2", t.beta2, false);
  c.positive("train.eps", t.eps);
  c.one_of("train.lr_schedule", t.lr_schedule, {"cosine", "linear", "constant"});
  c.int_at_least("train.lr_warmup_steps", t.lr_warmup_steps, 0);
  c.fraction("train.min_lr_ratio", t.min_lr_ratio, true);
  c.at_least("train.max_grad_norm", t.max_grad_norm, 0.0);
  c.int_at_least("train.timing_warmup_steps", t.timing_warmup_steps, 0);
  c.int_at_least("train.loss_window", t.loss_window, 1);
  c.int_at_least("train.eval_every_steps", t.eval_every_steps, 0);
  c.int_at_least("train.eval_max_batches", t.eval_max_batches, 0);
  c.int_at_least("train.oom_max_fallbacks", t.oom_max_fallbacks, 1);
  if (t.checkpoint.dir.empty()) c.fail("train.checkpoint.dir", "must not be empty");
  c.int_at_least("train.checkpoint.every_steps", t.checkpoint.every_steps, 0);
  c.at_least("train.checkpoint.every_minutes", t.checkpoint.every_minutes, 0.0);
  c.int_at_least("train.checkpoint.keep_last", t.checkpoint.keep_last, 1);
  if (t.eval_every_steps > 0 && d.validation_fraction == 0.0 && d.validation_path.empty()) {
    c.fail("train.eval_every_steps",
           "needs validation data: set data.validation_fraction or data.validation_path");
  }
}

// The counts that follow from the spec (spec/derived.h): what does not fit in 64 bits or under
// spec/limits.h's ceilings, and a synthetic data set too small for one optimizer step.
// Partial micro-batches and accumulation groups are dropped, so an epoch has
// floor(floor(N / micro) / accum) optimizer steps; zero would make an empty run. A data file's
// size is known when it is read; the run and `ftbench validate` check it then.
void validate_counts(Checker& c, const RunSpec& spec) {
  const DataSpec& d = spec.data;
  const TrainSpec& t = spec.train;
  const bool synthetic =
      d.source == "synthetic" && d.num_examples >= 1 && d.num_examples <= kMaxSyntheticExamples;
  std::optional<int64_t> micro_batches;
  if (synthetic && t.micro_batch_size >= 1) micro_batches = d.num_examples / t.micro_batch_size;
  const std::vector<CountIssue> issues = count_issues(spec, micro_batches);
  for (const CountIssue& issue : issues) c.fail(issue.key_path, issue.message);
  if (!issues.empty() || !micro_batches || t.grad_accum_steps < 1) return;
  if (*micro_batches / t.grad_accum_steps < 1) {
    c.fail("data.num_examples",
           fmt::format("{} examples make 0 optimizer steps with micro_batch_size {} x "
                       "grad_accum_steps {} (need at least {})",
                       d.num_examples, t.micro_batch_size, t.grad_accum_steps,
                       t.micro_batch_size * t.grad_accum_steps));
  }
}

void validate_backend(Checker& c, const BackendSpec& b) {
  c.one_of("backend.device", b.device, {"auto", "cpu", "cuda", "rocm"});
  // LibTorch takes an int; far more than any machine has is a typo, not a thread count.
  c.int_in_range("backend.device_index", b.device_index, 0, 65535, "more GPUs than a machine has");
  c.int_in_range("backend.threads", b.threads, 0, 65536, "more threads than a machine has");
  if (b.peak_tflops) c.positive("backend.peak_tflops", *b.peak_tflops);
  // Faster than NVML's and AMD SMI's own update rate (about 10 ms at best) reads the same value
  // again; slower than 10 s leaves short runs with two readings.
  c.int_in_range("backend.energy_sample_ms", b.energy_sample_ms, 10, 10000,
                 "readings further apart than 10 s");
}

bool is_name_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
}

constexpr std::size_t kMaxNameChars = 200;

void validate_output(Checker& c, const OutputSpec& o) {
  if (o.report.empty()) c.fail("output.report", "must not be empty");
  // The name becomes part of a file name ("{name}" in output.report), so it is kept to
  // characters that are safe in paths on every platform.
  if (o.name.empty()) {
    c.fail("output.name", "must not be empty");
  } else if (!std::all_of(o.name.begin(), o.name.end(), is_name_char)) {
    c.fail("output.name", "must match [A-Za-z0-9._-]+, found " + text::quoted(o.name));
  } else if (o.name.size() > kMaxNameChars) {
    // A longer name cannot be a file name (255 bytes on Linux, less ".json" and the writer's
    // ".tmp.<pid>"): the run would only find out when it writes the report at the end.
    c.fail("output.name",
           fmt::format("must be at most {} characters, found {}", kMaxNameChars, o.name.size()));
  }
  c.one_of("output.progress", o.progress, {"auto", "on", "off"});
  c.int_at_least("output.log_every_steps", o.log_every_steps, 1);
}

}  // namespace

// The folders a run writes or reads as a whole must not overlap: replacing an export folder
// (--force) removes everything in it, and a merged export over the checkpoint it was loaded
// from would destroy it.
void validate_folders(Checker& c, const RunSpec& spec) {
  namespace fs = std::filesystem;
  const auto expand = [&](std::string path) {
    const std::string key = "{name}";
    for (size_t pos = path.find(key); pos != std::string::npos; pos = path.find(key)) {
      path.replace(pos, key.size(), spec.output.name);
    }
    std::error_code ec;
    const fs::path absolute = fs::absolute(path, ec);
    return (ec ? fs::path(path) : absolute).lexically_normal();
  };
  // True when `inner` is `outer` or inside it.
  const auto within = [](const fs::path& inner, const fs::path& outer) {
    auto i = inner.begin();
    for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
      if (o->empty()) continue;  // a trailing separator
      if (i == inner.end() || *i != *o) return false;
    }
    return true;
  };
  struct Folder {
    const char* key;
    std::string value;
  };
  const std::vector<Folder> exports = {{"output.adapter", spec.output.adapter},
                                       {"output.merged", spec.output.merged}};
  const std::vector<Folder> others = {{"model.checkpoint", spec.model.checkpoint},
                                      {"train.checkpoint.dir", spec.train.checkpoint.dir},
                                      {"output.report", spec.output.report}};
  for (size_t i = 0; i < exports.size(); ++i) {
    if (exports[i].value.empty()) continue;
    const fs::path dir = expand(exports[i].value);
    std::vector<Folder> against(exports.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                exports.end());
    against.insert(against.end(), others.begin(), others.end());
    for (const Folder& other : against) {
      if (other.value.empty()) continue;
      const fs::path path = expand(other.value);
      const bool report = std::string(other.key) == "output.report";
      if (within(path, dir) || (!report && within(dir, path))) {
        c.fail(exports[i].key,
               fmt::format("{} and {} ({}) overlap: an export folder is written (and with "
                           "--force replaced) as a whole; give it a folder of its own",
                           text::quoted(dir.string()), other.key, text::quoted(path.string())));
      }
    }
  }
}

std::vector<SpecIssue> validate(const RunSpec& spec) {
  Checker c(spec.source_path);
  validate_model(c, spec.model, spec.data);
  validate_lora(c, spec.lora, spec.model.dtype);
  validate_data(c, spec.data, spec.model);
  validate_train(c, spec.train, spec.data);
  validate_counts(c, spec);
  validate_backend(c, spec.backend);
  validate_output(c, spec.output);
  validate_folders(c, spec);
  return c.take();
}

RunSpec load_spec_from_string(const std::string& yaml_text, const std::string& source_name,
                              const std::vector<std::string>& overrides) {
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

RunSpec load_spec(const std::string& path, const std::vector<std::string>& overrides) {
  std::string error;
  const std::optional<std::string> text = read_file(path, io::kRunSpecFile, error);
  if (!text) throw SpecError({SpecIssue{path, "", 0, "cannot read file: " + error}});
  return load_spec_from_string(*text, path, overrides);
}

}  // namespace ftbench::spec
