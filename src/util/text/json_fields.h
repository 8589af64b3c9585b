// Typed field access for the readers of JSON files (run reports, gemm results, checkpoint
// manifests, tokenizer.json): the first problem throws `Error` naming the source file and the
// JSON path ("steps[3].loss").
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace ftbench::text {

template <class Json, class Error>
class JsonFields {
 public:
  explicit JsonFields(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(source_ + ": " + message);
  }

  static std::string join(const std::string& parent, const char* key) {
    return parent.empty() ? std::string(key) : parent + "." + key;
  }

  static std::string index(const std::string& parent, std::size_t i) {
    return parent + "[" + std::to_string(i) + "]";
  }

  // A figure and the one it is computed from: equal up to rounding (1e-6 relative and 1e-9
  // absolute), else "<path>: expected <formula> = <expected>, found <found>". Written as "not
  // within" so that a NaN on either side is refused too.
  void derived_from(double found, double expected, const std::string& path,
                    const std::string& formula) const {
    if (!(std::fabs(found - expected) <= 1e-6 * std::fabs(expected) + 1e-9)) {
      fail(path + ": expected " + formula + " = " + fmt::format("{}", expected) + ", found " +
           fmt::format("{}", found));
    }
  }
  // The same where either may be null (unset).
  void optional_derived_from(const std::optional<double>& found,
                             const std::optional<double>& expected, const std::string& path,
                             const std::string& formula) const {
    if (found.has_value() != expected.has_value()) {
      fail(path + ": expected " +
           (expected ? formula + " = " + fmt::format("{}", *expected) : std::string("null")) +
           ", found " + (found ? fmt::format("{}", *found) : std::string("null")));
    }
    if (found) derived_from(*found, *expected, path, formula);
  }

  [[noreturn]] void wrong_type(const std::string& path, const char* expected,
                               const Json& found) const {
    fail(path + ": expected " + expected + ", found " + found.type_name());
  }

  // The value at obj[key]; obj was checked to be an object by whoever produced it.
  const Json& field(const Json& obj, const std::string& parent, const char* key) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail("missing required field \"" + join(parent, key) + "\"");
    return *it;
  }

  const Json& object(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_object()) wrong_type(join(parent, key), "an object", v);
    return v;
  }

  const Json& array(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_array()) wrong_type(join(parent, key), "an array", v);
    return v;
  }

  std::string string(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_string()) wrong_type(join(parent, key), "a string", v);
    return v.template get<std::string>();
  }

  bool boolean(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_boolean()) wrong_type(join(parent, key), "a boolean", v);
    return v.template get<bool>();
  }

 protected:
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

}  // namespace ftbench::text
