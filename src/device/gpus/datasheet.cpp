#include "device/gpus/datasheet.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "util/text/messages.h"
#include "util/text/name_matching.h"

namespace ftbench::gpus {

namespace detail {
// configs/gpus.yaml, written into a generated source by cmake/EmbedFile.cmake at build time.
extern const char kBuiltinGpusYaml[];
extern const std::size_t kBuiltinGpusYamlSize;
}  // namespace detail

namespace {

using text::describe;
using text::fold;
using text::Issues;
using text::line_of;

constexpr const char* kBuiltinName = "configs/gpus.yaml (built in)";

const std::vector<std::string>& gpu_keys() {
  static const std::vector<std::string> keys = {"name",
                                                "aliases",
                                                "exclude_words",
                                                "vendor",
                                                "memory_gb",
                                                "memory_type",
                                                "bandwidth_tb_per_second",
                                                "dense_tflops",
                                                "realised_tflops",
                                                "realised_source",
                                                "source"};
  return keys;
}

// True when one of `words` is one of the GPU's exclude_words ("pcie" for the SXM part).
bool has_exclude_word(const Gpu& gpu, const std::vector<std::string>& words) {
  for (const std::string& exclude : gpu.exclude_words) {
    if (std::find(words.begin(), words.end(), fold(exclude)) != words.end()) return true;
  }
  return false;
}

}  // namespace

Gpu read_gpu(Issues& issues, const YAML::Node& node, const std::string& path,
             const std::string& origin_file) {
  Gpu gpu;
  text::Fields f(issues, node, path, gpu_keys());
  f.require("name");
  gpu.name = f.nonempty_string("name").value_or("");
  gpu.aliases = f.string_list("aliases").value_or(std::vector<std::string>{});
  gpu.exclude_words = f.string_list("exclude_words").value_or(std::vector<std::string>{});
  gpu.vendor = f.string("vendor").value_or("");
  gpu.memory_gb = f.positive_number("memory_gb");
  gpu.memory_type = f.string("memory_type").value_or("");
  gpu.bandwidth_tb_per_second = f.positive_number("bandwidth_tb_per_second");
  if (const text::Field* tflops = f.find("dense_tflops")) {
    if (tflops->value.IsMap()) {
      text::Fields t(issues, tflops->value, tflops->path, {"bf16", "fp16", "fp8"});
      gpu.dense_bf16_tflops = t.positive_number("bf16");
      gpu.dense_fp16_tflops = t.positive_number("fp16");
      gpu.dense_fp8_tflops = t.positive_number("fp8");
    } else {
      f.fail(*tflops, "expected a mapping of bf16, fp16, fp8, found " + describe(tflops->value));
    }
  }
  if (const text::Field* realised = f.find("realised_tflops")) {
    if (realised->value.IsMap()) {
      text::Fields t(issues, realised->value, realised->path, {"bf16"});
      gpu.realised_bf16_tflops = t.positive_number("bf16");
    } else {
      f.fail(*realised, "expected a mapping of bf16, found " + describe(realised->value));
    }
    f.require("realised_source", "where the realised figure comes from");
  }
  gpu.realised_source = f.string("realised_source").value_or("");
  gpu.source = f.string("source").value_or("");
  const bool has_figures = f.has("memory_gb") || f.has("bandwidth_tb_per_second") ||
                           f.has("dense_tflops") || f.has("memory_type");
  if (has_figures) f.require("source", "where the figures come from");
  gpu.origin = fmt::format("{}:{}", origin_file, f.line());
  return gpu;
}

void check_gpu_names(Issues& issues, const std::vector<Gpu>& gpus,
                     const std::vector<std::pair<std::string, int64_t>>& where) {
  std::map<std::string, std::size_t> owner;  // folded name or alias -> gpu index
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].name.empty()) continue;
    const std::string folded = fold(gpus[i].name);
    const auto [it, inserted] = owner.emplace(folded, i);
    if (!inserted && gpus[it->second].name == gpus[i].name) {
      issues.add(where[i].second, where[i].first + ".name",
                 fmt::format("duplicate GPU {} (first given at line {})",
                             text::quoted(gpus[i].name), where[it->second].second));
    } else if (!inserted) {
      issues.add(where[i].second, where[i].first + ".name",
                 fmt::format("GPU name {} is the same as {} (line {}) once case and punctuation "
                             "are ignored",
                             text::quoted(gpus[i].name), text::quoted(gpus[it->second].name),
                             where[it->second].second));
    }
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (const std::string& alias : gpus[i].aliases) {
      const auto it = owner.find(fold(alias));
      if (it != owner.end() && it->second != i) {
        issues.add(where[i].second, where[i].first + ".aliases",
                   fmt::format("alias {} also names GPU {} (line {})", text::quoted(alias),
                               text::quoted(gpus[it->second].name), where[it->second].second));
      } else if (it == owner.end()) {
        owner.emplace(fold(alias), i);
      }
    }
  }
}

std::vector<Gpu> parse_gpus_yaml(std::string_view text, const std::string& source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw DatasheetError(
        fmt::format("{}: invalid YAML: {}", source_name, ftbench::text::yaml_error_text(e)));
  }
  Issues issues(source_name);
  std::vector<Gpu> gpus;
  std::vector<std::pair<std::string, int64_t>> where;
  if (!root.IsMap()) {
    issues.add(line_of(root), "", "expected a mapping with the key gpus, found " + describe(root));
  } else {
    text::Fields top(issues, root, "", {"gpus"});
    if (const text::Field* list = top.find("gpus")) {
      text::read_list(issues, "gpus", list->value,
                      [&](const YAML::Node& item, const std::string& path) {
                        gpus.push_back(read_gpu(issues, item, path, source_name));
                        where.emplace_back(path, line_of(item));
                      });
    }
    check_gpu_names(issues, gpus, where);
  }
  if (!issues.empty()) throw DatasheetError(issues.text());
  return gpus;
}

const std::vector<Gpu>& builtin_gpus() {
  static const std::vector<Gpu> gpus = parse_gpus_yaml(
      std::string_view(detail::kBuiltinGpusYaml, detail::kBuiltinGpusYamlSize), kBuiltinName);
  return gpus;
}

const Gpu* find_gpu(const std::vector<Gpu>& gpus, std::string_view name) {
  const std::string folded = fold(name);
  if (folded.empty()) return nullptr;
  for (const Gpu& gpu : gpus) {
    if (fold(gpu.name) == folded) return &gpu;
  }
  for (const Gpu& gpu : gpus) {
    for (const std::string& alias : gpu.aliases) {
      if (fold(alias) == folded) return &gpu;
    }
  }
  const std::vector<std::string> words = text::words_of(name);
  const Gpu* best = nullptr;
  std::size_t best_length = 0;
  for (const Gpu& gpu : gpus) {
    if (has_exclude_word(gpu, words)) continue;
    std::vector<std::string> names = gpu.aliases;
    names.push_back(gpu.name);
    for (const std::string& candidate : names) {
      const std::string folded_candidate = fold(candidate);
      if (folded_candidate.size() > best_length &&
          text::contains_word_run(words, folded_candidate)) {
        best = &gpu;
        best_length = folded_candidate.size();
      }
    }
  }
  return best;
}

}  // namespace ftbench::gpus
