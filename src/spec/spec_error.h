// Errors found in a run spec. All problems of one load are collected and thrown together.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace ftbench::spec {

// One problem in a spec: where (file, key path such as "lora.rank", 1-based line or 0 when the
// key is absent or came from --set) and what (expected vs found, with a "did you mean" hint for
// unknown keys).
struct SpecIssue {
  std::string file;
  std::string key_path;
  int64_t line = 0;
  std::string message;

  // "configs/x.yaml:12: lora.rank: must be >= 1, found 0"
  std::string to_string() const;
};

// Thrown by load_spec() with every issue found. what() lists them one per line.
class SpecError : public BadInput {
 public:
  explicit SpecError(std::vector<SpecIssue> issues);
  const char* lead() const noexcept override { return "error: invalid run spec\n"; }
  const std::vector<SpecIssue>& issues() const { return issues_; }

 private:
  std::vector<SpecIssue> issues_;
};

// A problem in a file the spec names (its data, its tokenizer) rather than in the spec: its one
// issue is placed at the key that names the file, "d.yaml:3: data.path: d.jsonl:4: ...", so
// that validate --format json gives its file, line and key like any spec problem.
class NamedFileError : public SpecError {
 public:
  explicit NamedFileError(SpecIssue issue) : SpecError({std::move(issue)}) {}
  const char* lead() const noexcept override { return "error: "; }
};

}  // namespace ftbench::spec
