#include "bench/gemm_check.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ftbench::bench {

namespace {

struct DtypeRounding {
  std::string_view dtype;
  int input_bits;  // u = 2^-bits, 0: no rounding of that kind
  int output_bits;
  int accumulation_bits;  // the coefficient of sqrt(k): half the sums' unit roundoff (header)
};

// bf16, fp16: 8 and 11 significant bits; their sums may round to the same type. fp8: inputs
// already fp8 (the reference uses them too), a bf16 output, sums that may round to bf16. tf32:
// inputs cut to a 10-bit mantissa inside the kernel (truncation, up to 2^-10 each, allowed for
// both at 4 x 2^-10 = 2^-8), fp32 output and sums. fp32: fp32 throughout.
constexpr DtypeRounding kRoundings[] = {
    {"bf16", 0, 8, 9},   {"fp8", 0, 8, 9},    {"fp16", 0, 11, 12},
    {"tf32", 8, 24, 25}, {"fp32", 0, 24, 25},
};

double unit(int bits) { return bits == 0 ? 0.0 : std::ldexp(1.0, -bits); }

const DtypeRounding* find(std::string_view dtype) {
  for (const DtypeRounding& r : kRoundings) {
    if (r.dtype == dtype) return &r;
  }
  return nullptr;
}

std::string power(int bits) { return "2^-" + std::to_string(bits); }

}  // namespace

std::optional<GemmRounding> gemm_rounding(std::string_view dtype) {
  const DtypeRounding* r = find(dtype);
  if (r == nullptr) return std::nullopt;
  return GemmRounding{unit(r->input_bits), unit(r->output_bits), unit(r->accumulation_bits)};
}

double gemm_check_tolerance(const GemmRounding& r, int64_t k) {
  if (k < 1) throw std::invalid_argument("gemm check: k must be >= 1");
  const double t = r.input + r.output + r.accumulation * std::sqrt(static_cast<double>(k));
  return std::min(t, kMaxGemmCheckTolerance);
}

std::string gemm_check_rule(std::string_view dtype) {
  const DtypeRounding* r = find(dtype);
  if (r == nullptr) return "";
  std::string rule;
  if (r->input_bits != 0) rule += power(r->input_bits) + " + ";
  rule += power(r->output_bits) + " + " + power(r->accumulation_bits) + " x sqrt(k)";
  return rule;
}

}  // namespace ftbench::bench
