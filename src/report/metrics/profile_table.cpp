#include "report/metrics/profile_table.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/text/messages.h"

namespace ftbench::metrics {
namespace {

constexpr int64_t kMaxProfileStep = 1'000'000'000;

std::optional<int64_t> whole_step(std::string_view digits) {
  if (digits.empty() || digits.size() > 10) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > kMaxProfileStep) return std::nullopt;
  return value;
}

// Ops that move no tensor data (views, metadata, allocation without a fill): their "inputs" are
// the tensors they look at, not bytes read.
bool touches_no_data(const std::string& name) {
  static const std::set<std::string> kNames = {
      "aten::view",
      "aten::_unsafe_view",
      "aten::reshape",
      "aten::_reshape_alias",
      "aten::as_strided",
      "aten::narrow",
      "aten::slice",
      "aten::select",
      "aten::t",
      "aten::transpose",
      "aten::permute",
      "aten::expand",
      "aten::expand_as",
      "aten::unsqueeze",
      "aten::squeeze",
      "aten::detach",
      "aten::alias",
      "aten::split",
      "aten::split_with_sizes",
      "aten::chunk",
      "aten::unbind",
      "aten::unflatten",
      "aten::flatten",
      "aten::view_as",
      "aten::resolve_conj",
      "aten::resolve_neg",
      "aten::to",
      "aten::type_as",
      "aten::contiguous",
      "aten::numpy_T",
      "aten::lift_fresh",
      "aten::empty",
      "aten::empty_like",
      "aten::empty_strided",
      "aten::new_empty",
      "aten::new_empty_strided",
      "aten::result_type",
      "aten::size",
      "aten::stride",
      "aten::is_nonzero",
  };
  return kNames.count(name) > 0;
}

bool is_host(ProfileEventKind kind) {
  return kind == ProfileEventKind::kOp || kind == ProfileEventKind::kScope;
}

int64_t end_of(const ProfileEvent& e) { return e.start_ns + e.duration_ns; }

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string milliseconds(int64_t ns) { return fmt::format("{:.3f}", double(ns) / 1e6); }

// A rate over a time, or "" where there is no count or no time.
std::string per_second(double amount, int64_t ns, double unit) {
  if (amount <= 0.0 || ns <= 0) return "";
  return fmt::format("{:.4g}", amount / (double(ns) / 1e9) / unit);
}

std::string share(int64_t part, int64_t whole) {
  if (whole <= 0) return "";
  return fmt::format("{:.4f}", double(part) / double(whole));
}

}  // namespace

ProfileWindow parse_profile_steps(std::string_view text) {
  const auto bad = [&] {
    return std::invalid_argument(
        fmt::format("--profile-steps: expected N or N,M (whole numbers of steps, 1 <= N <= M <= "
                    "{}), found {}",
                    kMaxProfileStep, text::quoted(text)));
  };
  const std::size_t comma = text.find(',');
  const std::optional<int64_t> first = whole_step(text.substr(0, comma));
  const std::optional<int64_t> last =
      comma == std::string_view::npos ? first : whole_step(text.substr(comma + 1));
  if (!first || !last || *last < *first) throw bad();
  return {*first, *last};
}

std::optional<int64_t> profiler_dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, int64_t> kSizes = {
      {"double", 8},
      {"float", 4},
      {"c10::Half", 2},
      {"c10::BFloat16", 2},
      {"long int", 8},
      {"long", 8},
      {"int", 4},
      {"short int", 2},
      {"short", 2},
      {"signed char", 1},
      {"unsigned char", 1},
      {"bool", 1},
      {"c10::complex<float>", 8},
      {"c10::complex<double>", 16},
      {"c10::Float8_e4m3fn", 1},
      {"c10::Float8_e5m2", 1},
      {"c10::Float8_e4m3fnuz", 1},
      {"c10::Float8_e5m2fnuz", 1},
      // Not tensors: no bytes of their own.
      {"", 0},
      {"Scalar", 0},
      {"ScalarList", 0},
      {"TensorList", 0},
      {"GenericList", 0},
      {"None", 0},
      {"Device", 0},
      {"Layout", 0},
      {"ScalarType", 0},
      {"String", 0},
  };
  const auto it = kSizes.find(dtype);
  if (it == kSizes.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> input_bytes_of(const std::vector<std::vector<int64_t>>& shapes,
                                      const std::vector<std::string>& dtypes) {
  int64_t total = 0;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    const std::optional<int64_t> element = profiler_dtype_bytes(dtypes[i]);
    if (!element) return std::nullopt;
    if (*element == 0) continue;
    int64_t numel = 1;  // a 0-dimensional tensor holds one element
    if (i < shapes.size()) {
      for (int64_t d : shapes[i]) numel *= d;
    }
    total += numel * *element;
  }
  return total;
}

