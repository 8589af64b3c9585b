#include "bench/gemm_sweep.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include <fmt/format.h>

#include "util/text/did_you_mean.h"

namespace ftbench::bench {
namespace {

// Splits on `sep`, keeping empty parts (so "a;;b" and "a," are caught as empty parts).
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = text.find(sep, from);
    parts.push_back(text.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return parts;
    from = at + 1;
  }
}

class Parser {
 public:
  Parser(std::string_view spec, std::string_view option) : spec_(spec), option_(option) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw SweepError(fmt::format("{} \"{}\": {}", option_, spec_, problem));
  }

  // A positive integer of at most kMaxGemmDimension; `what` names it in the message.
  int64_t integer(const std::string& text, const char* what) const {
    if (text.empty()) fail(fmt::format("empty {}", what));
    int64_t v = 0;
    for (char c : text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        fail(fmt::format("{} \"{}\" is not a positive integer", what, text));
      }
      v = v * 10 + (c - '0');
      if (v > kMaxGemmDimension) {
        fail(fmt::format("{} \"{}\" is above the largest dimension, {}", what, text,
                         kMaxGemmDimension));
      }
    }
    if (v == 0) fail(fmt::format("{} \"{}\" is not a positive integer", what, text));
    return v;
  }

  // An integer, a comma list or a start:stop:step range.
  std::vector<int64_t> dimension(const std::string& text) const {
    if (text.empty()) fail("empty dimension (expected a size, a list a,b,c or start:stop:step)");
    if (text.find(':') != std::string::npos) {
      const std::vector<std::string> parts = split(text, ':');
      if (parts.size() != 3) {
        fail(fmt::format("range \"{}\" needs three parts, start:stop:step", text));
      }
      const int64_t start = integer(parts[0], "range start");
      const int64_t stop = integer(parts[1], "range stop");
      const int64_t step = integer(parts[2], "range step");
      if (start > stop) {
        fail(fmt::format("range \"{}\" starts above its stop ({} > {})", text, start, stop));
      }
      std::vector<int64_t> values;
      for (int64_t v = start; v <= stop; v += step) values.push_back(v);
      return values;
    }
    std::vector<int64_t> values;
    for (const std::string& item : split(text, ',')) values.push_back(integer(item, "size"));
    return values;
  }

  std::vector<GemmShape> parse() const {
    std::string compact;
    for (char c : spec_) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      compact.push_back(c == 'X' ? 'x' : c);
    }
    if (compact.empty()) fail("empty sweep (expected e.g. 1024:8192:1024 or 4096x4096x1024,2048)");
    std::vector<GemmShape> shapes;
    auto add = [&](const GemmShape& s) {
      if (std::find(shapes.begin(), shapes.end(), s) != shapes.end()) return;
      if (static_cast<int64_t>(shapes.size()) >= kMaxGemmShapes) {
        fail(fmt::format("more than {} shapes", kMaxGemmShapes));
      }
      shapes.push_back(s);
    };
    for (const std::string& group : split(compact, ';')) {
      if (group.empty()) fail("empty group between ';'");
      const std::vector<std::string> dims = split(group, 'x');
      if (dims.size() == 1) {
        for (int64_t v : dimension(dims[0])) add({v, v, v});
      } else if (dims.size() == 3) {
        const std::vector<int64_t> ms = dimension(dims[0]);
        const std::vector<int64_t> ns = dimension(dims[1]);
        const std::vector<int64_t> ks = dimension(dims[2]);
        for (int64_t m : ms) {
          for (int64_t n : ns) {
            for (int64_t k : ks) add({m, n, k});
          }
        }
      } else {
        fail(fmt::format("group \"{}\" has {} dimensions; give m x n x k, or one for cubes", group,
                         dims.size()));
      }
    }
    return shapes;
  }

 private:
  std::string_view spec_;
  std::string_view option_;
};

}  // namespace

std::vector<GemmShape> parse_shape_sweep(std::string_view spec, std::string_view option) {
  return Parser(spec, option).parse();
}

std::string shape_text(const GemmShape& s) { return fmt::format("{}x{}x{}", s.m, s.n, s.k); }

double matmul_flops(const GemmShape& s) { return static_cast<double>(2 * s.m * s.n * s.k); }

std::vector<std::string> parse_dtypes(std::string_view list, std::string_view option) {
  const std::vector<std::string> known(std::begin(kGemmDtypes), std::end(kGemmDtypes));
  std::vector<std::string> out;
  auto add = [&out](const std::string& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  std::string compact;
  for (char c : list) {
    if (!std::isspace(static_cast<unsigned char>(c))) compact.push_back(c);
  }
  for (const std::string& name : split(compact, ',')) {
    if (name == "all") {
      for (const std::string& d : known) add(d);
      continue;
    }
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      add(name);
      continue;
    }
    std::string message = fmt::format("{} \"{}\": ", option, list);
    message += name.empty() ? "empty dtype name" : fmt::format("unknown dtype \"{}\"", name);
    if (const auto near = text::closest(name, known)) {
      message += fmt::format(" (did you mean {}?)", *near);
    }
    message += "; choose from bf16, fp8, fp16, tf32, fp32, or all";
    throw SweepError(message);
  }
  return out;
}

SweepDefaults default_sweep(std::string_view backend, bool quick) {
  const bool cpu = backend == "cpu";
  // By device (CPU, GPU) and depth (quick, full): shapes, warm-up calls, timed calls, budget.
  // On GPUs the full sweep takes cubes up to 16k, then the token counts x projection shapes of
  // an 8B Llama (d = 4096, FFN 14336): square peaks and the shapes a fine-tune actually runs.
  struct Depth {
    const char* shapes;
    int64_t warmup_iterations;
    int64_t iterations;
    double max_seconds;
  };
  static constexpr Depth kDepths[2][2] = {
      {{"128,256,512", 1, 3, 60.0}, {"256:2048:256", 2, 10, 600.0}},
      {{"2048:8192:2048", 10, 30, 300.0},
       {"1024:16384:1024; 4096,8192,16384 x 4096,14336 x 4096,14336", 50, 100, 1800.0}}};
  const Depth& depth = kDepths[cpu ? 0 : 1][quick ? 0 : 1];
  SweepDefaults d;
  d.shapes = depth.shapes;
  d.warmup_iterations = depth.warmup_iterations;
  d.iterations = depth.iterations;
  d.max_seconds = depth.max_seconds;
  // fp16 has no CPU matmul in LibTorch 1.13 and fp8 none at all; tf32 is a GPU mode.
  d.dtypes = cpu ? std::vector<std::string>{"bf16", "fp32"}
                 : std::vector<std::string>{"bf16", "fp8", "fp16", "tf32", "fp32"};
  return d;
}

}  // namespace ftbench::bench
