// JSON objects and table cells for costs, shared by `cost` and `compare`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ftbench/cost/billing.h"
#include "ftbench/cost/estimate.h"

namespace ftbench::cli {

nlohmann::ordered_json rate_json(const cost::Rate& rate);
nlohmann::ordered_json cost_json(const cost::Cost& cost);
nlohmann::ordered_json times_json(const cost::RunTimes& times);
// null for nullopt or a non-finite value.
nlohmann::ordered_json optional_json(const std::optional<double>& value);
// "$2.97/GPU-h, per-minute billing, 60 s minimum".
std::string describe_rate(const cost::Rate& rate);

}  // namespace ftbench::cli
