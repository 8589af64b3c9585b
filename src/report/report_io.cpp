#include "report/report_io.h"

#include <string>

#include <nlohmann/json.hpp>

#include "util/io/output_file.h"
#include "util/io/whole_file.h"
#include "util/text/json_parse.h"

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
  // Too deep, a number too large for a double (1e999) or a key given twice: valid JSON perhaps,
  // but no report's.
  const auto json = ftbench::text::parse_json_text<nlohmann::ordered_json>(
      text, [&](const ftbench::text::JsonTextError& e) {
        throw ReportError(ftbench::text::own_file_message(e, source, "report"));
      });
  // Qualified: argument-dependent lookup would also find nlohmann's own from_json(json, T&).
  return report::from_json(json, source);
}

}  // namespace ftbench::report
