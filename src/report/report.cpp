#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "report/report_bounds.h"
#include "report/report_consistency.h"
#include "report/report_fields.h"
#include "report/report_io.h"
#include "util/text/container_image.h"
#include "util/text/json_fields.h"
#include "util/text/json_values.h"
#include "util/text/messages.h"

namespace ftbench::report {
namespace {

using OJson = nlohmann::ordered_json;

using detail::kMaxCount;

// Reads a record's fields (report_fields.h) from the JSON object at `path`, through the reader's
// checks for each kind.
template <class Reader, class Json>
struct FieldReader {
  const Reader& reader;
  const Json& obj;
  const std::string& path;

  void string(const char* key, std::string& out) { out = reader.string(obj, path, key); }
  void count(const char* key, int64_t& out) { out = reader.count(obj, path, key); }
  void count_since(const char* key, int64_t& out) {
    if (present(key)) out = reader.count(obj, path, key);
  }
  void count_in_range_since(const char* key, int64_t& out, int64_t lo, int64_t hi) {
    if (!present(key)) return;
    out = reader.integer(obj, path, key);
    if (out < lo || out > hi) {
      reader.fail(reader.join(path, key) + ": expected an integer between " + std::to_string(lo) +
                  " and " + std::to_string(hi) + ", found " + std::to_string(out));
    }
  }
  void positive_integer_since(const char* key, int64_t& out) {
    if (!present(key)) return;
    out = reader.integer(obj, path, key);
    if (out < 1) {
      reader.fail(reader.join(path, key) + ": expected an integer >= 1, found " +
                  std::to_string(out));
    }
  }
  void boolean(const char* key, bool& out) { out = reader.boolean(obj, path, key); }
  void boolean_since(const char* key, bool& out) {
    if (present(key)) out = reader.boolean(obj, path, key);
  }
  void non_negative(const char* key, double& out) {
    out = reader.non_negative_number(obj, path, key);
  }
  void non_negative_since(const char* key, double& out) {
    if (present(key)) out = reader.non_negative_number(obj, path, key);
  }
  void number(const char* key, double& out) { out = reader.number(obj, path, key); }
  void number_or_nan(const char* key, double& out) { out = reader.number_or_nan(obj, path, key); }
  void optional_number(const char* key, std::optional<double>& out) {
    out = reader.optional_number(obj, path, key);
  }
  void optional_number_since(const char* key, std::optional<double>& out) {
    if (present(key)) out = reader.optional_number(obj, path, key);
  }
  void optional_integer(const char* key, std::optional<int64_t>& out) {
    out = reader.optional_integer(obj, path, key);
  }
  void optional_integer_since(const char* key, std::optional<int64_t>& out) {
    if (present(key)) out = reader.optional_integer(obj, path, key);
  }
  void string_since(const char* key, std::string& out) {
    if (present(key)) out = reader.string(obj, path, key);
  }
  void container_image(const char* key, std::string& out) {
    string_since(key, out);
    if (const std::string why = text::container_image_problem(out); !why.empty()) {
      reader.fail(reader.join(path, key) +
                  ": expected a container image reference such as "
                  "rocm/pytorch-training:v25.6, found " +
                  text::quoted(out) + " (" + why + ")");
    }
  }
  void optional_non_negative(const char* key, std::optional<double>& out) {
    out = reader.optional_non_negative(obj, path, key);
  }
  void string_or_null(const char* key, std::string& out) {
    if (!reader.field(obj, path, key).is_null()) out = reader.string(obj, path, key);
  }
  void json_object(const char* key, nlohmann::ordered_json& out) {
    out = reader.object(obj, path, key);
  }
  void variables(const char* key, std::optional<std::vector<EnvironmentVariable>>& out) {
    if (!present_and_not_null(key)) return;
    const Json& variables = reader.object(obj, path, key);
    std::vector<EnvironmentVariable> read;
    for (auto it = variables.begin(); it != variables.end(); ++it) {
      if (!it.value().is_string()) {
        // The name is the file's: escaped, as every message quoting a file does.
        reader.wrong_type(reader.join(path, key) + "." + text::printable(it.key()), "a string",
                          it.value());
      }
      read.push_back({it.key(), it.value().template get<std::string>()});
    }
    out = std::move(read);
  }
  template <class R>
  void record(const char* key, R& out) {
    out = reader.template read_record<R>(reader.object(obj, path, key), reader.join(path, key));
  }
  template <class R>
  void optional_record_since(const char* key, std::optional<R>& out) {
    if (present_and_not_null(key)) {
      R read;
      record(key, read);
      out = std::move(read);
    }
  }
  template <class R>
  void records(const char* key, std::vector<R>& out) {
    const Json& items = reader.array(obj, path, key);
    const std::string items_path = reader.join(path, key);
    out.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      out.push_back(reader.template read_record<R>(items[i], reader.index(items_path, i)));
    }
  }
  template <class R>
  void records_since(const char* key, std::vector<R>& out) {
    if (present(key)) records(key, out);
  }
  template <class Fields>
  void group(const char* key, Fields&& fields) {
    const std::string group_path = reader.join(path, key);
    FieldReader group_reader{reader, reader.object(obj, path, key), group_path};
    fields(group_reader);
  }
  // Derived from other fields when written: checked against them once they are all read.
  template <class Figure>
  void computed(const char* key, const char* what, const char* why_null, Figure figure) {
    const auto it = obj.find(key);
    if (it == obj.end()) return;
    reader.after_reading(
        [&reader = reader, found = &*it, where = reader.join(path, key), what, why_null, figure] {
          reader.check_computed(where, *found, figure(), what, why_null);
        });
  }