namespace {

// How the host events of each thread nest, by index into the events.
struct Nesting {
  std::vector<int64_t> children_ns;      // direct children, any kind
  std::vector<int64_t> inner_scopes_ns;  // nearest nested scopes
  std::vector<bool> nested_in_namesake;  // inside an op of its name
  std::vector<bool> calls_ops;           // an op runs inside it
};

Nesting nesting_of(const std::vector<ProfileEvent>& events) {
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // By thread, then start, the longer first: a parent comes before the events inside it.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const ProfileEvent& x = events[a];
    const ProfileEvent& y = events[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.duration_ns > y.duration_ns;
  });
  Nesting n;
  n.children_ns.assign(events.size(), 0);
  n.inner_scopes_ns.assign(events.size(), 0);
  n.nested_in_namesake.assign(events.size(), false);
  n.calls_ops.assign(events.size(), false);
  std::vector<std::size_t> stack;
  uint64_t thread = 0;
  for (std::size_t idx : order) {
    const ProfileEvent& e = events[idx];
    if (!is_host(e.kind)) continue;
    if (stack.empty() || thread != e.thread) stack.clear();
    thread = e.thread;
    // An event that starts before the open one ends is inside it, even when it ends a little
    // after (times rounded to whole microseconds); only the part inside counts against it.
    while (!stack.empty() && end_of(events[stack.back()]) <= e.start_ns) stack.pop_back();
    if (!stack.empty()) {
      n.children_ns[stack.back()] += std::min(end_of(e), end_of(events[stack.back()])) - e.start_ns;
    }
    if (e.kind == ProfileEventKind::kOp) {
      for (std::size_t above : stack) n.calls_ops[above] = true;
    }
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      const ProfileEvent& above = events[*it];
      if (e.kind == ProfileEventKind::kScope && above.kind == ProfileEventKind::kScope) {
        n.inner_scopes_ns[*it] += std::min(end_of(e), end_of(above)) - e.start_ns;
        break;
      }
    }
    if (e.kind == ProfileEventKind::kOp) {
      for (std::size_t above : stack) {
        if (events[above].kind == ProfileEventKind::kOp && events[above].name == e.name) {
          n.nested_in_namesake[idx] = true;
          break;
        }
      }
    }
    stack.push_back(idx);
  }
  return n;
}

}  // namespace

ProfileTables tabulate_profile(const std::vector<ProfileEvent>& events) {
  ProfileTables out;
  const Nesting nest = nesting_of(events);
  const std::vector<int64_t>& children_ns = nest.children_ns;
  const std::vector<int64_t>& inner_scopes_ns = nest.inner_scopes_ns;
  const std::vector<bool>& nested_in_namesake = nest.nested_in_namesake;
  const std::vector<bool>& calls_ops = nest.calls_ops;

  std::map<std::string, OpRow> ops;
  std::map<std::string, KernelRow> kernels;
  std::map<std::string, ScopeRow> scopes;
  std::map<std::string, int64_t> scope_first_start;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const ProfileEvent& e = events[i];
    switch (e.kind) {
      case ProfileEventKind::kOp: {
        OpRow& row = ops[e.name];
        if (row.calls == 0) {
          row.name = e.name;
          row.input_bytes = 0;
        }
        ++row.calls;
        row.self_ns += e.duration_ns - children_ns[i];
        if (!nested_in_namesake[i]) row.total_ns += e.duration_ns;
        row.flops += e.flops;
        if (row.input_bytes && e.input_bytes) {
          *row.input_bytes += *e.input_bytes;
        } else {
          row.input_bytes.reset();
        }
        if (!calls_ops[i] && !touches_no_data(e.name)) {
          if (e.input_bytes) {
            out.leaf_input_bytes += *e.input_bytes;
          } else {
            ++out.leaf_calls_without_bytes;
          }
        }
        break;
      }
      case ProfileEventKind::kScope: {
        ScopeRow& row = scopes[e.name];
        if (row.calls == 0) {
          row.name = e.name;
          scope_first_start[e.name] = e.start_ns;
        }
        scope_first_start[e.name] = std::min(scope_first_start[e.name], e.start_ns);
        ++row.calls;
        row.total_ns += e.duration_ns;
        row.self_ns += e.duration_ns - inner_scopes_ns[i];
        break;
      }
      case ProfileEventKind::kKernel:
      case ProfileEventKind::kTransfer: {
        KernelRow& row = kernels[e.name];
        row.name = e.name;
        row.transfer = e.kind == ProfileEventKind::kTransfer;
        ++row.calls;
        row.total_ns += e.duration_ns;
        out.kernel_ns += e.duration_ns;
        break;
      }
    }
  }
  for (auto& [name, row] : ops) {
    out.op_self_ns += row.self_ns;
    out.flops += row.flops;
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    // ATen's own ops only: autograd's nodes around them (a backward node, ftbench's replay of
    // a kept attention graph) name attention too, but the op inside is what ran.
    if (name.rfind("aten::", 0) == 0 && lower.find("attention") != std::string::npos) {
      out.attention_ops.push_back(name);
    }
    out.ops.push_back(row);
  }
  std::stable_sort(out.ops.begin(), out.ops.end(),
                   [](const OpRow& a, const OpRow& b) { return a.self_ns > b.self_ns; });
  for (auto& [name, row] : kernels) out.kernels.push_back(row);
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const KernelRow& a, const KernelRow& b) { return a.total_ns > b.total_ns; });
  for (auto& [name, row] : scopes) out.scopes.push_back(row);
  std::stable_sort(out.scopes.begin(), out.scopes.end(), [&](const ScopeRow& a, const ScopeRow& b) {
    return scope_first_start[a.name] < scope_first_start[b.name];
  });
  return out;
}

