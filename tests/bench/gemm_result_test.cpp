#include "bench/gemm_result.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

namespace ftbench::bench {
namespace {

using OJson = nlohmann::ordered_json;
using Json = nlohmann::json;

// A shape measured without error whose median is `median_tflops` (flops chosen to make it so).
GemmShapeResult measured(const GemmShape& shape, double median_tflops) {
  GemmShapeResult s;
  s.shape = shape;
  s.seconds = {1.0};
  s.median_tflops = median_tflops;
  return s;
}

// A small sweep as `ftbench gemm` on a CPU would write it: fp32 and bf16 measured over two
// shapes, fp8 unsupported.
GemmResult sample_result() {
  GemmResult r;
  r.started_at_utc = "2026-12-01T10:00:00.000Z";
  r.finished_at_utc = "2026-12-01T10:00:02.500Z";
  r.total_seconds = 2.5;
  report::Environment& e = r.environment;
  e.host = {"vm", "Debian GNU/Linux 12 (bookworm)", "6.1.0", "AMD EPYC", 2, 25276026880};
  e.device.backend = "cpu";
  e.device.name = "AMD EPYC";
  e.device.arch = "x86-64 avx512_bf16";
  e.device.count = 1;
  e.software.ftbench_version = "0.1.0";
  e.software.git_commit = "abc123";
  e.software.libtorch_version = "1.13.0";
  e.software.compiler = "GCC 12.2.0";
  e.software.build_type = "release";
  e.software.intra_op_threads = 2;
  e.software.inter_op_threads = 1;
  e.software.blas = "openblas-pthread";
  r.settings = {"256;512", 2, 1, 4, 67108864, 60.0, "steady_clock", 16, 256};

  GemmDtypeResult fp32;
  fp32.dtype = "fp32";
  fp32.supported = true;
  fp32.setting = "at::mm_out, fp32 inputs and output";
  fp32.check_rule = "2^-24 + 2^-25 x sqrt(k)";
  fp32.shapes.push_back(summarize_shape({256, 256, 256}, {0.001, 0.0005, 0.00025, 0.0005}));
  fp32.shapes.back().check_error = 2.5e-7;
  fp32.shapes.back().check_tolerance = 9 * std::ldexp(1.0, -24);
  fp32.shapes.push_back(summarize_shape({512, 512, 512}, {0.004, 0.002, 0.002, 0.001}));
  fp32.shapes.back().check_error = 3e-7;
  fp32.shapes.back().check_tolerance = (2 + std::sqrt(512.0)) * std::ldexp(1.0, -25);
  summarize_dtype(fp32);

  GemmDtypeResult fp8;
  fp8.dtype = "fp8";
  fp8.setting = "at::_scaled_mm (LibTorch 2.4 or newer)";
  fp8.check_rule = "2^-8 + 2^-9 x sqrt(k)";
  fp8.unsupported_reason = "fp8 needs at::_scaled_mm of LibTorch 2.4 or newer";

  GemmDtypeResult bf16;
  bf16.dtype = "bf16";
  bf16.supported = true;
  bf16.setting = "at::mm_out, bf16 inputs and output";
  bf16.check_rule = "2^-8 + 2^-9 x sqrt(k)";
  bf16.shapes.push_back(summarize_shape({256, 256, 256}, {0.0005, 0.00025, 0.00025, 0.00025}));
  bf16.shapes.back().check_error = 1.5e-3;
  bf16.shapes.back().check_tolerance = 9.0 / 256;
  bf16.shapes.push_back(summarize_shape({512, 512, 512}, {}));
  bf16.shapes.back().error = "out of memory";
  bf16.shapes_skipped = 1;
  summarize_dtype(bf16);

  r.dtypes = {fp32, fp8, bf16};
  return r;
}

std::string read_error(const Json& j) {
  try {
    gemm_from_json(j, "g.json");
  } catch (const GemmFileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no GemmFileError";
  return "";
}

// A hostile review's files: a rate no device reaches (an infinite one made `run --gemm` exit 3
// with "statistics: sample 0 is not a finite number"), a dtype measured twice, a 1.0 file's
// per-dtype tolerance out of range. Each is refused naming the key.
TEST(GemmResult, ImpossibleRatesTwiceMeasuredDtypesAndToleranceRangesAreRefused) {
  Json j = Json::parse(to_json(sample_result()).dump());
  j["dtypes"][0]["shapes"][0]["m"] = 1048576;
  j["dtypes"][0]["shapes"][0]["n"] = 1048576;
  j["dtypes"][0]["shapes"][0]["k"] = 1048576;
  j["dtypes"][0]["shapes"][0]["samples_seconds"] = {5e-324, 5e-324};
  EXPECT_EQ(read_error(j),
            "g.json: dtypes[0].shapes[0].samples_seconds: the fastest call, 4.94e-324 s for "
            "1048576x1048576x1048576, is inf TFLOP/s, beyond any device (at most 1e+05): not a "
            "measured time");
  j["dtypes"][0]["shapes"][0]["samples_seconds"] = {1e-9};  // 2.3e15 TFLOP/s
  EXPECT_NE(read_error(j).find("is 2.31e+15 TFLOP/s, beyond any device"), std::string::npos)
      << read_error(j);

  j = Json::parse(to_json(sample_result()).dump());
  j["dtypes"][2]["dtype"] = "fp32";
  EXPECT_EQ(read_error(j), "g.json: dtypes[2].dtype: \"fp32\" is measured twice (also dtypes[0])");

  j = Json::parse(to_json(sample_result()).dump());
  j["schema"] = "ftbench.gemm/1";
  j["dtypes"][1]["check_tolerance"] = 1e300;
  EXPECT_EQ(read_error(j),
            "g.json: dtypes[1].check_tolerance: expected a relative error in (0, 1], found 1e+300");
}

// json::parse throws out_of_range for a number beyond double's range (found by fuzzing).
TEST(GemmResult, NumberBeyondDoubleIsInvalidJson) {
  try {
    parse_gemm_result("{\"total_seconds\": -1e400}", "g.json");
    FAIL() << "no GemmFileError";
  } catch (const GemmFileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "g.json: not a readable gemm result: total_seconds: number out of range: -1e400");
  }
  // A key given twice is refused, not resolved to its last value (found by a review).
  try {
    parse_gemm_result(
        R"({"schema": "ftbench.gemm/1.1", "dtypes": [{"shapes": [{"m": 1, "m": 2}]}]})", "g.json");
    FAIL() << "no GemmFileError";
  } catch (const GemmFileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "g.json: not a readable gemm result: dtypes[0].shapes[0].m: a key given twice in one "
              "object");
  }
}

TEST(GemmResult, ShapeFiguresFromTheCallTimes) {
  const GemmShapeResult s = summarize_shape({10000, 10000, 10000}, {0.5, 0.25, 1.0, 0.25});
  EXPECT_EQ(s.flops, 2e12);
  EXPECT_EQ(s.seconds, (std::vector<double>{0.5, 0.25, 1.0, 0.25}));  // raw, in order
  EXPECT_EQ(s.mean_seconds, 0.5);
  EXPECT_EQ(s.median_seconds, 0.375);  // numpy "linear" between 0.25 and 0.5
  EXPECT_EQ(s.min_seconds, 0.25);
  EXPECT_EQ(s.mean_tflops, 4.0);  // 2e12 FLOP / 0.5 s
  EXPECT_EQ(s.median_tflops, 2e12 / 0.375 / 1e12);
  EXPECT_EQ(s.max_tflops, 8.0);  // from the fastest call
}

TEST(GemmResult, ShapeWithoutSamplesHasZeroFigures) {
  const GemmShapeResult s = summarize_shape({2, 3, 5}, {});
  EXPECT_EQ(s.flops, 60.0);
  EXPECT_EQ(s.max_tflops, 0.0);
  EXPECT_EQ(s.median_tflops, 0.0);
}

TEST(GemmResult, ShapeRefusesNonPositiveOrNonFiniteTimes) {
  EXPECT_THROW(summarize_shape({2, 2, 2}, {0.1, 0.0}), std::invalid_argument);
  EXPECT_THROW(summarize_shape({2, 2, 2}, {-1.0}), std::invalid_argument);
  EXPECT_THROW(summarize_shape({2, 2, 2}, {std::numeric_limits<double>::quiet_NaN()}),
               std::invalid_argument);
}

TEST(GemmResult, DtypeMaxIsTheBestShapeMedianAndMedianIsOverShapes) {
  GemmDtypeResult d;
  d.shapes = {measured({1, 1, 1}, 3.0), measured({2, 2, 2}, 7.0), measured({3, 3, 3}, 5.0),
              measured({4, 4, 4}, 7.0)};
  GemmShapeResult failed = measured({5, 5, 5}, 100.0);
  failed.error = "out of memory";  // a failed shape never counts
  d.shapes.push_back(failed);
  summarize_dtype(d);
  EXPECT_EQ(d.max_tflops, 7.0);
  EXPECT_EQ(d.best_shape, (GemmShape{2, 2, 2}));  // the first of the tied shapes
  EXPECT_EQ(d.median_tflops, 6.0);                // of 3, 5, 7, 7
}

TEST(GemmResult, DtypeWithoutMeasuredShapesHasNoFigures) {
  GemmDtypeResult d;
  GemmShapeResult failed = measured({5, 5, 5}, 1.0);
  failed.error = "boom";
  d.shapes = {failed};
  summarize_dtype(d);
  EXPECT_FALSE(d.max_tflops.has_value());
  EXPECT_FALSE(d.best_shape.has_value());
  EXPECT_FALSE(d.median_tflops.has_value());
}

TEST(GemmResult, FindMeasuredSkipsUnsupportedAndUnknownDtypes) {
  const GemmResult r = sample_result();
  ASSERT_NE(find_measured(r, "fp32"), nullptr);
  EXPECT_EQ(find_measured(r, "fp32")->dtype, "fp32");
  EXPECT_NE(find_measured(r, "bf16"), nullptr);
  EXPECT_EQ(find_measured(r, "fp8"), nullptr);
  EXPECT_EQ(find_measured(r, "fp16"), nullptr);
}

TEST(GemmResult, ChecksPassWithinTheToleranceOnly) {
  GemmResult r = sample_result();
  std::string failure;
  EXPECT_TRUE(checks_passed(r, &failure));
  r.dtypes[2].shapes[0].check_error = 0.5;
  EXPECT_FALSE(checks_passed(r, &failure));
  EXPECT_EQ(failure,
            "bf16 256x256x256: relative error 0.5 > tolerance 0.0352 (2^-8 + 2^-9 x sqrt(k))");
  r.dtypes[2].shapes[0].check_error = 9.0 / 256;  // the tolerance itself passes
  EXPECT_TRUE(checks_passed(r, &failure));
  r.dtypes[2].shapes[0].check_error = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(checks_passed(r, nullptr));
  // A measured shape that was not checked fails; a shape that failed to run needs no check.
  r = sample_result();
  r.dtypes[0].shapes[1].check_error.reset();
  EXPECT_FALSE(checks_passed(r, &failure));
  EXPECT_EQ(failure, "fp32 512x512x512: measured but was not checked (no check_error)");
  r = sample_result();
  ASSERT_EQ(r.dtypes[2].shapes[1].error, "out of memory");
  ASSERT_FALSE(r.dtypes[2].shapes[1].check_error.has_value());
  EXPECT_TRUE(checks_passed(r, &failure)) << failure;
}

TEST(GemmResult, JsonRoundTripsAndRecomputesFromSamples) {
  const GemmResult r = sample_result();
  const OJson written = to_json(r);
  EXPECT_EQ(written["schema"], "ftbench.gemm/1.1");
  EXPECT_EQ(written["dtypes"][2]["check_rule"], "2^-8 + 2^-9 x sqrt(k)");
  EXPECT_EQ(written["dtypes"][2]["shapes"][0]["check_tolerance"], 9.0 / 256);
  EXPECT_TRUE(written["dtypes"][2]["shapes"][1]["check_tolerance"].is_null());
  EXPECT_EQ(written["dtypes"][0]["max_tflops"], r.dtypes[0].max_tflops.value());
  EXPECT_EQ(written["dtypes"][0]["best_shape"], OJson({{"m", 512}, {"n", 512}, {"k", 512}}));
  EXPECT_TRUE(written["dtypes"][1]["max_tflops"].is_null());
  EXPECT_TRUE(written["dtypes"][1]["best_shape"].is_null());
  EXPECT_EQ(written["dtypes"][2]["shapes"][1]["error"], "out of memory");
  EXPECT_EQ(written["dtypes"][0]["shapes"][1]["samples_seconds"],
            OJson::array({0.004, 0.002, 0.002, 0.001}));

  const GemmResult back = gemm_from_json(Json::parse(written.dump(2)), "g.json");
  EXPECT_EQ(to_json(back), written);

  // The summary figures come from the samples, not from the file.
  Json edited = Json::parse(written.dump());
  edited["dtypes"][0]["max_tflops"] = 1e6;
  edited["dtypes"][0]["shapes"][0]["median_tflops"] = 1e6;
  const GemmResult recomputed = gemm_from_json(edited, "g.json");
  EXPECT_EQ(recomputed.dtypes[0].max_tflops, r.dtypes[0].max_tflops);
  EXPECT_EQ(recomputed.dtypes[0].shapes[0].median_tflops, r.dtypes[0].shapes[0].median_tflops);
}

// The check's tolerance follows from the dtype and k (bench/gemm_check.h), whatever the file
// says; a 1.0 file's one tolerance per dtype stands only for a dtype this ftbench does not know.
TEST(GemmResult, ToleranceComesFromTheRuleNotTheFile) {
  Json j = Json::parse(to_json(sample_result()).dump());
  j["dtypes"][2]["shapes"][0]["check_tolerance"] = 1.0;
  j["dtypes"][2]["shapes"][0]["check_error"] = 0.3;
  const GemmResult edited = gemm_from_json(j, "g.json");
  EXPECT_EQ(edited.dtypes[2].shapes[0].check_tolerance, 9.0 / 256);
  EXPECT_FALSE(checks_passed(edited, nullptr));

  // A 1.0 file: no check_rule, no per-shape tolerance, a fixed one per dtype.
  Json old = Json::parse(to_json(sample_result()).dump());
  old["schema"] = "ftbench.gemm/1";
  for (Json& d : old["dtypes"]) {
    d.erase("check_rule");
    d["check_tolerance"] = 0.02;
    for (Json& s : d["shapes"]) s.erase("check_tolerance");
  }
  const GemmResult read = gemm_from_json(old, "g.json");
  EXPECT_EQ(read.dtypes[2].shapes[0].check_tolerance, 9.0 / 256);  // bf16 at k = 256
  EXPECT_EQ(read.dtypes[2].check_rule, "2^-8 + 2^-9 x sqrt(k)");
  old["dtypes"][2]["dtype"] = "int4";
  const GemmResult unknown = gemm_from_json(old, "g.json");
  EXPECT_EQ(unknown.dtypes[2].shapes[0].check_tolerance, 0.02);
  EXPECT_EQ(unknown.dtypes[2].check_rule, "");
  old["dtypes"][2].erase("check_tolerance");
  EXPECT_EQ(read_error(old),
            "g.json: dtypes[2].shapes[0]: a check_error of dtype \"int4\" without a "
            "check_tolerance");
  j = Json::parse(to_json(sample_result()).dump());
  j["dtypes"][0]["shapes"][0]["check_tolerance"] = 2.0;
  EXPECT_EQ(read_error(j),
            "g.json: dtypes[0].shapes[0].check_tolerance: expected a relative error in (0, 1], "
            "found 2");
}

TEST(GemmResult, SummaryFiguresOfTheSample) {
  const GemmResult r = sample_result();
  // 512^3: 2^28 FLOP; median of {0.004, 0.002, 0.002, 0.001} = 0.002 s.
  EXPECT_EQ(r.dtypes[0].shapes[1].median_tflops, 268435456.0 / 0.002 / 1e12);
  EXPECT_EQ(r.dtypes[0].max_tflops, r.dtypes[0].shapes[1].median_tflops);
  EXPECT_DOUBLE_EQ(
      *r.dtypes[0].median_tflops,
      (r.dtypes[0].shapes[0].median_tflops + r.dtypes[0].shapes[1].median_tflops) / 2.0);
  EXPECT_EQ(r.dtypes[2].best_shape, (GemmShape{256, 256, 256}));
}

TEST(GemmResult, ReaderNamesTheFileAndThePath) {
  const Json good = Json::parse(to_json(sample_result()).dump());
  EXPECT_EQ(read_error(Json::array()),
            "g.json: not an ftbench gemm result (expected a JSON object, found array)");
  Json j = good;
  j.erase("schema");
  EXPECT_EQ(read_error(j),
            "g.json: not an ftbench gemm result (no \"schema\" string; write one with ftbench "
            "gemm --json)");
  j = good;
  j["schema"] = "ftbench.report/1.1";
  EXPECT_EQ(read_error(j),
            "g.json: unsupported gemm result schema \"ftbench.report/1.1\" (this ftbench reads "
            "ftbench.gemm/1.1)");
  j["schema"] = "ftbench.gemm/2\x1B[2J";  // the file's text, escaped
  EXPECT_EQ(read_error(j),
            "g.json: unsupported gemm result schema \"ftbench.gemm/2\\x1B[2J\" (this ftbench "
            "reads ftbench.gemm/1.1)");
  j = good;
  j["schema"] = "ftbench.gemm/1.4";  // a newer minor version reads
  EXPECT_NO_THROW(gemm_from_json(j, "g.json"));
  j = good;
  j["dtypes"][0]["shapes"][1]["samples_seconds"][2] = 0;
  EXPECT_EQ(read_error(j),
            "g.json: dtypes[0].shapes[1].samples_seconds[2]: expected a time > 0, "
            "found 0");
  // Nor a call of more than a day: 1e300 s made a peak of 1e-304 TFLOP/s and a 300-digit MFU
  // (found by a review).
  j["dtypes"][0]["shapes"][1]["samples_seconds"][2] = 1e300;
  EXPECT_EQ(read_error(j),
            "g.json: dtypes[0].shapes[1].samples_seconds[2]: expected at most 86400 s (a day) for "
            "one call, found 1e+300");
  j = good;
  j["dtypes"][2]["shapes"][0].erase("k");
  EXPECT_EQ(read_error(j), "g.json: missing required field \"dtypes[2].shapes[0].k\"");
  j = good;
  j["dtypes"][0]["shapes"][0]["m"] = 0;
  EXPECT_EQ(read_error(j),
            "g.json: dtypes[0].shapes[0].m: expected an integer between 1 and 1048576, found 0");
  j = good;
  j["settings"]["iterations"] = "many";
  EXPECT_EQ(read_error(j), "g.json: settings.iterations: expected an integer, found string");
  j = good;
  j["environment"]["device"].erase("name");
  EXPECT_EQ(read_error(j), "g.json: missing required field \"environment.device.name\"");
}

TEST(GemmResult, ReadFileErrorsNameTheFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ftbench-gemm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string missing = (dir / "missing.json").string();
  try {
    read_gemm_result(missing);
    ADD_FAILURE() << "no GemmFileError";
  } catch (const GemmFileError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read: No such file or directory");
  }
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"schema\": ";
  EXPECT_THROW(read_gemm_result(broken), GemmFileError);
  const std::string good = (dir / "good.json").string();
  std::ofstream(good) << to_json(sample_result()).dump(2);
  EXPECT_EQ(to_json(read_gemm_result(good)), to_json(sample_result()));
  std::filesystem::remove_all(dir);
}

TEST(GemmResult, CarriedIntoAReportAreTheMeasuredDtypes) {
  const report::MeasuredGemm g = carried_gemm(sample_result(), "cpu-gemm.json");
  EXPECT_EQ(g.source, "cpu-gemm.json");
  EXPECT_EQ(g.device_name, "AMD EPYC");
  EXPECT_EQ(g.backend, "cpu");
  EXPECT_EQ(g.libtorch_version, "1.13.0");
  EXPECT_EQ(g.measured_at_utc, "2026-12-01T10:00:00.000Z");
  ASSERT_EQ(g.dtypes.size(), 2u);  // fp8 was not supported
  const GemmResult r = sample_result();
  EXPECT_EQ(g.dtypes[0].dtype, "fp32");
  EXPECT_EQ(g.dtypes[0].max_tflops, *r.dtypes[0].max_tflops);
  EXPECT_EQ(g.dtypes[0].median_tflops, *r.dtypes[0].median_tflops);
  EXPECT_EQ(g.dtypes[0].best_m, 512);
  EXPECT_EQ(g.dtypes[0].best_n, 512);
  EXPECT_EQ(g.dtypes[0].best_k, 512);
  EXPECT_EQ(g.dtypes[1].dtype, "bf16");
  EXPECT_EQ(g.dtypes[1].best_k, 256);
}

TEST(GemmResult, TextHasTheShapesTheSummaryAndWhatWasNotMeasured) {
  // 256^3 = 2^25 FLOP x 2; fp32 256^3: mean of {1, 0.5, 0.25, 0.5} ms = 0.5625 ms -> 0.05965,
  // median 0.5 ms -> 0.06711, fastest 0.25 ms -> 0.1342; the fp32 median over shapes is the
  // mean of 0.06711 and 0.1342. The summary's peak is the best shape's median (0.1342 of
  // 512x512x512, whose fastest call made 0.2684), and its column says so: it was "max TFLOP/s",
  // the per-shape tables' name for the fastest call.
  EXPECT_EQ(
      render_gemm_text(sample_result()),
      "ftbench gemm on AMD EPYC (cpu, LibTorch 1.13.0): 2 shapes, 1 warm-up + 4 timed calls "
      "each;\n"
      "cache flush of 64 MiB before every call; timed by steady_clock\n"
      "\n"
      "fp32: at::mm_out, fp32 inputs and output\n"
      "check: relative error against fp64 within 2^-24 + 2^-25 x sqrt(k) (the roundings of "
      "fp32: docs/methodology.md)\n"
      "m x n x k    mean TFLOP/s  median TFLOP/s  max TFLOP/s  check error  tolerance\n"
      "------------------------------------------------------------------------------\n"
      "256x256x256       0.05965         0.06711       0.1342      2.5e-07    5.4e-07\n"
      "512x512x512        0.1193          0.1342       0.2684        3e-07    7.3e-07\n"
      "\n"
      "bf16: at::mm_out, bf16 inputs and output\n"
      "check: relative error against fp64 within 2^-8 + 2^-9 x sqrt(k) (the roundings of "
      "bf16: docs/methodology.md)\n"
      "m x n x k    mean TFLOP/s  median TFLOP/s  max TFLOP/s  check error  tolerance\n"
      "------------------------------------------------------------------------------\n"
      "256x256x256        0.1074          0.1342       0.1342       0.0015      0.035\n"
      "512x512x512        failed               -            -            -          -\n"
      "512x512x512 failed: out of memory\n"
      "\n"
      "dtype  best median TFLOP/s  best shape   median over shapes  shapes\n"
      "-----------------------------------------------------------------------------------------"
      "-----------------\n"
      "fp32                0.1342  512x512x512              0.1007  2 measured\n"
      "bf16                0.1342  256x256x256              0.1342  1 measured, 1 failed, 1 "
      "skipped (time budget)\n"
      "fp8: not supported on this device/LibTorch: fp8 needs at::_scaled_mm of LibTorch 2.4 or "
      "newer\n"
      "total time 2.5 s\n");
}

}  // namespace
}  // namespace ftbench::bench
