#include "device/torch/dtype.h"

#include <stdexcept>

#include "spec/choices.h"
#include "util/text/messages.h"
#include "util/text/spellings.h"

namespace ftbench::device {
namespace {

namespace dtype = spec::choice::dtype;
constexpr text::Spelling<at::ScalarType> kDtypeSpellings[] = {
    {at::kBFloat16, dtype::kBf16}, {at::kHalf, dtype::kFp16}, {at::kFloat, dtype::kFp32}};

}  // namespace

at::ScalarType scalar_type_of(const std::string& dtype) {
  if (const auto type = text::parse_spelling(kDtypeSpellings, dtype)) return *type;
  throw std::invalid_argument("dtype: " +
                              text::not_one_of_message(dtype, spec::choice::dtype::kAll));
}

}  // namespace ftbench::device
