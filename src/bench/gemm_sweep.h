// The shapes and dtypes a `ftbench gemm` sweep measures, and the FLOP count of one matmul. Pure
// and torch-free: the sweep is parsed and checked before any device is touched.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace ftbench::bench {

// Bad --shapes or --dtype text: the message names the option and the value.
class SweepError : public BadInput {
 public:
  using BadInput::BadInput;
};

// C (m x n) = A (m x k) · B (k x n).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool operator==(const GemmShape& o) const { return m == o.m && n == o.n && k == o.k; }
  bool operator!=(const GemmShape& o) const { return !(*this == o); }
};

// Largest value of one dimension a sweep accepts, and most shapes in one sweep: bounds that keep
// a typo ("1024:1048576:1") from planning hours of work or overflowing the FLOP count.
inline constexpr int64_t kMaxGemmDimension = int64_t{1} << 20;
inline constexpr int64_t kMaxGemmShapes = 10000;

// Parses a sweep: groups separated by ';', each either
//   DIM x DIM x DIM   the cartesian product of m, n and k values (m varies slowest), or
//   DIM               cubes: m = n = k over DIM's values,
// where DIM is an integer, a comma list "1024,4096", or a range "start:stop:step" whose stop is
// included when the steps land on it ("1024:4096:1024" = 1024, 2048, 3072, 4096; unlike Python's
// range and mamf-finder's --m_range). Spaces are ignored. Shapes keep the order written; a shape
// named twice is measured once. Throws SweepError naming `option` and the offending part.
std::vector<GemmShape> parse_shape_sweep(std::string_view spec, std::string_view option);

// "4096x4096x1024" (m x n x k).
std::string shape_text(const GemmShape& shape);

// Floating-point operations of one matmul: 2·m·n·k (a multiply and an add per term of each
// output element's dot product). Computed in 64-bit integers, which cannot overflow within the
// bounds above (2·2^60 = 2^61), then converted to double: exact below 2^53 and for the usual
// power-of-two-rich shapes above it, else rounded to the nearest double.
double matmul_flops(const GemmShape& shape);

// The dtypes `ftbench gemm` knows, in the order a sweep measures them.
inline constexpr const char* kGemmDtypes[] = {"bf16", "fp8", "fp16", "tf32", "fp32"};

// "bf16,fp32" or "all" -> the dtypes in the order given (duplicates dropped). Throws SweepError
// naming `option` for an unknown name, with the choices.
std::vector<std::string> parse_dtypes(std::string_view list, std::string_view option);

// What a sweep measures unless told otherwise, per backend ("cpu", "cuda", "rocm").
struct SweepDefaults {
  std::string shapes;  // a parse_shape_sweep spec
  std::vector<std::string> dtypes;
  int64_t warmup_iterations = 0;  // untimed calls before the timed ones, per shape
  int64_t iterations = 0;         // timed calls per shape
  double max_seconds = 0.0;       // budget for the whole sweep; later shapes are skipped
};

// `quick`: a few small shapes and few calls, for smoke tests and a first look.
SweepDefaults default_sweep(std::string_view backend, bool quick);

}  // namespace ftbench::bench
