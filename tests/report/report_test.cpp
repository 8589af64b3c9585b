#include "report/report.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <clocale>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <locale>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/metrics/report_figures.h"
#include "report/metrics/run_summary.h"
#include "report/report_io.h"
#include "util/io/output_file.h"
#include "util/stats/summary.h"

namespace ftbench::report {
namespace {

namespace fs = std::filesystem;
using OJson = nlohmann::ordered_json;
// report::from_json is called qualified: unqualified, argument-dependent lookup also finds
// nlohmann's from_json(const json&, T&), which nlohmann-json 3.11.3 (Debian 13) picks for a
// string-literal source.

// Segment 2's energy (steps 2 to 5 of full_report()): 630 W on average over 4.5 s.
Energy measured_energy() {
  Energy e;
  e.method = "energy_counter";
  e.source = "nvmlDeviceGetTotalEnergyConsumption";
  e.segment = 2;
  e.interval_seconds = 0.1;
  e.window_start_seconds = 47.0;
  e.window_seconds = 4.5;
  e.steps = 4;
  e.tokens = 400014;
  e.joules = 2835.0;
  e.joules_per_step = 708.75;
  e.joules_per_million_tokens = 2835.0 / 400014.0 * 1e6;
  e.mean_watts = 630.0;
  e.peak_watts = 700.0;
  e.sampled_seconds = 4.5;
  e.coverage = 1.0;
  e.sample_count = 46;
  e.devices = {{0, "0000:1B:00.0", "energy_counter", "nvmlDeviceGetTotalEnergyConsumption",
                "libnvidia-ml.so.1", 2835.0, 4.5, 630.0, 700.0, 46, 0, 0}};
  return e;
}

// A report with every field set to a distinct, non-default value.
Report full_report() {
  Report r;
  r.run_name = "llama3.1-8b-lora";
  r.status = "completed";
  r.error = "";
  r.started_at_utc = "2024-05-01T12:00:00Z";
  r.finished_at_utc = "2024-05-01T12:34:56Z";
  r.world_size = 2;
  r.data = DataInfo{"synthetic(seed=1234, n=2000)", 2000, 712345, 356789, std::string(64, 'a')};
  r.data->files = {{"data.path", "/home/user/runs/data/train.jsonl", 1234, std::string(64, 'b')}};
  r.data->statistics =
      DataStatistics{"alpaca", 2107, 3, 4, 11, 356.1725, 301.5, 612.9, 1024, 0.49913};
  r.data->validation =
      ValidationDataInfo{"file(path=val.jsonl, format=alpaca, n=100)", 100, 35012, 17001};
  r.spec_path = "configs/llama3.1-8b-lora.yaml";
  r.working_directory = "/home/user/runs";
  // Keys deliberately not in alphabetical order: the reader must keep them as written.
  r.spec = OJson::parse(R"({"run": {"name": "x", "seed": 7}, "model": {"preset": "tiny"},
                            "lora": {"rank": 16, "alpha": 32.0, "targets": ["q", "v"]}})");
  r.spec_fingerprint = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

  HostInfo& h = r.environment.host;
  h.hostname = "node-17";
  h.os = "Debian GNU/Linux 12 (bookworm)";
  h.kernel = "6.1.0-18-amd64";
  h.cpu_model = "AMD EPYC 9654 96-Core Processor";
  h.cpu_logical_cores = 192;
  h.memory_bytes = 1622147645440;

  DeviceInfo& d = r.environment.device;
  d.backend = "cuda";
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.count = 8;
  d.index = 3;
  d.memory_bytes = 85028569088;
  d.multiprocessor_count = 132;
  d.driver_version = "550.54.15";
  d.runtime_version = "12.4";
  d.l2_cache_bytes = 52428800;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_width_bits = 5120;
  d.pci_bus_id = "0000:3B:00.0";
  d.kernel_driver_version = "550.54.15";
  d.query_error = "";

