// SkyPilot-style catalog CSVs (skypilot-org/skypilot-catalog, catalogs/vN/<cloud>/vms.csv).
#include "economics/cost/catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "economics/cost/billing.h"
#include "economics/cost/csv_records.h"
#include "economics/cost/gcp_host_vms.h"
#include "economics/cost/offer_names.h"
#include "economics/cost/price_bounds.h"
#include "economics/cost/skypilot_csv.h"
#include "util/text/did_you_mean.h"
#include "util/text/messages.h"
#include "util/text/trim.h"

namespace ftbench::cost {

namespace {

using detail::CsvProblems;
using detail::CsvRecord;
using detail::CsvRecordReader;
using detail::lowercase;
using detail::words_of;

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

// The columns a SkyPilot CSV is read by, found by name in its header.
struct Columns {
  std::vector<std::string> names;  // as the header spells them, for messages
  std::size_t count_in_header = 0;
  std::size_t accelerator = 0;
  std::size_t count = 0;
  std::size_t price = 0;
  std::optional<std::size_t> spot;
  std::optional<std::size_t> region;
  std::optional<std::size_t> zone;
  std::optional<std::size_t> instance;
  std::optional<std::size_t> gpu_info;
  std::optional<std::size_t> vcpus;
  std::optional<std::size_t> memory;
};

// Adds "KIND, found VALUE" as the kind before ", found " and the rest, so that the problems of a
// malformed column are counted together past the listed ones.
void add_problem(CsvProblems& problems, int64_t line, std::string_view message) {
  const std::size_t found = message.find(", found ");
  if (found == std::string_view::npos) {
    problems.add(line, message);
  } else {
    problems.add(line, message.substr(0, found), message.substr(found));
  }
}

// Columns by name, ignoring case ("GpuInfo" / "GPUInfo" differ between schema versions); a
// column named twice or a required one missing is a problem of the header line.
Columns read_header(const CsvRecord& header, CsvProblems& problems) {
  Columns columns;
  columns.count_in_header = header.size;
  std::map<std::string, std::size_t> column;
  for (std::size_t c = 0; c < header.size; ++c) {
    const std::string name(text::trim(header.field(c), text::kBlanks));
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
  columns.zone = index_of("AvailabilityZone");
  columns.instance = index_of("InstanceType");
  columns.gpu_info = index_of("GpuInfo");
  columns.vcpus = index_of("vCPUs");
  columns.memory = index_of("MemoryGiB");
  return columns;
}

// The part names a GpuInfo cell gives: each 'Name' of SkyPilot's dictionary ("{'Gpus': [{'Name':
// 'A100 PCIe', ...}]}"), or the whole cell when it is a plain name (Azure's "H100").
std::vector<std::string_view> gpu_info_names(std::string_view cell) {
  std::vector<std::string_view> names;
  if (cell.empty()) return names;
  if (cell.front() != '{') {
    names.push_back(cell);
    return names;
  }
  constexpr std::string_view kKey = "'Name': ";
  for (std::size_t at = cell.find(kKey); at != std::string_view::npos;
       at = cell.find(kKey, at + 1)) {
    std::size_t open = at + kKey.size();
    if (open >= cell.size() || (cell[open] != '\'' && cell[open] != '"')) continue;
    const std::size_t close = cell.find(cell[open], open + 1);
    if (close == std::string_view::npos) break;
    names.push_back(cell.substr(open + 1, close - open - 1));
  }
  return names;
}

// Instance families a cloud documents as carrying PCIe cards, where neither the accelerator name
// nor the instance type says so: Azure's NC-series (NCads H100 v5: H100 NVL; NCCads H100 v5:
// H100 PCIe; NC A100 v4: A100 80GB PCIe), against its ND-series of SXM parts. From Azure's
// size pages (learn.microsoft.com/azure/virtual-machines/sizes), read 2026-12-06. The first
// matching rule wins.
struct PcieFamily {
  std::string_view instance_prefix;
  std::string_view gpu_word;   // a word of the instance type, lower case
  std::string_view part_word;  // the exclude word of the SXM part it is not
  std::string_view what;
};
constexpr PcieFamily kPcieFamilies[] = {
    {"Standard_NCC", "h100", "PCIe", "Azure's NCC H100 v5 instances carry H100 PCIe cards"},
    {"Standard_NC", "h100", "NVL", "Azure's NC-series H100 v5 instances carry H100 NVL cards"},
    {"Standard_NC", "a100", "PCIe",
     "Azure's NC-series A100 v4 instances carry A100 80GB PCIe cards"},
};

// A host VM a GPU row without an instance type may be priced with (gcp_host_vms.h).
struct HostVm {
  std::string instance_type;
  double vcpus = 0.0;
  double memory_gib = 0.0;
  double usd_per_hour = 0.0;
  std::optional<double> spot_usd_per_hour;
  int64_t line = 0;
};

// A GPU row priced without its host VM, waiting for the file's host rows (which may come after
// it) to be read.
struct Attachment {
  std::string accelerator;
  std::string gpu_info;
  int64_t gpus = 0;
  std::string region;
  std::string zone;
  std::optional<double> usd_per_hour;
  std::optional<double> spot_usd_per_hour;
  int64_t line = 0;
};

// The rows of one file into offers, one record at a time: rows that cannot become an offer are
// counted and dropped as they are read, host VMs and GPU rows without a host are kept in a
// compact form until the end, and the offers of one instance type are folded to the cheapest
// zone and region while reading, so that memory grows with the distinct offers, not the rows.
class RowReader {
 public:
  RowReader(const Columns& columns, CsvProblems& problems, const std::string& source_name,
            const std::string& provider, const Catalog& known)
      : columns_(columns),
        problems_(problems),
        source_name_(source_name),
        provider_(provider),
        known_(known) {}

  void read(const CsvRecord& record);
  // Prices the GPU rows kept for their host VM; call once, after the last record.
  void finish();
  Catalog& catalog() { return catalog_; }
  SkyPilotCsvStats& counts() { return counts_; }

 private:
  struct Label {
    std::string gpu;
    std::string note;
  };

  std::string_view cell(std::size_t c) const {
    return text::trim(record_->field(c), text::kBlanks);
  }
  std::string_view optional_cell(const std::optional<std::size_t>& c) const {
    return c ? cell(*c) : std::string_view();
  }
  std::optional<int64_t> gpu_count();
  std::optional<double> price_of(std::size_t c);
  std::optional<double> per_gpu_of(std::size_t c, int64_t gpus);
  bool strings_are_utf8();
  void keep_host_vm();
  const Label& label_of(std::string_view accelerator, std::string_view instance_type,
                        std::string_view gpu_info);
  Label name_gpu(std::string_view accelerator, std::string_view instance_type,
                 std::string_view gpu_info) const;
  void add_offer(const Label& label, const char* tier, double usd_per_gpu_hour, int64_t gpus,
                 std::string_view region, std::string_view instance_type, int64_t line,
                 std::string_view note);
  const HostVm* host_for(const Attachment& row) const;

  const Columns& columns_;
  CsvProblems& problems_;
  const std::string& source_name_;
  const std::string& provider_;
  const Catalog& known_;
  Catalog catalog_;
  SkyPilotCsvStats counts_;
  std::map<std::string, std::size_t, std::less<>> offer_index_;  // folded key -> offer
  std::map<std::string, Label, std::less<>> labels_;  // accelerator, instance, GpuInfo -> label
  std::map<std::string, std::vector<HostVm>, std::less<>> hosts_;  // region, zone -> VMs
  std::vector<Attachment> attachments_;
  std::string key_;  // scratch for map keys
  const CsvRecord* record_ = nullptr;
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
    add_problem(problems_, record_->line,
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
    add_problem(problems_, record_->line,
                fmt::format("column {}: expected a finite number >= 0, found {}", columns_.names[c],
                            text::quoted(value)));
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
  if (problem.empty()) return usd;
  add_problem(problems_, record_->line, fmt::format("column {}: {}", columns_.names[c], problem));
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
      add_problem(problems_, record_->line,
                  fmt::format("column {}: expected UTF-8 text, found {} (byte {} is not UTF-8; "
                              "catalogs are printed as JSON too, which holds UTF-8 only)",
                              columns_.names[*c], text::quoted(cell(*c)), *at + 1));
      ok = false;
    }
  }
  return ok;
}

// A row without an accelerator that a GPU row of the same zone may need as its host (GCP's
// machine types for GPUs and N1 VMs); every other CPU row is dropped unread.
void RowReader::keep_host_vm() {
  if (!columns_.instance) return;
  const std::string_view instance = cell(*columns_.instance);
  if (!detail::is_gcp_gpu_machine_type(instance) && !detail::is_gcp_n1_host(instance)) return;
  // SkyPilot adds a host priced 0 as $0 (a4-highgpu-8g, whose GPU row holds the whole price).
  const std::string_view price_text = cell(columns_.price);
  if (price_text.empty()) return;
  const std::optional<double> price = price_of(columns_.price);
  if (!row_ok_ || !strings_are_utf8()) return;
  HostVm host;
  host.instance_type = std::string(instance);
  host.vcpus = parse_number(optional_cell(columns_.vcpus)).value_or(0.0);
  host.memory_gib = parse_number(optional_cell(columns_.memory)).value_or(0.0);
  host.usd_per_hour = price.value_or(0.0);
  if (columns_.spot && !cell(*columns_.spot).empty()) {
    host.spot_usd_per_hour = price_of(*columns_.spot).value_or(0.0);
    if (!row_ok_) return;
  }
  host.line = record_->line;
  key_.assign(optional_cell(columns_.region)).append("\x1f").append(optional_cell(columns_.zone));
  auto it = hosts_.find(key_);
  if (it == hosts_.end()) it = hosts_.emplace(key_, std::vector<HostVm>{}).first;
  it->second.push_back(std::move(host));
}

const RowReader::Label& RowReader::label_of(std::string_view accelerator,
                                            std::string_view instance_type,
                                            std::string_view gpu_info) {
  key_.assign(accelerator).append("\x1f").append(instance_type).append("\x1f").append(gpu_info);
  const auto it = labels_.find(key_);
  if (it != labels_.end()) return it->second;
  return labels_.emplace(key_, name_gpu(accelerator, instance_type, gpu_info)).first->second;
}

// The catalog's name for the row's GPU. SkyPilot names some PCIe and NVL cards like the SXM
// part ("H100" for Lambda's gpu_1x_h100_pcie, "A100-80GB" for RunPod's A100 PCIe): a row that
// says otherwise is kept apart, as "<accelerator> <word>" with a note saying why. What the row
// says: its instance type's words, its GpuInfo names, then its instance family (kPcieFamilies).
RowReader::Label RowReader::name_gpu(std::string_view accelerator, std::string_view instance_type,
                                     std::string_view gpu_info) const {
  const Gpu* gpu = find_gpu(known_, accelerator);
  if (gpu == nullptr) return {std::string(accelerator), ""};
  const auto excluded_in = [&](std::string_view text) -> const std::string* {
    const std::vector<std::string> words = words_of(text);
    for (const std::string& word : gpu->exclude_words) {
      if (std::find(words.begin(), words.end(), lowercase(word)) != words.end()) return &word;
    }
    return nullptr;
  };
  const auto apart = [&](const std::string& word, const std::string& why) {
    return Label{fmt::format("{} {}", accelerator, word),
                 fmt::format("{}: not {}", why, gpu->name)};
  };
  if (const std::string* word = excluded_in(instance_type)) {
    return apart(*word, fmt::format("instance type {} names {}", instance_type, *word));
  }
  for (std::string_view name : gpu_info_names(gpu_info)) {
    if (const std::string* word = excluded_in(name)) {
      return apart(*word, fmt::format("GpuInfo names {}", name));
    }
  }
  const std::vector<std::string> instance_words = words_of(instance_type);
  for (const PcieFamily& family : kPcieFamilies) {
    if (instance_type.substr(0, family.instance_prefix.size()) != family.instance_prefix) continue;
    if (std::find(instance_words.begin(), instance_words.end(), family.gpu_word) ==
        instance_words.end()) {
      continue;
    }
    for (const std::string& word : gpu->exclude_words) {
      if (lowercase(word) == lowercase(family.part_word)) {
        return apart(word, std::string(family.what));
      }
    }
  }
  return {gpu->name, ""};
}

// An offer of this file, or a cheaper price for one already read: offers of one GPU, tier,
// instance type and size fold to the cheapest zone and region, as SkyPilot's `sky show-gpus`
// lists each instance type at its cheapest region (nothing in ftbench picks an offer by region).
void RowReader::add_offer(const Label& label, const char* tier, double usd_per_gpu_hour,
                          int64_t gpus, std::string_view region, std::string_view instance_type,
                          int64_t line, std::string_view note) {
  key_.assign(label.gpu)
      .append("\x1f")
      .append(tier)
      .append("\x1f")
      .append(instance_type)
      .append("\x1f")
      .append(std::to_string(gpus));
  const auto it = offer_index_.find(key_);
  if (it != offer_index_.end()) {
    ++counts_.folded_duplicates;
    Offer& kept = catalog_.offers[it->second];
    if (usd_per_gpu_hour < kept.usd_per_gpu_hour) {
      kept.usd_per_gpu_hour = usd_per_gpu_hour;
      kept.region = std::string(region);
      kept.origin = fmt::format("{}:{}", source_name_, line);
      kept.note = std::string(note);
    }
    return;
  }
  offer_index_.emplace(key_, catalog_.offers.size());
  Offer offer;
  offer.provider = provider_;
  offer.gpu = label.gpu;
  offer.gpus_per_instance = gpus;
  offer.tier = tier;
  offer.region = std::string(region);
  offer.instance_type = std::string(instance_type);
  offer.usd_per_gpu_hour = usd_per_gpu_hour;
  offer.price_basis = "per-instance";
  offer.billing = Billing::kUnknown;
  offer.source = "SkyPilot catalog " + source_name_;
  offer.origin = fmt::format("{}:{}", source_name_, line);
  offer.note = std::string(note);
  catalog_.offers.push_back(std::move(offer));
}

void RowReader::read(const CsvRecord& record) {
  record_ = &record;
  row_ok_ = true;
  ++counts_.rows;
  if (record.size != columns_.count_in_header) {
    problems_.add(record.line,
                  fmt::format("expected {} fields as in the header", columns_.count_in_header),
                  fmt::format(", found {}", record.size));
    return;
  }
  const std::optional<int64_t> gpus = gpu_count();
  if (!gpus) {
    if (cell(columns_.accelerator).empty()) keep_host_vm();
    return;
  }
  const std::optional<double> price = per_gpu_of(columns_.price, *gpus);
  const std::optional<double> spot =
      columns_.spot ? per_gpu_of(*columns_.spot, *gpus) : std::nullopt;
  if (!strings_are_utf8() || !row_ok_) return;
  if (!price && !spot) {
    ++counts_.skipped_no_price;
    return;
  }
  const std::string_view accelerator = cell(columns_.accelerator);
  const std::string_view instance = optional_cell(columns_.instance);
  const std::string_view gpu_info = optional_cell(columns_.gpu_info);
  if (columns_.instance && instance.empty() && accelerator.substr(0, 4) != "tpu-") {
    // GCP's layout: the GPU alone, billed with a host VM listed elsewhere in the file.
    attachments_.push_back({std::string(accelerator), std::string(gpu_info), *gpus,
                            std::string(optional_cell(columns_.region)),
                            std::string(optional_cell(columns_.zone)), price, spot, record.line});
    return;
  }
  const Label& label = label_of(accelerator, instance, gpu_info);
  const std::string_view region = optional_cell(columns_.region);
  const double count = static_cast<double>(*gpus);
  if (price) {
    add_offer(label, kOnDemand, *price / count, *gpus, region, instance, record.line, label.note);
  }
  if (spot)
    add_offer(label, kSpot, *spot / count, *gpus, region, instance, record.line, label.note);
}

// The host SkyPilot picks for a GPU row (gcp_host_vms.h): among the zone's VMs that may host it,
// the cheapest on demand; nullptr when there is none.
const HostVm* RowReader::host_for(const Attachment& row) const {
  const std::optional<detail::HostRule> rule = detail::gcp_host_rule(row.accelerator, row.gpus);
  if (!rule) return nullptr;
  const auto zone = hosts_.find(row.region + "\x1f" + row.zone);
  if (zone == hosts_.end()) return nullptr;
  const HostVm* best = nullptr;
  for (const HostVm& host : zone->second) {
    const bool fits = rule->machine_types.empty()
                          ? detail::is_gcp_n1_host(host.instance_type) &&
                                host.vcpus >= rule->n1_vcpus &&
                                host.memory_gib >= rule->n1_memory_gib
                          : std::find(rule->machine_types.begin(), rule->machine_types.end(),
                                      host.instance_type) != rule->machine_types.end();
    if (fits && (best == nullptr || host.usd_per_hour < best->usd_per_hour)) best = &host;
  }
  return best;
}

void RowReader::finish() {
  for (const Attachment& row : attachments_) {
    const HostVm* host = host_for(row);
    if (host == nullptr) {
      ++counts_.skipped_no_host;
      continue;
    }
    ++counts_.priced_with_host;
    const Label& label = label_of(row.accelerator, host->instance_type, row.gpu_info);
    std::string note = fmt::format("GPU price plus host VM {} ({}:{})", host->instance_type,
                                   source_name_, host->line);
    if (!label.note.empty()) note = label.note + "; " + note;
    const double count = static_cast<double>(row.gpus);
    if (row.usd_per_hour) {
      add_offer(label, kOnDemand, (*row.usd_per_hour + host->usd_per_hour) / count, row.gpus,
                row.region, host->instance_type, row.line, note);
    }
    if (row.spot_usd_per_hour && host->spot_usd_per_hour) {
      add_offer(label, kSpot, (*row.spot_usd_per_hour + *host->spot_usd_per_hour) / count, row.gpus,
                row.region, host->instance_type, row.line, note);
    }
  }
  attachments_.clear();
  hosts_.clear();
  counts_.offers = static_cast<int64_t>(catalog_.offers.size());
}

}  // namespace

namespace detail {

Catalog read_skypilot_csv(const std::function<std::string_view()>& next_chunk,
                          const std::string& source_name, const std::string& provider,
                          const Catalog& known, SkyPilotCsvStats* stats) {
  CsvProblems problems(source_name);
  CsvRecordReader records(next_chunk, problems);
  CsvRecord header;
  if (!records.next(header)) {
    problems.throw_if_any();
    problems.add(1,
                 "empty file: expected a header row with AcceleratorName, AcceleratorCount, "
                 "Price");
    problems.throw_if_any();
  }
  const Columns columns = read_header(header, problems);
  RowReader rows(columns, problems, source_name, provider, known);
  CsvRecord record;
  while (records.next(record)) rows.read(record);
  problems.throw_if_any();
  rows.finish();
  if (stats != nullptr) *stats = rows.counts();
  return std::move(rows.catalog());
}

}  // namespace detail

Catalog parse_skypilot_csv(std::string_view text, const std::string& source_name,
                           const std::string& provider, const Catalog& known,
                           SkyPilotCsvStats* stats) {
  bool given = false;
  return detail::read_skypilot_csv(
      [&]() -> std::string_view {
        if (given) return {};
        given = true;
        return text;
      },
      source_name, provider, known, stats);
}

}  // namespace ftbench::cost