 private:
  bool present(const char* key) const { return obj.find(key) != obj.end(); }
  bool present_and_not_null(const char* key) const {
    const auto it = obj.find(key);
    return it != obj.end() && !it->is_null();
  }
};

// Checks "ftbench.report/<major>[.<minor>]" and returns the major version, or -1 when the
// string does not have that shape at all.
int schema_major(const std::string& schema) {
  const std::string prefix = "ftbench.report/";
  if (schema.compare(0, prefix.size(), prefix) != 0) return -1;
  std::size_t pos = prefix.size();
  auto digits = [&](std::size_t from) {
    std::size_t end = from;
    while (end < schema.size() && schema[end] >= '0' && schema[end] <= '9') ++end;
    return end;
  };
  const std::size_t major_end = digits(pos);
  // Bounded length so the conversion below cannot overflow.
  if (major_end == pos || major_end - pos > 6) return -1;
  const int major = std::stoi(schema.substr(pos, major_end - pos));
  pos = major_end;
  if (pos == schema.size()) return major;
  if (schema[pos] != '.') return -1;
  const std::size_t minor_end = digits(pos + 1);
  if (minor_end == pos + 1 || minor_end != schema.size()) return -1;
  return major;
}

// Reads one report, collecting nothing: the first problem throws, naming the source file and
// the JSON path ("summary.step_seconds.p90", "steps[3].loss"). Templated on the JSON type so a
// report parsed as ordered_json keeps its spec's key order.
template <class Json>
class Reader : public text::JsonFields<Json, ReportError> {
  using Fields = text::JsonFields<Json, ReportError>;

 public:
  using Fields::array;
  using Fields::boolean;
  using Fields::fail;
  using Fields::field;
  using Fields::Fields;
  using Fields::index;
  using Fields::join;
  using Fields::object;
  using Fields::string;
  using Fields::wrong_type;

  int64_t integer_value(const Json& v, const std::string& path) const {
    if (!v.is_number_integer()) wrong_type(path, "an integer", v);
    if (v.is_number_unsigned() &&
        v.template get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(path + ": integer " + v.dump() + " is out of range");
    }
    return v.template get<int64_t>();
  }

  int64_t integer(const Json& obj, const std::string& parent, const char* key) const {
    return integer_value(field(obj, parent, key), join(parent, key));
  }

  std::optional<int64_t> optional_integer(const Json& obj, const std::string& parent,
                                          const char* key) const {
    const Json& v = field(obj, parent, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number_integer()) wrong_type(join(parent, key), "an integer or null", v);
    return integer_value(v, join(parent, key));
  }

  // Durations, counts and rates cannot be negative; counts are bounded so that sums over a
  // report cannot overflow.
  double non_negative_number(const Json& obj, const std::string& parent, const char* key) const {
    const double v = number(obj, parent, key);
    if (v < 0.0) fail(join(parent, key) + ": expected a number >= 0, found " + obj.at(key).dump());
    return v;
  }

  int64_t count(const Json& obj, const std::string& parent, const char* key) const {
    const int64_t v = integer(obj, parent, key);
    if (v < 0 || v > kMaxCount) {
      fail(join(parent, key) + ": expected an integer between 0 and 10^15, found " +
           std::to_string(v));
    }
    return v;
  }

  // Any JSON number, integers included: a hand-edited `0` is as good as `0.0`.
  double number(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_number()) wrong_type(join(parent, key), "a number", v);
    return v.template get<double>();
  }

  double number_or_nan(const Json& obj, const std::string& parent, const char* key) const {
    return optional_number(obj, parent, key).value_or(std::numeric_limits<double>::quiet_NaN());
  }

