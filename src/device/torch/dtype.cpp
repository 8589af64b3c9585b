#include "ftbench/device/dtype.h"

#include <stdexcept>

#include "ftbench/text/spellings.h"

namespace ftbench::device {
namespace {

constexpr text::Spelling<at::ScalarType> kDtypeSpellings[] = {
    {at::kBFloat16, "bf16"}, {at::kHalf, "fp16"}, {at::kFloat, "fp32"}};

}  // namespace

at::ScalarType scalar_type_of(const std::string& dtype) {
  if (const auto type = text::parse_spelling(kDtypeSpellings, dtype)) return *type;
  throw std::invalid_argument("unknown dtype \"" + dtype + "\" (expected bf16, fp16 or fp32)");
}

}  // namespace ftbench::device
