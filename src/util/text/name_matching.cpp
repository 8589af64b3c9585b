#include "util/text/name_matching.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace ftbench::text {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> words;
  std::string word;
  for (char c : s) {
    if (is_alnum(c)) {
      word += lower(c);
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

std::string fold(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (is_alnum(c)) out += lower(c);
  }
  return out;
}

bool contains_word_run(const std::vector<std::string>& words, const std::string& folded_name) {
  if (folded_name.empty()) return false;
  for (std::size_t start = 0; start < words.size(); ++start) {
    std::string run;
    for (std::size_t end = start; end < words.size(); ++end) {
      run += words[end];
      if (run.size() >= folded_name.size()) {
        if (run == folded_name) return true;
        break;
      }
    }
  }
  return false;
}

}  // namespace ftbench::text