std::string op_table_csv(const ProfileTables& tables) {
  std::string out =
      "name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,input_gb_per_s\n";
  for (const OpRow& r : tables.ops) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{}\n", csv_field(r.name), r.calls, milliseconds(r.self_ns),
        milliseconds(r.total_ns), share(r.self_ns, tables.op_self_ns), r.flops,
        per_second(double(r.flops), r.self_ns, 1e12),
        r.input_bytes ? std::to_string(*r.input_bytes) : std::string(),
        r.input_bytes ? per_second(double(*r.input_bytes), r.self_ns, 1e9) : std::string());
  }
  return out;
}

std::string kernel_table_csv(const ProfileTables& tables) {
  std::string out = "name,kind,calls,total_ms,share,mean_us\n";
  for (const KernelRow& r : tables.kernels) {
    out += fmt::format("{},{},{},{},{},{:.3f}\n", csv_field(r.name),
                       r.transfer ? "transfer" : "kernel", r.calls, milliseconds(r.total_ns),
                       share(r.total_ns, tables.kernel_ns),
                       r.calls > 0 ? double(r.total_ns) / double(r.calls) / 1e3 : 0.0);
  }
  return out;
}

std::string chrome_trace_json(const std::vector<ProfileEvent>& events) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const ProfileEvent& e : events) origin = std::min(origin, e.start_ns);
  nlohmann::ordered_json trace_events = nlohmann::ordered_json::array();
  for (const ProfileEvent& e : events) {
    nlohmann::ordered_json item;
    item["name"] = e.name;
    switch (e.kind) {
      case ProfileEventKind::kOp:
        item["cat"] = "cpu_op";
        break;
      case ProfileEventKind::kScope:
        item["cat"] = "user_annotation";
        break;
      case ProfileEventKind::kKernel:
        item["cat"] = "kernel";
        break;
      case ProfileEventKind::kTransfer:
        item["cat"] = "gpu_memcpy";
        break;
    }
    item["ph"] = "X";
    item["ts"] = double(e.start_ns - origin) / 1e3;
    item["dur"] = double(e.duration_ns) / 1e3;
    item["pid"] = is_host(e.kind) ? 0 : 1;
    item["tid"] = e.thread;
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    if (!e.shapes.empty()) args["input_shapes"] = e.shapes;
    if (e.flops > 0) args["flops"] = e.flops;
    if (e.input_bytes && *e.input_bytes > 0) args["input_bytes"] = *e.input_bytes;
    if (!args.empty()) item["args"] = std::move(args);
    trace_events.push_back(std::move(item));
  }
  nlohmann::ordered_json trace;
  trace["displayTimeUnit"] = "ms";
  trace["traceEvents"] = std::move(trace_events);
  return trace.dump() + "\n";
}

}  // namespace ftbench::metrics
