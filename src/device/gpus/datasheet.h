// GPU datasheets: what a GPU is (memory, bandwidth, dense peaks), the names drivers, clouds and
// catalogs give it, and finding it by any of them. Facts of the part, apart from what anyone
// charges for it (economics/cost/catalog.h holds the prices and refers to GPUs by their canonical
// name).
//
// The built-in datasheets are configs/gpus.yaml, compiled in; a catalog file given with
// --catalog may add or restate GPUs in its `gpus:` section (docs/catalog.md), read by read_gpu().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/text/yaml_fields.h"

namespace ftbench::gpus {

struct Gpu {
  std::string name;  // canonical name, e.g. "H100-SXM"
  // Other names: clouds' ("H100"), drivers' ("NVIDIA H100 80GB HBM3").
  std::vector<std::string> aliases;
  // Words that mark another part of the same family ("PCIe", "NVL"): a device name containing
  // one of them as a whole word never matches this GPU through an alias it merely contains.
  std::vector<std::string> exclude_words;
  std::string vendor;                             // nvidia, amd, ...
  std::optional<double> memory_gb;                // 10^9 bytes, as datasheets print it
  std::string memory_type;                        // "HBM3", ...; "" unknown
  std::optional<double> bandwidth_tb_per_second;  // 10^12 bytes/s
  std::optional<double> dense_bf16_tflops;        // dense (no sparsity) datasheet peaks
  std::optional<double> dense_fp16_tflops;
  std::optional<double> dense_fp8_tflops;
  // Realised (measured) dense GEMM throughput from public independent tests, apart from the
  // datasheet's peak: the plan's throughput where nothing of the user's own was measured.
  std::optional<double> realised_bf16_tflops;
  std::string realised_source;  // where the realised figure comes from
  std::string source;           // where the figures come from
  std::string origin;           // "file:line" of the entry
};

// A built-in datasheet file that does not read (a build defect; a test reads it).
class DatasheetError : public BadInput {
 public:
  using BadInput::BadInput;
};

// The datasheets compiled in from configs/gpus.yaml, in file order; read once.
const std::vector<Gpu>& builtin_gpus();

// Parses a datasheet file: a mapping whose one key `gpus` is a list of GPU entries. Throws
// DatasheetError listing every problem with its line.
std::vector<Gpu> parse_gpus_yaml(std::string_view text, const std::string& source_name);

// Finds a GPU by canonical name, alias or a device name as a driver reports it
// ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"). Matching ignores case, spaces, hyphens and
// underscores (any character other than a letter or digit); a device name matches when it
// contains an alias as a whole word sequence, unless it also contains one of that GPU's
// exclude_words ("NVIDIA H100 PCIe" is not the H100-SXM). An exact name or alias wins; among
// contained aliases the longest wins, then list order. nullptr when none matches.
const Gpu* find_gpu(const std::vector<Gpu>& gpus, std::string_view name);

// One entry of a `gpus:` list, at `path` ("gpus[2]"); problems go to `issues`. `origin_file`
// names the file in Gpu::origin.
Gpu read_gpu(text::Issues& issues, const YAML::Node& node, const std::string& path,
             const std::string& origin_file);

// Two GPUs of one file claiming one name or alias (once case and punctuation are ignored).
// `where`: each GPU's path and line.
void check_gpu_names(text::Issues& issues, const std::vector<Gpu>& gpus,
                     const std::vector<std::pair<std::string, int64_t>>& where);

}  // namespace ftbench::gpus
