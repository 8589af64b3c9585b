// Canonical JSON of a resolved spec and its fingerprint.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "spec/run_spec.h"

namespace ftbench::spec {

// The whole resolved spec as JSON, sections and keys in a fixed order (docs/spec.md), every
// default filled in. This is what the report's "spec" field holds.
nlohmann::ordered_json to_json(const RunSpec& spec);

// The part of the spec that defines the job: to_json() less what may legitimately differ
// between two machines running the same job (the whole `output` and `backend` sections).
// Keys sorted, no whitespace, numbers as nlohmann dumps them.
std::string canonical_job_json(const RunSpec& spec);

// Lower-case hex SHA-256 of canonical_job_json(spec) (OpenSSL EVP).
std::string fingerprint(const RunSpec& spec);

}  // namespace ftbench::spec