  SoftwareInfo& s = r.environment.software;
  s.ftbench_version = "0.1.0";
  s.git_commit = "abc123def456-dirty";
  s.libtorch_version = "2.3.0";
  s.compiler = "GNU 12.2.0";
  s.build_type = "Release";
  s.intra_op_threads = 16;
  s.inter_op_threads = 2;
  s.blas = "OpenBLAS";
  s.omp_wait_policy = "PASSIVE";
  s.host_allocator = "glibc: mmap_threshold 32 MiB, trim_threshold 2 GiB";
  s.libtorch_build = "cuda";
  s.container_image = "rocm/pytorch-training:v25.4";
  r.environment.variables =
      std::vector<EnvironmentVariable>{{"CUDA_VISIBLE_DEVICES", "3"},
                                       {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                                       {"OMP_NUM_THREADS", "16"}};

  r.parameters = {8030261248, 41943040, 8072204288};
  r.derived = {32, 48, 3, 5, 131072};  // 2 x 16 a step, 3 steps an epoch, the 5 steps below
  r.batching = Batching{2, 16, {}};
  r.batching->fallbacks = {
      {1, 8, 4, 4, 8, 12.5, "CUDA out of memory. Tried to allocate 2.00 GiB"},
      {1, 4, 8, 2, 16, 6.25, "CUDA out of memory. Tried to allocate 1.00 GiB"}};

  r.t0_source = "--t0";
  r.t0_before_process_seconds = 1.25;
  r.time_to_first_step_seconds = 47.125;
  r.phases = {{"launch", 0.0, 1.25},
              {"backend_init", 1.25, 2.5},
              {"model_build", 3.75, 0.1},
              {"training", 47.0, 1800.3}};
  r.phases[1].memory = PhaseMemory{0, 2097152, 0, 560000000, 900000000, 850000000};
  r.phases[3].memory =
      PhaseMemory{61203283968, 66571993088, 60000000000, 70000000000, 12884901888, 12000000000};

  for (int64_t i = 1; i <= 5; ++i) {
    StepRecord st;
    st.step = i;
    st.epoch = 1 + (i - 1) / 3;
    st.wall_seconds = 1.0 + 0.1 * static_cast<double>(i);
    st.data_wait_seconds = 0.01 * static_cast<double>(i);
    st.real_tokens = 100000 + i;
    st.padded_tokens = 131072;
    st.loss_tokens = 90000 + i;
    st.loss = 2.5 - 0.1 * static_cast<double>(i);
    st.lr = 2e-4 * static_cast<double>(i) / 5.0;
    st.grad_norm = 0.75 + 1e-3 * static_cast<double>(i);
    st.model_flops = 4.8e14 + static_cast<double>(i);
    r.steps.push_back(st);
  }
  r.evaluations = {{3, 2.2341, 17001, 25, 4.5}, {5, 2.125, 17001, 25, 4.25}};

  // Every figure the steps determine is theirs (the reader checks): steps 3 to 5 are measured,
  // 4.2 s, 300012 real and 393216 padded tokens, 0.12 s of data wait, on 2 devices.
  Summary& m = r.summary;
  m.warmup_steps_excluded = 2;
  m.measured_steps = 3;
  m.step_seconds = stats::summarize({1.3, 1.4, 1.5});
  m.tokens_per_second_real = 300012.0 / 4.2;
  m.tokens_per_second_padded = 93622.85714285714;
  m.padding_fraction = 1.0 - 300012.0 / 393216.0;
  m.data_wait_fraction = 0.028571428571428577;
  m.peak_tflops = 989.4;
  m.peak_source = "gpu table: NVIDIA H100 80GB HBM3";
  m.mfu = {{"lora_frozen_base", false, 4.8e14 + 4.0, 342.8571428571429,
            342.8571428571429 / (989.4 * 2), 342.8571428571429 / (719.8 * 2)},
           {"six_n", true, 6.4e14, 457.14285714285717, 457.14285714285717 / (989.4 * 2),
            457.14285714285717 / (719.8 * 2)}};
  m.gemm_peak_tflops = 719.8;
  m.gemm_peak_source = "gemm file: h100-gemm.json bf16 8192x8192x8192";
  r.gemm = MeasuredGemm{
      "h100-gemm.json",
      "NVIDIA H100 80GB HBM3",
      "cuda",
      "2.11.0",
      "2024-05-01T11:00:00.000Z",
      {{"bf16", 719.8, 655.25, 8192, 8192, 8192}, {"fp32", 51.5, 49.0, 16384, 4096, 14336}}};
  m.final_loss = 2.0;
  m.loss_window = 3;
  m.mean_last_losses = 2.1;

  r.memory.peak_allocated_bytes = 61203283968;
  r.memory.peak_reserved_bytes = 66571993088;
  r.memory.device_used_peak_bytes = 70000000000;
  r.memory.device_total_bytes = 85028569088;
  r.memory.peak_rss_bytes = 12884901888;
  r.memory.peak_active_bytes = 60000000000;
  r.memory.allocation_retries = 2;
  r.memory.oom_count = 0;
  r.segments = {{1, "interrupted", "2024-05-01T12:00:00Z", "2024-05-01T12:01:00Z", 1, 1, 60.5,
                 20.25, "", 0, 8},
                {2, "completed", "2024-05-01T12:05:00Z", "2024-05-01T12:06:00Z", 2, 5, 40.0, 18.5,
                 "checkpoints/x/step-00000001", 0, std::nullopt}};
  // Step 1 ran in the first process, the rest after the resume from its checkpoint.
  for (StepRecord& st : r.steps) st.segment = st.step == 1 ? 1 : 2;
  r.checkpoints = {{1, 1, "signal", "checkpoints/x/step-00000001", 123456, 0.75}};
  r.weights = WeightsInfo{"checkpoint", "/models/llama", "safetensors",       4, 291, 16060522496,
                          12.5,         1284841799.68,   std::string(64, 'a')};
  r.exports = {{"peft_adapter", "adapters/x", 128, 27295744, 0.25},
               {"merged", "merged/x", 291, 16060530000, 40.0}};
  r.energy = measured_energy();
  Distributed dist;
  dist.launch = "local";
  dist.backend = "gloo";
  dist.shard_base = "node";
  RankRecord first;
  first.host = "node-a";
  first.device = "cpu";
  first.steps = {{1.5, 0.5}};
  first.collective_seconds = 0.5;
  first.collective_bytes = 4096;
  first.collective_calls = 3;
  RankRecord second = first;
  second.rank = 1;
  second.steps = {{1.75, 0.25}};
  second.collective_seconds = 0.25;
  second.peak_rss_bytes = int64_t{1} << 30;
  second.shard_group_size = 2;
  second.base_bytes = int64_t{5} << 20;
  second.gathers = 6;
  second.gather_bytes = int64_t{12} << 20;
  second.gather_wait_seconds = 0.125;
  second.peak_allocated_bytes = int64_t{3} << 30;
  dist.ranks = {first, second};
  dist.step_skew_seconds = 0.25;
  dist.straggler_rank = 1;
  dist.collective_share = 0.25;
  dist.tokens_per_second = 100.0;
  dist.tokens_per_second_per_device = 50.0;
  r.distributed = dist;
  r.execution = Execution{};
  r.execution->attention_kernel = "flash_attention";
  r.execution->activation_checkpointing = "selective";
  r.execution->fused_blocks = true;
  r.execution->gpu_kernels = true;
  r.execution->checkpointing_choice = CheckpointingChoice{
      70'000'000'000,
      true,
      {{"none", 90'000'000'000}, {"selective", 61'000'000'000}, {"full", 30'000'000'000}}};
  // Steps 1 and 2 profiled: already left out as the warm-up, so none more.
  Profile p;
  p.first_step = 1;
  p.last_step = 2;
  p.trace = "run.profile-trace.json";
  p.ops_table = "run.profile-ops.csv";
  p.kernels_table = "run.profile-kernels.csv";
  p.device_activity = true;
  p.op_self_seconds = 1.5;
  p.kernel_seconds = 2.25;
  p.flops = 1.5e15;
  p.leaf_input_bytes = 123456789;
  p.leaf_calls_without_bytes = 3;
  p.scopes = {{"forward", 2, 0.75, 0.75}, {"backward", 2, 1.5, 1.0}, {"recompute", 16, 0.5, 0.5}};
  p.top_ops = {{"aten::mm", 900, 1.0, 1.4e15}, {"aten::mul", 300, 0.25, 0.0}};
  p.attention_ops = {{"aten::_scaled_dot_product_flash_attention", 64, 0.125, 0.0}};
  r.profile = p;
  return r;
}

// A report as a CPU run without a peak writes it: every optional unset.
Report cpu_report() {
  Report r = full_report();
  r.environment.device.backend = "cpu";
  r.environment.device.memory_bytes.reset();
  r.environment.device.multiprocessor_count.reset();
  r.environment.device.l2_cache_bytes.reset();
  r.environment.device.clock_khz.reset();
  r.environment.device.memory_clock_khz.reset();
  r.environment.device.memory_bus_width_bits.reset();
  r.environment.variables = std::vector<EnvironmentVariable>{};
  r.phases[1].memory = PhaseMemory{};
  r.phases[3].memory =
      PhaseMemory{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 12884901888, 12000000000};
  r.summary.peak_tflops.reset();
  r.summary.peak_source = "none";
  r.summary.gemm_peak_tflops.reset();
  r.summary.gemm_peak_source = "none";
  for (MfuEntry& e : r.summary.mfu) {
    e.mfu.reset();
    e.mfu_gemm.reset();
  }
  r.gemm.reset();
  r.memory = Memory{};
  r.data->validation.reset();
  r.evaluations.clear();
  r.batching = Batching{32, 1, {}};
  Energy none;
  none.reason = "backend cpu: ftbench reads board power on GPUs only";
  none.segment = 2;
  none.interval_seconds = 0.1;
  none.steps = 4;
  none.tokens = 400014;
  r.energy = none;
  return r;
}

// `j` with its summary as its steps make it (metrics::summary_of_steps), for tests that edit the
// steps of a report's JSON: the reader holds every figure the steps determine to them.
OJson with_summary_of_steps(OJson j) {
  Report r;
  const auto number = [](const OJson& v) {
    return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
  };
  for (const OJson& s : j["steps"]) {
    StepRecord st;
    st.wall_seconds = s["wall_seconds"];
    st.data_wait_seconds = s["data_wait_seconds"];
    st.real_tokens = s["real_tokens"];
    st.padded_tokens = s["padded_tokens"];
    st.loss = number(s["loss"]);
    st.model_flops = s["model_flops"];
    st.segment = s.value("segment", int64_t{1});
    r.steps.push_back(st);
  }
  r.world_size = j["run"].value("world_size", int64_t{1});
  r.spec = j["spec"];
  OJson& summary = j["summary"];
  r.summary.warmup_steps_excluded = summary["warmup_steps_excluded"];
  r.summary.loss_window = summary["loss"]["window"];
  const OJson& mfu = summary["mfu"];
  if (mfu["peak_tflops"].is_number()) r.summary.peak_tflops = mfu["peak_tflops"].get<double>();
  if (mfu.contains("gemm_peak_tflops") && mfu["gemm_peak_tflops"].is_number()) {
    r.summary.gemm_peak_tflops = mfu["gemm_peak_tflops"].get<double>();
  }
  for (const OJson& e : mfu["entries"]) {
    r.summary.mfu.push_back({e["formula"], e["recompute"], e["flops_per_step"], 0.0, std::nullopt});
  }
  r.summary = metrics::summary_of_steps(r);
  const OJson computed = to_json(r)["summary"];
  for (const char* key : {"measured_steps", "step_seconds", "tokens_per_second", "padding_fraction",
                          "data_wait_fraction", "loss"}) {
    summary[key] = computed[key];
  }
  for (std::size_t i = 0; i < mfu["entries"].size(); ++i) {
    OJson& e = summary["mfu"]["entries"][i];
    for (const char* key : {"flops_per_step", "achieved_tflops", "mfu", "mfu_gemm"}) {
      if (e.contains(key)) e[key] = computed["mfu"]["entries"][i][key];
    }
  }
  return j;
}

// The message of the ReportError that reading `json` throws; fails the test if none is thrown.
std::string read_error(const OJson& json) {
  try {
    report::from_json(json, "r.json");
  } catch (const ReportError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ReportError";
  return "";
}

// The error a command's reading gives (cli::load_report): the reader, then the summary's
// figures recomputed from the steps (metrics::check_summary_figures).
std::string command_read_error(const OJson& json) {
  try {
    metrics::check_summary_figures(report::from_json(json, "r.json"), "r.json");
  } catch (const ReportError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ReportError";
  return "";
}

std::vector<std::string> keys(const OJson& object) {
  std::vector<std::string> out;
  for (const auto& item : object.items()) out.push_back(item.key());
  return out;
}

TEST(ReportJson, RoundTripEveryFieldSet) {
  const OJson written = to_json(full_report());
  const std::string text = written.dump(2);
  const Report back = report::from_json(OJson::parse(text), "mem.json");
  EXPECT_EQ(to_json(back), written);  // ordered: equal values and equal key order

  EXPECT_EQ(back.working_directory, "/home/user/runs");
  ASSERT_EQ(back.data->files.size(), 1u);
  EXPECT_EQ(back.data->files[0].key, "data.path");
  EXPECT_EQ(back.data->files[0].bytes, 1234);
  EXPECT_EQ(back.environment.device.memory_bytes, 85028569088);
  EXPECT_EQ(back.environment.device.multiprocessor_count, 132);
  EXPECT_EQ(back.summary.peak_tflops, 989.4);
  ASSERT_EQ(back.summary.mfu.size(), 2u);
  EXPECT_TRUE(back.summary.mfu[1].recompute);
  EXPECT_EQ(back.summary.mfu[0].mfu, 342.8571428571429 / (989.4 * 2));
  EXPECT_EQ(back.memory.peak_rss_bytes, 12884901888);
  EXPECT_EQ(back.memory.allocation_retries, 2);
  EXPECT_EQ(back.memory.oom_count, 0);
  EXPECT_EQ(back.environment.device.clock_khz, 1980000);
  EXPECT_EQ(back.environment.software.libtorch_build, "cuda");
  EXPECT_EQ(back.environment.software.container_image, "rocm/pytorch-training:v25.4");
  ASSERT_TRUE(back.environment.variables.has_value());
  ASSERT_EQ(back.environment.variables->size(), 3u);
  EXPECT_EQ((*back.environment.variables)[1].name, "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ((*back.environment.variables)[1].value, "expandable_segments:True");
  EXPECT_FALSE(back.phases[0].memory.has_value());
  ASSERT_TRUE(back.phases[3].memory.has_value());
  EXPECT_EQ(back.phases[3].memory->peak_active_bytes, 60000000000);
  EXPECT_EQ(back.phases[3].memory->rss_at_end_bytes, 12000000000);
  ASSERT_EQ(back.steps.size(), 5u);
  EXPECT_EQ(back.steps[2].lr, full_report().steps[2].lr);  // doubles survive bit for bit
  EXPECT_EQ(back.steps[4].model_flops, 4.8e14 + 5.0);
  EXPECT_EQ(back.spec, full_report().spec);
  EXPECT_EQ(keys(back.spec), (std::vector<std::string>{"run", "model", "lora"}));
}

TEST(ReportJson, RoundTripOptionalsUnset) {
  const OJson written = to_json(cpu_report());
  EXPECT_TRUE(written["environment"]["device"]["memory_bytes"].is_null());
  EXPECT_TRUE(written["environment"]["device"]["multiprocessor_count"].is_null());
  EXPECT_TRUE(written["summary"]["mfu"]["peak_tflops"].is_null());
  EXPECT_TRUE(written["summary"]["mfu"]["entries"][0]["mfu"].is_null());
  for (const auto& item : written["memory"].items()) {
    if (item.key() == "prediction_basis") {
      EXPECT_EQ(item.value(), "");  // a string, "" when unset
    } else {
      EXPECT_TRUE(item.value().is_null()) << item.key();
    }
  }
  EXPECT_TRUE(written["timing"]["phases"][0]["memory"].is_null());
  for (const auto& item : written["timing"]["phases"][1]["memory"].items()) {
    EXPECT_TRUE(item.value().is_null()) << item.key();
  }
  EXPECT_TRUE(written["environment"]["variables"].is_object());
  EXPECT_TRUE(written["environment"]["variables"].empty());

  const Report back = report::from_json(OJson::parse(written.dump(2)), "mem.json");
  EXPECT_EQ(to_json(back), written);
  EXPECT_FALSE(back.environment.device.memory_bytes.has_value());
  EXPECT_FALSE(back.summary.peak_tflops.has_value());
  EXPECT_FALSE(back.summary.mfu[0].mfu.has_value());
  EXPECT_FALSE(back.memory.peak_allocated_bytes.has_value());
  ASSERT_TRUE(back.phases[1].memory.has_value());
  EXPECT_FALSE(back.phases[1].memory->peak_rss_bytes.has_value());
  ASSERT_TRUE(back.environment.variables.has_value());
  EXPECT_TRUE(back.environment.variables->empty());
}

// A profiled step after the warm-up is left out of the timing figures, and the reader holds the
// summary to that.
TEST(ReportJson, ProfiledStepsAreLeftOutOfTheSummary) {
  Report r = full_report();
  r.profile->first_step = 4;
  r.profile->last_step = 4;
  r.summary.profiled_steps_excluded = 1;
  r.summary = metrics::summary_of_steps(r);
  EXPECT_EQ(r.summary.warmup_steps_excluded, 2);
  EXPECT_EQ(r.summary.profiled_steps_excluded, 1);
  EXPECT_EQ(r.summary.measured_steps, 2);
  EXPECT_EQ(r.summary.step_seconds.median, (1.3 + 1.5) / 2);
  const Report back = report::from_json(to_json(r), "mem.json");
  EXPECT_EQ(back.summary.profiled_steps_excluded, 1);
  EXPECT_EQ(back.summary.measured_steps, 2);
  // The same report with the profiled step counted as measured disagrees with its steps.
  OJson edited = to_json(r);
  edited["summary"]["measured_steps"] = 3;
  EXPECT_THROW(report::from_json(edited, "edited.json"), ReportError);
}

TEST(ReportJson, RoundTripThroughUnorderedJson) {
  const OJson written = to_json(full_report());
  const Report back = report::from_json(nlohmann::json::parse(written.dump()), "mem.json");
  EXPECT_EQ(nlohmann::json(to_json(back)), nlohmann::json(written));
}

TEST(ReportJson, LayoutAndKeyOrder) {
  const OJson j = to_json(full_report());
  EXPECT_EQ(keys(j), (std::vector<std::string>{
                         "schema",      "run",         "spec",    "spec_fingerprint", "environment",
                         "data",        "parameters",  "derived", "batching",         "timing",
                         "steps",       "evaluations", "gemm",    "segments",         "checkpoints",
                         "weights",     "exports",     "summary", "memory",           "energy",
                         "distributed", "execution",   "profile"}));
  EXPECT_EQ(keys(j["execution"]),
            (std::vector<std::string>{"attention_kernel", "activation_checkpointing",
                                      "fused_blocks", "checkpointing_choice", "gpu_kernels"}));
  EXPECT_EQ(keys(j["profile"]),
            (std::vector<std::string>{
                "first_step", "last_step", "trace", "ops_table", "kernels_table", "device_activity",
                "op_self_seconds", "kernel_seconds", "flops", "leaf_input_bytes",
                "leaf_calls_without_bytes", "scopes", "top_ops", "attention_ops"}));
  EXPECT_EQ(keys(j["profile"]["scopes"][1]),
            (std::vector<std::string>{"name", "calls", "seconds", "self_seconds"}));
  EXPECT_EQ(keys(j["profile"]["top_ops"][0]),
            (std::vector<std::string>{"name", "calls", "self_seconds", "flops"}));
  EXPECT_EQ(j["schema"], "ftbench.report/1.13");
  EXPECT_EQ(keys(j["distributed"]),
            (std::vector<std::string>{"launch", "backend", "shard_base", "ranks",
                                      "step_skew_seconds", "straggler_rank", "collective_share",
                                      "tokens_per_second", "tokens_per_second_per_device"}));
  EXPECT_EQ(keys(j["distributed"]["ranks"][1]),
            (std::vector<std::string>{"rank", "host", "device", "steps", "collective_seconds",
                                      "collective_bytes", "collective_calls", "peak_rss_bytes",
                                      "shard_group_size", "base_bytes", "gathers", "gather_bytes",
                                      "gather_wait_seconds", "peak_allocated_bytes"}));
  EXPECT_EQ(j["distributed"]["ranks"][1]["steps"][0]["collective_seconds"], 0.25);
  EXPECT_TRUE(j["distributed"]["ranks"][0]["peak_rss_bytes"].is_null());
  EXPECT_TRUE(j["distributed"]["ranks"][0]["base_bytes"].is_null());
  EXPECT_EQ(j["distributed"]["ranks"][1]["gather_wait_seconds"], 0.125);
  EXPECT_EQ(j["distributed"]["shard_base"], "node");
  EXPECT_EQ(keys(j["energy"]),
            (std::vector<std::string>{"reason", "method", "source", "segment", "interval_seconds",
                                      "window_start_seconds", "window_seconds", "steps", "tokens",
                                      "joules", "joules_per_step", "joules_per_million_tokens",
                                      "mean_watts", "peak_watts", "sampled_seconds", "coverage",
                                      "sample_count", "devices"}));
  EXPECT_EQ(keys(j["energy"]["devices"][0]),
            (std::vector<std::string>{"index", "pci_bus_id", "method", "source", "library",
                                      "joules", "sampled_seconds", "mean_watts", "peak_watts",
                                      "samples", "failed_reads", "counter_resets"}));
  EXPECT_EQ(keys(j["run"]), (std::vector<std::string>{"name", "status", "error", "started_at_utc",
                                                      "finished_at_utc", "spec_path",
                                                      "working_directory", "world_size"}));
  EXPECT_EQ(keys(j["data"]),
            (std::vector<std::string>{"source", "examples", "tokens", "loss_tokens", "fingerprint",
                                      "statistics", "validation", "files"}));
  EXPECT_EQ(keys(j["data"]["statistics"]),
            (std::vector<std::string>{"format", "records", "skipped_bad", "dropped_too_long",
                                      "truncated", "mean_length", "p50_length", "p90_length",
                                      "max_length", "masked_fraction"}));
  EXPECT_EQ(keys(j["data"]["validation"]),
            (std::vector<std::string>{"source", "examples", "tokens", "loss_tokens"}));
  EXPECT_EQ(keys(j["evaluations"][0]),
            (std::vector<std::string>{"after_step", "loss", "loss_tokens", "batches", "seconds"}));
  EXPECT_EQ(keys(j["batching"]),
            (std::vector<std::string>{"micro_batch_size", "grad_accum_steps", "fallbacks"}));
  EXPECT_EQ(keys(j["batching"]["fallbacks"][0]),
            (std::vector<std::string>{"step", "from_micro_batch_size", "from_grad_accum_steps",
                                      "to_micro_batch_size", "to_grad_accum_steps", "seconds_lost",
                                      "error"}));
  EXPECT_EQ(keys(j["environment"]),
            (std::vector<std::string>{"host", "device", "software", "variables"}));
  EXPECT_EQ(
      keys(j["environment"]["device"]),
      (std::vector<std::string>{
          "backend", "name", "arch", "count", "index", "memory_bytes", "multiprocessor_count",
          "driver_version", "runtime_version", "l2_cache_bytes", "clock_khz", "memory_clock_khz",
          "memory_bus_width_bits", "pci_bus_id", "kernel_driver_version", "query_error"}));
  EXPECT_EQ(keys(j["environment"]["variables"]),
            (std::vector<std::string>{"CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF",
                                      "OMP_NUM_THREADS"}));
  EXPECT_EQ(keys(j["environment"]["software"]).back(), "container_image");
  EXPECT_EQ(keys(j["timing"]), (std::vector<std::string>{"t0_source", "t0_before_process_seconds",
                                                         "time_to_first_step_seconds", "phases",
                                                         "total_run_seconds"}));
  EXPECT_EQ(j["timing"]["total_run_seconds"], 100.5);
  EXPECT_EQ(keys(j["timing"]["phases"][0]),
            (std::vector<std::string>{"name", "start_seconds", "seconds", "memory"}));
  EXPECT_TRUE(j["timing"]["phases"][0]["memory"].is_null());
  EXPECT_EQ(
      keys(j["timing"]["phases"][1]["memory"]),
      (std::vector<std::string>{"peak_allocated_bytes", "peak_reserved_bytes", "peak_active_bytes",
                                "device_used_peak_bytes", "peak_rss_bytes", "rss_at_end_bytes"}));
  EXPECT_EQ(keys(j["steps"][0]),
            (std::vector<std::string>{"step", "epoch", "wall_seconds", "data_wait_seconds",
                                      "real_tokens", "padded_tokens", "loss_tokens", "loss", "lr",
                                      "grad_norm", "model_flops", "segment"}));
  EXPECT_EQ(keys(j["segments"][0]),
            (std::vector<std::string>{"index", "status", "started_at_utc", "finished_at_utc",
                                      "first_step", "last_step", "run_seconds",
                                      "time_to_first_step_seconds", "resumed_from",
                                      "discarded_steps", "intra_op_threads"}));
  EXPECT_TRUE(j["segments"][0]["resumed_from"].is_null());
  EXPECT_EQ(j["segments"][1]["resumed_from"], "checkpoints/x/step-00000001");
  EXPECT_EQ(keys(j["checkpoints"][0]),
            (std::vector<std::string>{"step", "segment", "reason", "path", "bytes", "seconds"}));
  EXPECT_EQ(keys(j["weights"]),
            (std::vector<std::string>{"source", "path", "format", "files", "tensors", "bytes",
                                      "seconds", "bytes_per_second", "fingerprint"}));
  EXPECT_EQ(j["weights"]["bytes"], 16060522496);
  EXPECT_EQ(keys(j["exports"][1]),
            (std::vector<std::string>{"kind", "path", "tensors", "bytes", "seconds"}));
  EXPECT_EQ(j["exports"][1]["kind"], "merged");
  EXPECT_EQ(keys(j["summary"]),
            (std::vector<std::string>{"warmup_steps_excluded", "profiled_steps_excluded",
                                      "measured_steps", "step_seconds", "tokens_per_second",
                                      "padding_fraction", "data_wait_fraction", "mfu", "loss"}));
  EXPECT_EQ(keys(j["summary"]["step_seconds"]),
            (std::vector<std::string>{"count", "mean", "median", "p90", "p99", "min", "max",
                                      "stddev", "cv"}));
  EXPECT_EQ(keys(j["summary"]["mfu"]),
            (std::vector<std::string>{"peak_tflops", "peak_source", "gemm_peak_tflops",
                                      "gemm_peak_source", "entries"}));
  EXPECT_EQ(keys(j["summary"]["mfu"]["entries"][0]),
            (std::vector<std::string>{"formula", "recompute", "flops_per_step", "achieved_tflops",
                                      "mfu", "mfu_gemm"}));
  EXPECT_EQ(keys(j["gemm"]),
            (std::vector<std::string>{"source", "device_name", "backend", "libtorch_version",
                                      "measured_at_utc", "dtypes"}));
  EXPECT_EQ(keys(j["gemm"]["dtypes"][0]),
            (std::vector<std::string>{"dtype", "max_tflops", "median_tflops", "best_m", "best_n",
                                      "best_k"}));
  EXPECT_EQ(keys(j["summary"]["loss"]), (std::vector<std::string>{"final", "window", "mean_last"}));
  EXPECT_EQ(keys(j["memory"]),
            (std::vector<std::string>{"peak_allocated_bytes", "peak_reserved_bytes",
                                      "device_used_peak_bytes", "device_total_bytes",
                                      "peak_rss_bytes", "peak_active_bytes", "allocation_retries",
                                      "oom_count", "predicted_peak_bytes", "prediction_basis"}));
  EXPECT_TRUE(j["parameters"]["base"].is_number_integer());
  EXPECT_TRUE(j["steps"][0]["wall_seconds"].is_number_float());
}

TEST(ReportJson, DivergedLossesReadBackAsNan) {
  Report r = full_report();
  r.steps[1].loss = std::numeric_limits<double>::quiet_NaN();
  r.steps[1].grad_norm = std::numeric_limits<double>::infinity();
  r.steps[4].loss = std::numeric_limits<double>::quiet_NaN();
  r.summary = metrics::summary_of_steps(r);
  const Report back = report::from_json(nlohmann::json::parse(to_json(r).dump()), "diverged.json");
  EXPECT_TRUE(std::isnan(back.steps[1].loss));
  EXPECT_TRUE(std::isnan(back.steps[1].grad_norm));
  EXPECT_TRUE(std::isnan(back.summary.final_loss));
  EXPECT_EQ(back.steps[0].loss, r.steps[0].loss);
}

TEST(ReportJson, NonFiniteDoublesAreWrittenAsNull) {
  Report r = full_report();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  r.summary.peak_tflops = inf;
  r.summary.mfu[0].mfu = nan;
  r.summary.mfu[1].achieved_tflops = -inf;
  r.steps[1].loss = nan;
  r.steps[1].grad_norm = inf;
  r.summary.step_seconds.cv = nan;
  const OJson j = to_json(r);
  EXPECT_TRUE(j["summary"]["mfu"]["peak_tflops"].is_null());
  EXPECT_TRUE(j["summary"]["mfu"]["entries"][0]["mfu"].is_null());
  EXPECT_TRUE(j["summary"]["mfu"]["entries"][1]["achieved_tflops"].is_null());
  EXPECT_TRUE(j["steps"][1]["loss"].is_null());
  EXPECT_TRUE(j["steps"][1]["grad_norm"].is_null());
  EXPECT_TRUE(j["summary"]["step_seconds"]["cv"].is_null());

  const std::string text = j.dump(2);
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  EXPECT_EQ(text.find("nan"), std::string::npos);
  EXPECT_EQ(text.find("inf"), std::string::npos);
  // Still valid JSON for any strict parser.
  EXPECT_TRUE(nlohmann::json::accept(text));
}

// The version is written out literally: a bump of kSchema must come with this test's (and
// docs/report-schema.md's) new number. Whatever version a report was read as, older or newer,
// the writer writes its own.
TEST(ReportJson, ToJsonWritesItsOwnSchemaVersion) {
  for (const char* read_as : {"ftbench.report/1", "ftbench.report/1.1", "ftbench.report/1.99"}) {
    Report r = full_report();
    r.schema = read_as;
    const OJson j = to_json(r);
    EXPECT_EQ(j["schema"], "ftbench.report/1.13") << read_as;
    EXPECT_EQ(j.begin().key(), "schema") << "the schema comes first";
  }
}

// A 1.0 report has neither run.world_size nor data: both read as their defaults.
TEST(ReportJson, ReadsVersionOneWithoutTheFieldsOfOnePointOne) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1";
  j["run"].erase("world_size");
  j = with_summary_of_steps(j);  // MFU over one device
  j.erase("data");
  const Report r = report::from_json(j, "old.json");
  EXPECT_EQ(r.world_size, 1);
  EXPECT_FALSE(r.data.has_value());
  j["data"] = nullptr;
  EXPECT_FALSE(report::from_json(j, "old.json").data.has_value());
}

// A 1.1 report has none of the device, memory and environment fields of 1.2: all read as
// unknown / not recorded.
TEST(ReportJson, ReadsOnePointOneWithoutTheFieldsOfOnePointTwo) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1.1";
  for (const char* key :
       {"l2_cache_bytes", "clock_khz", "memory_clock_khz", "memory_bus_width_bits", "pci_bus_id",
        "kernel_driver_version", "query_error"}) {
    j["environment"]["device"].erase(key);
  }
  j["environment"]["software"].erase("libtorch_build");
  j["environment"].erase("variables");
  for (auto& phase : j["timing"]["phases"]) phase.erase("memory");
  for (const char* key : {"peak_active_bytes", "allocation_retries", "oom_count"}) {
    j["memory"].erase(key);
  }
  const Report r = report::from_json(j, "old.json");
  EXPECT_FALSE(r.environment.device.l2_cache_bytes.has_value());
  EXPECT_EQ(r.environment.device.pci_bus_id, "");
  EXPECT_EQ(r.environment.software.libtorch_build, "");
  EXPECT_FALSE(r.environment.variables.has_value());
  for (const Phase& p : r.phases) EXPECT_FALSE(p.memory.has_value()) << p.name;
  EXPECT_FALSE(r.memory.allocation_retries.has_value());
  EXPECT_EQ(r.memory.peak_rss_bytes, 12884901888);
}

// A 1.5 report has no environment.software.container_image: read as not recorded. Present, it
// must be a string.
TEST(ReportJson, ReadsOnePointFiveWithoutTheContainerImage) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1.5";
  j["environment"]["software"].erase("container_image");
  EXPECT_EQ(report::from_json(j, "old.json").environment.software.container_image, "");
  j["environment"]["software"]["container_image"] = nullptr;
  EXPECT_EQ(read_error(j),
            "r.json: environment.software.container_image: expected a string, found null");
  // A hand-made report cannot carry what a run would not record.
  j["environment"]["software"]["container_image"] = "https://u:TOKEN@registry/x:1";
  EXPECT_EQ(read_error(j),
            "r.json: environment.software.container_image: expected a container image "
            "reference such as rocm/pytorch-training:v25.6, found "
            "\"https://u:TOKEN@registry/x:1\" (a URL, not an image reference)");
}

// Fields added in minor versions, now read through the report's field list: absent, each keeps
// its documented default (a step of segment 1, no gemm peak, world size 1); present, each is
// checked.
TEST(ReportJson, ReadsFieldsOlderVersionsLackAsTheirDefaults) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1.0";
  j["run"].erase("world_size");
  for (auto& step : j["steps"]) step.erase("segment");
  j = with_summary_of_steps(j);  // MFU over one device, the warm-up of one segment
  j["summary"]["mfu"].erase("gemm_peak_tflops");
  j["summary"]["mfu"].erase("gemm_peak_source");
  for (auto& entry : j["summary"]["mfu"]["entries"]) entry.erase("mfu_gemm");
  for (const char* key :
       {"evaluations", "segments", "checkpoints", "exports", "weights", "energy"}) {
    j.erase(key);
  }
  j["timing"].erase("total_run_seconds");
  j["distributed"].erase("shard_base");
  for (auto& rank : j["distributed"]["ranks"]) {
    for (const char* key : {"shard_group_size", "base_bytes", "gathers", "gather_bytes",
                            "gather_wait_seconds", "peak_allocated_bytes"}) {
      rank.erase(key);
    }
  }
  const Report r = report::from_json(j, "old.json");
  ASSERT_TRUE(r.distributed.has_value());
  EXPECT_EQ(r.distributed->shard_base, "none");
  EXPECT_EQ(r.distributed->ranks[1].shard_group_size, 1);
  EXPECT_FALSE(r.distributed->ranks[1].base_bytes.has_value());
  EXPECT_EQ(r.distributed->ranks[1].gathers, 0);
  EXPECT_EQ(r.distributed->ranks[1].gather_bytes, 0);
  EXPECT_EQ(r.distributed->ranks[1].gather_wait_seconds, 0.0);
  EXPECT_FALSE(r.distributed->ranks[1].peak_allocated_bytes.has_value());
  EXPECT_EQ(r.world_size, 1);
  ASSERT_FALSE(r.steps.empty());
  for (const StepRecord& s : r.steps) EXPECT_EQ(s.segment, 1) << s.step;
  EXPECT_FALSE(r.summary.gemm_peak_tflops.has_value());
  EXPECT_EQ(r.summary.gemm_peak_source, "none");
  for (const MfuEntry& e : r.summary.mfu) EXPECT_FALSE(e.mfu_gemm.has_value()) << e.formula;
  EXPECT_TRUE(r.segments.empty());
  EXPECT_FALSE(r.weights.has_value());

  j = to_json(full_report());
  j["steps"][2]["segment"] = 0;
  EXPECT_EQ(read_error(j), "r.json: steps[2].segment: expected an integer >= 1, found 0");
  j = to_json(full_report());
  j["summary"]["tokens_per_second"]["padded"] = -1.0;
  EXPECT_EQ(read_error(j),
            "r.json: summary.tokens_per_second.padded: expected a number >= 0, found -1.0");
  j = to_json(full_report());
  j["distributed"]["ranks"][1]["shard_group_size"] = 0;
  EXPECT_EQ(read_error(j),
            "r.json: distributed.ranks[1].shard_group_size: expected an integer >= 1, found 0");
  j = to_json(full_report());
  j["distributed"]["ranks"][1]["gather_wait_seconds"] = -0.5;
  EXPECT_EQ(read_error(j),
            "r.json: distributed.ranks[1].gather_wait_seconds: expected a number >= 0, found -0.5");
  j = to_json(full_report());
  j["summary"]["mfu"]["entries"][0]["recompute"] = "no";
  EXPECT_EQ(read_error(j),
            "r.json: summary.mfu.entries[0].recompute: expected a boolean, found string");
}

// timing.total_run_seconds is the segments' run_seconds together (100.5 in full_report): a
// report that says otherwise, or gives it without segments, is refused; absent, it is fine.
TEST(ReportJson, TotalRunSecondsMustBeTheSegmentsTogether) {
  OJson j = to_json(full_report());
  j["timing"]["total_run_seconds"] = -10;
  EXPECT_EQ(read_error(j),
            "r.json: timing.total_run_seconds: expected the segments' run_seconds together "
            "(100.5), found -10");
  j["timing"]["total_run_seconds"] = "100.5";
  EXPECT_EQ(read_error(j),
            "r.json: timing.total_run_seconds: expected a number or null, found string");
  j["timing"]["total_run_seconds"] = nullptr;
  EXPECT_EQ(read_error(j),
            "r.json: timing.total_run_seconds: expected the segments' run_seconds together "
            "(100.5), found null");
  j["timing"].erase("total_run_seconds");
  EXPECT_NO_THROW(report::from_json(j, "r.json"));
  j = to_json(full_report());
  j.erase("segments");
  j.erase("checkpoints");
  j.erase("energy");
  for (auto& step : j["steps"]) step.erase("segment");
  EXPECT_EQ(read_error(j),
            "r.json: timing.total_run_seconds: expected null (the report has no segments), found "
            "100.5");
}

TEST(ReportJson, RejectsBadOnePointTwoFields) {
  OJson j = to_json(full_report());
  j["environment"]["variables"]["OMP_NUM_THREADS"] = 16;
  EXPECT_EQ(read_error(j),
            "r.json: environment.variables.OMP_NUM_THREADS: expected a string, found number");
  j = to_json(full_report());
  j["timing"]["phases"][1]["memory"]["peak_rss_bytes"] = "a lot";
  EXPECT_EQ(read_error(j),
            "r.json: timing.phases[1].memory.peak_rss_bytes: expected an integer or null, found "
            "string");
  j = to_json(full_report());
  j["timing"]["phases"][1]["memory"] = 5;
  EXPECT_EQ(read_error(j), "r.json: timing.phases[1].memory: expected an object, found number");
}

// The partial report a periodic checkpoint carries says run.status "unfinished" (the run went on
// after the save). A run's report may not; a checkpoint's may, so that a run killed without
// notice after the save resumes from it (issue 39, item 1). Anything else is refused in both.
TEST(ReportJson, OnlyACheckpointsReportMayBeUnfinished) {
  nlohmann::ordered_json j = to_json(full_report());
  j["run"]["status"] = "unfinished";
  j["derived"]["total_steps"] = 8;
  EXPECT_EQ(read_error(j),
            "r.json: run.status: expected one of completed, interrupted, diverged, failed, found "
            "\"unfinished\"");
  const Report r = report::checkpoint_report_from_json(j, "r.json");
  EXPECT_EQ(r.status, "unfinished");
  EXPECT_EQ(r.steps.size(), 5u);
  j["run"]["status"] = "lost";
  try {
    report::checkpoint_report_from_json(j, "ck/checkpoint.json (report)");
    ADD_FAILURE() << "accepted run.status \"lost\"";
  } catch (const report::ReportError& e) {
    EXPECT_STREQ(e.what(),
                 "ck/checkpoint.json (report): run.status: expected one of completed, "
                 "interrupted, diverged, failed, unfinished, found \"lost\"");
  }
}

TEST(ReportJson, RoundTripsEvaluationsAndDataStatistics) {
  const Report back = report::from_json(OJson::parse(to_json(full_report()).dump(2)), "mem.json");
  ASSERT_EQ(back.evaluations.size(), 2u);
  EXPECT_EQ(back.evaluations[0].after_step, 3);
  EXPECT_EQ(back.evaluations[0].loss, 2.2341);
  EXPECT_EQ(back.evaluations[1].loss_tokens, 17001);
  EXPECT_EQ(back.evaluations[1].batches, 25);
  EXPECT_EQ(back.evaluations[1].seconds, 4.25);
  ASSERT_TRUE(back.data->statistics.has_value());
  EXPECT_EQ(back.data->statistics->format, "alpaca");
  EXPECT_EQ(back.data->statistics->records, 2107);
  EXPECT_EQ(back.data->statistics->truncated, 11);
  EXPECT_EQ(back.data->statistics->p90_length, 612.9);
  EXPECT_EQ(back.data->statistics->masked_fraction, 0.49913);
  ASSERT_TRUE(back.data->validation.has_value());
  EXPECT_EQ(back.data->validation->examples, 100);
  EXPECT_EQ(back.data->validation->loss_tokens, 17001);

  // Without validation data: `validation` null, `evaluations` empty, both round trip.
  const OJson cpu = to_json(cpu_report());
  EXPECT_TRUE(cpu["data"]["validation"].is_null());
  EXPECT_TRUE(cpu["evaluations"].is_array());
  EXPECT_TRUE(cpu["evaluations"].empty());
  const Report cpu_back = report::from_json(cpu, "cpu.json");
  EXPECT_FALSE(cpu_back.data->validation.has_value());
  EXPECT_TRUE(cpu_back.evaluations.empty());
  EXPECT_EQ(to_json(cpu_back), cpu);

  // A diverged validation pass writes null and reads back as NaN.
  Report diverged = full_report();
  diverged.evaluations[1].loss = std::numeric_limits<double>::infinity();
  const OJson dj = to_json(diverged);
  EXPECT_TRUE(dj["evaluations"][1]["loss"].is_null());
  EXPECT_TRUE(std::isnan(report::from_json(dj, "d.json").evaluations[1].loss));
}

// Reports written before evaluations and data statistics existed (still 1.1) read as "none".
TEST(ReportJson, ReadsReportsWithoutEvaluationsOrDataStatistics) {
  OJson j = to_json(full_report());
  j.erase("evaluations");
  j["data"].erase("statistics");
  j["data"].erase("validation");
  const Report r = report::from_json(j, "older.json");
  EXPECT_TRUE(r.evaluations.empty());
  ASSERT_TRUE(r.data.has_value());
  EXPECT_FALSE(r.data->statistics.has_value());
  EXPECT_FALSE(r.data->validation.has_value());
  EXPECT_EQ(r.data->examples, 2000);
  j["data"]["statistics"] = nullptr;
  EXPECT_FALSE(report::from_json(j, "older.json").data->statistics.has_value());
}

TEST(ReportJson, RoundTripsBatchingAndOutOfMemoryFallbacks) {
  const Report back = report::from_json(OJson::parse(to_json(full_report()).dump(2)), "mem.json");
  ASSERT_TRUE(back.batching.has_value());
  EXPECT_EQ(back.batching->micro_batch_size, 2);
  EXPECT_EQ(back.batching->grad_accum_steps, 16);
  ASSERT_EQ(back.batching->fallbacks.size(), 2u);
  const Fallback& f = back.batching->fallbacks[1];
  EXPECT_EQ(f.step, 1);
  EXPECT_EQ(f.from_micro_batch_size, 4);
  EXPECT_EQ(f.from_grad_accum_steps, 8);
  EXPECT_EQ(f.to_micro_batch_size, 2);
  EXPECT_EQ(f.to_grad_accum_steps, 16);
  EXPECT_EQ(f.seconds_lost, 6.25);
  EXPECT_EQ(f.error, "CUDA out of memory. Tried to allocate 1.00 GiB");
  // A run that never ran out of memory: an empty list.
  const OJson cpu = to_json(cpu_report());
  EXPECT_TRUE(cpu["batching"]["fallbacks"].is_array());
  EXPECT_TRUE(cpu["batching"]["fallbacks"].empty());
  EXPECT_TRUE(report::from_json(cpu, "cpu.json").batching->fallbacks.empty());
}

// Reports written before 1.2 have no `batching`: not recorded, which is not "no fallback".
TEST(ReportJson, ReadsReportsWithoutBatchingAsNotRecorded) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1.1";
  j.erase("batching");
  EXPECT_FALSE(report::from_json(j, "older.json").batching.has_value());
  j["batching"] = nullptr;
  EXPECT_FALSE(report::from_json(j, "older.json").batching.has_value());
  Report unset = full_report();
  unset.batching.reset();
  EXPECT_TRUE(to_json(unset)["batching"].is_null());
}

TEST(ReportJson, RejectsBadBatching) {
  OJson j = to_json(full_report());
  j["batching"] = "2x8";
  EXPECT_EQ(read_error(j), "r.json: batching: expected an object, found string");
  j = to_json(full_report());
  j["batching"]["fallbacks"][1]["seconds_lost"] = -1;
  EXPECT_EQ(read_error(j),
            "r.json: batching.fallbacks[1].seconds_lost: expected a number >= 0, found -1");
  j = to_json(full_report());
  j["batching"]["fallbacks"][0].erase("to_micro_batch_size");
  EXPECT_EQ(read_error(j),
            "r.json: missing required field \"batching.fallbacks[0].to_micro_batch_size\"");
  j = to_json(full_report());
  j["batching"].erase("micro_batch_size");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"batching.micro_batch_size\"");
}

TEST(ReportJson, RoundTripsTheMeasuredGemmPeak) {
  const Report back = report::from_json(OJson::parse(to_json(full_report()).dump(2)), "mem.json");
  ASSERT_TRUE(back.gemm.has_value());
  EXPECT_EQ(back.gemm->source, "h100-gemm.json");
  EXPECT_EQ(back.gemm->device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(back.gemm->measured_at_utc, "2024-05-01T11:00:00.000Z");
  ASSERT_EQ(back.gemm->dtypes.size(), 2u);
  EXPECT_EQ(back.gemm->dtypes[1].dtype, "fp32");
  EXPECT_EQ(back.gemm->dtypes[1].max_tflops, 51.5);
  EXPECT_EQ(back.gemm->dtypes[1].best_n, 4096);
  EXPECT_EQ(back.gemm->dtypes[1].best_k, 14336);
  EXPECT_EQ(back.summary.gemm_peak_tflops, 719.8);
  EXPECT_EQ(back.summary.gemm_peak_source, "gemm file: h100-gemm.json bf16 8192x8192x8192");
  EXPECT_EQ(back.summary.mfu[1].mfu_gemm, 457.14285714285717 / (719.8 * 2));

  // Without --gemm: `gemm` null, the peak null with source "none", every mfu_gemm null.
  const OJson cpu = to_json(cpu_report());
  EXPECT_TRUE(cpu["gemm"].is_null());
  EXPECT_TRUE(cpu["summary"]["mfu"]["gemm_peak_tflops"].is_null());
  EXPECT_EQ(cpu["summary"]["mfu"]["gemm_peak_source"], "none");
  EXPECT_TRUE(cpu["summary"]["mfu"]["entries"][0]["mfu_gemm"].is_null());
  EXPECT_FALSE(report::from_json(cpu, "cpu.json").gemm.has_value());
}

// Reports written before 1.2 have no gemm, gemm peak or mfu_gemm: read as none.
TEST(ReportJson, ReadsReportsWithoutTheMeasuredGemmPeak) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1.1";
  j.erase("gemm");
  j["summary"]["mfu"].erase("gemm_peak_tflops");
  j["summary"]["mfu"].erase("gemm_peak_source");
  for (auto& e : j["summary"]["mfu"]["entries"]) e.erase("mfu_gemm");
  const Report r = report::from_json(j, "older.json");
  EXPECT_FALSE(r.gemm.has_value());
  EXPECT_FALSE(r.summary.gemm_peak_tflops.has_value());
  EXPECT_EQ(r.summary.gemm_peak_source, "none");
  EXPECT_FALSE(r.summary.mfu[0].mfu_gemm.has_value());
  EXPECT_EQ(r.summary.mfu[0].mfu, 342.8571428571429 / (989.4 * 2));
}

TEST(ReportJson, RejectsABadMeasuredGemm) {
  OJson j = to_json(full_report());
  j["gemm"]["dtypes"][1]["max_tflops"] = -3;
  EXPECT_EQ(read_error(j), "r.json: gemm.dtypes[1].max_tflops: expected a number >= 0, found -3");
  j = to_json(full_report());
  j["gemm"].erase("device_name");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"gemm.device_name\"");
  j = to_json(full_report());
  j["summary"]["mfu"]["gemm_peak_tflops"] = "fast";
  EXPECT_EQ(read_error(j),
            "r.json: summary.mfu.gemm_peak_tflops: expected a number or null, found string");
}

TEST(ReportJson, EnvironmentAloneRoundTrips) {
  const Environment env = full_report().environment;
  const OJson j = to_json(env);
  // Compared as unordered JSON: the reader's json sorts `variables` by name.
  const nlohmann::json back = nlohmann::json::parse(
      to_json(environment_from_json(nlohmann::json::parse(j.dump()), "g.json")).dump());
  EXPECT_EQ(back, nlohmann::json::parse(j.dump()));
  nlohmann::json bad = nlohmann::json::parse(j.dump());
  bad["device"].erase("arch");
  try {
    environment_from_json(bad, "g.json");
    ADD_FAILURE() << "no ReportError";
  } catch (const ReportError& e) {
    EXPECT_STREQ(e.what(), "g.json: missing required field \"environment.device.arch\"");
  }
}

TEST(ReportJson, RejectsBadEvaluationsOrStatistics) {
  OJson j = to_json(full_report());
  j["evaluations"] = 3;
  EXPECT_EQ(read_error(j), "r.json: evaluations: expected an array, found number");
  j = to_json(full_report());
  j["evaluations"][1]["seconds"] = -1;
  EXPECT_EQ(read_error(j), "r.json: evaluations[1].seconds: expected a number >= 0, found -1");
  j = to_json(full_report());
  j["evaluations"][0].erase("after_step");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"evaluations[0].after_step\"");
  j = to_json(full_report());
  j["data"]["statistics"].erase("max_length");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"data.statistics.max_length\"");
  j = to_json(full_report());
  j["data"]["validation"]["examples"] = "many";
  EXPECT_EQ(read_error(j), "r.json: data.validation.examples: expected an integer, found string");
}

