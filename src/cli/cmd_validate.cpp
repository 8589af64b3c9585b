// `ftbench validate SPEC`: the spec loaded and checked and, unless --no-data, its data read as
// the run would read it; every problem said with its file and line, without LibTorch.
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "data/data_from_spec.h"
#include "data/load_tokenizer.h"
#include "data/packing.h"
#include "economics/plan/activation_checkpointing.h"
#include "economics/plan/memory.h"
#include "model/shape_math.h"
#include "report/summary_text.h"
#include "spec/canonical.h"
#include "spec/choices.h"
#include "spec/derived.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"
#include "train/oom_fallback.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::cli {
namespace {

struct ValidateFlags {
  std::string spec_path;
  std::vector<std::string> overrides;
  std::string format = "text";
  bool json = false;  // --json: --format json
  bool no_data = false;
};

// What validate found: the spec resolved, the step counts from the data's real size, and what
// the data file holds when it was read.
struct Validated {
  spec::RunSpec spec;
  spec::DerivedCounts derived;
  std::optional<data::DataFileStats> data_stats;
  std::optional<int64_t> validation_examples;
  std::optional<int64_t> rows;  // rows per epoch, when the data was counted (file or packing)
  std::string tokenizer_name;
  std::string special_tokens;
};

// The files the spec names must be there, as for the run, --no-data or not. A data file's size
// decides the step counts: read it (and its tokenizer) as the run will
// (data::load_spec_data), so that a bad file or tokenizer is found before any machine time is
// spent. The counts come from the same rows the run's batcher makes: the training side of a
// validation split, packed when data.padding is pack. Synthetic data is generated only when it
// is packed (otherwise its rows are data.num_examples).
Validated validate(const spec::RunSpec& s, bool read_data) {
  data::check_named_files(s);
  Validated v;
  v.spec = s;
  const bool file = data::source_of(s.data) == data::Source::kFile;
  const bool pack = data::padding_of(s.data) == data::Padding::kPack;
  if (file ? !read_data : !pack) {
    v.derived = spec::derive_counts(s);
    return v;
  }
  const data::SpecData loaded = data::load_spec_data(s);
  if (file) {
    v.tokenizer_name = loaded.tokenizer->name();
    v.special_tokens = data::describe_special_tokens(*loaded.tokenizer);
    v.data_stats = loaded.file_stats;
    if (loaded.validation) v.validation_examples = loaded.validation->size();
  }
  v.rows = data::rows_per_epoch(*loaded.train, pack, s.data.seq_len);
  v.derived = data::counts_from_rows(s, *v.rows, loaded.train->size());
  return v;
}

// The memory plan's peak (economics/plan/memory.h): on a GPU (fused attention, 1-byte dropout
// masks) and, for a CPU backend, also with the blocked attention of LibTorch < 2.2.
// model.activation_checkpointing auto is chosen by the run on its device: planned here as none
// (the most memory), beside every policy (memory_line()).
std::string planned_policy(const spec::RunSpec& s) {
  return s.model.activation_checkpointing == spec::choice::checkpointing::kAuto
             ? spec::choice::checkpointing::kNone
             : s.model.activation_checkpointing;
}

plan::MemoryEstimate planned_memory(const spec::RunSpec& s, bool gpu, plan::AttentionKernel kernel,
                                    const std::string& policy = "") {
  plan::MemoryOptions o;
  o.activation_checkpointing = policy.empty() ? planned_policy(s) : policy;
  o.gpu = gpu;
  o.rms_norm_kernel = gpu;
  o.kernel_reads_shared_kv = gpu;
  o.libtorch_1 = kernel == plan::AttentionKernel::kBlocked;  // Debian 12's LibTorch 1.13 on a CPU
  o.attention = kernel;
  o.prefetched_batches = s.train.grad_accum_steps;
  return plan::estimate_memory(s, o);
}

std::string memory_line(const spec::RunSpec& s) {
  const bool cpu = s.backend.device == "cpu";
  const plan::MemoryEstimate fused = planned_memory(s, !cpu, plan::AttentionKernel::kFused);
  std::string line = fmt::format("{} predicted, at {} (fused attention{})",
                                 text::format_bytes(static_cast<int64_t>(fused.peak_bytes)),
                                 fused.peak_at, cpu ? ", LibTorch >= 2.2" : "");
  if (cpu) {
    const plan::MemoryEstimate blocked = planned_memory(s, false, plan::AttentionKernel::kBlocked);
    line += fmt::format("; {} with LibTorch < 2.2's blocked CPU attention",
                        text::format_bytes(static_cast<int64_t>(blocked.peak_bytes)));
  }
  if (s.model.activation_checkpointing == spec::choice::checkpointing::kAuto) {
    std::vector<std::string> each;
    for (const std::string& policy : plan::policies_by_recompute()) {
      each.push_back(fmt::format(
          "{} {}", policy,
          text::format_bytes(static_cast<int64_t>(
              planned_memory(s, !cpu, plan::AttentionKernel::kFused, policy).peak_bytes))));
    }
    line += fmt::format("; checkpointing auto, chosen by the run on its device ({})",
                        fmt::join(each, ", "));
  }
  return line + "; tensors only, every micro-batch padded to seq_len";
}

void print_json(const Validated& v) {
  const bool pack = data::padding_of(v.spec.data) == data::Padding::kPack;
  const spec::RunSpec& s = v.spec;
  const spec::DerivedCounts& d = v.derived;
  const model::ParamCounts p = model::count_parameters(s.model, s.lora);
  nlohmann::ordered_json out;
  out["valid"] = true;
  out["spec"] = spec::to_json(s);
  out["spec_fingerprint"] = spec::fingerprint(s);
  out["derived"] = {{"effective_batch", d.effective_batch},
                    {"micro_batches_per_epoch", d.micro_batches_per_epoch},
                    {"steps_per_epoch", d.steps_per_epoch},
                    {"total_steps", d.total_steps},
                    {"max_tokens_per_step", d.max_tokens_per_step}};
  out["parameters"] = {{"base", p.base}, {"trainable", p.lora}, {"total", p.total()}};
  const plan::MemoryEstimate memory =
      planned_memory(s, s.backend.device != "cpu", plan::AttentionKernel::kFused);
  out["memory"] = {{"predicted_peak_bytes", static_cast<int64_t>(memory.peak_bytes)},
                   {"peak_at", memory.peak_at},
                   {"attention", plan::to_string(plan::AttentionKernel::kFused)},
                   {"checkpointing", planned_policy(s)}};
  if (v.data_stats) {
    out["data"] = {{"tokenizer", v.tokenizer_name},
                   {"special_tokens", v.special_tokens},
                   {"records", v.data_stats->records},
                   {"examples", v.data_stats->examples},
                   {"skipped_bad", v.data_stats->skipped_bad},
                   {"dropped_too_long", v.data_stats->dropped_too_long},
                   {"truncated", v.data_stats->truncated},
                   {"tokens", v.data_stats->tokens},
                   {"loss_tokens", v.data_stats->loss_tokens},
                   {"mean_length", v.data_stats->mean_length},
                   {"p50_length", v.data_stats->p50_length},
                   {"p90_length", v.data_stats->p90_length},
                   {"max_length", v.data_stats->max_length},
                   {"masked_fraction", v.data_stats->masked_fraction}};
    if (v.validation_examples) out["data"]["validation_examples"] = *v.validation_examples;
  }
  if (v.rows && pack) out["derived"]["packed_rows_per_epoch"] = *v.rows;
  std::cout << out.dump(2) << "\n";
}

void print_text(const Validated& v, const std::string& spec_path) {
  const spec::RunSpec& s = v.spec;
  const spec::DerivedCounts& d = v.derived;
  const bool pack = data::padding_of(v.spec.data) == data::Padding::kPack;
  const model::ParamCounts p = model::count_parameters(s.model, s.lora);
  // "total" is base + trainable here, in the JSON, in the report and in the run's summary.
  const double trainable_percent = 100.0 * double(p.lora) / double(p.total());
  // JSON escapes C0 controls; C1 and bidirectional controls it keeps, and printable() writes
  // them as \uNNNN, which JSON reads back as the same characters.
  std::cout << text::printable("resolved spec (" + spec_path + "):") << "\n";
  std::istringstream dump(spec::to_json(s).dump(2));
  for (std::string dump_line; std::getline(dump, dump_line);) {
    std::cout << text::printable(dump_line) << "\n";
  }
  std::cout << "\n";
  using report::group_thousands;
  // Values quote the tokenizer's files (token texts): printed escaped.
  auto line = [](const std::string& label, const std::string& value) {
    std::cout << fmt::format("{:<30}{}\n", label, text::printable(value));
  };
  line("spec fingerprint", spec::fingerprint(s));
  if (v.data_stats) {
    line("tokenizer", v.tokenizer_name);
    line("special tokens", v.special_tokens);
    line("data file", fmt::format("{} examples of {} records ({} bad skipped, {} too long "
                                  "dropped, {} truncated)",
                                  group_thousands(v.data_stats->examples),
                                  group_thousands(v.data_stats->records), v.data_stats->skipped_bad,
                                  v.data_stats->dropped_too_long, v.data_stats->truncated));
    line("example length (tokens)",
         fmt::format("mean {:.1f}, p50 {:.1f}, p90 {:.1f}, max {}", v.data_stats->mean_length,
                     v.data_stats->p50_length, v.data_stats->p90_length, v.data_stats->max_length));
    line("tokens", fmt::format("{} ({:.1f}% without loss)", group_thousands(v.data_stats->tokens),
                               100.0 * v.data_stats->masked_fraction));
    if (v.validation_examples) {
      line("validation examples", group_thousands(*v.validation_examples));
    }
  } else if (data::source_of(s.data) == data::Source::kFile) {
    line("data file", "not read (--no-data): steps below assume data.num_examples");
  }
  if (v.rows && pack) line("packed rows per epoch", group_thousands(*v.rows));
  line("effective batch", fmt::format("{} ({} micro-batch x {} accumulation)", d.effective_batch,
                                      s.train.micro_batch_size, s.train.grad_accum_steps));
  // The splits an out-of-memory fallback would go through (train/oom_fallback.h).
  if (s.train.oom_fallback) {
    train::MicroBatching split{s.train.micro_batch_size, s.train.grad_accum_steps};
    std::string chain = fmt::format("{} x {}", split.micro_batch_size, split.grad_accum_steps);
    for (int64_t i = 0; i < s.train.oom_max_fallbacks; ++i) {
      const std::optional<train::MicroBatching> next = train::fallback_micro_batching(split);
      if (!next) break;
      split = *next;
      chain += fmt::format(" -> {} x {}", split.micro_batch_size, split.grad_accum_steps);
    }
    line("on out of memory", "fall back " + chain + ", then fail");
  } else {
    line("on out of memory", "fail the run (train.oom_fallback: false)");
  }
  line("micro-batches per epoch", group_thousands(d.micro_batches_per_epoch));
  line("steps per epoch", group_thousands(d.steps_per_epoch));
  line("total steps", fmt::format("{}{}", group_thousands(d.total_steps),
                                  d.capped_by_max_steps ? " (capped by train.max_steps)" : ""));
  line("tokens per step (max)", group_thousands(d.max_tokens_per_step));
  line("base parameters", group_thousands(p.base) + " (frozen)");
  line("trainable parameters",
       fmt::format("{} ({:.4f}% of total)", group_thousands(p.lora), trainable_percent));
  line("total parameters", group_thousands(p.total()) + " (base + trainable)");
  line("peak tensor memory", memory_line(s));
  std::cout << "spec is valid\n";
}

// What `--format json` prints for a spec that is not valid: every problem with its file, line
// (null when the key is absent or came from --set) and key, a problem inside a file the spec
// names at the key that names it (spec::NamedFileError); any other bad input (a spec file that
// cannot be read, say) as one problem of its message alone.
void print_json_errors(const BadInput& e) {
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  if (const auto* spec_error = dynamic_cast<const spec::SpecError*>(&e)) {
    for (const spec::SpecIssue& issue : spec_error->issues()) {
      errors.push_back({{"file", issue.file},
                        {"line", issue.line > 0 ? nlohmann::ordered_json(issue.line) : nullptr},
                        {"key", issue.key_path},
                        {"message", issue.message}});
    }
  } else {
    errors.push_back(
        {{"file", nullptr}, {"line", nullptr}, {"key", nullptr}, {"message", e.what()}});
  }
  const nlohmann::ordered_json out = {{"valid", false}, {"errors", errors}};
  std::cout << out.dump(2) << "\n";
}

}  // namespace

