#include "report/metrics/profile_table.h"

#include <stdexcept>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ftbench::metrics {
namespace {

ProfileEvent op(const std::string& name, uint64_t thread, int64_t start, int64_t duration,
                uint64_t flops = 0, std::optional<int64_t> bytes = 0) {
  ProfileEvent e;
  e.name = name;
  e.kind = ProfileEventKind::kOp;
  e.thread = thread;
  e.start_ns = start;
  e.duration_ns = duration;
  e.flops = flops;
  e.input_bytes = bytes;
  return e;
}

ProfileEvent scope(const std::string& name, uint64_t thread, int64_t start, int64_t duration) {
  ProfileEvent e = op(name, thread, start, duration);
  e.kind = ProfileEventKind::kScope;
  return e;
}

ProfileEvent kernel(const std::string& name, int64_t start, int64_t duration,
                    bool transfer = false) {
  ProfileEvent e = op(name, 7, start, duration);
  e.kind = transfer ? ProfileEventKind::kTransfer : ProfileEventKind::kKernel;
  return e;
}

TEST(ProfileSteps, OneStepOrARange) {
  EXPECT_EQ(parse_profile_steps("5").first_step, 5);
  EXPECT_EQ(parse_profile_steps("5").last_step, 5);
  EXPECT_EQ(parse_profile_steps("5,7").first_step, 5);
  EXPECT_EQ(parse_profile_steps("5,7").last_step, 7);
  EXPECT_EQ(parse_profile_steps("1000000000").last_step, 1000000000);
}

TEST(ProfileSteps, AnythingElseIsRefusedWithWhatWasFound) {
  for (const char* bad : {"", "0", "-1", "+3", "7,5", "5,", ",5", "5,6,7", "5 ,7", "1e3", "2.5",
                          "1000000001", "99999999999999999999", "a"}) {
    try {
      parse_profile_steps(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--profile-steps: expected N or N,M (whole numbers of steps, 1 <= N "
                            "<= M <= 1000000000), found \"") +
                    bad + "\"");
    }
  }
}

TEST(ProfileDtypes, SizesOfTheProfilersDtypeNames) {
  EXPECT_EQ(profiler_dtype_bytes("float"), 4);
  EXPECT_EQ(profiler_dtype_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(profiler_dtype_bytes("c10::Half"), 2);
  EXPECT_EQ(profiler_dtype_bytes("long int"), 8);
  EXPECT_EQ(profiler_dtype_bytes("bool"), 1);
  EXPECT_EQ(profiler_dtype_bytes("Scalar"), 0);
  EXPECT_EQ(profiler_dtype_bytes(""), 0);
  EXPECT_EQ(profiler_dtype_bytes("c10::qint8"), std::nullopt);
  // [2048, 256] fp32, a scalar, a 0-dimensional bf16 tensor, [256] int64.
  EXPECT_EQ(input_bytes_of({{2048, 256}, {}, {}, {256}},
                           {"float", "Scalar", "c10::BFloat16", "long int"}),
            2048 * 256 * 4 + 2 + 256 * 8);
  EXPECT_EQ(input_bytes_of({{4}}, {"c10::qint8"}), std::nullopt);
}

TEST(ProfileTables, SelfTimeExcludesWhatAnOpCalls) {
  // Thread 1: linear [0, 100) calls matmul [10, 90), which calls mm [20, 80); then add
  // [100, 130). Thread 2: mm [0, 50).
  const std::vector<ProfileEvent> events = {
      op("aten::linear", 1, 0, 100, 0, 1000), op("aten::matmul", 1, 10, 80, 0, 1000),
      op("aten::mm", 1, 20, 60, 4000, 1000),  op("aten::add", 1, 100, 30, 0, 64),
      op("aten::mm", 2, 0, 50, 2000, 500),
  };
  const ProfileTables t = tabulate_profile(events);
  ASSERT_EQ(t.ops.size(), 4u);
  EXPECT_EQ(t.ops[0].name, "aten::mm");
  EXPECT_EQ(t.ops[0].calls, 2);
  EXPECT_EQ(t.ops[0].self_ns, 110);
  EXPECT_EQ(t.ops[0].total_ns, 110);
  EXPECT_EQ(t.ops[0].flops, 6000u);
  EXPECT_EQ(t.ops[0].input_bytes, 1500);
  EXPECT_EQ(t.ops[1].name, "aten::add");
  EXPECT_EQ(t.ops[1].self_ns, 30);
  EXPECT_EQ(t.ops[2].name, "aten::linear");
  EXPECT_EQ(t.ops[2].self_ns, 20);
  EXPECT_EQ(t.ops[2].total_ns, 100);
  EXPECT_EQ(t.ops[3].name, "aten::matmul");
  EXPECT_EQ(t.ops[3].self_ns, 20);
  EXPECT_EQ(t.op_self_ns, 110 + 30 + 20 + 20);
  EXPECT_EQ(t.flops, 6000u);
  // The leaves: the two mm calls and the add (linear's and matmul's inputs are mm's).
  EXPECT_EQ(t.leaf_input_bytes, 1000 + 500 + 64);
  EXPECT_EQ(t.leaf_calls_without_bytes, 0);
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_TRUE(t.attention_ops.empty());
}

// Times rounded to whole microseconds (LibTorch 1.13) can end a call a microsecond after its
// caller: it is still inside it, and no self time goes negative.
TEST(ProfileTables, ACallEndingJustAfterItsCallerIsStillInsideIt) {
  const std::vector<ProfileEvent> events = {op("aten::linear", 1, 0, 100'000),
                                            op("aten::mm", 1, 10'000, 91'000),
                                            op("aten::add", 1, 101'000, 5'000)};
  const ProfileTables t = tabulate_profile(events);
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.ops[0].name, "aten::mm");
  EXPECT_EQ(t.ops[0].self_ns, 91'000);
  EXPECT_EQ(t.ops[1].name, "aten::linear");
  EXPECT_EQ(t.ops[1].self_ns, 10'000);  // 100 us less the 90 us of mm inside it
  EXPECT_EQ(t.ops[2].name, "aten::add");
  EXPECT_EQ(t.ops[2].self_ns, 5'000);
  for (const OpRow& r : t.ops) EXPECT_GE(r.self_ns, 0) << r.name;
}

TEST(ProfileTables, ViewsReadNoBytes) {
  // narrow looks at a 1 MB tensor and reads none of it; the add it feeds reads its 64 bytes.
  const std::vector<ProfileEvent> events = {op("aten::narrow", 1, 0, 10, 0, 1'000'000),
                                            op("aten::as_strided", 1, 20, 10, 0, 1'000'000),
                                            op("aten::add", 1, 40, 10, 0, 64)};
  const ProfileTables t = tabulate_profile(events);
  EXPECT_EQ(t.leaf_input_bytes, 64);
  EXPECT_EQ(t.ops.size(), 3u);  // still in the table, with their calls and time
}

TEST(ProfileTables, AnOpCallingItselfCountsOnceInItsTotal) {
  const std::vector<ProfileEvent> events = {op("aten::copy_", 1, 0, 100),
                                            op("aten::copy_", 1, 10, 50)};
  const ProfileTables t = tabulate_profile(events);
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].calls, 2);
  EXPECT_EQ(t.ops[0].self_ns, 100);
  EXPECT_EQ(t.ops[0].total_ns, 100);
}

TEST(ProfileTables, ScopesNestThroughOpsAndKeepTheirOwnTime) {
  // forward [0, 100) with an op; backward [100, 400) holding an autograd node [150, 350) that
  // holds recompute [160, 300), which holds mm [170, 250); optimizer [400, 450).
  const std::vector<ProfileEvent> events = {
      scope("forward", 1, 0, 100),     op("aten::mm", 1, 10, 80),
      scope("backward", 1, 100, 300),  op("CppNode<UnitFunction>", 1, 150, 200),
      scope("recompute", 1, 160, 140), op("aten::mm", 1, 170, 80),
      scope("optimizer", 1, 400, 50),
  };
  const ProfileTables t = tabulate_profile(events);
  ASSERT_EQ(t.scopes.size(), 4u);
  EXPECT_EQ(t.scopes[0].name, "forward");
  EXPECT_EQ(t.scopes[0].total_ns, 100);
  EXPECT_EQ(t.scopes[0].self_ns, 100);
  EXPECT_EQ(t.scopes[1].name, "backward");
  EXPECT_EQ(t.scopes[1].total_ns, 300);
  EXPECT_EQ(t.scopes[1].self_ns, 160);
  EXPECT_EQ(t.scopes[2].name, "recompute");
  EXPECT_EQ(t.scopes[2].self_ns, 140);
  EXPECT_EQ(t.scopes[3].name, "optimizer");
  // The node's self time leaves out the recompute scope inside it; the scopes are no ops.
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].name, "aten::mm");
  EXPECT_EQ(t.ops[0].self_ns, 160);
  EXPECT_EQ(t.ops[1].name, "CppNode<UnitFunction>");
  EXPECT_EQ(t.ops[1].self_ns, 60);
}

TEST(ProfileTables, KernelsAndAttentionOps) {
  const std::vector<ProfileEvent> events = {
      op("aten::_scaled_dot_product_flash_attention", 1, 0, 10, 0, std::nullopt),
      op("aten::scaled_dot_product_attention", 1, 0, 20),
      kernel("flash_fwd_kernel", 5, 30),
      kernel("Memcpy HtoD (Pageable -> Device)", 40, 10, true),
      kernel("flash_fwd_kernel", 60, 30),
      // Autograd's nodes around attention are not attention ops: the ATen op inside them is.
      op("torch::autograd::CppNode<ftbench::model::ReplayAttentionFunction>", 1, 100, 5),
      op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", 1, 110, 5),
  };
  const ProfileTables t = tabulate_profile(events);
  EXPECT_EQ(t.attention_ops, (std::vector<std::string>{"aten::_scaled_dot_product_flash_attention",
                                                       "aten::scaled_dot_product_attention"}));
  // The flash op runs inside the public one: the leaf, whose bytes are unknown.
  EXPECT_EQ(t.leaf_input_bytes, 0);
  EXPECT_EQ(t.leaf_calls_without_bytes, 1);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].name, "flash_fwd_kernel");
  EXPECT_EQ(t.kernels[0].calls, 2);
  EXPECT_EQ(t.kernels[0].total_ns, 60);
  EXPECT_TRUE(t.kernels[1].transfer);
  EXPECT_EQ(t.kernel_ns, 70);
  EXPECT_EQ(kernel_table_csv(t),
            "name,kind,calls,total_ms,share,mean_us\n"
            "flash_fwd_kernel,kernel,2,0.000,0.8571,0.030\n"
            "Memcpy HtoD (Pageable -> Device),transfer,1,0.000,0.1429,0.010\n");
}

