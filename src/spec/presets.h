// Model presets with the true shapes of the published checkpoints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/run_spec.h"

namespace ftbench::spec {

// A ModelSpec with every shape key of preset `name` filled in (dtype and other non-shape keys
// at their defaults), or nullopt for an unknown name.
std::optional<ModelSpec> find_preset(const std::string& name);

// The names find_preset() knows, in documentation order.
std::vector<std::string> preset_names();

}  // namespace ftbench::spec
