// SkyPilot-style catalog CSVs (skypilot-org/skypilot-catalog, catalogs/vN/<cloud>/vms.csv).
#include "ftbench/cost/catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "ftbench/cost/billing.h"
#include "ftbench/text/did_you_mean.h"
#include "ftbench/text/messages.h"
#include "offer_names.h"
#include "price_bounds.h"

namespace ftbench::cost {

namespace {

using detail::lowercase;
using detail::words_of;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct Record {
  int64_t line = 0;  // where the record starts (a quoted field may span lines)
  std::vector<std::string> fields;
};

class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void add(int64_t line, std::string message) {
    if (!text_.empty()) text_ += '\n';
    text_ += fmt::format("{}:{}: {}", file_, line, message);
  }
  void throw_if_any() const {
    if (!text_.empty()) throw CatalogError(text_);
  }

 private:
  std::string file_;
  std::string text_;
};

// RFC 4180: fields separated by commas, records by CRLF or LF; a field in double quotes may
// hold commas, line breaks and doubled quotes (""). Blank lines are skipped. A structural error
// (an unterminated quote, text after a closing quote) stops the reading.
std::vector<Record> read_records(std::string_view text, Problems& problems) {
  std::vector<Record> records;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  std::size_t i = 0;
  int64_t line = 1;
  const std::size_t n = text.size();
  while (i < n) {
    Record record;
    record.line = line;
    bool end_of_record = false;
    while (!end_of_record) {
      std::string field;
      if (i < n && text[i] == '"') {
        const int64_t quote_line = line;
        ++i;
        bool closed = false;
        while (i < n) {
          const char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            closed = true;
            break;
          }
          if (c == '\n') ++line;
          field += c;
          ++i;
        }
        if (!closed) {
          problems.add(quote_line, "quoted field not closed before the end of the file");
          return records;
        }
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          problems.add(
              line, fmt::format("unexpected {} after a closing quote in field {}",
                                text::quoted(std::string(1, text[i])), record.fields.size() + 1));
          return records;
        }
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') field += text[i++];
      }
      record.fields.push_back(std::move(field));
      if (i < n && text[i] == ',') {
        ++i;
        continue;
      }
      // End of line (LF, CRLF or a lone CR) or of the text.
      if (i < n && text[i] == '\r') ++i;
      if (i < n && text[i] == '\n') ++i;
      ++line;
      end_of_record = true;
    }
    const bool blank = record.fields.size() == 1 && record.fields.front().empty();
    if (!blank) records.push_back(std::move(record));
  }
  return records;
}

// A number cell: nullopt when not a number; infinities for values beyond the double range.
std::optional<double> parse_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (end != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return HUGE_VAL;
  if (ec != std::errc()) return std::nullopt;
  return value;
}

using OfferKey =
    std::tuple<std::string, std::string, std::string, std::string, std::string, int64_t>;

// The columns a SkyPilot CSV is read by, found by name in its header.
struct Columns {
  std::vector<std::string> names;  // as the header spells them, for messages
  std::size_t accelerator = 0;
  std::size_t count = 0;
  std::size_t price = 0;
  std::optional<std::size_t> spot;
  std::optional<std::size_t> region;
  std::optional<std::size_t> instance;
};

// Columns by name, ignoring case ("GpuInfo" / "GPUInfo" differ between schema versions); a
// column named twice or a required one missing is a problem of the header line.
Columns read_header(const Record& header, Problems& problems) {
  Columns columns;
  std::map<std::string, std::size_t> column;
  for (std::size_t c = 0; c < header.fields.size(); ++c) {
    const std::string name(trim(header.fields[c]));
    columns.names.push_back(name);
    const auto [it, inserted] = column.emplace(lowercase(name), c);
    if (!inserted && !name.empty()) {
      problems.add(header.line, fmt::format("column {} appears twice (fields {} and {})",
                                            text::quoted(name), it->second + 1, c + 1));
    }
  }
  for (const char* required : {"AcceleratorName", "AcceleratorCount", "Price"}) {
    if (column.count(lowercase(required)) > 0) continue;
    std::string message = fmt::format("missing required column {}", required);
    if (auto hint = text::closest(required, columns.names)) {
      message += fmt::format(" (is {} a misspelling of it?)", text::quoted(*hint));
    }
    problems.add(header.line, message);
  }
  problems.throw_if_any();
  const auto index_of = [&](const char* name) -> std::optional<std::size_t> {
    const auto it = column.find(lowercase(name));
    return it == column.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  };
  columns.accelerator = *index_of("AcceleratorName");
  columns.count = *index_of("AcceleratorCount");
  columns.price = *index_of("Price");
  columns.spot = index_of("SpotPrice");
  columns.region = index_of("Region");
  columns.instance = index_of("InstanceType");
  return columns;
}