TEST(ReportJson, RejectsABadWorldSizeOrDataObject) {
  OJson j = to_json(full_report());
  j["run"]["world_size"] = 0;
  EXPECT_EQ(read_error(j),
            "r.json: run.world_size: expected an integer between 1 and 65536, found 0");
  // What billing accepts (cost::kMaxGpus): a larger count is the report's fault, named so.
  j["run"]["world_size"] = int64_t{2147483648};
  EXPECT_EQ(read_error(j),
            "r.json: run.world_size: expected an integer between 1 and 65536, found 2147483648");
  j["run"]["world_size"] = 65536;
  EXPECT_NO_THROW(report::from_json(with_summary_of_steps(j), "r.json"));
  j = to_json(full_report());
  j["data"].erase("fingerprint");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"data.fingerprint\"");
  j = to_json(full_report());
  j["data"] = 3;
  EXPECT_EQ(read_error(j), "r.json: data: expected an object, found number");
}

// Negative durations and counts, and counts whose sums could overflow, are not a report.
TEST(ReportJson, RejectsNegativeDurationsAndCounts) {
  OJson j = to_json(full_report());
  j["steps"][0]["wall_seconds"] = -1;
  EXPECT_EQ(read_error(j), "r.json: steps[0].wall_seconds: expected a number >= 0, found -1");
  j = to_json(full_report());
  j["timing"]["t0_before_process_seconds"] = -500.5;
  EXPECT_EQ(read_error(j),
            "r.json: timing.t0_before_process_seconds: expected a number >= 0, found -500.5");
  j = to_json(full_report());
  j["derived"]["steps_per_epoch"] = -5;
  EXPECT_EQ(read_error(j),
            "r.json: derived.steps_per_epoch: expected an integer between 0 and 10^15, found -5");
  j = to_json(full_report());
  j["steps"][0]["real_tokens"] = int64_t{9'000'000'000'000'000'000};
  EXPECT_EQ(read_error(j),
            "r.json: steps[0].real_tokens: expected an integer between 0 and 10^15, found "
            "9000000000000000000");
  j = to_json(full_report());
  j["summary"]["tokens_per_second"]["real"] = -5;
  EXPECT_EQ(read_error(j),
            "r.json: summary.tokens_per_second.real: expected a number >= 0, found -5");
}

