#include "ftbench/report/report_io.h"

#include <string>

#include <nlohmann/json.hpp>

#include "ftbench/io/output_file.h"
#include "ftbench/io/whole_file.h"
#include "ftbench/text/json_errors.h"

namespace ftbench::report {

void write_report(const Report& report, const std::string& path, bool force) {
  // Checked before the report is serialised, as before: a refused write costs nothing.
  io::check_writable(path, force);
  io::write_file_atomically(to_json(report).dump(2) + "\n", path, force);
}

std::string read_whole_file(const std::string& path) {
  try {
    return io::read_whole_file(path, io::kReportFile);
  } catch (const io::FileReadError& e) {
    throw ReportError(path + ": cannot read: " + e.reason());
  }
}

Report read_report(const std::string& path) { return parse_report(read_whole_file(path), path); }

Report parse_report(std::string_view text, const std::string& source) {
  if (const auto deep = ftbench::text::json_too_deep_at(text)) {
    throw ReportError(source +
                      ": not a readable report: " + ftbench::text::json_too_deep_message(*deep));
  }
  nlohmann::ordered_json json;
  try {
    json = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ReportError(source + ": not valid JSON at byte " + std::to_string(e.byte) + ": " +
                      ftbench::text::json_error_reason(e.what()));
  } catch (const nlohmann::json::exception& e) {
    // A number too large for a double (1e999) is valid JSON but no report's.
    throw ReportError(source +
                      ": not a readable report: " + ftbench::text::json_error_reason(e.what()));
  }
  // Qualified: argument-dependent lookup would also find nlohmann's own from_json(json, T&).
  return report::from_json(json, source);
}

}  // namespace ftbench::report
