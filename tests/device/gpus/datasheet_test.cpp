#include "device/gpus/datasheet.h"

#include <string>

#include <gtest/gtest.h>

namespace ftbench::gpus {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_gpus_yaml(yaml, "g.yaml");
  } catch (const DatasheetError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Datasheets, TheBuiltInFileReadsInFileOrderWithItsFigures) {
  const std::vector<Gpu>& gpus = builtin_gpus();
  ASSERT_EQ(gpus.size(), 5u);
  EXPECT_EQ(gpus[0].name, "A100-SXM-80GB");
  EXPECT_EQ(gpus[1].name, "H100-SXM");
  EXPECT_EQ(gpus[4].name, "MI300X");
  EXPECT_EQ(gpus[1].dense_bf16_tflops, 989.0);
  EXPECT_EQ(gpus[1].dense_fp8_tflops, 1979.0);
  EXPECT_EQ(gpus[4].dense_bf16_tflops, 1307.4);
  EXPECT_EQ(gpus[4].memory_gb, 192.0);
  EXPECT_EQ(gpus[1].origin.rfind("configs/gpus.yaml (built in):", 0), 0u) << gpus[1].origin;
}

TEST(Datasheets, FindsAPartByTheNameItsDriverGives) {
  const std::vector<Gpu>& gpus = builtin_gpus();
  const Gpu* h100 = find_gpu(gpus, "NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->name, "H100-SXM");
  EXPECT_EQ(find_gpu(gpus, "NVIDIA H100 PCIe"), nullptr);  // an exclude word
  EXPECT_EQ(find_gpu(gpus, "NVIDIA GH200 480GB"), nullptr);
  const Gpu* mi300x = find_gpu(gpus, "AMD Instinct MI300X");
  ASSERT_NE(mi300x, nullptr);
  EXPECT_EQ(mi300x->name, "MI300X");
  EXPECT_EQ(find_gpu(gpus, "h100_sxm"), h100);  // case and punctuation ignored
  EXPECT_EQ(find_gpu(gpus, ""), nullptr);
}

TEST(Datasheets, AFileWithProblemsNamesEachByLine) {
  EXPECT_EQ(error_of("gpus:\n  - name: X1\n    memory_gb: -3\n    source: s\n"
                     "  - name: x-1\n  - vendor: acme\n"),
            "g.yaml:3: gpus[0].memory_gb: expected a finite number > 0, found \"-3\"\n"
            "g.yaml:5: gpus[1].name: GPU name \"x-1\" is the same as \"X1\" (line 2) once case "
            "and punctuation are ignored\n"
            "g.yaml:6: gpus[2]: missing required key \"name\"");
  EXPECT_EQ(error_of("gpus:\n  - name: X1\n    memory_gb: 80\n"),
            "g.yaml:2: gpus[0]: missing required key \"source\" (where the figures come from)");
  EXPECT_EQ(error_of("[1, 2]\n"), "g.yaml:1: expected a mapping with the key gpus, found a list");
  EXPECT_EQ(error_of("gpus: []\n"), "no error");
}

}  // namespace
}  // namespace ftbench::gpus
