#include "spec/derived.h"

#include <fmt/format.h>

#include "spec/limits.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"

namespace ftbench::spec {
namespace {

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

const std::string kTooMany = "more than 2^63";

}  // namespace

std::vector<CountIssue> count_issues(const RunSpec& spec,
                                     std::optional<int64_t> micro_batches_per_epoch) {
  const TrainSpec& t = spec.train;
  std::vector<CountIssue> issues;
  // Counts of values that failed their own range check are not worth a second issue.
  if (t.micro_batch_size < 1 || t.grad_accum_steps < 1 || t.epochs < 1 || spec.data.seq_len < 1) {
    return issues;
  }
  const std::optional<int64_t> effective = checked_mul(t.micro_batch_size, t.grad_accum_steps);
  if (!effective) {
    issues.push_back({"train.micro_batch_size",
                      fmt::format("train.micro_batch_size x train.grad_accum_steps = {} x {} is {} "
                                  "examples per optimizer step",
                                  t.micro_batch_size, t.grad_accum_steps, kTooMany)});
    return issues;
  }
  const std::optional<int64_t> tokens_per_step = checked_mul(*effective, spec.data.seq_len);
  if (!tokens_per_step) {
    issues.push_back(
        {"data.seq_len", fmt::format("{} examples per optimizer step x data.seq_len {} "
                                     "is {} tokens per step",
                                     *effective, spec.data.seq_len, kTooMany)});
  }
  if (!micro_batches_per_epoch) return issues;
  const int64_t steps_per_epoch = *micro_batches_per_epoch / t.grad_accum_steps;
  const std::optional<int64_t> uncapped = checked_mul(steps_per_epoch, t.epochs);
  // train.max_steps caps the run: an epoch count whose product does not fit is harmless then.
  const bool capped = t.max_steps > 0 && (!uncapped || *uncapped > t.max_steps);
  const std::optional<int64_t> total = capped ? std::optional<int64_t>(t.max_steps) : uncapped;
  if (!total || *total > kMaxTotalSteps) {
    const std::string advice =
        fmt::format("a run has at most {} optimizer steps (the report keeps every step)",
                    grouped(kMaxTotalSteps));
    if (capped) {
      issues.push_back({"train.max_steps", fmt::format("{} caps the run at {} optimizer steps; {}",
                                                       t.max_steps, grouped(t.max_steps), advice)});
    } else {
      issues.push_back(
          {"train.epochs",
           fmt::format("{} steps per epoch x {} epochs = {} optimizer steps; {}: lower "
                       "train.epochs or set train.max_steps",
                       grouped(steps_per_epoch), t.epochs, total ? grouped(*total) : kTooMany,
                       advice)});
    }
    return issues;
  }
  if (tokens_per_step && !checked_mul(*total, *tokens_per_step)) {
    issues.push_back({"data.seq_len", fmt::format("{} optimizer steps x {} tokens per step is {} "
                                                  "tokens",
                                                  grouped(*total), *tokens_per_step, kTooMany)});
  }
  return issues;
}

DerivedCounts derive_counts(const RunSpec& spec) {
  const TrainSpec& t = spec.train;
  return derive_counts_from_batches(
      spec, t.micro_batch_size > 0 ? spec.data.num_examples / t.micro_batch_size : 0);
}

DerivedCounts derive_counts_from_batches(const RunSpec& spec, int64_t micro_batches_per_epoch) {
  std::vector<CountIssue> issues = count_issues(spec, micro_batches_per_epoch);
  if (!issues.empty()) {
    std::vector<SpecIssue> spec_issues;
    for (CountIssue& i : issues) {
      spec_issues.push_back(issue_at(spec, i.key_path, std::move(i.message)));
    }
    throw SpecError(std::move(spec_issues));
  }
  DerivedCounts d;
  const TrainSpec& t = spec.train;
  d.effective_batch = t.micro_batch_size * t.grad_accum_steps;
  d.micro_batches_per_epoch = micro_batches_per_epoch;
  d.steps_per_epoch = t.grad_accum_steps > 0 ? d.micro_batches_per_epoch / t.grad_accum_steps : 0;
  const std::optional<int64_t> uncapped = checked_mul(d.steps_per_epoch, t.epochs);
  d.capped_by_max_steps = t.max_steps > 0 && (!uncapped || *uncapped > t.max_steps);
  d.total_steps = d.capped_by_max_steps ? t.max_steps : uncapped.value_or(0);
  d.max_tokens_per_step = d.effective_batch * spec.data.seq_len;
  return d;
}

}  // namespace ftbench::spec
