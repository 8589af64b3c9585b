#include "gpu_words.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace ftbench::cost::detail {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> words;
  std::string word;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

std::vector<std::string> tier_names() { return {std::begin(kTiers), std::end(kTiers)}; }

// Position in kTiers; past the end for anything else.
std::size_t tier_index(std::string_view tier) {
  std::size_t i = 0;
  for (const char* known : kTiers) {
    if (tier == known) break;
    ++i;
  }
  return i;
}

std::string fold(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (is_alnum(c)) out += lower(c);
  }
  return out;
}

// True when the folded alias equals some run of whole consecutive words of the device name:
// "H100" is in "NVIDIA H100 80GB HBM3", "A100-SXM4-80GB" in "NVIDIA A100-SXM4-80GB", but
// "H100" is not in "GH200".
bool contains_word_run(const std::vector<std::string>& words, const std::string& folded_alias) {
  if (folded_alias.empty()) return false;
  for (std::size_t start = 0; start < words.size(); ++start) {
    std::string run;
    for (std::size_t end = start; end < words.size(); ++end) {
      run += words[end];
      if (run.size() >= folded_alias.size()) {
        if (run == folded_alias) return true;
        break;
      }
    }
  }
  return false;
}

bool has_exclude_word(const Gpu& gpu, const std::vector<std::string>& words) {
  for (const std::string& exclude : gpu.exclude_words) {
    const std::string folded = fold(exclude);
    if (std::find(words.begin(), words.end(), folded) != words.end()) return true;
  }
  return false;
}

}  // namespace ftbench::cost::detail
