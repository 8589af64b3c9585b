// Private to src/cost: how GPU and instance names are split into words for matching.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ftbench::cost::detail {

// Lower-cased runs of ASCII letters and digits: "gpu_1x_h100_pcie" -> gpu, 1x, h100, pcie.
std::vector<std::string> words_of(std::string_view s);

}  // namespace ftbench::cost::detail
