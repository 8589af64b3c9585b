// How names written by different hands are matched (GPU names as drivers, clouds and catalogs
// write them; instance types; tiers): case and punctuation folded away, words = runs of ASCII
// letters and digits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ftbench::text {

// Lower-cased runs of ASCII letters and digits: "gpu_1x_h100_pcie" -> gpu, 1x, h100, pcie.
std::vector<std::string> words_of(std::string_view s);

// ASCII letters lower-cased, every other byte kept.
std::string lowercase(std::string_view s);

// Only the letters and digits, lower-cased: "H100-SXM" -> "h100sxm".
std::string fold(std::string_view s);

// True when the folded name equals some run of whole consecutive words: "H100" is in "NVIDIA
// H100 80GB HBM3", "A100-SXM4-80GB" in "NVIDIA A100-SXM4-80GB", but "H100" is not in "GH200".
bool contains_word_run(const std::vector<std::string>& words, const std::string& folded_name);

}  // namespace ftbench::text
