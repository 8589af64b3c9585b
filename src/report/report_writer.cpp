// The report as JSON: every record in its schema order (docs/report-schema.md).
#include <string>

#include <nlohmann/json.hpp>

#include "report/report.h"
#include "report/report_fields.h"
#include "util/text/json_values.h"

namespace ftbench::report {
namespace {

using OJson = nlohmann::ordered_json;
using text::number_or_null;

template <class R>
OJson record_json(const R& record);
template <class R>
OJson records_json(const std::vector<R>& records);

// Writes a record's fields (report_fields.h) into a JSON object, in their order.
struct FieldWriter {
  OJson& j;
  void string(const char* key, const std::string& v) { j[key] = v; }
  void count(const char* key, int64_t v) { j[key] = v; }
  void count_since(const char* key, int64_t v) { j[key] = v; }
  void count_in_range_since(const char* key, int64_t v, int64_t, int64_t) { j[key] = v; }
  void positive_integer_since(const char* key, int64_t v) { j[key] = v; }
  void boolean(const char* key, bool v) { j[key] = v; }
  void boolean_since(const char* key, bool v) { j[key] = v; }
  void non_negative(const char* key, double v) { j[key] = number_or_null(v); }
  void non_negative_since(const char* key, double v) { j[key] = number_or_null(v); }
  void number(const char* key, double v) { j[key] = number_or_null(v); }
  void number_or_nan(const char* key, double v) { j[key] = number_or_null(v); }
  void optional_number(const char* key, const std::optional<double>& v) {
    j[key] = text::optional_number(v);
  }
  void optional_number_since(const char* key, const std::optional<double>& v) {
    j[key] = text::optional_number(v);
  }
  void optional_integer(const char* key, const std::optional<int64_t>& v) {
    j[key] = text::optional_integer(v);
  }
  void optional_integer_since(const char* key, const std::optional<int64_t>& v) {
    j[key] = text::optional_integer(v);
  }
  void string_since(const char* key, const std::string& v) { j[key] = v; }
  void container_image(const char* key, const std::string& v) { j[key] = v; }
  void optional_non_negative(const char* key, const std::optional<double>& v) {
    j[key] = text::optional_number(v);
  }
  void string_or_null(const char* key, const std::string& v) {
    j[key] = v.empty() ? OJson(nullptr) : OJson(v);
  }
  void json_object(const char* key, const OJson& v) { j[key] = v; }
  void variables(const char* key, const std::optional<std::vector<EnvironmentVariable>>& v) {
    if (!v) {
      j[key] = nullptr;
      return;
    }
    OJson out = OJson::object();
    for (const EnvironmentVariable& variable : *v) out[variable.name] = variable.value;
    j[key] = std::move(out);
  }
  template <class R>
  void record(const char* key, const R& v) {
    j[key] = record_json(v);
  }
  template <class R>
  void optional_record_since(const char* key, const std::optional<R>& v) {
    j[key] = v ? record_json(*v) : OJson(nullptr);
  }
  template <class R>
  void records(const char* key, const std::vector<R>& v) {
    j[key] = records_json(v);
  }
  template <class R>
  void records_since(const char* key, const std::vector<R>& v) {
    j[key] = records_json(v);
  }
  template <class Fields>
  void group(const char* key, Fields&& fields) {
    OJson sub = OJson::object();
    FieldWriter writer{sub};
    fields(writer);
    j[key] = std::move(sub);
  }
  template <class Figure>
  void computed(const char* key, const char*, const char*, Figure&& figure) {
    j[key] = text::optional_number(figure());
  }
};

template <class R>
OJson record_json(const R& record) {
  OJson j = OJson::object();
  FieldWriter writer{j};
  detail::visit_fields(writer, record);
  return j;
}

template <class R>
OJson records_json(const std::vector<R>& records) {
  OJson out = OJson::array();
  for (const R& r : records) out.push_back(record_json(r));
  return out;
}

}  // namespace

nlohmann::ordered_json to_json(const Segment& g) { return record_json(g); }

nlohmann::ordered_json to_json(const Report& report) {
  OJson j = OJson::object();
  // Always the version this code writes: a report read from a newer minor version has lost the
  // fields this reader does not know, so it must not claim that version when written back.
  j["schema"] = kSchema;
  FieldWriter writer{j};
  detail::visit_fields(writer, report);
  return j;
}

nlohmann::ordered_json to_json(const Environment& environment) { return record_json(environment); }

}  // namespace ftbench::report