// ---------------------------------------------------------------------------------------------
// Consistency: a report whose figures cannot all be true is refused, naming the field, so that
// cost and compare never print a figure from it (docs/report-schema.md, Consistency).

// full_report() as one process wrote it before segments existed (a 1.2 report).
OJson one_process_json() {
  OJson j = to_json(full_report());
  j.erase("segments");
  j.erase("checkpoints");
  j.erase("energy");
  for (OJson& step : j["steps"]) step.erase("segment");
  j["timing"]["total_run_seconds"] = nullptr;  // as written without segments
  // The run: t0 1.25 s before the process, whose last phase ends at 47 + 1800 s.
  j["timing"]["phases"][3]["seconds"] = 1800.0;
  return j;
}

// A key of the report's own (an environment variable's name) in an error is escaped: the
// message must not drive the terminal either.
TEST(ReportJson, ErrorsQuoteKeysFromTheFileEscaped) {
  OJson j = to_json(full_report());
  j["environment"]["variables"]["X\x1B[2J"] = 5;
  EXPECT_EQ(read_error(j),
            "r.json: environment.variables.X\\x1B[2J: expected a string, found number");
  j = to_json(full_report());
  j["schema"] = "ftbench.report/2\xC2\x9B";
  EXPECT_EQ(read_error(j),
            "r.json: unsupported report schema \"ftbench.report/2\\u009B\" (this ftbench reads "
            "ftbench.report/1)");
}

