// JSON objects and table cells for costs, shared by `cost` and `compare`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "economics/cost/cost_json.h"

namespace ftbench::cli {

// A report's energy priced by --energy-price: the figures, or null figures and the reason.
nlohmann::ordered_json energy_cost_json(const report::Report& report, double usd_per_kwh);
// Why a report has no energy figures: energy.reason, or "not recorded (report schema 1.5 or
// older)".
std::string no_energy_reason(const report::Report& report);

}  // namespace ftbench::cli
