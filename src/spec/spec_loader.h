// YAML -> RunSpec: parsing, presets, --set overrides and validation.
#pragma once

#include <string>
#include <vector>

#include "spec/run_spec.h"
#include "spec/spec_error.h"

namespace ftbench::spec {

// Loads `path`, applies `overrides` ("key.path=value", YAML scalar or flow syntax for the
// value, applied in order after the file), fills model shape from the preset, and validates.
// Throws SpecError listing every problem (unknown keys with "did you mean", wrong types,
// out-of-range values), each with file, key path and line. A file that cannot be read or is
// not YAML is a SpecError too.
RunSpec load_spec(const std::string& path, const std::vector<std::string>& overrides = {});

// Same, from YAML text; `source_name` stands for the file name in messages.
RunSpec load_spec_from_string(const std::string& yaml_text, const std::string& source_name,
                              const std::vector<std::string>& overrides = {});

// A problem with `key` of a loaded spec, placed where the key was given (RunSpec::key_origins:
// "--set", or the file's line; the spec's file without a line for a key it does not give).
SpecIssue issue_at(const RunSpec& spec, const std::string& key, std::string message);

// Every cross-field and range rule, on an already-filled spec. Empty when valid.
std::vector<SpecIssue> validate(const RunSpec& spec);

// `"<folder>" and <what> ("<path>") overlap: an export folder is written (and with --force
// replaced) as a whole; ...`: validate's words for an export folder over another path the run
// uses, also for the one checked later (the report -o names).
std::string export_overlap_message(const std::string& folder, const std::string& what,
                                   const std::string& path);

}  // namespace ftbench::spec