TEST(ReportConsistency, TheTestReportsAreConsistent) {
  EXPECT_NO_THROW(report::from_json(to_json(full_report()), "r.json"));
  EXPECT_NO_THROW(report::from_json(to_json(cpu_report()), "r.json"));
  EXPECT_NO_THROW(report::from_json(one_process_json(), "r.json"));
}

// The issue's report: 15 hours of steps in an 18-minute run.
TEST(ReportConsistency, StepsCannotTakeLongerThanTheRun) {
  OJson j = one_process_json();
  for (OJson& step : j["steps"]) step["wall_seconds"] = 400.0;
  EXPECT_EQ(read_error(j),
            "r.json: steps[].wall_seconds: the steps add up to 2000 s, more than the run's "
            "1848.25 s (timing.t0_before_process_seconds + the end of the last of "
            "timing.phases)");
  // Measured on the same clock: within 1 ms (and a millionth) is the same.
  for (OJson& step : j["steps"]) step["wall_seconds"] = 369.65 + 0.0001;
  EXPECT_NO_THROW(report::from_json(with_summary_of_steps(j), "r.json"));
  j = one_process_json();
  j["timing"]["time_to_first_step_seconds"] = 5000.0;
  EXPECT_EQ(read_error(j),
            "r.json: timing.time_to_first_step_seconds: expected at most the run's 1848.25 s "
            "(timing.t0_before_process_seconds + the end of the last of timing.phases), found "
            "5000");
}

TEST(ReportConsistency, StepsCannotTakeLongerThanTheirSegment) {
  OJson j = to_json(full_report());
  for (std::size_t i = 1; i < 5; ++i) j["steps"][i]["wall_seconds"] = 10.25;
  EXPECT_EQ(read_error(j),
            "r.json: steps[].wall_seconds: the steps of segment 2 add up to 41 s, more than its "
            "40 s (segments[1].run_seconds)");
  for (std::size_t i = 1; i < 5; ++i) j["steps"][i]["wall_seconds"] = 10.0002;
  EXPECT_NO_THROW(report::from_json(with_summary_of_steps(j), "r.json"));
  j = to_json(full_report());
  j["segments"][0]["time_to_first_step_seconds"] = 70.0;
  EXPECT_EQ(read_error(j),
            "r.json: segments[0].time_to_first_step_seconds: expected at most its run_seconds "
            "60.5, found 70");
}

TEST(ReportConsistency, DurationsMustBePlausible) {
  OJson j = to_json(full_report());
  j["steps"][1]["wall_seconds"] = 1e300;
  EXPECT_EQ(read_error(j),
            "r.json: steps[1].wall_seconds: expected at most 31622400 s (366 days), found "
            "1e+300");
  // ftbench run refuses an external start more than 30 days before the process.
  j = to_json(full_report());
  j["timing"]["t0_before_process_seconds"] = 1e300;
  EXPECT_EQ(read_error(j),
            "r.json: timing.t0_before_process_seconds: expected at most 2592000 s (30 days), "
            "found 1e+300");
  j["timing"]["t0_before_process_seconds"] = 2592000.5;
  EXPECT_EQ(read_error(j),
            "r.json: timing.t0_before_process_seconds: expected at most 2592000 s (30 days), "
            "found 2592000.5");
  j = to_json(full_report());
  j["timing"]["phases"][2]["start_seconds"] = 3e7;
  j["timing"]["phases"][2]["seconds"] = 3e7;
  EXPECT_EQ(read_error(j),
            "r.json: timing.phases[2]: start_seconds + seconds = 60000000 s, more than 366 "
            "days (31622400 s)");
  const std::vector<std::pair<std::vector<std::string>, std::string>> durations = {
      {{"timing", "time_to_first_step_seconds"}, "timing.time_to_first_step_seconds"},
      {{"steps", "2", "data_wait_seconds"}, "steps[2].data_wait_seconds"},
      {{"evaluations", "0", "seconds"}, "evaluations[0].seconds"},
      {{"segments", "1", "run_seconds"}, "segments[1].run_seconds"},
      {{"checkpoints", "0", "seconds"}, "checkpoints[0].seconds"},
      {{"weights", "seconds"}, "weights.seconds"},
      {{"exports", "1", "seconds"}, "exports[1].seconds"},
      {{"batching", "fallbacks", "0", "seconds_lost"}, "batching.fallbacks[0].seconds_lost"},
      {{"summary", "step_seconds", "p99"}, "summary.step_seconds.p99"},
  };
  for (const auto& [keys, path] : durations) {
    j = to_json(full_report());
    OJson* v = &j;
    for (const std::string& k : keys) {
      v = v->is_array() ? &(*v)[static_cast<std::size_t>(std::stoul(k))] : &(*v)[k];
    }
    *v = 4e7;
    EXPECT_EQ(read_error(j),
              "r.json: " + path + ": expected at most 31622400 s (366 days), found 40000000");
  }
}

TEST(ReportConsistency, CountsCannotBeNegative) {
  for (const char* key : {"base", "trainable", "total"}) {
    OJson j = to_json(full_report());
    j["parameters"][key] = -5;
    EXPECT_EQ(read_error(j), std::string("r.json: parameters.") + key +
                                 ": expected an integer between 0 and 10^15, found -5");
  }
  for (const char* key : {"examples", "tokens", "loss_tokens"}) {
    OJson j = to_json(full_report());
    j["data"][key] = -1;
    EXPECT_EQ(read_error(j), std::string("r.json: data.") + key +
                                 ": expected an integer between 0 and 10^15, found -1");
  }
  OJson j = to_json(full_report());
  j["memory"]["peak_rss_bytes"] = -1;
  EXPECT_EQ(read_error(j),
            "r.json: memory.peak_rss_bytes: expected an integer between 0 and 10^15, found -1");
  j = to_json(full_report());
  j["timing"]["phases"][1]["memory"]["peak_reserved_bytes"] = -2;
  EXPECT_EQ(read_error(j),
            "r.json: timing.phases[1].memory.peak_reserved_bytes: expected an integer between 0 "
            "and 10^15, found -2");
  j = to_json(full_report());
  j["environment"]["device"]["count"] = -1;
  EXPECT_EQ(read_error(j),
            "r.json: environment.device.count: expected an integer between 0 and 10^15, found "
            "-1");
}

TEST(ReportConsistency, PartsCannotExceedTheirWhole) {
  OJson j = to_json(full_report());
  j["parameters"]["total"] = 8072204289;
  EXPECT_EQ(read_error(j),
            "r.json: parameters.total: expected base + trainable = 8072204288, found 8072204289");
  j = to_json(full_report());
  j["data"]["loss_tokens"] = 800000;
  EXPECT_EQ(read_error(j),
            "r.json: data.loss_tokens: expected at most data.tokens 712345, found "
            "800000");
  j = to_json(full_report());
  j["data"]["validation"]["loss_tokens"] = 40000;
  EXPECT_EQ(read_error(j),
            "r.json: data.validation.loss_tokens: expected at most data.validation.tokens "
            "35012, found 40000");
  j = to_json(full_report());
  j["steps"][2]["wall_seconds"] = 2.0;
  j["steps"][2]["data_wait_seconds"] = 5.0;
  EXPECT_EQ(read_error(j),
            "r.json: steps[2].data_wait_seconds: expected at most the step's wall_seconds 2, "
            "found 5");
  j = to_json(full_report());
  j["steps"][2]["real_tokens"] = 200000;
  EXPECT_EQ(read_error(j),
            "r.json: steps[2].real_tokens: expected at most padded_tokens 131072, found 200000");
  j = to_json(full_report());
  j["steps"][2]["loss_tokens"] = 100004;
  EXPECT_EQ(read_error(j),
            "r.json: steps[2].loss_tokens: expected at most real_tokens 100003, found 100004");
}

TEST(ReportConsistency, StepNumbersIncrease) {
  OJson j = to_json(full_report());
  j["steps"][3]["step"] = 3;
  EXPECT_EQ(read_error(j),
            "r.json: steps[3].step: expected step 4 (steps are numbered 1, 2, ... in order, one "
            "record each), found 3");
  j = to_json(full_report());
  j["steps"][0]["step"] = 0;
  EXPECT_EQ(read_error(j), "r.json: steps[0].step: expected an integer >= 1, found 0");
  // A gap: compare pairs steps by position.
  j = to_json(full_report());
  j["steps"][3]["step"] = 6;
  EXPECT_EQ(read_error(j),
            "r.json: steps[3].step: expected step 4 (steps are numbered 1, 2, ... in order, one "
            "record each), found 6");
}

TEST(ReportConsistency, StepsAndCheckpointsBelongToSegmentsThatExist) {
  OJson j = to_json(full_report());
  j["steps"][4]["segment"] = 3;
  EXPECT_EQ(read_error(j),
            "r.json: steps[4].segment: segment 3 does not exist (the report has 2 segments)");
  j = one_process_json();
  j["steps"][2]["segment"] = 2;
  EXPECT_EQ(read_error(j),
            "r.json: steps[2].segment: segment 2 does not exist (the report has no segments: "
            "every step is segment 1)");
  j = to_json(full_report());
  j["steps"][1]["segment"] = 1;
  EXPECT_EQ(read_error(j),
            "r.json: steps[1].segment: step 2 is not among segment 1's steps 1 to 1 "
            "(segments[0].first_step, last_step)");
  j = to_json(full_report());
  j["checkpoints"][0]["segment"] = 4;
  EXPECT_EQ(read_error(j),
            "r.json: checkpoints[0].segment: segment 4 does not exist (the report has 2 "
            "segments)");
}

// Saves are listed in the order they were made, at most one a step, each after a step of the
// segment that made it: a report with a save listed twice (a checkpoint's report edited, its
// digest made again) counted it twice in every summary.
TEST(ReportConsistency, CheckpointsAreInTheOrderMadeEachAfterAStepOfItsSegment) {
  OJson j = to_json(full_report());
  j["checkpoints"].push_back(j["checkpoints"][0]);
  EXPECT_EQ(read_error(j),
            "r.json: checkpoints[1].step: expected a step after 1 (checkpoints[0].step: saves are "
            "listed in the order they were made, at most one a step), found 1");
  j = to_json(full_report());
  j["checkpoints"][0]["step"] = 3;
  EXPECT_EQ(read_error(j),
            "r.json: checkpoints[0].step: step 3 is not among segment 1's steps 1 to 1 "
            "(segments[0].first_step, last_step)");
  // A second save, by segment 2 after its step 4: as made.
  j = to_json(full_report());
  OJson second = j["checkpoints"][0];
  second["step"] = 4;
  second["segment"] = 2;
  j["checkpoints"].push_back(second);
  EXPECT_EQ(report::from_json(j, "r.json").checkpoints.size(), 2u);
}

TEST(ReportConsistency, SegmentsAreNumberedInOrderWithTheirSteps) {
  OJson j = to_json(full_report());
  j["segments"][1]["index"] = 3;
  EXPECT_EQ(read_error(j),
            "r.json: segments[1].index: expected 2 (segments are numbered 1, 2, ... in order), "
            "found 3");
  j = to_json(full_report());
  j["segments"][1]["last_step"] = 1;
  EXPECT_EQ(read_error(j),
            "r.json: segments[1]: first_step 2 and last_step 1: expected both 0 (no steps) or "
            "1 <= first_step <= last_step");
  j = to_json(full_report());
  j["segments"][1]["first_step"] = 0;
  EXPECT_EQ(read_error(j),
            "r.json: segments[1]: first_step 0 and last_step 5: expected both 0 (no steps) or "
            "1 <= first_step <= last_step");
}

