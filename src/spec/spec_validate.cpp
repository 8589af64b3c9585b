// Validation of a filled spec: every value within its range and its choices, the counts a run
// derives from them within the limits, and the folders a run writes apart.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "spec/choices.h"
#include "spec/derived.h"
#include "spec/limits.h"
#include "spec/presets.h"
#include "spec/spec_loader.h"
#include "util/io/output_file.h"
#include "util/text/did_you_mean.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::spec {
namespace {

// Shortest text that reads back as the same double ("0.05", "1", "1e-08").
std::string number_text(double value) { return fmt::format("{}", value); }

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

using text::closest;
using text::join;
using text::not_one_of_message;
using text::quoted;

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
  c.one_of("model.dtype", m.dtype, choice::dtype::kAll);
  c.one_of("model.activation_checkpointing", m.activation_checkpointing,
           choice::checkpointing::kAll);
  // An unknown preset leaves the shape at zero; reporting every dimension as well would bury
  // the one real mistake.
  if (!shape_known) return;
  // The bounds a checkpoint's config.json gets (spec/checkpoint_config.h): with them every
  // parameter and FLOP count fits in 64 bits (spec/limits.h).
  constexpr const char* kSizeCeiling = "the largest size ftbench builds";
  c.int_in_range("model.dim", m.dim, 1, kMaxModelSize, kSizeCeiling);
  c.int_in_range("model.n_layers", m.n_layers, 1, kMaxModelLayers,
                 "the most layers ftbench builds");
  c.int_in_range("model.n_heads", m.n_heads, 1, kMaxModelSize, kSizeCeiling);
  c.int_in_range("model.n_kv_heads", m.n_kv_heads, 1, kMaxModelSize, kSizeCeiling);
  c.int_in_range("model.ffn_dim", m.ffn_dim, 1, kMaxModelSize, kSizeCeiling);
  // A tokenizer file's vocabulary is checked against the model when the run loads it.
  if (d.tokenizer == choice::tokenizer::kByte && m.vocab_size < 259) {
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
  c.one_of("lora.dtype", l.dtype, choice::dtype::kLora);
  // AdamW keeps its state in the adapters' dtype: in fp16, eps (1e-8) is below the smallest
  // subnormal and small squared gradients flush to zero, so updates blow up to inf or NaN.
  if (l.dtype == choice::dtype::kFp16 ||
      (l.dtype == choice::dtype::kBase && model_dtype == choice::dtype::kFp16)) {
    c.fail("lora.dtype",
           fmt::format("fp16 adapters are not supported: AdamW's state underflows in fp16; use "
                       "fp32 (the default) or bf16, found {}",
                       text::quoted(l.dtype == choice::dtype::kBase ? "base (model.dtype fp16)"
                                                                    : l.dtype)));
  }
}

void validate_data(Checker& c, const DataSpec& d, const ModelSpec& m) {
  c.one_of("data.source", d.source, choice::data_source::kAll);
  if (d.tokenizer.empty()) {
    c.fail("data.tokenizer",
           "expected \"byte\", a tokenizer.json file or folder, a SentencePiece .model file, or "
           "\"none\" for pre-tokenized data, found \"\"");
  }
  if (d.tokenizer == choice::tokenizer::kNone && d.format != choice::data_format::kTokenized) {
    c.fail("data.tokenizer",
           fmt::format("none reads pre-tokenized data only: set data.format: tokenized, or give a "
                       "tokenizer for data.format {}",
                       text::quoted(d.format)));
  }
  if (d.source == choice::data_source::kFile && d.path.empty()) {
    c.fail("data.path", "data.source is file: give the data file (.json or .jsonl)");
  }
  if (d.source == choice::data_source::kSynthetic && d.tokenizer != choice::tokenizer::kByte &&
      !d.tokenizer.empty() && d.tokenizer != choice::tokenizer::kNone) {
    c.fail("data.tokenizer",
           fmt::format("synthetic data is generated in the byte tokenizer's tokens; use "
                       "\"byte\" or data.source: file, found {}",
                       text::quoted(d.tokenizer)));
  }
  if (d.source == choice::data_source::kSynthetic && !d.path.empty()) {
    c.fail("data.path", fmt::format("is only read with data.source: file (data.source is "
                                    "synthetic), found {}",
                                    text::quoted(d.path)));
  }
  c.one_of("data.format", d.format, choice::data_format::kAll);
  c.int_at_least("data.max_examples", d.max_examples, 0);
  c.one_of("data.subset", d.subset, choice::subset::kAll);
  c.one_of("data.too_long", d.too_long, choice::too_long::kAll);
  c.one_of("data.on_error", d.on_error, choice::on_error::kAll);
  if (d.source == choice::data_source::kSynthetic) {
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
  c.one_of("data.length_distribution", d.length_distribution, choice::length_distribution::kAll);
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
  c.one_of("data.padding", d.padding, choice::padding::kAll);
  c.fraction("data.validation_fraction", d.validation_fraction, false);
  if (d.validation_fraction > 0.0 && !d.validation_path.empty()) {
    c.fail("data.validation_path",
           "give data.validation_fraction or data.validation_path, not both");
  }
  if (d.source != choice::data_source::kFile &&
      (d.validation_fraction > 0.0 || !d.validation_path.empty())) {
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
  c.one_of("train.lr_schedule", t.lr_schedule, choice::lr_schedule::kAll);
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
  const bool synthetic = d.source == choice::data_source::kSynthetic && d.num_examples >= 1 &&
                         d.num_examples <= kMaxSyntheticExamples;
  std::optional<int64_t> micro_batches;
  if (synthetic && t.micro_batch_size >= 1) micro_batches = d.num_examples / t.micro_batch_size;
  const std::vector<CountIssue> issues = count_issues(spec, micro_batches);
  for (const CountIssue& issue : issues) c.fail(issue.key_path, issue.message);
  if (!issues.empty() || !micro_batches || t.grad_accum_steps < 1) return;
  if (*micro_batches / t.grad_accum_steps < 1) {
    c.fail("data.num_examples",
           fmt::format("{} {} 0 optimizer steps with micro_batch_size {} x "
                       "grad_accum_steps {} (need at least {})",
                       d.num_examples, d.num_examples == 1 ? "example makes" : "examples make",
                       t.micro_batch_size, t.grad_accum_steps,
                       t.micro_batch_size * t.grad_accum_steps));
  }
}

void validate_backend(Checker& c, const BackendSpec& b) {
  c.one_of("backend.device", b.device, choice::device::kAll);
  // LibTorch takes an int; far more than any machine has is a typo, not a thread count.
  c.int_in_range("backend.device_index", b.device_index, 0, 65535, "more GPUs than a machine has");
  c.int_in_range("backend.threads", b.threads, 0, 65536, "more threads than a machine has");
  if (b.peak_tflops) c.at_least("backend.peak_tflops", *b.peak_tflops, kMinPeakTflops);
  // Faster than NVML's and AMD SMI's own update rate (about 10 ms at best) reads the same value
  // again; slower than 10 s leaves short runs with two readings.
  c.int_in_range("backend.energy_sample_ms", b.energy_sample_ms, 10, 10000,
                 "readings further apart than 10 s");
}

void validate_distributed(Checker& c, const DistributedSpec& d) {
  c.one_of("distributed.backend", d.backend, choice::dist_backend::kAll);
  // Below a second a loaded machine's ranks miss each other; above a day a hung job bills on.
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"distributed.init_timeout_seconds", d.init_timeout_seconds},
        {"distributed.timeout_seconds", d.timeout_seconds}}) {
    if (!(value >= 1.0 && value <= 86400.0)) {
      c.fail(key,
             "must be a number of seconds from 1 to 86400 (a day), found " + number_text(value));
    }
  }
  c.int_in_range("distributed.check_every_steps", d.check_every_steps, 0, kMaxTotalSteps,
                 "the most steps a run has");
  c.one_of("distributed.shard_base", d.shard_base, choice::shard_base::kAll);
}

