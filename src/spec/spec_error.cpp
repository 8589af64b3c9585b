#include "spec/spec_error.h"

#include <utility>

namespace ftbench::spec {

namespace {

// what() is built before the base class is constructed, so it cannot read issues_.
std::string join_issues(const std::vector<SpecIssue>& issues) {
  std::string text;
  for (const SpecIssue& issue : issues) {
    if (!text.empty()) text += '\n';
    text += issue.to_string();
  }
  return text;
}

}  // namespace

std::string SpecIssue::to_string() const {
  // "file:line: key: message", leaving out what is unknown (line 0, empty key or file) so that
  // the text never shows a misleading ":0".
  std::string text;
  if (!file.empty()) {
    text += file;
    if (line > 0) text += ':' + std::to_string(line);
    text += ": ";
  }
  if (!key_path.empty()) text += key_path + ": ";
  text += message;
  return text;
}

SpecError::SpecError(std::vector<SpecIssue> issues)
    : BadInput(join_issues(issues)), issues_(std::move(issues)) {}

}  // namespace ftbench::spec