// What a hostile edit made the readers print (a review of issue 14): a summary of 1e12 tokens/s
// over steps of 0.1 s, 1e15 tokens in one step, a "completed" run of 2 of its steps, steps in
// the wrong epoch, a status nobody writes, an end before the start.
TEST(ReportConsistency, TheRunAgreesWithItsJobAndItsSummaryWithItsSteps) {
  OJson j = to_json(full_report());
  j["summary"]["tokens_per_second"]["real"] = 1e12;
  EXPECT_EQ(command_read_error(j),
            "r.json: summary.tokens_per_second.real: expected the measured steps' real_tokens / "
            "wall_seconds = 71431.42857142857, found 1000000000000");
  j = to_json(full_report());
  j["summary"]["step_seconds"]["median"] = 1e-9;
  EXPECT_EQ(command_read_error(j),
            "r.json: summary.step_seconds.median: expected the median of the measured steps' "
            "wall_seconds = 1.4, found 1e-09");
  j = to_json(full_report());
  j["steps"][3]["padded_tokens"] = 1'000'000'000'000'000;
  j["steps"][3]["real_tokens"] = 1'000'000'000'000'000;
  EXPECT_EQ(read_error(j),
            "r.json: steps[3].padded_tokens: expected at most derived.max_tokens_per_step 131072, "
            "found 1000000000000000");
  j = to_json(full_report());
  j["derived"]["total_steps"] = 8;
  EXPECT_EQ(read_error(j),
            "r.json: steps: a completed run has its derived.total_steps 8 steps, found 5");
  j["run"]["status"] = "interrupted";  // an interrupted one may have fewer
  EXPECT_NO_THROW(report::from_json(j, "r.json"));
  j = to_json(full_report());
  j["steps"][4]["epoch"] = 99;
  EXPECT_EQ(read_error(j),
            "r.json: steps[4].epoch: step 5 is in epoch 2 (derived.steps_per_epoch 3), found 99");
  j = to_json(full_report());
  j["steps"][1]["lr"] = -0.1;
  EXPECT_EQ(read_error(j),
            "r.json: steps[1]: lr -0.1 and model_flops 480000000000002: expected numbers >= 0");
  j = to_json(full_report());
  j["run"]["status"] = "done\u001b[2J";
  EXPECT_EQ(read_error(j),
            "r.json: run.status: expected one of completed, interrupted, diverged, failed, found "
            "\"done\\x1B[2J\"");
  j = to_json(full_report());
  j["run"]["finished_at_utc"] = "2020-01-01T00:00:00.000Z";
  EXPECT_NE(read_error(j).find("r.json: run.finished_at_utc: \"2020-01-01T00:00:00.000Z\" is "
                               "before run.started_at_utc"),
            std::string::npos);
  // A time that is not one is said to be so, not compared (a review found "yesterday" reported
  // as later than the finish).
  j = to_json(full_report());
  j["run"]["started_at_utc"] = "yesterday";
  EXPECT_EQ(read_error(j),
            "r.json: run.started_at_utc: expected a UTC time such as 2026-11-29T22:34:05.123Z, "
            "found \"yesterday\"");
  j = to_json(full_report());
  j["segments"][1]["finished_at_utc"] = "2024-05-01 12:00";
  EXPECT_EQ(read_error(j),
            "r.json: segments[1].finished_at_utc: expected a UTC time such as "
            "2026-11-29T22:34:05.123Z, found \"2024-05-01 12:00\"");
}

// Every summary figure that the steps determine is recomputed from them when a report is read:
// an edited figure (a mean of 0.2 s where the steps' is 0.103, a throughput 50 times the
// measured one, a resident peak of 1 byte) is refused, naming the field, the formula, what the
// steps give and what was found, before cost, compare or gate can print it.
TEST(ReportConsistency, EverySummaryFigureIsTheStepsOwn) {
  // As a command reads a report (cli::load_report): the reader, then the summary's figures
  // recomputed from the steps (metrics::check_summary_figures).
  const auto read_as_commands_do = [](const OJson& j) {
    const Report r = report::from_json(j, "r.json");
    metrics::check_summary_figures(r, "r.json");
  };
  EXPECT_NO_THROW(read_as_commands_do(to_json(full_report())));
  EXPECT_NO_THROW(read_as_commands_do(to_json(cpu_report())));
  const auto edited = [&](const std::function<void(OJson&)>& edit) {
    OJson j = to_json(full_report());
    edit(j);
    try {
      read_as_commands_do(j);
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no ReportError";
    return std::string();
  };
  // Within the steps' 1.3 to 1.5 s, so no range check would see it.
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["step_seconds"]["mean"] = 1.45; }),
            "r.json: summary.step_seconds.mean: expected the mean of the measured steps' "
            "wall_seconds = 1.4000000000000001, found 1.45");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["step_seconds"]["p99"] = 1.3; }),
            "r.json: summary.step_seconds.p99: expected the 99th percentile of the measured "
            "steps' wall_seconds = 1.498, found 1.3");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["step_seconds"]["stddev"] = 0.0; }),
            "r.json: summary.step_seconds.stddev: expected the sample standard deviation of the "
            "measured steps' wall_seconds = 0.09999999999999998, found 0");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["step_seconds"]["count"] = 5; }),
            "r.json: summary.step_seconds.count: expected the 3 measured steps "
            "(summary.measured_steps), found 5");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["measured_steps"] = 4; }),
            "r.json: summary.measured_steps: expected the 5 steps less "
            "summary.warmup_steps_excluded 2 = 3, found 4");
  EXPECT_EQ(edited([](OJson& j) {
              j["summary"]["warmup_steps_excluded"] = 5;
              j["summary"]["measured_steps"] = 0;
            }),
            "r.json: summary.warmup_steps_excluded: expected fewer than the report's 5 steps (0 "
            "when it has none), found 5");
  // Throughput below the fastest step's, so no bound would see it.
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["tokens_per_second"]["real"] = 80000.0; }),
            "r.json: summary.tokens_per_second.real: expected the measured steps' real_tokens / "
            "wall_seconds = 71431.42857142857, found 80000");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["padding_fraction"] = 0.0; }),
            "r.json: summary.padding_fraction: expected 1 - the measured steps' real_tokens / "
            "padded_tokens = 0.237030029296875, found 0");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["data_wait_fraction"] = 0.001; }),
            "r.json: summary.data_wait_fraction: expected the measured steps' data_wait_seconds "
            "/ wall_seconds = 0.028571428571428574, found 0.001");
  EXPECT_EQ(edited([](OJson& j) {
              auto& e = j["summary"]["mfu"]["entries"][0];
              e["achieved_tflops"] = e["achieved_tflops"].get<double>() * 50;
            }),
            "r.json: summary.mfu.entries[0].achieved_tflops: expected flops_per_step x "
            "measured_steps / their wall_seconds / 10^12 = 342.8571428571457, found "
            "17142.857142857145");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["mfu"]["entries"][0]["flops_per_step"] = 5e14; }),
            "r.json: summary.mfu.entries[0].flops_per_step: expected the mean of the measured "
            "steps' model_flops = 480000000000004, found 500000000000000");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["mfu"]["entries"][1]["mfu"] = 0.9; }),
            "r.json: summary.mfu.entries[1].mfu: expected achieved_tflops / "
            "(summary.mfu.peak_tflops x run.world_size) = 0.2310202431488059, found 0.9");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["mfu"]["entries"][0]["mfu_gemm"] = nullptr; }),
            "r.json: summary.mfu.entries[0].mfu_gemm: expected achieved_tflops / "
            "(summary.mfu.gemm_peak_tflops x run.world_size) = 0.2381613940380284, found null");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["loss"]["final"] = 1.0; }),
            "r.json: summary.loss.final: expected the last step's loss = 2, found 1");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["loss"]["mean_last"] = 1.0; }),
            "r.json: summary.loss.mean_last: expected the mean loss of the last "
            "summary.loss.window steps = 2.1, found 1");
  EXPECT_EQ(edited([](OJson& j) { j["summary"]["loss"]["window"] = 6; }),
            "r.json: summary.loss.window: expected 1 to the report's 5 steps, found 6");
  // Memory: the device peaks are the largest of the phases', the resident peak at least as
  // large as any resident size a phase saw.
  EXPECT_EQ(edited([](OJson& j) { j["memory"]["peak_rss_bytes"] = 1; }),
            "r.json: memory.peak_rss_bytes: expected at least the largest resident size of "
            "timing.phases[].memory, 12884901888 (timing.phases[3].memory.peak_rss_bytes), found "
            "1");
  EXPECT_EQ(edited([](OJson& j) { j["memory"]["peak_allocated_bytes"] = 1000; }),
            "r.json: memory.peak_allocated_bytes: expected the largest of "
            "timing.phases[].memory.peak_allocated_bytes = 61203283968, found 1000");
  EXPECT_EQ(edited([](OJson& j) { j["memory"]["peak_reserved_bytes"] = nullptr; }),
            "r.json: memory.peak_reserved_bytes: expected the largest of "
            "timing.phases[].memory.peak_reserved_bytes = 66571993088, found null");
  // A diverged run's last losses are null in the steps and in the summary alike.
  Report diverged = full_report();
  diverged.status = "diverged";
  diverged.steps.back().loss = std::numeric_limits<double>::quiet_NaN();
  diverged.summary.final_loss = std::numeric_limits<double>::quiet_NaN();
  diverged.summary.mean_last_losses = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NO_THROW(read_as_commands_do(to_json(diverged)));
}

// The reference reports the cost and compare tests read are consistent with their steps.
TEST(ReportConsistency, TheFixtureReportsRead) {
  for (const char* name : {"h100-reference.json", "mi300x-reference.json"}) {
    const std::string path = std::string(FTBENCH_SOURCE_DIR) + "/tests/fixtures/reports/" + name;
    EXPECT_NO_THROW(read_report(path)) << path;
  }
}

// Totals over the report stay far from int64 overflow.
TEST(ReportJson, RoundTripsEnergy) {
  const Report back = report::from_json(to_json(full_report()), "r.json");
  ASSERT_TRUE(back.energy.has_value());
  EXPECT_EQ(back.energy->joules, 2835.0);
  EXPECT_EQ(back.energy->joules_per_step, 708.75);
  EXPECT_EQ(back.energy->devices.at(0).library, "libnvidia-ml.so.1");
  const OJson cpu = to_json(cpu_report());
  EXPECT_TRUE(cpu["energy"]["joules"].is_null());
  EXPECT_TRUE(cpu["energy"]["coverage"].is_null());
  EXPECT_EQ(cpu["energy"]["devices"], OJson::array());
  const Report cpu_back = report::from_json(cpu, "r.json");
  EXPECT_EQ(cpu_back.energy->reason, "backend cpu: ftbench reads board power on GPUs only");
  EXPECT_FALSE(cpu_back.energy->mean_watts.has_value());
}

// Reports before 1.6 have no energy: unknown, not zero.
TEST(ReportJson, ReadsReportsWithoutEnergyAsUnknown) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/1.5";
  j.erase("energy");
  EXPECT_FALSE(report::from_json(j, "r.json").energy.has_value());
  j["energy"] = nullptr;
  EXPECT_FALSE(report::from_json(j, "r.json").energy.has_value());
}

TEST(ReportConsistency, EnergyFiguresAgree) {
  auto refused = [](const std::function<void(OJson&)>& edit) {
    OJson j = to_json(full_report());
    edit(j["energy"]);
    return read_error(j);
  };
  EXPECT_EQ(refused([](OJson& e) { e["reason"] = "no NVML"; }),
            "r.json: energy.reason: expected \"\" with energy.joules a number, found \"no NVML\"");
  EXPECT_EQ(refused([](OJson& e) { e["joules"] = nullptr; }),
            "r.json: energy.reason: expected why energy.joules is null, found \"\"");
  EXPECT_EQ(refused([](OJson& e) {
              e["joules"] = nullptr;
              e["reason"] = "no NVML";
            }),
            "r.json: energy: energy.joules is null, so are method (\"\"), the other figures and "
            "devices ([])");
  EXPECT_EQ(refused([](OJson& e) { e["joules"] = -1.0; }),
            "r.json: energy.joules: expected a number >= 0 or null, found -1.0");
  EXPECT_EQ(refused([](OJson& e) { e["joules"] = 2900.0; }),
            "r.json: energy.joules: expected the sum of energy.devices[].joules = 2835, found "
            "2900");
  EXPECT_EQ(refused([](OJson& e) { e["joules_per_step"] = 700.0; }),
            "r.json: energy.joules_per_step: expected joules / steps = 708.75, found 700");
  EXPECT_EQ(refused([](OJson& e) { e["joules_per_million_tokens"] = nullptr; }),
            "r.json: energy.joules_per_million_tokens: expected joules / tokens x 10^6 = "
            "7087.251946181884, found null");
  EXPECT_EQ(refused([](OJson& e) { e["steps"] = 5; }),
            "r.json: energy: steps 5 and tokens 400014: expected segment 2's 4 steps and their "
            "400014 real tokens");
  EXPECT_EQ(refused([](OJson& e) { e["segment"] = 3; }),
            "r.json: energy.segment: segment 3 does not exist (the report has 2 segments)");
  EXPECT_EQ(refused([](OJson& e) { e["coverage"] = 0.9; }),
            "r.json: energy.coverage: expected sampled_seconds / window_seconds = 1, found 0.9");
  EXPECT_EQ(refused([](OJson& e) { e["window_start_seconds"] = 1846.0; }),
            "r.json: energy: window_start_seconds + window_seconds = 1850.5 s, after the end of "
            "the last of timing.phases at 1847.3 s");
  EXPECT_EQ(refused([](OJson& e) { e["devices"][0]["sampled_seconds"] = 5.0; }),
            "r.json: energy.devices[0].sampled_seconds: expected at most energy.window_seconds "
            "4.5, found 5");
  EXPECT_EQ(refused([](OJson& e) { e["devices"][0]["mean_watts"] = 800.0; }),
            "r.json: energy.devices[0].mean_watts: expected at most peak_watts 700, found 800");
  EXPECT_EQ(refused([](OJson& e) { e["devices"][0]["peak_watts"] = 2e5; }),
            "r.json: energy.devices[0].peak_watts: expected at most 100000 W (100 kW a device), "
            "found 200000");
  EXPECT_EQ(refused([](OJson& e) { e["devices"][0]["method"] = "guess"; }),
            "r.json: energy.devices[0].method: expected one of energy_counter, power_integration, "
            "found \"guess\"");
  EXPECT_EQ(refused([](OJson& e) { e["method"] = "guess"; }),
            "r.json: energy.method: expected one of energy_counter, power_integration, mixed, "
            "found \"guess\"");
  EXPECT_EQ(refused([](OJson& e) { e["interval_seconds"] = 11; }),
            "r.json: energy.interval_seconds: expected at most 10 s (backend.energy_sample_ms "
            "10000), found 11");
  EXPECT_EQ(refused([](OJson& e) { e["sample_count"] = 47; }),
            "r.json: energy.sample_count: expected the sum of energy.devices[].samples 46, found "
            "47");
  EXPECT_EQ(refused([](OJson& e) { e["devices"] = OJson::array(); }),
            "r.json: energy.devices: energy.joules is measured on no device");
  EXPECT_EQ(refused([](OJson& e) { e["devices"][0]["joules"] = "x"; }),
            "r.json: energy.devices[0].joules: expected a number, found string");
  // 4.5 s read every 0.1 s: 45 intervals, 46 readings; 48 at most (the reading at stop, and one
  // for a slow read's late stamp).
  EXPECT_EQ(refused([](OJson& e) {
              e["devices"][0]["samples"] = 40;
              e["devices"][0]["failed_reads"] = 9;
              e["sample_count"] = 40;
            }),
            "r.json: energy.devices[0]: 49 readings (samples + failed_reads), more than the 48 "
            "that one every interval_seconds 0.1 over window_seconds 4.5, plus 3, allow");
  OJson at_most = to_json(full_report());
  at_most["energy"]["devices"][0]["samples"] = 48;
  at_most["energy"]["sample_count"] = 48;
  EXPECT_NO_THROW(report::from_json(at_most, "r.json"));
  EXPECT_EQ(refused([](OJson& e) {
              OJson twice = e["devices"][0];
              twice["joules"] = 0.0;
              twice["mean_watts"] = 0.0;
              e["devices"].push_back(twice);
            }),
            "r.json: energy.devices[1].index: device 0 again (energy.devices[0] is the same "
            "device)");
}