bool is_name_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
}

constexpr std::size_t kMaxNameChars = 200;

// output.price as `ftbench run` takes it: a number is USD per GPU-hour, decimal (the spec's
// numbers are), finite and within what billing takes (spec/limits.h); text that starts like a
// number and is none (0x10, 1_000, nan, inf) is refused rather than looked up as an offer, so
// that `validate` refuses what `run` would. Anything else names a catalog offer, which `run`
// resolves in its catalogs: refused here when it is not of an offer's form.
void validate_price(Checker& c, const std::string& price) {
  if (price.empty()) return;
  double any = 0.0;
  const bool number_like =
      text::parse_any_double(price, any) ||
      (price.find('/') == std::string::npos &&
       std::string_view("0123456789+-.").find(price.front()) != std::string_view::npos);
  if (!number_like) {
    // An offer's name as the catalog lookup takes it: two or three parts, none empty; whether the
    // offer exists is for the run's catalogs to say.
    std::size_t parts = 1;
    bool empty_part = price.front() == '/' || price.back() == '/';
    for (std::size_t i = 0; i < price.size(); ++i) {
      if (price[i] != '/') continue;
      ++parts;
      if (i + 1 < price.size() && price[i + 1] == '/') empty_part = true;
    }
    if (parts < 2 || parts > 3 || empty_part) {
      c.fail("output.price",
             fmt::format("expected USD per GPU-hour from {} to {} (a decimal number) or a catalog "
                         "offer PROVIDER/GPU[/TIER], found {}",
                         kMinPriceUsdPerGpuHour, kMaxPriceUsdPerGpuHour, text::quoted(price)));
    }
    return;
  }
  double usd = 0.0;
  if (text::parse_double(price, usd) != std::errc() || !(usd >= kMinPriceUsdPerGpuHour) ||
      usd > kMaxPriceUsdPerGpuHour) {
    c.fail("output.price",
           fmt::format("expected USD per GPU-hour from {} to {} (a decimal number) or a catalog "
                       "offer PROVIDER/GPU[/TIER], found {}",
                       kMinPriceUsdPerGpuHour, kMaxPriceUsdPerGpuHour, text::quoted(price)));
  }
}

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
  c.one_of("output.progress", o.progress, choice::progress::kAll);
  c.int_at_least("output.log_every_steps", o.log_every_steps, 1);
  validate_price(c, o.price);
}

