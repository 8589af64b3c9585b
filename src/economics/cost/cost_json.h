// The JSON forms of cost's figures, as `cost --format json` and `compare --format json` write
// them (docs/cost-and-compare.md): `nlohmann::ordered_json(rate)`, and a report's energy priced.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "economics/cost/billing.h"
#include "economics/cost/estimate.h"
#include "util/text/json_values.h"

namespace ftbench::cost {

inline void to_json(nlohmann::ordered_json& j, Billing billing) { j = to_string(billing); }
inline void to_json(nlohmann::ordered_json& j, const Date& date) { j = to_string(date); }
FTBENCH_JSON_WRITER(Rate, label, usd_per_gpu_hour, billing, min_billed_seconds, gpus_per_instance,
                    source, date)
FTBENCH_JSON_WRITER(Cost, gpus_billed, run_seconds, billed_seconds, linear_usd, billed_usd,
                    billing_known, per_epoch_usd, per_epoch_training_usd, per_step_usd,
                    per_million_tokens_usd, before_first_step_usd, before_first_step_share)
FTBENCH_JSON_WRITER(RunTimes, run_seconds, time_to_first_step_seconds, training_seconds, steps,
                    epochs, examples, trained_tokens, steady_tokens_per_second, gpus)

// A report's energy priced by --energy-price: the figures, or null figures and the reason.
nlohmann::ordered_json energy_cost_json(const report::Report& report, double usd_per_kwh);
// Why a report has no energy figures: energy.reason, or "not recorded (report schema 1.5 or
// older)".
std::string no_energy_reason(const report::Report& report);

}  // namespace ftbench::cost
