#include "cost_output.h"

#include <cmath>

#include <fmt/format.h>

#include "ftbench/text/json_values.h"
#include "ftbench/text/units.h"

namespace ftbench::cli {

nlohmann::ordered_json rate_json(const cost::Rate& rate) {
  nlohmann::ordered_json j;
  j["label"] = rate.label;
  j["usd_per_gpu_hour"] = rate.usd_per_gpu_hour;
  j["billing"] = cost::to_string(rate.billing);
  j["min_billed_seconds"] = rate.min_billed_seconds;
  j["gpus_per_instance"] = rate.gpus_per_instance;
  j["source"] = rate.source;
  j["date"] = rate.date ? nlohmann::ordered_json(cost::to_string(*rate.date)) : nullptr;
  return j;
}

nlohmann::ordered_json cost_json(const cost::Cost& c) {
  nlohmann::ordered_json j;
  j["gpus_billed"] = c.gpus_billed;
  j["run_seconds"] = c.run_seconds;
  j["billed_seconds"] = c.billed_seconds;
  j["linear_usd"] = c.linear_usd;
  j["billed_usd"] = c.billed_usd;
  j["billing_known"] = c.billing_known;
  j["per_epoch_usd"] = text::optional_number(c.per_epoch_usd);
  j["per_epoch_training_usd"] = text::optional_number(c.per_epoch_training_usd);
  j["per_step_usd"] = text::optional_number(c.per_step_usd);
  j["per_million_tokens_usd"] = text::optional_number(c.per_million_tokens_usd);
  j["before_first_step_usd"] = c.before_first_step_usd;
  j["before_first_step_share"] = c.before_first_step_share;
  return j;
}

nlohmann::ordered_json times_json(const cost::RunTimes& t) {
  nlohmann::ordered_json j;
  j["run_seconds"] = t.run_seconds;
  j["time_to_first_step_seconds"] = t.time_to_first_step_seconds;
  j["training_seconds"] = t.training_seconds;
  j["steps"] = t.steps;
  j["epochs"] = t.epochs;
  j["examples"] = t.examples;
  j["trained_tokens"] = t.trained_tokens;
  j["steady_tokens_per_second"] = t.steady_tokens_per_second;
  j["gpus"] = t.gpus;
  return j;
}

std::string describe_rate(const cost::Rate& rate) {
  std::string text = fmt::format("{}/GPU-h, ", text::format_usd(rate.usd_per_gpu_hour));
  text += rate.billing == cost::Billing::kUnknown ? "billing not stated (billed = linear)"
                                                  : cost::to_string(rate.billing) + " billing";
  if (rate.min_billed_seconds > 0) text += fmt::format(", {} s minimum", rate.min_billed_seconds);
  if (rate.gpus_per_instance > 1) {
    text += fmt::format(", {} GPUs per instance", rate.gpus_per_instance);
  }
  return text;
}

std::string no_energy_reason(const report::Report& report) {
  if (!report.energy) return "not recorded (report schema 1.5 or older)";
  return report.energy->reason;
}

nlohmann::ordered_json energy_cost_json(const report::Report& report, double usd_per_kwh) {
  const std::optional<cost::EnergyCost> c = cost::energy_cost(report, usd_per_kwh);
  nlohmann::ordered_json j;
  j["usd_per_kwh"] = usd_per_kwh;
  j["reason"] = c ? std::string() : no_energy_reason(report);
  j["method"] = report.energy ? nlohmann::ordered_json(report.energy->method) : nullptr;
  j["kwh"] = c ? text::optional_number(c->kwh) : nullptr;
  j["usd"] = c ? text::optional_number(c->usd) : nullptr;
  j["epochs"] = c ? text::optional_number(c->epochs) : nullptr;
  j["per_epoch_usd"] = c ? text::optional_number(c->per_epoch_usd) : nullptr;
  j["per_step_usd"] = c ? text::optional_number(c->per_step_usd) : nullptr;
  j["per_million_tokens_usd"] = c ? text::optional_number(c->per_million_tokens_usd) : nullptr;
  j["devices"] = c ? nlohmann::ordered_json(c->devices) : nullptr;
  return j;
}

}  // namespace ftbench::cli