// Board energy is read on GPUs only: a cpu report that claims some was not written by a run.
TEST(ReportConsistency, EnergyOnTheCpuBackendIsRefused) {
  for (const char* backend : {"cpu", "CPU", " cpu", "", "mps"}) {
    OJson j = to_json(full_report());
    j["environment"]["device"]["backend"] = backend;
    EXPECT_EQ(read_error(j),
              std::string("r.json: energy.joules: measured, but environment.device.backend is ") +
                  "\"" + std::string(backend) + "\"" +
                  " (ftbench reads the board energy of cuda and rocm devices only; "
                  "expected null with a reason)");
  }
  OJson rocm = to_json(full_report());
  rocm["environment"]["device"]["backend"] = "rocm";
  EXPECT_NO_THROW(report::from_json(rocm, "r.json"));
}

TEST(ReportConsistency, TotalsStayWithinRange) {
  OJson j = to_json(cpu_report());
  j.erase("segments");
  j.erase("checkpoints");
  j.erase("energy");
  j["timing"]["total_run_seconds"] = nullptr;  // as written without segments
  // A run of 1001 steps of no time.
  j["derived"]["total_steps"] = 1001;
  const int64_t per_epoch = j["derived"]["steps_per_epoch"];
  const OJson step = j["steps"][0];
  j["steps"] = OJson::array();
  for (int64_t i = 1; i <= 1001; ++i) {
    OJson s = step;
    s.erase("segment");
    s["step"] = i;
    s["epoch"] = (i - 1) / per_epoch + 1;
    s["wall_seconds"] = 0.0;
    s["data_wait_seconds"] = 0.0;
    s["real_tokens"] = 1'000'000'000'000'000;
    s["padded_tokens"] = 1'000'000'000'000'000;
    j["steps"].push_back(s);
  }
  EXPECT_EQ(read_error(j),
            "r.json: steps[].padded_tokens: the steps add up to more than 10^18 tokens");
  for (OJson& s : j["steps"]) {
    s["real_tokens"] = 1000;
    s["padded_tokens"] = 1000;
    s["loss_tokens"] = 500;
  }
  j = with_summary_of_steps(j);
  EXPECT_NO_THROW(report::from_json(j, "r.json"));
  j["derived"]["effective_batch"] = 1'000'000'000'000'000;
  EXPECT_EQ(read_error(j),
            "r.json: derived.effective_batch: 1000000000000000 examples per step over 1001 "
            "steps make more than 10^18 examples");
}

TEST(ReportJson, RejectsOtherMajorVersion) {
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/2";
  EXPECT_EQ(read_error(j),
            "r.json: unsupported report schema \"ftbench.report/2\" "
            "(this ftbench reads ftbench.report/1)");
  j["schema"] = "ftbench.report/0.9";
  EXPECT_NE(read_error(j).find("unsupported report schema \"ftbench.report/0.9\""),
            std::string::npos);
}

TEST(ReportJson, RejectsMalformedSchemaStrings) {
  OJson j = to_json(full_report());
  for (const char* schema :
       {"ftbench.report/", "ftbench.report/1.", "ftbench.report/1.x", "ftbench.report/1.2.3",
        "ftbench.report/10", "ftbench.spec/1", "ftbench.report/1 ", "ftbench.report/99999999999"}) {
    j["schema"] = schema;
    EXPECT_NE(read_error(j).find("unsupported report schema"), std::string::npos) << schema;
  }
}

// The next minor version after the one this code writes (computed, so that it stays newer
// after a bump), with fields this code does not know: read, the unknown fields ignored.
TEST(ReportJson, AcceptsNewerMinorVersion) {
  const std::string current = kSchema;
  const std::string family = std::string(kSchemaFamily) + ".";
  ASSERT_EQ(current.rfind(family, 0), 0u) << current;
  const std::string newer = family + std::to_string(std::stoi(current.substr(family.size())) + 1);
  OJson j = to_json(full_report());
  j["schema"] = newer;
  j["run"]["added_later"] = "a field of " + newer;
  j["summary"]["added_later"] = {{"nested", 1}};
  j["added_later"] = OJson::array({1, 2, 3});
  const Report r = report::from_json(j, "r.json");
  EXPECT_EQ(r.schema, newer);
  EXPECT_EQ(r.run_name, "llama3.1-8b-lora");
  EXPECT_EQ(to_json(r)["schema"], current) << "written back as the version this code writes";
}

TEST(ReportJson, RejectsJsonWithoutSchema) {
  OJson j = to_json(full_report());
  j.erase("schema");
  EXPECT_EQ(read_error(j), "r.json: not an ftbench report (no \"schema\" field)");
  EXPECT_EQ(read_error(OJson::array()),
            "r.json: not an ftbench report (expected a JSON object, found array)");
  j["schema"] = 1;
  EXPECT_EQ(read_error(j),
            "r.json: schema: expected a string like \"ftbench.report/1\", found number");
}

TEST(ReportJson, MissingFieldNamesItsPath) {
  OJson j = to_json(full_report());
  j["summary"]["step_seconds"].erase("p90");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"summary.step_seconds.p90\"");

  j = to_json(full_report());
  j["steps"][3].erase("loss");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"steps[3].loss\"");

  j = to_json(full_report());
  j["environment"]["device"].erase("memory_bytes");  // null-able, but still required
  EXPECT_EQ(read_error(j), "r.json: missing required field \"environment.device.memory_bytes\"");

  j = to_json(full_report());
  j.erase("memory");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"memory\"");

  j = to_json(full_report());
  j["summary"]["mfu"]["entries"][1].erase("recompute");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"summary.mfu.entries[1].recompute\"");

  j = to_json(full_report());
  j["timing"]["phases"][0].erase("seconds");
  EXPECT_EQ(read_error(j), "r.json: missing required field \"timing.phases[0].seconds\"");
}

TEST(ReportJson, WrongTypeNamesPathExpectedAndFound) {
  OJson j = to_json(full_report());
  j["summary"]["step_seconds"]["p90"] = "fast";
  EXPECT_EQ(read_error(j), "r.json: summary.step_seconds.p90: expected a number, found string");

  j = to_json(full_report());
  j["steps"][1]["real_tokens"] = 1.5;
  EXPECT_EQ(read_error(j), "r.json: steps[1].real_tokens: expected an integer, found number");

  j = to_json(full_report());
  j["steps"][3]["lr"] = nullptr;  // required doubles must be numbers (loss may be null)
  EXPECT_EQ(read_error(j), "r.json: steps[3].lr: expected a number, found null");

  j = to_json(full_report());
  j["steps"][3]["loss"] = "high";
  EXPECT_EQ(read_error(j), "r.json: steps[3].loss: expected a number or null, found string");

  j = to_json(full_report());
  j["run"]["name"] = 7;
  EXPECT_EQ(read_error(j), "r.json: run.name: expected a string, found number");

  j = to_json(full_report());
  j["summary"]["mfu"]["peak_tflops"] = "989";
  EXPECT_EQ(read_error(j),
            "r.json: summary.mfu.peak_tflops: expected a number or null, found string");

  j = to_json(full_report());
  j["memory"]["peak_rss_bytes"] = 1.5;
  EXPECT_EQ(read_error(j),
            "r.json: memory.peak_rss_bytes: expected an integer or null, found number");

  j = to_json(full_report());
  j["memory"]["peak_rss_bytes"] = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(read_error(j),
            "r.json: memory.peak_rss_bytes: integer 18446744073709551615 is out of range");

  j = to_json(full_report());
  j["summary"]["mfu"]["entries"][0]["recompute"] = 0;
  EXPECT_EQ(read_error(j),
            "r.json: summary.mfu.entries[0].recompute: expected a boolean, found number");

  j = to_json(full_report());
  j["steps"][2] = 5;
  EXPECT_EQ(read_error(j), "r.json: steps[2]: expected an object, found number");

  j = to_json(full_report());
  j["environment"] = OJson::array();
  EXPECT_EQ(read_error(j), "r.json: environment: expected an object, found array");
}

TEST(ReportJson, IntegersAreAcceptedWhereDoublesAreExpected) {
  OJson j = to_json(full_report());
  j["timing"]["t0_before_process_seconds"] = 2;
  EXPECT_EQ(report::from_json(j, "r.json").t0_before_process_seconds, 2.0);
}

TEST(ReportJson, UnknownFieldsAreIgnored) {
  OJson j = to_json(full_report());
  j["added_in_1_1"] = {{"anything", true}};
  j["environment"]["device"]["uuid"] = "GPU-1234";
  j["steps"][0]["tokens_per_second"] = 1.0;
  j["summary"]["mfu"]["entries"][0]["note"] = nullptr;
  const Report r = report::from_json(j, "r.json");
  EXPECT_EQ(to_json(r), to_json(full_report()));
}

// A fresh, empty folder per test, removed afterwards.
class ReportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ftbench-report-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  static std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  // Every entry under the test folder, relative to it, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      out.push_back(fs::relative(e.path(), dir_).string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
};

TEST_F(ReportFile, WriteThenReadRoundTrips) {
  const std::string path = (dir_ / "report.json").string();
  write_report(full_report(), path, false);
  const std::string text = slurp(path);
  EXPECT_EQ(text, to_json(full_report()).dump(2) + "\n");
  EXPECT_EQ(text.rfind("{\n  \"schema\": \"ftbench.report/1.13\",\n", 0), 0u);
  const Report back = read_report(path);
  EXPECT_EQ(to_json(back), to_json(full_report()));
  EXPECT_EQ(entries(), (std::vector<std::string>{"report.json"}));  // no temp file left
}

TEST_F(ReportFile, RefusesToOverwriteWithoutForce) {
  const fs::path path = dir_ / "report.json";
  { std::ofstream(path) << "precious"; }
  try {
    write_report(full_report(), path.string(), false);
    FAIL() << "no io::FileExistsError";
  } catch (const io::FileExistsError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + " exists; pass --force to overwrite");
  }
  EXPECT_EQ(slurp(path), "precious");
  EXPECT_THROW(io::check_writable(path.string(), false), io::FileExistsError);
  EXPECT_EQ(entries(), (std::vector<std::string>{"report.json"}));
}

TEST_F(ReportFile, OverwritesWithForce) {
  const fs::path path = dir_ / "report.json";
  { std::ofstream(path) << "old"; }
  EXPECT_NO_THROW(io::check_writable(path.string(), true));
  write_report(full_report(), path.string(), true);
  EXPECT_EQ(slurp(path), to_json(full_report()).dump(2) + "\n");
  EXPECT_EQ(entries(), (std::vector<std::string>{"report.json"}));
}

TEST_F(ReportFile, CheckWritableAcceptsMissingFileAndRejectsFolder) {
  EXPECT_NO_THROW(io::check_writable((dir_ / "new.json").string(), false));
  fs::create_directory(dir_ / "out");
  EXPECT_THROW(io::check_writable((dir_ / "out").string(), true), io::FileWriteError);
  EXPECT_THROW(write_report(full_report(), (dir_ / "out").string(), true), io::FileWriteError);
  EXPECT_EQ(entries(), (std::vector<std::string>{"out"}));
}

// A FIFO (or a device: /dev/null under a root CI job) is never replaced by a regular file, not
// even with --force: the rename would replace the node itself. Without --force it is "exists".
TEST_F(ReportFile, ForceNeverReplacesAFifoOrADevice) {
  const fs::path fifo = dir_ / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(io::check_writable(fifo.string(), false), io::FileExistsError);
  try {
    write_report(full_report(), fifo.string(), true);
    FAIL() << "no io::FileWriteError";
  } catch (const io::FileExistsError&) {
    FAIL() << "exit 5, expected 3";
  } catch (const io::FileWriteError& e) {
    EXPECT_EQ(std::string(e.what()),
              fifo.string() +
                  " is not a regular file (a device, FIFO or socket); even --force does not "
                  "replace it with one");
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(entries(), (std::vector<std::string>{"pipe.json"}));
  EXPECT_THROW(io::check_writable("/dev/null", true), io::FileWriteError);
}

// A name the filesystem cannot hold (with the temporary file's suffix) is refused before a run,
// not when the report is written at its end.
TEST_F(ReportFile, FileNameTooLongIsRefusedUpFront) {
  const std::string path = (dir_ / (std::string(250, 'r') + ".json")).string();
  try {
    io::check_writable(path, false);
    FAIL() << "no io::FileWriteError";
  } catch (const io::FileWriteError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("cannot write " + dir_.string() + "/" + std::string(64, 'r') +
                                "...: a file name of 255 bytes; at most ",
                            0),
              0u)
        << message;
  }
  EXPECT_THROW(write_report(full_report(), path, false), io::FileWriteError);
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_NO_THROW(io::check_writable((dir_ / (std::string(200, 'r') + ".json")).string(), false));
}

TEST_F(ReportFile, CreatesMissingFolders) {
  const fs::path path = dir_ / "a" / "b" / "report.json";
  write_report(full_report(), path.string(), false);
  EXPECT_EQ(to_json(read_report(path.string())), to_json(full_report()));
}

TEST_F(ReportFile, FolderUnderARegularFileFailsCleanly) {
  { std::ofstream(dir_ / "plain") << "x"; }
  const std::string path = (dir_ / "plain" / "sub" / "report.json").string();
  try {
    write_report(full_report(), path, false);
    FAIL() << "no io::FileWriteError";
  } catch (const io::FileExistsError&) {
    FAIL() << "wrong error type";
  } catch (const io::FileWriteError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"plain"}));
}