// The rows of one file into offers: an on-demand and a spot offer per row that prices them,
// duplicates folded to the cheapest, skipped rows counted.
class RowReader {
 public:
  RowReader(const Columns& columns, Problems& problems, const std::string& source_name,
            const std::string& provider, const Catalog& known)
      : columns_(columns),
        problems_(problems),
        source_name_(source_name),
        provider_(provider),
        known_(known) {}

  void read(const Record& record, std::size_t header_fields);
  Catalog& catalog() { return catalog_; }
  SkyPilotCsvStats& counts() { return counts_; }

 private:
  std::string_view cell(std::size_t c) const { return trim(record_->fields[c]); }
  std::optional<int64_t> gpu_count();
  std::optional<double> price_of(std::size_t c);
  std::optional<double> per_gpu_of(std::size_t c, int64_t gpus);
  bool strings_are_utf8();
  void name_gpu(Offer& offer, std::string_view accelerator) const;
  void add_offer(Offer offer);

  const Columns& columns_;
  Problems& problems_;
  const std::string& source_name_;
  const std::string& provider_;
  const Catalog& known_;
  Catalog catalog_;
  SkyPilotCsvStats counts_;
  std::map<OfferKey, std::size_t> offer_index_;
  const Record* record_ = nullptr;
  bool row_ok_ = true;
};

// The row's GPU count; nullopt for a row skipped (no accelerator, a share of a GPU) or a problem.
std::optional<int64_t> RowReader::gpu_count() {
  const std::string_view count_text = cell(columns_.count);
  if (cell(columns_.accelerator).empty() || count_text.empty()) {
    ++counts_.skipped_no_accelerator;
    return std::nullopt;
  }
  const std::optional<double> count = parse_number(count_text);
  if (!count) {
    problems_.add(record_->line,
                  fmt::format("column {}: expected a number, found {}",
                              columns_.names[columns_.count], text::quoted(count_text)));
    return std::nullopt;
  }
  if (!(*count >= 1.0) || !std::isfinite(*count) || std::floor(*count) != *count ||
      *count > static_cast<double>(kMaxGpus)) {
    ++counts_.skipped_fractional_count;  // a share of a GPU (0.5) is not a GPU instance
    return std::nullopt;
  }
  return static_cast<int64_t>(*count);
}

// A price cell: nullopt when empty or 0 (no price), a problem when not a usable number.
std::optional<double> RowReader::price_of(std::size_t c) {
  const std::string_view value = cell(c);
  if (value.empty()) return std::nullopt;
  const std::optional<double> usd = parse_number(value);
  if (!usd || !std::isfinite(*usd) || *usd < 0.0) {
    problems_.add(record_->line, fmt::format("column {}: expected a finite number >= 0, found {}",
                                             columns_.names[c], text::quoted(value)));
    row_ok_ = false;
    return std::nullopt;
  }
  if (*usd == 0.0) return std::nullopt;
  return usd;
}

// Per GPU within what billing takes (price_bounds.h), as in YAML catalogs.
std::optional<double> RowReader::per_gpu_of(std::size_t c, int64_t gpus) {
  const std::optional<double> usd = price_of(c);
  if (!usd) return std::nullopt;
  const double per_gpu = *usd / static_cast<double>(gpus);
  const std::string problem = detail::price_per_gpu_problem(text::quoted(cell(c)), gpus, per_gpu);
  if (problem.empty()) return per_gpu;
  problems_.add(record_->line, fmt::format("column {}: {}", columns_.names[c], problem));
  row_ok_ = false;
  return std::nullopt;
}

// The strings of an offer are printed as JSON too (--format json): UTF-8 only.
bool RowReader::strings_are_utf8() {
  bool ok = true;
  for (const std::optional<std::size_t> c :
       {std::optional<std::size_t>(columns_.accelerator), columns_.region, columns_.instance}) {
    if (!c) continue;
    if (const auto at = text::first_invalid_utf8(cell(*c))) {
      problems_.add(record_->line,
                    fmt::format("column {}: expected UTF-8 text, found {} (byte {} is not UTF-8; "
                                "catalogs are printed as JSON too, which holds UTF-8 only)",
                                columns_.names[*c], text::quoted(cell(*c)), *at + 1));
      ok = false;
    }
  }
  return ok;
}

