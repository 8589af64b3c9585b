// Is a comparison of reports fair? Same job (spec, data, effective batch, sequence length,
// steps), and every other difference listed so the reader can weigh it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.h"
#include "util/text/spellings.h"

namespace ftbench::compare {

enum class Severity {
  kJob,        // a different job: the numbers answer different questions (refused by default)
  kExecution,  // the same job run differently (micro-batch split, checkpointing, warm-up...)
  kPlatform,   // what is being compared: GPU, backend, software versions, threads
};
inline constexpr text::Spelling<Severity> kSeveritySpellings[] = {
    {Severity::kJob, "job"},
    {Severity::kExecution, "execution"},
    {Severity::kPlatform, "platform"}};

// "job", "execution", "platform".
const char* to_string(Severity severity);

struct Difference {
  std::string what;                 // "spec.train.micro_batch_size", "data fingerprint", ...
  std::vector<std::string> values;  // one per report, in order
  Severity severity = Severity::kJob;
  std::string note;  // why it matters, "" when obvious
};

struct Fairness {
  bool same_job = true;  // no kJob difference
  bool same_spec_fingerprint = true;
  // nullopt when a report does not record its data fingerprint (reports before 1.1).
  std::optional<bool> same_data_fingerprint;
  // Some report ran out of memory and fell back to a smaller micro-batch (report `batching`,
  // since 1.2): the same job, run differently from its spec.
  bool fell_back = false;
  std::vector<Difference> differences;  // job first, then execution, then platform
};

// Compares every report with the first. Spec keys are classified as documented in
// docs/cost-and-compare.md: output.* and source_path are ignored; backend.* is platform;
// train.micro_batch_size and train.grad_accum_steps (at equal effective batch),
// model.activation_checkpointing, model.checkpoint_path, data.path, data.tokenizer,
// train.timing_warmup_steps and train.loss_window are execution (paths: the data fingerprint
// compares content); a key absent from a report (written before the key existed) counts as its
// default; every other key of model, lora, data and train is job; keys
// outside those sections (added by later versions) are execution.
// Beyond the spec: data fingerprint, effective batch, steps finished and run status are job;
// world size, t0 source, warm-up steps excluded and build type are execution; device, backend,
// LibTorch, ftbench version, compiler, threads, BLAS and host are platform. An out-of-memory
// fallback in any report is always listed ("out-of-memory fallback", execution), even when the
// reports agree; train.oom_fallback and train.oom_max_fallbacks are execution keys.
Fairness check_fairness(const std::vector<report::Report>& reports);

// A report's out-of-memory fallbacks in one line: "4x4 -> 2x8 at step 1 (41.5 s lost)" (micro-
// batch x accumulation, several joined by ", ", the seconds lost summed, 3 significant digits),
// "none", or "not recorded" for a report written before 1.2.
std::string describe_fallbacks(const report::Report& report);

// The fairness as `compare --format json` and `gate --format json` write it: same_job,
// same_spec_fingerprint, same_data_fingerprint (null when not recorded), fell_back, and the
// differences, each with what, severity, values and note.
nlohmann::ordered_json fairness_json(const Fairness& fairness);

}  // namespace ftbench::compare
