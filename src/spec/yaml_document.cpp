#include "spec/yaml_document.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>

namespace ftbench::spec::detail {

bool has_content(std::string_view text) {
  bool in_comment = false;
  for (const char c : text) {
    if (c == '\n') {
      in_comment = false;
    } else if (!in_comment && c == '#') {
      in_comment = true;
    } else if (!in_comment && c != ' ' && c != '\t' && c != '\r') {
      return true;
    }
  }
  return false;
}

namespace {

// Whether `text` has a "---" marker at column 0 after some content (or a second one when it
// opens with one): where a second document would start. Its 1-based line, else 0.
int64_t second_marker_line(std::string_view text) {
  int64_t line = 0;
  bool content_seen = false;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = text.substr(start, end - start);
    ++line;
    const bool marker =
        l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && content_seen) return line;
    if (marker || (has_content(l) && l[0] != '%')) content_seen = true;  // not a %YAML directive
    start = end + 1;
  }
  return 0;
}

// Counts the documents a parser finds, remembering where the second starts.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) second_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  const YAML::Mark& second() const { return second_; }

 private:
  int documents_ = 0;
  YAML::Mark second_ = YAML::Mark::null_mark();
};

}  // namespace

// The one document of `text` (a null node when it has none); `after` says what follows it.
// Throws YAML::Exception for invalid YAML. At most two documents are parsed: yaml-cpp's LoadAll
// never ends on some malformed streams (a lone ",", a fuzz finding), where the parser keeps
// finding empty documents without consuming anything.
YAML::Node load_one_document(const std::string& text, AfterTheDocument& after) {
  after = AfterTheDocument{};
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentCounter counter;
  if (parser.HandleNextDocument(counter) && parser.HandleNextDocument(counter)) {
    if (const int64_t marker = second_marker_line(text); marker > 0) {
      after.problem = kSecondDocument;
      after.line = marker;
    } else {
      after.problem = "invalid YAML: content the parser cannot place in the document";
      after.line = counter.second().is_null() ? 0 : counter.second().line + 1;
    }
    return YAML::Node();
  }
  return YAML::Load(text);
}

}  // namespace ftbench::spec::detail