// The catalog's name for the row's GPU. SkyPilot names some PCIe cards like the SXM part
// ("H100" for Lambda's gpu_1x_h100_pcie): an instance type naming an excluded word keeps the
// row apart.
void RowReader::name_gpu(Offer& offer, std::string_view accelerator) const {
  const Gpu* gpu = find_gpu(known_, accelerator);
  if (gpu == nullptr) return;
  const std::vector<std::string> instance_words = words_of(offer.instance_type);
  const auto excluded = std::find_if(
      gpu->exclude_words.begin(), gpu->exclude_words.end(), [&](const std::string& word) {
        return std::find(instance_words.begin(), instance_words.end(), lowercase(word)) !=
               instance_words.end();
      });
  if (excluded == gpu->exclude_words.end()) {
    offer.gpu = gpu->name;
  } else {
    offer.gpu = fmt::format("{} {}", accelerator, *excluded);
    offer.note =
        fmt::format("instance type {} names {}: not {}", offer.instance_type, *excluded, gpu->name);
  }
}

void RowReader::add_offer(Offer offer) {
  OfferKey key{offer.provider, offer.gpu,           offer.tier,
               offer.region,   offer.instance_type, offer.gpus_per_instance};
  const auto it = offer_index_.find(key);
  if (it == offer_index_.end()) {
    offer_index_.emplace(std::move(key), catalog_.offers.size());
    catalog_.offers.push_back(std::move(offer));
    return;
  }
  ++counts_.folded_duplicates;
  Offer& kept = catalog_.offers[it->second];
  if (offer.usd_per_gpu_hour < kept.usd_per_gpu_hour) kept = std::move(offer);
}

void RowReader::read(const Record& record, std::size_t header_fields) {
  record_ = &record;
  row_ok_ = true;
  ++counts_.rows;
  if (record.fields.size() != header_fields) {
    problems_.add(record.line, fmt::format("expected {} fields as in the header, found {}",
                                           header_fields, record.fields.size()));
    return;
  }
  const std::optional<int64_t> gpus = gpu_count();
  if (!gpus) return;
  const std::optional<double> price = per_gpu_of(columns_.price, *gpus);
  const std::optional<double> spot =
      columns_.spot ? per_gpu_of(*columns_.spot, *gpus) : std::nullopt;
  if (!strings_are_utf8() || !row_ok_) return;
  if (!price && !spot) {
    ++counts_.skipped_no_price;
    return;
  }
  const std::string_view accelerator = cell(columns_.accelerator);
  Offer offer;
  offer.provider = provider_;
  offer.gpu = std::string(accelerator);
  offer.gpus_per_instance = *gpus;
  offer.region = columns_.region ? std::string(cell(*columns_.region)) : "";
  offer.instance_type = columns_.instance ? std::string(cell(*columns_.instance)) : "";
  offer.price_basis = "per-instance";
  offer.billing = Billing::kUnknown;
  offer.source = "SkyPilot catalog " + source_name_;
  offer.origin = fmt::format("{}:{}", source_name_, record.line);
  name_gpu(offer, accelerator);
  if (price) {
    Offer on_demand = offer;
    on_demand.tier = kOnDemand;
    on_demand.usd_per_gpu_hour = *price;
    add_offer(std::move(on_demand));
  }
  if (spot) {
    offer.tier = kSpot;
    offer.usd_per_gpu_hour = *spot;
    add_offer(std::move(offer));
  }
}

}  // namespace

Catalog parse_skypilot_csv(std::string_view text, const std::string& source_name,
                           const std::string& provider, const Catalog& known,
                           SkyPilotCsvStats* stats) {
  Problems problems(source_name);
  const std::vector<Record> records = read_records(text, problems);
  problems.throw_if_any();
  if (records.empty()) {
    problems.add(1,
                 "empty file: expected a header row with AcceleratorName, AcceleratorCount, "
                 "Price");
    problems.throw_if_any();
  }
  const Columns columns = read_header(records.front(), problems);
  RowReader rows(columns, problems, source_name, provider, known);
  for (std::size_t r = 1; r < records.size(); ++r) {
    rows.read(records[r], records.front().fields.size());
  }
  problems.throw_if_any();
  rows.counts().offers = static_cast<int64_t>(rows.catalog().offers.size());
  if (stats != nullptr) *stats = rows.counts();
  return std::move(rows.catalog());
}

}  // namespace ftbench::cost
