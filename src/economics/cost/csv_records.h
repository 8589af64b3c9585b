// Private to src/economics/cost: RFC 4180 records read one at a time from a stream of bytes, and
// the problems of a file gathered so that a malformed column of a large file reads as a few lines
// and a count. Used by the SkyPilot catalog reader (catalog_csv.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ftbench::cost::detail {

// A file's problems: the first kMaxListed with their lines, then how many more of each kind.
// Not thread-safe.
class CsvProblems {
 public:
  static constexpr int kMaxListed = 10;

  explicit CsvProblems(std::string file) : file_(std::move(file)) {}
  // `kind` is what went wrong without the value found ("column Price: expected a finite number
  // >= 0"); `found` what follows it in the listed line (", found \"N/A\""), if anything.
  void add(int64_t line, std::string_view kind, std::string_view found = "");
  bool empty() const { return listed_ == 0; }
  // "FILE:LINE: KIND FOUND" for each listed problem, then "FILE: N more problems on lines A to
  // B: n x KIND; ..." for the rest.
  std::string text() const;
  void throw_if_any() const;

 private:
  std::string file_;
  std::string text_;
  int listed_ = 0;
  int64_t unlisted_ = 0;
  int64_t first_unlisted_line_ = 0;
  int64_t last_unlisted_line_ = 0;
  std::map<std::string, int64_t, std::less<>> unlisted_by_kind_;
};

struct CsvRecord {
  int64_t line = 0;                 // where the record starts (a quoted field may span lines)
  std::vector<std::string> fields;  // the first `size` are this record's; capacity is reused
  std::size_t size = 0;
  std::string_view field(std::size_t i) const { return fields[i]; }
};

// Reads records from chunks of bytes that `next_chunk` hands out in order (an empty view at the
// end), so that a file is never held whole: one record's fields at a time. Fields are separated
// by commas and records by LF, CRLF or a lone CR; a field in double quotes may hold commas, line
// breaks and doubled quotes. A UTF-8 byte order mark and blank lines are skipped. A structural
// error (an unterminated quote, text after a closing quote) is added to `problems` and ends the
// reading. The chunk a view points into must stay valid until the next call of next_chunk.
class CsvRecordReader {
 public:
  CsvRecordReader(std::function<std::string_view()> next_chunk, CsvProblems& problems)
      : next_chunk_(std::move(next_chunk)), problems_(problems) {}

  // The next record into `record`; false at the end or after a structural error.
  bool next(CsvRecord& record);

 private:
  int peek();  // the next byte, or -1 at the end
  void advance() { ++pos_; }
  std::string& new_field(CsvRecord& record);

  std::function<std::string_view()> next_chunk_;
  CsvProblems& problems_;
  std::string_view chunk_;
  std::size_t pos_ = 0;
  bool started_ = false;
  bool ended_ = false;
  bool failed_ = false;
  int64_t line_ = 1;
};

}  // namespace ftbench::cost::detail
