#include "economics/cost/csv_records.h"

#include <fmt/format.h>

#include "economics/cost/catalog.h"
#include "util/text/messages.h"

namespace ftbench::cost::detail {

void CsvProblems::add(int64_t line, std::string_view kind, std::string_view found) {
  if (listed_ < kMaxListed) {
    if (!text_.empty()) text_ += '\n';
    text_ += fmt::format("{}:{}: {}{}", file_, line, kind, found);
    ++listed_;
    return;
  }
  if (unlisted_ == 0) first_unlisted_line_ = line;
  last_unlisted_line_ = line;
  ++unlisted_;
  const auto it = unlisted_by_kind_.find(kind);
  if (it != unlisted_by_kind_.end()) {
    ++it->second;
  } else {
    unlisted_by_kind_.emplace(std::string(kind), 1);
  }
}

std::string CsvProblems::text() const {
  if (unlisted_ == 0) return text_;
  std::string kinds;
  for (const auto& [kind, count] : unlisted_by_kind_) {
    if (!kinds.empty()) kinds += "; ";
    kinds += fmt::format("{} x {}", count, kind);
  }
  return fmt::format("{}\n{}: {} more problem{} on lines {} to {}: {}", text_, file_, unlisted_,
                     unlisted_ == 1 ? "" : "s", first_unlisted_line_, last_unlisted_line_, kinds);
}

void CsvProblems::throw_if_any() const {
  if (!empty()) throw CatalogError(text());
}

int CsvRecordReader::peek() {
  while (pos_ >= chunk_.size()) {
    if (ended_) return -1;
    chunk_ = next_chunk_();
    pos_ = 0;
    if (chunk_.empty()) {
      ended_ = true;
      return -1;
    }
  }
  return static_cast<unsigned char>(chunk_[pos_]);
}

std::string& CsvRecordReader::new_field(CsvRecord& record) {
  if (record.size == record.fields.size()) record.fields.emplace_back();
  std::string& field = record.fields[record.size++];
  field.clear();
  return field;
}

bool CsvRecordReader::next(CsvRecord& record) {
  if (failed_) return false;
  if (!started_) {
    started_ = true;
    // A UTF-8 byte order mark; sources hand out the first line whole, so it is in one chunk.
    if (peek() >= 0 && chunk_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  }
  for (;;) {
    if (peek() < 0) return false;
    record.line = line_;
    record.size = 0;
    bool end_of_record = false;
    while (!end_of_record) {
      std::string& field = new_field(record);
      if (peek() == '"') {
        const int64_t quote_line = line_;
        advance();
        bool closed = false;
        for (int c = peek(); c >= 0; c = peek()) {
          advance();
          if (c == '"') {
            if (peek() == '"') {
              field += '"';
              advance();
              continue;
            }
            closed = true;
            break;
          }
          if (c == '\n') ++line_;
          field += static_cast<char>(c);
        }
        if (!closed) {
          problems_.add(quote_line, "quoted field not closed before the end of the file");
          failed_ = true;
          return false;
        }
        const int c = peek();
        if (c >= 0 && c != ',' && c != '\n' && c != '\r') {
          problems_.add(
              line_, fmt::format("unexpected {} after a closing quote in field {}",
                                 text::quoted(std::string(1, static_cast<char>(c))), record.size));
          failed_ = true;
          return false;
        }
      } else {
        for (int c = peek(); c >= 0 && c != ',' && c != '\n' && c != '\r'; c = peek()) {
          field += static_cast<char>(c);
          advance();
        }
      }
      if (peek() == ',') {
        advance();
        continue;
      }
      // End of line (LF, CRLF or a lone CR) or of the text.
      if (peek() == '\r') advance();
      if (peek() == '\n') advance();
      ++line_;
      end_of_record = true;
    }
    const bool blank = record.size == 1 && record.fields[0].empty();
    if (!blank) return true;
  }
}

}  // namespace ftbench::cost::detail