TEST_F(ReportFile, ReadOnlyFolderFailsCleanly) {
  fs::create_directory(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  if (::access((dir_ / "ro").c_str(), W_OK) == 0) {
    GTEST_SKIP() << "running with privileges that ignore folder permissions";
  }
  const std::string path = (dir_ / "ro" / "report.json").string();
  try {
    write_report(full_report(), path, false);
    FAIL() << "no io::FileWriteError";
  } catch (const io::FileWriteError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"ro"}));
}

// Sets FTBENCH_INJECT_WRITE_FAILURE for one scope.
class InjectWriteFailure {
 public:
  explicit InjectWriteFailure(const char* value) {
    ::setenv("FTBENCH_INJECT_WRITE_FAILURE", value, /*overwrite=*/1);
  }
  InjectWriteFailure(const InjectWriteFailure&) = delete;
  InjectWriteFailure& operator=(const InjectWriteFailure&) = delete;
  ~InjectWriteFailure() { ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE"); }
};

TEST(WriteFailureInjection, ParsesAnErrnoNameAndAnOptionalByteCount) {
  const io::WriteFailureInjection enospc = io::parse_write_failure_injection("ENOSPC");
  EXPECT_EQ(enospc.error, ENOSPC);
  EXPECT_EQ(enospc.after_bytes, 0u);
  const io::WriteFailureInjection eio = io::parse_write_failure_injection("EIO@4096");
  EXPECT_EQ(eio.error, EIO);
  EXPECT_EQ(eio.after_bytes, 4096u);
  EXPECT_EQ(io::parse_write_failure_injection("EDQUOT").error, EDQUOT);
  EXPECT_EQ(io::parse_write_failure_injection("EFBIG@0").error, EFBIG);
  EXPECT_EQ(io::parse_write_failure_injection("EFBIG").kind, "");
  const io::WriteFailureInjection checkpoint =
      io::parse_write_failure_injection("checkpoint:EIO@8");
  EXPECT_EQ(checkpoint.kind, "checkpoint");
  EXPECT_EQ(checkpoint.error, EIO);
  EXPECT_EQ(checkpoint.after_bytes, 8u);
  EXPECT_EQ(io::parse_write_failure_injection("report:ENOSPC").kind, "report");
  EXPECT_EQ(io::parse_write_failure_injection("export:ENOSPC").kind, "export");
  for (const char* bad : {"", "enospc", "ENOSPC@", "ENOSPC@-1", "ENOSPC@1k", "EPERM", "@10",
                          "ENOSPC@99999999999999999999", "disk:ENOSPC", "checkpoint:", ":ENOSPC"}) {
    try {
      io::parse_write_failure_injection(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const BadInput& e) {
      EXPECT_EQ(std::string(e.what()).rfind("FTBENCH_INJECT_WRITE_FAILURE: ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("found \"" + std::string(bad) + "\""), std::string::npos)
          << e.what();
    }
  }
}

TEST(WriteFailureInjection, ReadFromTheEnvironment) {
  ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE");
  EXPECT_FALSE(io::write_failure_injection_from_environment());
  {
    const InjectWriteFailure inject("");
    EXPECT_FALSE(io::write_failure_injection_from_environment());
  }
  {
    const InjectWriteFailure inject("EIO@7");
    ASSERT_TRUE(io::write_failure_injection_from_environment());
    EXPECT_EQ(io::write_failure_injection_from_environment()->after_bytes, 7u);
  }
  const InjectWriteFailure inject("ENOSPACE");
  EXPECT_THROW(io::write_failure_injection_from_environment(), BadInput);
}

// The previous report, written without injection, then overwritten (--force) with one.
struct InjectedCase {
  const char* injection;
  const char* errno_text;
};

TEST_F(ReportFile, InjectedWriteFailureKeepsThePreviousReport) {
  const fs::path path = dir_ / "report.json";
  Report previous = full_report();
  previous.run_name = "previous";
  write_report(previous, path.string(), false);
  const std::string before = slurp(path);
  for (const InjectedCase& c :
       {InjectedCase{"ENOSPC", "No space left on device"},
        InjectedCase{"EIO", "Input/output error"}, InjectedCase{"EDQUOT", "Disk quota exceeded"},
        InjectedCase{"ENOSPC@1000", "No space left on device"}}) {
    SCOPED_TRACE(c.injection);
    const InjectWriteFailure inject(c.injection);
    try {
      write_report(full_report(), path.string(), /*force=*/true);
      ADD_FAILURE() << "no io::FileWriteError";
    } catch (const io::FileExistsError&) {
      ADD_FAILURE() << "wrong error type";
    } catch (const io::FileWriteError& e) {
      const std::string message = e.what();
      EXPECT_EQ(
          message.rfind("cannot write " + path.string() + ": write " + path.string() + ".tmp.", 0),
          0u)
          << message;
      EXPECT_NE(message.find(c.errno_text), std::string::npos) << message;
    }
    EXPECT_EQ(slurp(path), before);
    EXPECT_EQ(entries(), (std::vector<std::string>{"report.json"}));  // no *.tmp.* left behind
  }
  // Without the injection the same write goes through.
  write_report(full_report(), path.string(), /*force=*/true);
  EXPECT_EQ(slurp(path), to_json(full_report()).dump(2) + "\n");
}

TEST_F(ReportFile, InjectedWriteFailureLeavesNoNewFile) {
  const InjectWriteFailure inject("ENOSPC@10");
  EXPECT_THROW(io::write_file_atomically("0123456789abcdef", (dir_ / "gemm.json").string(), false),
               io::FileWriteError);
  EXPECT_THROW(write_report(full_report(), (dir_ / "sub" / "report.json").string(), false),
               io::FileWriteError);
  // The folder the report asked for is made before the write fails; nothing else is.
  EXPECT_EQ(entries(), (std::vector<std::string>{"sub"}));
}

TEST_F(ReportFile, InjectedFailureAfterTheFileEndsDoesNotFire) {
  const InjectWriteFailure inject("ENOSPC@16");
  io::write_file_atomically("0123456789abcdef", (dir_ / "exact.txt").string(), false);
  EXPECT_EQ(slurp(dir_ / "exact.txt"), "0123456789abcdef");
}

// io::write_all() is what other writers (checkpoints) call: the file offset counts, so a file
// written in pieces fails at the same byte as one written at once, and short writes are resumed.
TEST_F(ReportFile, WriteAllFailsAtTheInjectedByteAcrossCalls) {
  const fs::path path = dir_ / "pieces.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  {
    const InjectWriteFailure inject("EIO@6");
    EXPECT_TRUE(io::write_all(fd, "abcd"));
    errno = 0;
    EXPECT_FALSE(io::write_all(fd, "efgh"));
    EXPECT_EQ(errno, EIO);
    EXPECT_FALSE(io::write_all(fd, "ijkl"));
    EXPECT_TRUE(io::write_all(fd, ""));
  }
  EXPECT_TRUE(io::write_all(fd, "!"));
  ::close(fd);
  EXPECT_EQ(slurp(path), "abcdef!");
}

// A real full filesystem: a 16 KiB tmpfs. Needs the right to mount (root, or CAP_SYS_ADMIN);
// skipped otherwise. The folder-permission test above cannot run as root; this one covers the
// failing disk there.
class TinyFilesystem : public ReportFile {
 protected:
  void SetUp() override {
    ReportFile::SetUp();
    mount_ = dir_ / "tiny";
    fs::create_directory(mount_);
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=16k") != 0) {
      const int error = errno;
      GTEST_SKIP() << "cannot mount a 16 KiB tmpfs here (" << std::strerror(error)
                   << "): needs root or CAP_SYS_ADMIN";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) {
      EXPECT_EQ(::umount2(mount_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    }
    ReportFile::TearDown();
  }

  // Writes to `path` until the filesystem is full; returns the bytes that fit.
  static std::size_t fill(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const std::string block(512, 'x');
    std::size_t written = 0;
    for (;;) {
      const ssize_t n = ::write(fd, block.data(), block.size());
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return written;
  }

  fs::path mount_;
  bool mounted_ = false;
};

TEST_F(TinyFilesystem, FullDiskKeepsThePreviousReport) {
  const fs::path path = mount_ / "report.json";
  io::write_file_atomically("{\"previous\": true}\n", path.string(), false);
  const std::size_t filled = fill(mount_ / "filler");
  EXPECT_GT(filled, 0u);
  EXPECT_LT(filled, 16u * 1024u);
  try {
    write_report(full_report(), path.string(), /*force=*/true);
    FAIL() << "no io::FileWriteError";
  } catch (const io::FileExistsError&) {
    FAIL() << "wrong error type";
  } catch (const io::FileWriteError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("cannot write " + path.string() + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  }
  EXPECT_EQ(slurp(path), "{\"previous\": true}\n");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(mount_)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"filler", "report.json"}));  // no temp file
}

TEST_F(TinyFilesystem, ReportLargerThanTheFilesystemLeavesNothing) {
  const fs::path path = mount_ / "big.json";
  const std::string too_big(64 * 1024, 'x');
  try {
    io::write_file_atomically(too_big, path.string(), false);
    FAIL() << "no io::FileWriteError";
  } catch (const io::FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(mount_));
  // The space the temporary file took is free again: a report that fits is written.
  write_report(full_report(), path.string(), false);
  EXPECT_EQ(slurp(path), to_json(full_report()).dump(2) + "\n");
}

TEST_F(ReportFile, ReadMissingFileNamesIt) {
  const std::string path = (dir_ / "absent.json").string();
  try {
    read_report(path);
    FAIL() << "no ReportError";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot read: No such file or directory");
  }
}

TEST_F(ReportFile, ReadInvalidJsonGivesBytePosition) {
  const fs::path path = dir_ / "broken.json";
  { std::ofstream(path) << "{\"schema\": \"ftbench.report/1\",, }"; }
  try {
    read_report(path.string());
    FAIL() << "no ReportError";
  } catch (const ReportError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path.string() + ": not valid JSON at byte 31: ", 0), 0u) << message;
  }
}

TEST_F(ReportFile, ReadErrorsNameTheFile) {
  // json::parse throws out_of_range for a number beyond double's range (found by fuzzing).
  try {
    parse_report("{\"schema\": 1e309}", "big.json");
    FAIL() << "no ReportError";
  } catch (const ReportError& e) {
    // With the key: nlohmann names no position for it (found by a review).
    EXPECT_EQ(std::string(e.what()),
              "big.json: not a readable report: schema: number out of range: 1e309");
  }
  // A report that gives a figure twice is not read as either value: nlohmann kept the last
  // without a word (found by a review).
  const std::string text = to_json(full_report()).dump(2);
  const std::size_t at = text.find("\"wall_seconds\": ");
  ASSERT_NE(at, std::string::npos);
  const std::string twice = text.substr(0, at) + "\"wall_seconds\": 1e-9, " + text.substr(at);
  try {
    parse_report(twice, "twice.json");
    FAIL() << "no ReportError";
  } catch (const ReportError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("twice.json: not a readable report: ", 0), 0u) << message;
    EXPECT_NE(message.find(".wall_seconds: a key given twice in one object"), std::string::npos)
        << message;
  }

  const fs::path path = dir_ / "v2.json";
  OJson j = to_json(full_report());
  j["schema"] = "ftbench.report/2";
  { std::ofstream(path) << j.dump(2); }
  try {
    read_report(path.string());
    FAIL() << "no ReportError";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() +
                                         ": unsupported report schema \"ftbench.report/2\" "
                                         "(this ftbench reads ftbench.report/1)");
  }
}

// Restores the global C++ and C locales on scope exit.
class GlobalLocaleGuard {
 public:
  GlobalLocaleGuard() : saved_(std::locale()) {}
  GlobalLocaleGuard(const GlobalLocaleGuard&) = delete;
  GlobalLocaleGuard& operator=(const GlobalLocaleGuard&) = delete;
  ~GlobalLocaleGuard() {
    std::locale::global(saved_);
    std::setlocale(LC_ALL, "C");
  }

 private:
  std::locale saved_;
};

struct CommaDecimal : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

struct WrittenUnderLocale {
  std::string text;
  OJson read_back;
};

// Writes and reads back the full report while `locale` is the global locale; the checks run
// after it is restored, so GoogleTest's own messages are not printed in that locale.
WrittenUnderLocale write_under(const std::locale& locale, const std::string& path) {
  GlobalLocaleGuard guard;
  std::locale::global(locale);
  WrittenUnderLocale out;
  write_report(full_report(), path, false);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  out.text = text.str();
  out.read_back = to_json(read_report(path));
  return out;
}

void expect_c_numbers(const WrittenUnderLocale& written) {
  EXPECT_NE(written.text.find("\"t0_before_process_seconds\": 1.25,\n"), std::string::npos);
  EXPECT_NE(written.text.find("\"memory_bytes\": 1622147645440\n"), std::string::npos);
  EXPECT_NE(written.text.find("\"peak_tflops\": 989.4,\n"), std::string::npos);
  EXPECT_EQ(written.text, to_json(full_report()).dump(2) + "\n");
  EXPECT_EQ(written.read_back, to_json(full_report()));
}

TEST_F(ReportFile, NumbersIgnoreACommaDecimalGlobalLocale) {
  // ',' decimal point and '.' grouping in a C++ locale built here, so this part runs on every
  // machine, named system locales installed or not.
  const std::locale comma(std::locale::classic(), new CommaDecimal);
  expect_c_numbers(write_under(comma, (dir_ / "report.json").string()));
}

TEST_F(ReportFile, NumbersIgnoreGermanGlobalLocale) {
  std::locale german;
  try {
    german = std::locale("de_DE.UTF-8");
  } catch (const std::runtime_error&) {
    GTEST_SKIP() << "locale de_DE.UTF-8 is not installed";
  }
  {
    // A named global locale also switches the C locale (setlocale), which printf-style
    // formatting obeys; make sure it really does here, or the test proves nothing.
    GlobalLocaleGuard guard;
    std::locale::global(german);
    ASSERT_EQ(std::string(std::localeconv()->decimal_point), ",");
  }
  expect_c_numbers(write_under(german, (dir_ / "report.json").string()));
}

}  // namespace
}  // namespace ftbench::report
