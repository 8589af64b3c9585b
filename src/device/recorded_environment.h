// The environment variables a report records: a fixed allow-list of settings that change how
// fast a run goes (thread pools, allocators, kernel tuning, visible devices), and nothing
// else. Variables are never matched by prefix or pattern, so no secret (HF_TOKEN,
// AWS_SECRET_ACCESS_KEY, ...) can reach a report through a name that happens to match.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ftbench::device {

// The allow-list, in the order a report lists them (docs/report-schema.md says why each is
// there).
const std::vector<std::string_view>& recorded_variable_names();

// name -> value of each allow-listed variable that `lookup` finds (nullptr: unset), in the
// allow-list's order. An empty value is recorded: it is set.
using EnvLookup = std::function<const char*(const char* name)>;
std::vector<std::pair<std::string, std::string>> recorded_variables(const EnvLookup& lookup);

// The same from this process's environment.
std::vector<std::pair<std::string, std::string>> recorded_variables();

// The image the ftbench container this process runs in was built on: docker/*.Dockerfile set
// FTBENCH_CONTAINER_IMAGE from their BASE build argument, so that a report names the PyTorch,
// CUDA or ROCm stack its figures came from. "" when unset (not in one of those images). Only
// this one variable is read, by its full name; it is not among recorded_variables(), which are
// the settings that change how fast a run goes.
// A value that is no image reference (text::container_image_problem) is not recorded: ""
// then, and `problem` (when given) says what was found and why, for a warning.
inline constexpr const char* kContainerImageVariable = "FTBENCH_CONTAINER_IMAGE";
std::string container_image(const EnvLookup& lookup, std::string* problem = nullptr);
std::string container_image(std::string* problem = nullptr);

}  // namespace ftbench::device
