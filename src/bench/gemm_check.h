// The tolerance of `ftbench gemm`'s correctness check: how far a correct product may be from an
// fp64 product of the same (already rounded) inputs, by dtype and reduction length k. Pure and
// torch-free, so the gemm result reader applies the same rule the sweep did.
//
// The check compares the relative Frobenius error of part of the output. Three roundings make a
// correct kernel differ from the reference:
// - inside the kernel, the inputs may be rounded further (TF32 keeps a 10-bit mantissa, and
//   may truncate rather than round);
// - the output is rounded to its dtype;
// - the sums of k products may be rounded at every addition. A kernel that accumulates in the
//   16-bit type is the worst case (a CPU without native bf16 does so; cuBLAS may reduce split-K
//   partial sums in it): such a sum's relative error is about 0.30 x u x sqrt(k), measured for
//   k from 64 to 8192 in bf16, fp16 and fp32 alike (a random walk of per-step roundings).
// The tolerance is input + output + accumulation x sqrt(k), with input and output in unit
// roundoffs u (2^-8 for bf16, 2^-11 for fp16, 2^-24 for fp32) and accumulation = u / 2: at
// least 1.4x room above that worst case (1.7x at large k, more at small k, where the output's
// rounding dominates). It never exceeds 0.25. So a kernel that is wrong by more than the
// tolerance fails at every k: one that drops one product in eight (error about 0.33) fails up
// to k = 16384 and beyond, where a coefficient of u and a cap of 0.5 let it pass from k = 8192
// on. The worst case reaches 0.25 near k = 45,000 in bf16: a 16-bit accumulation over longer
// sums is refused as wrong, which at that error it practically is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ftbench::bench {

// Unit roundoffs of the three roundings above (accumulation: the coefficient of sqrt(k)).
struct GemmRounding {
  double input = 0.0;
  double output = 0.0;
  double accumulation = 0.0;
};

// The largest tolerance: an error above it is never rounding.
inline constexpr double kMaxGemmCheckTolerance = 0.25;

// The roundings of a dtype's product ("bf16", "fp8", "fp16", "tf32", "fp32"); nullopt for a
// dtype it does not know.
std::optional<GemmRounding> gemm_rounding(std::string_view dtype);

// input + output + accumulation x sqrt(k), at most kMaxGemmCheckTolerance. k >= 1.
double gemm_check_tolerance(const GemmRounding& rounding, int64_t k);

// The rule in words for the output, e.g. "2^-8 + 2^-9 x sqrt(k)"; "" for an unknown dtype.
std::string gemm_check_rule(std::string_view dtype);

}  // namespace ftbench::bench
