#include "train/oom_fallback.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "util/text/trim.h"

namespace ftbench::train {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool compare(int64_t lhs, const std::string& op, int64_t rhs) {
  if (op == ">") return lhs > rhs;
  if (op == ">=") return lhs >= rhs;
  if (op == "<") return lhs < rhs;
  if (op == "<=") return lhs <= rhs;
  return lhs == rhs;
}

}  // namespace

std::optional<MicroBatching> fallback_micro_batching(const MicroBatching& current) {
  if (current.micro_batch_size <= 1) return std::nullopt;
  const int64_t effective = current.effective_batch();
  // ceil(B / 2) < B for every B >= 2, and 1 divides everything: a smaller split always exists.
  for (int64_t size = (current.micro_batch_size + 1) / 2; size >= 1; --size) {
    if (effective % size == 0) return MicroBatching{size, effective / size};
  }
  return std::nullopt;
}

bool is_out_of_memory_message(std::string_view message) {
  const std::string m = lower(message);
  // LibTorch writes an enforce message ("[enforce fail at FILE:LINE] ...") into a string stream,
  // which stops writing when it cannot allocate: one cut before the "]" was cut for want of
  // memory.
  constexpr std::string_view kEnforce = "[enforce fail";
  const bool cut_enforce =
      m.compare(0, kEnforce.size(), kEnforce) == 0 && m.find(']') == std::string::npos;
  return cut_enforce || m.find("out of memory") != std::string::npos ||
         m.find("can't allocate memory") != std::string::npos;
}

OomInjection OomInjection::parse(std::string_view rule) {
  OomInjection out;
  out.rule_ = std::string(text::trim(rule, text::kWhitespace));
  if (out.rule_.empty()) throw std::invalid_argument("empty rule");
  std::string_view rest = out.rule_;
  bool token_conditions = false;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = text::trim(rest.substr(0, comma), text::kWhitespace);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t op_at = item.find_first_of("<>=");
    if (item.empty() || op_at == std::string_view::npos || op_at == 0) {
      throw std::invalid_argument(
          fmt::format("\"{}\": expected KEY OP NUMBER (KEY: step, micro_batch, micro_step, tokens; "
                      "OP: >, >=, <, <=, =) or at=forward|update",
                      item));
    }
    const std::string key(text::trim(item.substr(0, op_at), text::kWhitespace));
    const size_t value_at = item.find_first_not_of("<>=", op_at);
    const std::string op(item.substr(
        op_at, value_at == std::string_view::npos ? std::string_view::npos : value_at - op_at));
    const std::string_view value = value_at == std::string_view::npos
                                       ? std::string_view()
                                       : text::trim(item.substr(value_at), text::kWhitespace);
    if (key == "at") {
      if (op != "=" || (value != "forward" && value != "update")) {
        throw std::invalid_argument(fmt::format("\"{}\": expected at=forward or at=update", item));
      }
      out.site_ = value == "forward" ? OomSite::kForward : OomSite::kUpdate;
      continue;
    }
    if (key != "step" && key != "micro_batch" && key != "micro_step" && key != "tokens") {
      throw std::invalid_argument(fmt::format(
          "\"{}\": unknown key \"{}\" (expected step, micro_batch, micro_step, tokens or at)", item,
          key));
    }
    if (op != ">" && op != ">=" && op != "<" && op != "<=" && op != "=") {
      throw std::invalid_argument(
          fmt::format("\"{}\": unknown operator \"{}\" (expected >, >=, <, <=, =)", item, op));
    }
    int64_t number = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
      throw std::invalid_argument(
          fmt::format("\"{}\": expected an integer after \"{}\"", item, op));
    }
    token_conditions = token_conditions || key == "micro_step" || key == "tokens";
    out.conditions_.push_back({key, op, number});
  }
  if (out.site_ == OomSite::kUpdate && token_conditions) {
    throw std::invalid_argument(
        fmt::format("\"{}\": micro_step and tokens apply to at=forward only", out.rule_));
  }
  return out;
}

bool OomInjection::matches(const OomSiteState& state) const {
  if (state.site != site_) return false;
  for (const Condition& c : conditions_) {
    const int64_t actual = c.key == "step"          ? state.step
                           : c.key == "micro_batch" ? state.micro_batch
                           : c.key == "micro_step"  ? state.micro_step
                                                    : state.tokens;
    if (!compare(actual, c.op, c.value)) return false;
  }
  return true;
}

}  // namespace ftbench::train
