// Fuzz target: the run-report reader (report::parse_report, what read_report does with a file's
// text). A report it accepts is rendered as `ftbench run` prints it, and written and read back:
// the reader must accept what the writer writes.
#include <stdexcept>
#include <string>

#include "fuzz_target.h"
#include "report/report_io.h"
#include "report/summary_text.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ftbench::report::Report report;
  try {
    report = ftbench::report::parse_report(text, "fuzz.json");
  } catch (const ftbench::report::ReportError&) {
    return FuzzVerdict::kRejected;
  }
  ftbench::report::render_summary(report, "fuzz.json");
  const std::string written = ftbench::report::to_json(report).dump(2);
  try {
    ftbench::report::parse_report(written, "fuzz-written.json");
  } catch (const ftbench::report::ReportError& e) {
    throw std::logic_error(std::string("a report written by to_json() is refused: ") + e.what());
  }
  return FuzzVerdict::kAccepted;
}