  std::optional<double> optional_number(const Json& obj, const std::string& parent,
                                        const char* key) const {
    const Json& v = field(obj, parent, key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) wrong_type(join(parent, key), "a number or null", v);
    return v.template get<double>();
  }

  std::optional<double> optional_non_negative(const Json& obj, const std::string& parent,
                                              const char* key) const {
    const std::optional<double> v = optional_number(obj, parent, key);
    if (v && !(*v >= 0.0)) {
      fail(join(parent, key) + ": expected a number >= 0 or null, found " + obj.at(key).dump());
    }
    return v;
  }

  // A record of report_fields.h from the object at `path`.
  template <class R>
  R read_record(const Json& obj, const std::string& path) const {
    if (!obj.is_object()) wrong_type(path, "an object", obj);
    R out;
    FieldReader<Reader, Json> fields{*this, obj, path};
    detail::visit_fields(fields, out);
    return out;
  }

  void check_schema(const Json& j) const {
    if (!j.is_object()) {
      fail(std::string("not an ftbench report (expected a JSON object, found ") + j.type_name() +
           ")");
    }
    const auto it = j.find("schema");
    if (it == j.end()) fail("not an ftbench report (no \"schema\" field)");
    if (!it->is_string()) wrong_type("schema", "a string like \"ftbench.report/1\"", *it);
    const std::string schema = it->template get<std::string>();
    if (schema_major(schema) != kSchemaMajor) {
      fail("unsupported report schema " + text::quoted(schema) + " (this ftbench reads " +
           kSchemaFamily + ")");
    }
  }

  Report read(const Json& j) const {
    check_schema(j);
    Report r;
    r.schema = j.at("schema").template get<std::string>();
    FieldReader<Reader, Json> fields{*this, j, ""};
    detail::visit_fields(fields, r);
    detail::check_consistency(r, this->source(), run_may_be_unfinished);
    for (const std::function<void()>& check : after_reading_) check();
    after_reading_.clear();
    return r;
  }

  // A checkpoint's partial report (checkpoint_report_from_json).
  bool run_may_be_unfinished = false;

  // A check that needs the whole report, run at the end of read().
  void after_reading(std::function<void()> check) const {
    after_reading_.push_back(std::move(check));
  }

  // A computed field: `expected` as the writer would write it (null when unset), within
  // rounding.
  void check_computed(const std::string& path, const Json& found,
                      const std::optional<double>& expected, const char* what,
                      const char* why_null) const {
    if (!found.is_null() && !found.is_number()) wrong_type(path, "a number or null", found);
    if (!expected) {
      if (!found.is_null()) {
        fail(path + ": expected null (" + why_null + "), found " + found.dump());
      }
      return;
    }
    const bool same = found.is_number() && std::abs(found.template get<double>() - *expected) <=
                                               1e-9 * std::max(1.0, std::abs(*expected));
    if (!same) {
      fail(path + ": expected " + what + " (" + text::number_or_null(*expected).dump() +
           "), found " + found.dump());
    }
  }

 private:
  mutable std::vector<std::function<void()>> after_reading_;
};

}  // namespace

Segment segment_from_json(const nlohmann::json& json, const std::string& source,
                          const std::string& path) {
  return Reader<nlohmann::json>(source).template read_record<Segment>(json, path);
}

DeviceEnergyTotals sum_device_energy(const std::vector<DeviceEnergy>& devices) {
  DeviceEnergyTotals t;
  double mean = 0.0;
  double peak = 0.0;
  bool all_watts = true;
  double least = std::numeric_limits<double>::infinity();
  for (const DeviceEnergy& d : devices) {
    t.joules += d.joules;
    if (d.mean_watts && d.peak_watts) {
      mean += *d.mean_watts;
      peak += *d.peak_watts;
    } else {
      all_watts = false;
    }
    least = std::min(least, d.sampled_seconds);
  }
  if (all_watts) {
    t.mean_watts = mean;
    t.peak_watts = peak;
  }
  t.least_sampled_seconds = devices.empty() ? 0.0 : least;
  return t;
}

Report from_json(const nlohmann::json& json, const std::string& source) {
  return Reader<nlohmann::json>(source).read(json);
}

Report from_json(const nlohmann::ordered_json& json, const std::string& source) {
  return Reader<nlohmann::ordered_json>(source).read(json);
}

Report checkpoint_report_from_json(const nlohmann::ordered_json& json, const std::string& source) {
  Reader<nlohmann::ordered_json> reader(source);
  reader.run_may_be_unfinished = true;
  return reader.read(json);
}

Environment environment_from_json(const nlohmann::json& json, const std::string& source) {
  return Reader<nlohmann::json>(source).read_record<Environment>(json, "environment");
}

}  // namespace ftbench::report