constexpr std::string_view kOwnFolder =
    ": an export folder is written (and with --force replaced) as a whole; give it a folder of "
    "its own";

// The folders a run writes or reads as a whole must not overlap: replacing an export folder
// (--force) removes everything in it, and a merged export over the checkpoint it was loaded
// from would destroy it. Nor may an export folder hold what the run reads (its spec, data and
// tokenizer files: they go with it) or the folder ftbench runs in.
void validate_folders(Checker& c, const RunSpec& spec) {
  namespace fs = std::filesystem;
  const auto expand = [&](std::string path) {
    const std::string key = "{name}";
    for (size_t pos = path.find(key); pos != std::string::npos; pos = path.find(key)) {
      path.replace(pos, key.size(), spec.output.name);
    }
    return io::absolute_normal(path);
  };
  struct Folder {
    const char* key;
    std::string value;
    bool inside_only;  // only an export folder that holds it overlaps it (a file)
  };
  const std::vector<Folder> exports = {{"output.adapter", spec.output.adapter, false},
                                       {"output.merged", spec.output.merged, false}};
  std::vector<Folder> others = {{"model.checkpoint", spec.model.checkpoint, false},
                                {"train.checkpoint.dir", spec.train.checkpoint.dir, false},
                                {"output.report", spec.output.report, true},
                                {"the spec file", spec.source_path, true},
                                {"data.path", spec.data.path, false},
                                {"data.validation_path", spec.data.validation_path, false}};
  // A tokenizer inside model.checkpoint (the loader's default) is the checkpoint's entry.
  const bool in_checkpoint =
      !spec.model.checkpoint.empty() &&
      io::path_within(expand(spec.data.tokenizer), expand(spec.model.checkpoint));
  if (spec.data.tokenizer != choice::tokenizer::kByte &&
      spec.data.tokenizer != choice::tokenizer::kNone && !in_checkpoint) {
    others.push_back({"data.tokenizer", spec.data.tokenizer, false});
    // A tokenizer.json is read with the tokenizer_config.json beside it.
    std::error_code file_ec;
    if (fs::is_regular_file(spec.data.tokenizer, file_ec)) {
      others.push_back(
          {"data.tokenizer's tokenizer_config.json",
           (fs::path(spec.data.tokenizer).parent_path() / "tokenizer_config.json").string(), true});
    }
  }
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  for (size_t i = 0; i < exports.size(); ++i) {
    if (exports[i].value.empty()) continue;
    const fs::path dir = expand(exports[i].value);
    if (!ec && io::folder_holds(dir, cwd.lexically_normal())) {
      c.fail(exports[i].key,
             fmt::format("{} is or holds the folder ftbench runs in ({}){}",
                         text::quoted(dir.string()), text::quoted(cwd.string()), kOwnFolder));
      continue;
    }
    std::vector<Folder> against(exports.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                exports.end());
    against.insert(against.end(), others.begin(), others.end());
    for (const Folder& other : against) {
      if (other.value.empty()) continue;
      const fs::path path = expand(other.value);
      if (io::folder_holds(dir, path) || (!other.inside_only && io::folder_inside(dir, path))) {
        c.fail(exports[i].key, export_overlap_message(dir.string(), other.key, path.string()));
      }
    }
  }
}

}  // namespace

std::string export_overlap_message(const std::string& folder, const std::string& what,
                                   const std::string& path) {
  return fmt::format("{} and {} ({}) overlap{}", text::quoted(folder), what, text::quoted(path),
                     kOwnFolder);
}

std::vector<SpecIssue> validate(const RunSpec& spec) {
  Checker c(spec.source_path);
  validate_model(c, spec.model, spec.data);
  validate_lora(c, spec.lora, spec.model.dtype);
  validate_data(c, spec.data, spec.model);
  validate_train(c, spec.train, spec.data);
  validate_counts(c, spec);
  validate_backend(c, spec.backend);
  validate_distributed(c, spec.distributed);
  validate_output(c, spec.output);
  validate_folders(c, spec);
  return c.take();
}

}  // namespace ftbench::spec
