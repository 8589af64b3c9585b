// The gemm sweep on the CPU: structure of the result, and every measured shape's output checked
// against an fp64 product of the same inputs. No timing assertions: speeds are for benchmarks.
#include "ftbench/bench/gemm.h"
#include "ftbench/device/tf32_matmul.h"
#include "ftbench/device/torch_version.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

namespace ftbench::bench {
namespace {

device::Backend cpu_backend() {
  spec::BackendSpec spec;
  spec.device = "cpu";
  spec.threads = 2;
  return device::Backend(spec);
}

GemmRunOptions tiny_options(std::vector<std::string> dtypes) {
  GemmRunOptions o;
  o.dtypes = std::move(dtypes);
  o.shapes_spec = "32x48x64;96";
  o.shapes = parse_shape_sweep(o.shapes_spec, "--shapes");
  o.warmup_iterations = 1;
  o.iterations = 3;
  o.cache_flush_bytes = int64_t{1} << 20;
  return o;
}

// The TF32 switch the tf32 dtype uses: on and back off through whichever LibTorch call CMake
// chose (the flag lives in LibTorch's global context, so a CPU build holds it too).
TEST(Tf32Matmul, SwitchesOnAndBackOff) {
  EXPECT_FALSE(device::tf32_matmul_allowed());  // LibTorch's default
  device::set_tf32_matmul(true);
  EXPECT_TRUE(device::tf32_matmul_allowed());
  device::set_tf32_matmul(false);
  EXPECT_FALSE(device::tf32_matmul_allowed());
#if FTBENCH_TORCH_AT_LEAST(2, 9)
  EXPECT_NE(std::string(device::tf32_matmul_call()).find("setFloat32Precision"), std::string::npos);
#else
  EXPECT_NE(std::string(device::tf32_matmul_call()).find("setAllowTF32CuBLAS"), std::string::npos);
#endif
}

TEST(GemmCpu, TinySweepInFp32AndBf16) {
  const device::Backend backend = cpu_backend();
  GemmRunOptions o = tiny_options({"fp32", "bf16"});
  std::vector<std::string> lines;
  o.progress = [&lines](const std::string& line) { lines.push_back(line); };
  const GemmResult r = run_gemm_sweep(o, backend);

  EXPECT_EQ(r.schema, "ftbench.gemm/1");
  EXPECT_EQ(r.environment.device.backend, "cpu");
  EXPECT_FALSE(r.started_at_utc.empty());
  EXPECT_GT(r.total_seconds, 0.0);
  EXPECT_EQ(r.settings.shapes, "32x48x64;96");
  EXPECT_EQ(r.settings.shape_count, 2);
  EXPECT_EQ(r.settings.warmup_iterations, 1);
  EXPECT_EQ(r.settings.iterations, 3);
  EXPECT_EQ(r.settings.cache_flush_bytes, 1 << 20);
  EXPECT_EQ(r.settings.timer, "steady_clock");
  EXPECT_EQ(r.settings.check_rows, 16);
  EXPECT_EQ(r.settings.check_columns, 256);
  EXPECT_EQ(lines.size(), 4u);  // one per dtype and shape

  ASSERT_EQ(r.dtypes.size(), 2u);
  // Relative Frobenius error of the first 16 rows (all columns here) of the last timed call's
  // output against at::mm in fp64 of the same rounded inputs: fp32 within 1e-5 (a K = 96 sum in
  // fp32), bf16 within 1e-2 (the output rounded to 8 significant bits).
  const double tolerance[] = {1e-5, 1e-2};
  for (std::size_t i = 0; i < 2; ++i) {
    const GemmDtypeResult& d = r.dtypes[i];
    SCOPED_TRACE(d.dtype);
    EXPECT_EQ(d.dtype, i == 0 ? "fp32" : "bf16");
    EXPECT_TRUE(d.supported);
    EXPECT_EQ(d.unsupported_reason, "");
    EXPECT_EQ(d.shapes_skipped, 0);
    ASSERT_EQ(d.shapes.size(), 2u);
    EXPECT_EQ(d.shapes[0].shape, (GemmShape{32, 48, 64}));
    EXPECT_EQ(d.shapes[1].shape, (GemmShape{96, 96, 96}));
    double best = 0.0;
    for (const GemmShapeResult& s : d.shapes) {
      EXPECT_EQ(s.error, "");
      EXPECT_EQ(s.seconds.size(), 3u);
      for (double t : s.seconds) EXPECT_GT(t, 0.0);
      EXPECT_EQ(s.flops, matmul_flops(s.shape));
      EXPECT_GE(s.max_tflops, s.median_tflops);
      ASSERT_TRUE(s.check_error.has_value());
      EXPECT_LE(*s.check_error, tolerance[i]);
      EXPECT_LE(*s.check_error, d.check_tolerance);
      best = std::max(best, s.median_tflops);
    }
    ASSERT_TRUE(d.max_tflops.has_value());
    EXPECT_EQ(*d.max_tflops, best);
    EXPECT_TRUE(d.best_shape.has_value());
    EXPECT_TRUE(d.median_tflops.has_value());
  }
  std::string failure;
  EXPECT_TRUE(checks_passed(r, &failure)) << failure;

  // What the file holds reads back to the same result.
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(to_json(gemm_from_json(nlohmann::json::parse(j.dump()), "mem.json")), j);
}

// fp8 and tf32 are GPU-only here: recorded as unsupported with the reason, the rest measured.
TEST(GemmCpu, UnsupportedDtypesAreReportedNotThrown) {
  const device::Backend backend = cpu_backend();
  GemmRunOptions o = tiny_options({"fp8", "tf32", "fp16", "fp32"});
  const GemmResult r = run_gemm_sweep(o, backend);
  ASSERT_EQ(r.dtypes.size(), 4u);
  EXPECT_FALSE(r.dtypes[0].supported);
  EXPECT_NE(r.dtypes[0].unsupported_reason, "");
  EXPECT_TRUE(r.dtypes[0].shapes.empty());
  EXPECT_FALSE(r.dtypes[1].supported);
  EXPECT_NE(r.dtypes[1].unsupported_reason.find("GPU"), std::string::npos);
  // LibTorch 1.13 has no fp16 matmul on CPU, 2.x has one: either way the sweep goes on.
  if (r.dtypes[2].supported) {
    EXPECT_EQ(r.dtypes[2].shapes.size(), 2u);
  } else {
    EXPECT_NE(r.dtypes[2].unsupported_reason, "");
  }
  EXPECT_TRUE(r.dtypes[3].supported);
  EXPECT_TRUE(find_measured(r, "fp32") != nullptr);
  EXPECT_TRUE(find_measured(r, "fp8") == nullptr);
}

TEST(GemmCpu, ShapesPastTheBudgetAreSkippedAndCounted) {
  const device::Backend backend = cpu_backend();
  GemmRunOptions o = tiny_options({"fp32"});
  o.max_seconds = 1e-12;  // spent before the first shape starts
  const GemmResult r = run_gemm_sweep(o, backend);
  ASSERT_EQ(r.dtypes.size(), 1u);
  EXPECT_TRUE(r.dtypes[0].supported);
  EXPECT_TRUE(r.dtypes[0].shapes.empty());
  EXPECT_EQ(r.dtypes[0].shapes_skipped, 2);
  EXPECT_FALSE(r.dtypes[0].max_tflops.has_value());
}

TEST(GemmCpu, OptionsThatCannotRunAreRefused) {
  const device::Backend backend = cpu_backend();
  GemmRunOptions o = tiny_options({"fp32"});
  o.iterations = 0;
  EXPECT_THROW(run_gemm_sweep(o, backend), std::invalid_argument);
  o = tiny_options({});
  EXPECT_THROW(run_gemm_sweep(o, backend), std::invalid_argument);
  o = tiny_options({"fp32"});
  o.shapes.clear();
  EXPECT_THROW(run_gemm_sweep(o, backend), std::invalid_argument);
}

TEST(GemmCpu, DefaultCacheFlushIsAtLeast64MiB) {
  EXPECT_GE(default_cache_flush_bytes(cpu_backend()), int64_t{64} << 20);
}

}  // namespace
}  // namespace ftbench::bench
