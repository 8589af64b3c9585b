#include "economics/cost/cost_json.h"

#include <optional>
#include <string>

#include "report/report.h"
#include "util/text/json_values.h"

namespace ftbench::cost {

std::string no_energy_reason(const report::Report& report) {
  if (!report.energy) return "not recorded (report schema 1.5 or older)";
  return report.energy->reason;
}

nlohmann::ordered_json energy_cost_json(const report::Report& report, double usd_per_kwh) {
  const std::optional<cost::EnergyCost> c = energy_cost(report, usd_per_kwh);
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

}  // namespace ftbench::cost