TEST(ProfileTables, OpCsvRatesOverSelfTime) {
  // 2 ms of mm doing 4e9 FLOP over 8e6 input bytes: 2 TFLOP/s, 4 GB/s.
  const std::vector<ProfileEvent> events = {
      op("aten::mm", 1, 0, 2'000'000, 4'000'000'000, 8'000'000),
      op("a,\"b\"", 1, 2'000'000, 2'000'000, 0, std::nullopt)};
  const ProfileTables t = tabulate_profile(events);
  EXPECT_EQ(op_table_csv(t),
            "name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,"
            "input_gb_per_s\n"
            // Equal self times: by name.
            "\"a,\"\"b\"\"\",1,2.000,2.000,0.5000,0,,,\n"
            "aten::mm,1,2.000,2.000,0.5000,4000000000,2,8000000,4\n");
}

TEST(ProfileTrace, ChromeTraceEventsFromTheFirstEvent) {
  ProfileEvent mm = op("aten::mm", 3, 5'000, 2'500, 100, 64);
  mm.shapes = "[[2, 4], [4, 8]]";
  const std::vector<ProfileEvent> events = {mm, kernel("gemm", 6'000, 1'000)};
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(events));
  ASSERT_EQ(trace["traceEvents"].size(), 2u);
  const nlohmann::json& first = trace["traceEvents"][0];
  EXPECT_EQ(first["name"], "aten::mm");
  EXPECT_EQ(first["ph"], "X");
  EXPECT_EQ(first["ts"].get<double>(), 0.0);
  EXPECT_EQ(first["dur"].get<double>(), 2.5);
  EXPECT_EQ(first["pid"], 0);
  EXPECT_EQ(first["tid"], 3);
  EXPECT_EQ(first["args"]["input_shapes"], "[[2, 4], [4, 8]]");
  EXPECT_EQ(first["args"]["flops"], 100);
  EXPECT_EQ(first["args"]["input_bytes"], 64);
  const nlohmann::json& second = trace["traceEvents"][1];
  EXPECT_EQ(second["cat"], "kernel");
  EXPECT_EQ(second["ts"].get<double>(), 1.0);
  EXPECT_EQ(second["pid"], 1);
  EXPECT_FALSE(second.contains("args"));
}

}  // namespace
}  // namespace ftbench::metrics
