// Fuzz target: the run-spec loader (spec::load_spec_from_string). Input: YAML text, then
// optionally a NUL byte and --set overrides separated by NUL bytes ("train.lr=1e-4").
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "spec/canonical.h"
#include "spec/spec_loader.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t end_of_yaml = input.find('\0');
  const std::string yaml = input.substr(0, end_of_yaml);
  std::vector<std::string> overrides;
  for (std::size_t start = end_of_yaml; start != std::string::npos;) {
    const std::size_t next = input.find('\0', start + 1);
    overrides.push_back(
        input.substr(start + 1, next == std::string::npos ? next : next - start - 1));
    start = next;
  }
  try {
    const ftbench::spec::RunSpec spec =
        ftbench::spec::load_spec_from_string(yaml, "fuzz.yaml", overrides);
    // What `ftbench validate` and the report do with a valid spec.
    ftbench::spec::fingerprint(spec);
  } catch (const ftbench::spec::SpecError&) {
    return FuzzVerdict::kRejected;
  }
  return FuzzVerdict::kAccepted;
}
