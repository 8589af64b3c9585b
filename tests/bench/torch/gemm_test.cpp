// The gemm sweep on the CPU: structure of the result, and every measured shape's output checked
// against an fp64 product of the same inputs. No timing assertions: speeds are for benchmarks.
#include "bench/torch/gemm.h"
#include "device/tf32_matmul.h"
#include "device/torch/torch_version.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include "bench/gemm_check.h"

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

  EXPECT_EQ(r.schema, "ftbench.gemm/1.1");
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
  // output against at::mm in fp64 of the same rounded inputs, within the rule of gemm_check.h
  // for the shape's k (fp32 at k = 64: 5 x 2^-24; bf16 at k = 96: 2^-8 + 2^-9 x sqrt(96)).
  for (std::size_t i = 0; i < 2; ++i) {
    const GemmDtypeResult& d = r.dtypes[i];
    SCOPED_TRACE(d.dtype);
    EXPECT_EQ(d.dtype, i == 0 ? "fp32" : "bf16");
    EXPECT_EQ(d.check_rule, gemm_check_rule(d.dtype));
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
      ASSERT_TRUE(s.check_tolerance.has_value());
      EXPECT_EQ(*s.check_tolerance, gemm_check_tolerance(*gemm_rounding(d.dtype), s.shape.k));
      EXPECT_LE(*s.check_error, *s.check_tolerance);
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

// The worst a correct kernel does: every addition of the k products rounded to the 16-bit type
// (as an AMD EPYC with AVX2 does in bf16: error 0.0264 at 512^3; this emulation gives 0.026).
// The tolerance holds it with room (at least 1.4x), and still refuses a kernel that drops one
// product in eight at every k up to 16384, the largest of the default GPU sweep.
at::Tensor sum_rounded_at_every_step(const at::Tensor& a, const at::Tensor& b, int64_t keep_every) {
  at::Tensor sum = at::zeros({a.size(0), b.size(1)}, a.options());
  for (int64_t i = 0; i < a.size(1); ++i) {
    if (keep_every > 0 && i % keep_every == keep_every - 1) continue;
    const at::Tensor product = a.narrow(1, i, 1).to(at::kFloat) * b.narrow(0, i, 1).to(at::kFloat);
    sum = (sum.to(at::kFloat) + product).to(a.scalar_type());
  }
  return sum;
}

double relative_error(const at::Tensor& got, const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor reference = at::mm(a.to(at::kDouble), b.to(at::kDouble));
  return (got.to(at::kDouble) - reference).norm().item<double>() / reference.norm().item<double>();
}

TEST(GemmCheckTolerance, HoldsASumRoundedAtEveryStepAndRefusesADroppedProduct) {
  at::manual_seed(7);
  for (const char* dtype : {"bf16", "fp16"}) {
    const at::ScalarType type = std::string(dtype) == "bf16" ? at::kBFloat16 : at::kHalf;
    for (int64_t k : {64, 512, 4096, 8192, 16384}) {
      SCOPED_TRACE(std::string(dtype) + " k=" + std::to_string(k));
      // The check's region: 16 rows x 256 columns.
      const at::Tensor a = at::randn({16, k}).to(type);
      const at::Tensor b = at::randn({k, 256}).to(type);
      const double tolerance = gemm_check_tolerance(*gemm_rounding(dtype), k);
      const double worst = relative_error(sum_rounded_at_every_step(a, b, 0), a, b);
      EXPECT_LE(worst, tolerance * 0.7);
      EXPECT_GE(worst, tolerance * 0.4);  // the rule is not loose: a wrong kernel shows
      const double wrong = relative_error(sum_rounded_at_every_step(a, b, 8), a, b);
      EXPECT_GT(wrong, tolerance);
    }
  }
}

}  // namespace
}  // namespace ftbench::bench
