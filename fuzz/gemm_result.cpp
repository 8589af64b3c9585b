// Fuzz target: the gemm-result reader (bench::parse_gemm_result, what read_gemm_result does with
// a file's text, as `ftbench run --gemm FILE` reads it). A result it accepts is rendered,
// checked and carried into a report as the commands do, and written and read back.
#include <stdexcept>
#include <string>

#include "bench/gemm_result.h"
#include "fuzz_target.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace bench = ftbench::bench;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bench::GemmResult result;
  try {
    result = bench::parse_gemm_result(text, "fuzz-gemm.json");
  } catch (const bench::GemmFileError&) {
    return FuzzVerdict::kRejected;
  }
  bench::render_gemm_text(result);
  std::string failure;
  bench::checks_passed(result, &failure);
  bench::carried_gemm(result, "fuzz-gemm.json");
  const std::string written = bench::to_json(result).dump(2);
  try {
    bench::parse_gemm_result(written, "fuzz-gemm-written.json");
  } catch (const bench::GemmFileError& e) {
    throw std::logic_error(std::string("a gemm result written by to_json() is refused: ") +
                           e.what());
  }
  return FuzzVerdict::kAccepted;
}
