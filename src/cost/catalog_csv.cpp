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
#include "gpu_words.h"
#include "price_bounds.h"

namespace ftbench::cost {

namespace {

using detail::words_of;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

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

  // Columns by name, ignoring case ("GpuInfo" / "GPUInfo" differ between schema versions).
  const Record& header = records.front();
  std::map<std::string, std::size_t> column;
  std::vector<std::string> header_names;
  for (std::size_t c = 0; c < header.fields.size(); ++c) {
    const std::string name(trim(header.fields[c]));
    header_names.push_back(name);
    const auto [it, inserted] = column.emplace(lowercase(name), c);
    if (!inserted && !name.empty()) {
      problems.add(header.line, fmt::format("column {} appears twice (fields {} and {})",
                                            text::quoted(name), it->second + 1, c + 1));
    }
  }
  for (const char* required : {"AcceleratorName", "AcceleratorCount", "Price"}) {
    if (column.count(lowercase(required)) > 0) continue;
    std::string message = fmt::format("missing required column {}", required);
    if (auto hint = text::closest(required, header_names)) {
      message += fmt::format(" (is {} a misspelling of it?)", text::quoted(*hint));
    }
    problems.add(header.line, message);
  }
  problems.throw_if_any();

  const auto index_of = [&](const char* name) -> std::optional<std::size_t> {
    const auto it = column.find(lowercase(name));
    return it == column.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  };
  const std::size_t accelerator_col = *index_of("AcceleratorName");
  const std::size_t count_col = *index_of("AcceleratorCount");
  const std::size_t price_col = *index_of("Price");
  const std::optional<std::size_t> spot_col = index_of("SpotPrice");
  const std::optional<std::size_t> region_col = index_of("Region");
  const std::optional<std::size_t> instance_col = index_of("InstanceType");

  SkyPilotCsvStats counts;
  Catalog catalog;
  std::map<OfferKey, std::size_t> offer_index;
  const auto add_offer = [&](Offer offer) {
    OfferKey key{offer.provider, offer.gpu,           offer.tier,
                 offer.region,   offer.instance_type, offer.gpus_per_instance};
    const auto it = offer_index.find(key);
    if (it == offer_index.end()) {
      offer_index.emplace(std::move(key), catalog.offers.size());
      catalog.offers.push_back(std::move(offer));
      return;
    }
    ++counts.folded_duplicates;
    Offer& kept = catalog.offers[it->second];
    if (offer.usd_per_gpu_hour < kept.usd_per_gpu_hour) kept = std::move(offer);
  };

  for (std::size_t r = 1; r < records.size(); ++r) {
    const Record& record = records[r];
    ++counts.rows;
    if (record.fields.size() != header.fields.size()) {
      problems.add(record.line, fmt::format("expected {} fields as in the header, found {}",
                                            header.fields.size(), record.fields.size()));
      continue;
    }
    const auto cell = [&](std::size_t c) { return trim(record.fields[c]); };
    const std::string_view accelerator = cell(accelerator_col);
    const std::string_view count_text = cell(count_col);
    if (accelerator.empty() || count_text.empty()) {
      ++counts.skipped_no_accelerator;
      continue;
    }
    const std::optional<double> count = parse_number(count_text);
    if (!count) {
      problems.add(record.line, fmt::format("column {}: expected a number, found {}",
                                            header_names[count_col], text::quoted(count_text)));
      continue;
    }
    if (!(*count >= 1.0) || !std::isfinite(*count) || std::floor(*count) != *count ||
        *count > static_cast<double>(kMaxGpus)) {
      ++counts.skipped_fractional_count;  // a share of a GPU (0.5) is not a GPU instance
      continue;
    }
    const int64_t gpus = static_cast<int64_t>(*count);

    // A price cell: nullopt when empty or 0 (no price), a problem when not a usable number.
    bool row_ok = true;
    const auto price_of = [&](std::size_t c) -> std::optional<double> {
      const std::string_view value = cell(c);
      if (value.empty()) return std::nullopt;
      const std::optional<double> usd = parse_number(value);
      if (!usd || !std::isfinite(*usd) || *usd < 0.0) {
        problems.add(record.line, fmt::format("column {}: expected a finite number >= 0, found {}",
                                              header_names[c], text::quoted(value)));
        row_ok = false;
        return std::nullopt;
      }
      if (*usd == 0.0) return std::nullopt;
      return usd;
    };
    // Per GPU within what billing takes (price_bounds.h), as in YAML catalogs.
    const auto per_gpu_of = [&](std::size_t c) -> std::optional<double> {
      const std::optional<double> usd = price_of(c);
      if (!usd) return std::nullopt;
      const double per_gpu = *usd / static_cast<double>(gpus);
      const std::string problem =
          detail::price_per_gpu_problem(text::quoted(cell(c)), gpus, per_gpu);
      if (problem.empty()) return per_gpu;
      problems.add(record.line, fmt::format("column {}: {}", header_names[c], problem));
      row_ok = false;
      return std::nullopt;
    };
    const std::optional<double> price = per_gpu_of(price_col);
    const std::optional<double> spot = spot_col ? per_gpu_of(*spot_col) : std::nullopt;
    // The strings of an offer are printed as JSON too (--format json): UTF-8 only.
    for (const std::optional<std::size_t> c :
         {std::optional<std::size_t>(accelerator_col), region_col, instance_col}) {
      if (!c) continue;
      if (const auto at = text::first_invalid_utf8(cell(*c))) {
        problems.add(record.line,
                     fmt::format("column {}: expected UTF-8 text, found {} (byte {} is not UTF-8; "
                                 "catalogs are printed as JSON too, which holds UTF-8 only)",
                                 header_names[*c], text::quoted(cell(*c)), *at + 1));
        row_ok = false;
      }
    }
    if (!row_ok) continue;
    if (!price && !spot) {
      ++counts.skipped_no_price;
      continue;
    }

    Offer offer;
    offer.provider = provider;
    offer.gpu = std::string(accelerator);
    offer.gpus_per_instance = gpus;
    offer.region = region_col ? std::string(cell(*region_col)) : "";
    offer.instance_type = instance_col ? std::string(cell(*instance_col)) : "";
    offer.price_basis = "per-instance";
    offer.billing = Billing::kUnknown;
    offer.source = "SkyPilot catalog " + source_name;
    offer.origin = fmt::format("{}:{}", source_name, record.line);
    if (const Gpu* gpu = find_gpu(known, accelerator)) {
      // SkyPilot names some PCIe cards like the SXM part ("H100" for Lambda's
      // gpu_1x_h100_pcie): an instance type naming an excluded word keeps the row apart.
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
        offer.note = fmt::format("instance type {} names {}: not {}", offer.instance_type,
                                 *excluded, gpu->name);
      }
    }
    if (price) {
      Offer on_demand = offer;
      on_demand.tier = "on-demand";
      on_demand.usd_per_gpu_hour = *price;
      add_offer(std::move(on_demand));
    }
    if (spot) {
      offer.tier = "spot";
      offer.usd_per_gpu_hour = *spot;
      add_offer(std::move(offer));
    }
  }
  problems.throw_if_any();
  counts.offers = static_cast<int64_t>(catalog.offers.size());
  if (stats != nullptr) *stats = counts;
  return catalog;
}

}  // namespace ftbench::cost