Action add_validate_command(CLI::App& app) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* cmd = add_subcommand(app, "validate");
  cmd->add_option("spec", flags->spec_path, "YAML run spec")->required();
  cmd->add_option("--set", flags->overrides, "Override a key: --set lora.rank=8 (repeatable)");
  auto* format = cmd->add_option("--format", flags->format,
                                 "text (default) or json: one JSON object, also for an invalid "
                                 "spec (its problems with file, line and key; exit 2)");
  cmd->add_flag("--json", flags->json, "Short for --format json")->excludes(format);
  cmd->add_flag("--no-data", flags->no_data,
                "With data.source: file, do not read the tokenizer and the data file (steps then "
                "assume data.num_examples; the files must still be there)");
  return [flags]() {
    if (flags->format != "text" && flags->format != "json") {
      throw InputError(
          fmt::format("--format: {}", text::not_one_of_message(flags->format, {"text", "json"})));
    }
    const bool json = flags->json || flags->format == "json";
    std::optional<Validated> v;
    try {
      v = validate(spec::load_spec(flags->spec_path, flags->overrides), !flags->no_data);
    } catch (const BadInput& e) {
      if (!json) throw;
      print_json_errors(e);
      return kExitBadInput;
    }
    if (json) {
      print_json(*v);
    } else {
      print_text(*v, flags->spec_path);
    }
    return kExitOk;
  };
}

}  // namespace ftbench::cli
