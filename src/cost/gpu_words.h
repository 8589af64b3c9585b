// Private to src/cost: how GPU, instance and tier names are matched: case and punctuation
// folded away, words = runs of letters and digits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ftbench/cost/catalog.h"

namespace ftbench::cost::detail {

// Lower-cased runs of ASCII letters and digits: "gpu_1x_h100_pcie" -> gpu, 1x, h100, pcie.
std::vector<std::string> words_of(std::string_view s);

std::string lowercase(std::string_view s);

// Only the letters and digits, lower-cased: "H100-SXM" -> "h100sxm".
std::string fold(std::string_view s);

// True when the folded alias equals some run of whole consecutive words of the device name:
// "H100" is in "NVIDIA H100 80GB HBM3", "A100-SXM4-80GB" in "NVIDIA A100-SXM4-80GB", but
// "H100" is not in "GH200".
bool contains_word_run(const std::vector<std::string>& words, const std::string& folded_alias);

// True when one of `words` is one of the GPU's exclude_words ("pcie" for the SXM part).
bool has_exclude_word(const Gpu& gpu, const std::vector<std::string>& words);

// kTiers as strings, and a tier's position in it (past the end for anything else).
std::vector<std::string> tier_names();
std::size_t tier_index(std::string_view tier);

}  // namespace ftbench::cost::detail
