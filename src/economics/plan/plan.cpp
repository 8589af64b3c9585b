#include "economics/plan/plan.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "economics/cost/pricing.h"
#include "economics/plan/activation_checkpointing.h"
#include "model/shape_math.h"
#include "spec/choices.h"
#include "spec/derived.h"
#include "spec/spec_loader.h"
#include "util/text/messages.h"
#include "util/text/units.h"

namespace ftbench::plan {
namespace {

constexpr int64_t kMaxMicroBatchSearched = 1024;

MemoryOptions gpu_options(const spec::RunSpec& spec) {
  MemoryOptions o;
  o.attention = AttentionKernel::kFused;
  o.gpu = true;
  o.rms_norm_kernel = true;  // the user's PyTorch 2.8+ wheel on CUDA or ROCm
  o.prefetched_batches = spec.train.grad_accum_steps;
  return o;
}

double needed_bytes(const spec::RunSpec& spec, const MemoryOptions& o) {
  return device_bytes_needed(estimate_memory(spec, o), default_gpu_overheads());
}

// The datasheet's dense peak for the model's dtype (bf16 and fp16; fp32 has none there).
std::optional<double> datasheet_tflops(const gpus::Gpu& gpu, const std::string& dtype) {
  if (dtype == "bf16") return gpu.dense_bf16_tflops;
  if (dtype == "fp16") return gpu.dense_fp16_tflops;
  return std::nullopt;
}

// The training FLOPs of one token of the spec (methodology section 5).
double flops_per_token(const spec::RunSpec& spec) {
  const model::ParamCounts counts = model::count_parameters(spec.model, spec.lora);
  return model::training_flops_per_token(
      spec.model, counts, spec.data.seq_len, model::FlopFormula::kLoraFrozenBase,
      spec.model.activation_checkpointing == spec::choice::checkpointing::kFull);
}

}  // namespace

double expected_padded_length(const spec::DataSpec& data, int64_t micro_batch) {
  const auto seq = static_cast<double>(data.seq_len);
  if (data.padding != "longest" || data.source != "synthetic") return seq;
  // synthetic_example_length(): lengths in [lo, hi], then padded to the longest of the
  // micro-batch: E[max of b] = lo + sum over k in [lo, hi) of (1 - F(k)^b).
  const int64_t lo = std::min(data.min_tokens, data.seq_len);
  const int64_t hi = std::min(data.max_tokens, data.seq_len);
  if (data.length_distribution != "uniform" && data.length_distribution != "lognormal") {
    return static_cast<double>(hi);
  }
  const double b = static_cast<double>(micro_batch);
  double expected = static_cast<double>(lo);
  for (int64_t k = lo; k < hi; ++k) {
    double cdf = 0.0;  // P(length <= k)
    if (data.length_distribution == "uniform") {
      cdf = static_cast<double>(k - lo + 1) / static_cast<double>(hi - lo + 1);
    } else {  // lognormal, rounded to the nearest token
      const double z =
          (std::log(static_cast<double>(k) + 0.5) - std::log(data.lognormal_median_tokens)) /
          data.lognormal_sigma;
      cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    }
    expected += 1.0 - std::pow(cdf, b);
  }
  return expected;
}

namespace {

// The spec's tokens per optimizer step as the device processes them: padded to seq_len, or, for
// synthetic data padded to the longest of each micro-batch, to its expected longest.
double tokens_per_step(const spec::RunSpec& spec) {
  return static_cast<double>(spec.train.micro_batch_size * spec.train.grad_accum_steps) *
         expected_padded_length(spec.data, spec.train.micro_batch_size);
}

cost::RunTimes run_times(const TimeEstimate& t, double run_seconds, double training_seconds,
                         int64_t gpus, const spec::RunSpec& spec) {
  cost::RunTimes times;
  times.run_seconds = run_seconds;
  times.time_to_first_step_seconds = run_seconds - training_seconds;
  times.training_seconds = training_seconds;
  times.steps = static_cast<int64_t>(std::ceil(t.steps));
  const spec::DerivedCounts d = spec::derive_counts(spec);
  times.epochs = d.steps_per_epoch > 0 ? t.steps / static_cast<double>(d.steps_per_epoch) : 0.0;
  times.examples = times.steps * d.effective_batch;
  times.trained_tokens = static_cast<int64_t>(t.tokens);
  times.steady_tokens_per_second = training_seconds > 0 ? t.tokens / training_seconds : 0.0;
  times.gpus = gpus;
  return times;
}

}  // namespace

std::pair<double, double> scaling_efficiency(int64_t gpus) {
  if (gpus <= 1) return {1.0, 1.0};
  if (gpus == 2) return {0.80, 0.90};
  if (gpus <= 4) return {0.70, 0.80};
  if (gpus <= 8) return {0.60, 0.70};
  return {0.50, 0.70};
}

GpuFit fit_on(const spec::RunSpec& spec, const gpus::Gpu& gpu, double headroom, int64_t max_gpus) {
  namespace cp = spec::choice::checkpointing;
  GpuFit f;
  f.gpu = gpu;
  MemoryOptions o = gpu_options(spec);
  const DeviceOverheads overheads = default_gpu_overheads();
  const bool is_auto = spec.model.activation_checkpointing == cp::kAuto;
  f.checkpointing = spec.model.activation_checkpointing;
  if (gpu.memory_gb) {
    f.memory_bytes = *gpu.memory_gb * 1e9;
    f.usable_bytes = *f.memory_bytes * (1.0 - headroom);
  }
  if (is_auto) {
    // What a run with auto would choose on this GPU (src/run/torch/run_memory_plan.cpp resolves it
    // alike on the device).
    f.checkpointing = gpu.memory_gb
                          ? choose_checkpointing(spec, o, &overheads, f.usable_bytes).policy
                          : std::string(cp::kNone);
  }
  o.activation_checkpointing = f.checkpointing;
  f.needed_bytes = needed_bytes(spec, o);
  if (!gpu.memory_gb) {
    f.note = "memory not stated in the datasheet";
    return f;
  }
  f.fits = f.needed_bytes <= f.usable_bytes;
  for (int64_t mb = 1; mb <= kMaxMicroBatchSearched; ++mb) {
    o.micro_batch_size = mb;
    if (needed_bytes(spec, o) > f.usable_bytes) break;
    f.largest_micro_batch = mb;
  }
  o.micro_batch_size = 0;
  if (!f.fits && !is_auto) {
    // The policies that recompute more than the spec's, least first.
    for (const std::string& policy : policies_by_recompute()) {
      if (!recomputes_more(policy, f.checkpointing)) continue;
      o.activation_checkpointing = policy;
      if (needed_bytes(spec, o) <= f.usable_bytes) {
        f.needs_checkpointing = true;
        f.checkpointing = policy;
        break;
      }
    }
  }
  if (!f.fits && !f.needs_checkpointing) {
    // `ftbench run` splits each step's micro-batches over the ranks: their count divides
    // grad_accum_steps.
    o.activation_checkpointing = cp::kFull;
    for (int64_t n = 2; n <= max_gpus; ++n) {
      if (spec.train.grad_accum_steps % n != 0) continue;
      o.shard_ranks = n;
      if (needed_bytes(spec, o) <= f.usable_bytes) {
        f.gpus_with_sharded_base = n;
        f.sharded_with_checkpointing = f.checkpointing != cp::kFull;
        break;
      }
    }
  }
  const std::string chosen = is_auto ? fmt::format(" (auto: {})", f.checkpointing) : "";
  if (f.fits) {
    f.note = f.largest_micro_batch >= kMaxMicroBatchSearched
                 ? fmt::format("fits; micro-batch {} or more{}", kMaxMicroBatchSearched, chosen)
                 : fmt::format("fits; micro-batch up to {}{}", f.largest_micro_batch, chosen);
  } else if (f.needs_checkpointing) {
    f.note = fmt::format("fits with model.activation_checkpointing: {}", f.checkpointing);
  } else if (f.largest_micro_batch > 0) {
    f.note = fmt::format("fits with micro-batch {} or less (train.micro_batch_size)",
                         f.largest_micro_batch);
  } else if (f.gpus_with_sharded_base > 0) {
    f.note = fmt::format("fits on {} GPUs with distributed.shard_base (checkpointing full)",
                         f.gpus_with_sharded_base);
  } else {
    f.note = fmt::format(
        "does not fit on up to {} GPUs (a split base takes a GPU count that divides "
        "train.grad_accum_steps, {})",
        max_gpus, spec.train.grad_accum_steps);
  }
  return f;
}

bool fits_on(const spec::RunSpec& spec, const gpus::Gpu& gpu, double headroom, int64_t gpus,
             const std::string& checkpointing) {
  if (!gpu.memory_gb) return false;
  MemoryOptions o = gpu_options(spec);
  o.activation_checkpointing = checkpointing;
  const double usable = *gpu.memory_gb * 1e9 * (1.0 - headroom);
  if (needed_bytes(spec, o) <= usable) return true;
  if (gpus < 2) return false;
  o.shard_ranks = gpus;
  return needed_bytes(spec, o) <= usable;
}

namespace {

// The report's GPU in the built-in datasheets, or nullptr.
const gpus::Gpu* report_gpu(const PlanRequest& r) {
  if (!r.from_report) return nullptr;
  return gpus::find_gpu(gpus::builtin_gpus(), r.from_report->environment.device.name);
}

// Reads `json[section][key]` into `out` when it is there with the type of `out`.
template <typename T>
void overlay(const nlohmann::ordered_json& json, const char* section, const char* key, T& out) {
  const auto s = json.find(section);
  if (s == json.end() || !s->is_object()) return;
  const auto k = s->find(key);
  if (k == s->end()) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (k->is_boolean()) out = k->get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    // model.activation_checkpointing: a policy, or a bool before the policies.
    if (k->is_string()) out = k->get<std::string>();
    if (k->is_boolean()) {
      out =
          k->get<bool>() ? spec::choice::checkpointing::kFull : spec::choice::checkpointing::kNone;
    }
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (k->is_number_integer()) out = k->get<int64_t>();
  } else {
    if (k->is_array() &&
        std::all_of(k->begin(), k->end(), [](const auto& v) { return v.is_string(); })) {
      out = k->get<T>();
    }
  }
}

// The spec the report's run trained, as far as its FLOPs go: the report's spec where it loads as
// this ftbench reads specs, else `job` with what decides the FLOPs read from the report's spec
// one key at a time (the model's shape, its checkpointing, the adapters, data.seq_len), so that
// a report of an older ftbench, whose spec has keys since renamed (the reference reports'
// model.init), is still counted as it ran.
spec::RunSpec report_flop_spec(const report::Report& rep, const spec::RunSpec& job) {
  nlohmann::ordered_json json = rep.spec;
  if (!json.is_object()) return job;
  json.erase("source_path");
  try {
    return spec::load_spec_from_string(json.dump(), "the report's spec");
  } catch (const BadInput&) {
  }
  spec::RunSpec ran = job;
  overlay(json, "model", "dim", ran.model.dim);
  overlay(json, "model", "n_layers", ran.model.n_layers);
  overlay(json, "model", "n_heads", ran.model.n_heads);
  overlay(json, "model", "n_kv_heads", ran.model.n_kv_heads);
  overlay(json, "model", "ffn_dim", ran.model.ffn_dim);
  overlay(json, "model", "vocab_size", ran.model.vocab_size);
  overlay(json, "model", "tie_embeddings", ran.model.tie_embeddings);
  overlay(json, "model", "activation_checkpointing", ran.model.activation_checkpointing);
  overlay(json, "lora", "rank", ran.lora.rank);
  overlay(json, "lora", "targets", ran.lora.targets);
  overlay(json, "data", "seq_len", ran.data.seq_len);
  return ran;
}

// What the report's device computed per second, counted as the plan counts a job: the padded
// tokens of its measured steps per second times the training FLOPs per token of the spec it
// ran (recompute when it checkpointed), over its devices. The report's own achieved TFLOP/s
// count its real tokens without recompute; held against a job counted in padded tokens with
// recompute they made its own job 2.3 times as long. nullopt without a measured step.
std::optional<double> device_tflops(const report::Report& rep, const spec::RunSpec& ran) {
  const double tokens_per_second = rep.summary.tokens_per_second_padded;
  if (!(tokens_per_second > 0.0) || !std::isfinite(tokens_per_second)) return std::nullopt;
  return tokens_per_second * flops_per_token(ran) / 1e12 /
         static_cast<double>(std::max<int64_t>(1, rep.world_size));
}

std::string report_dtype(const report::Report& rep) {
  const auto model = rep.spec.find("model");
  if (model == rep.spec.end() || !model->is_object()) return "";
  const auto dtype = model->find("dtype");
  return dtype != model->end() && dtype->is_string() ? dtype->get<std::string>() : "";
}

}  // namespace

void check_sources(const PlanRequest& r) {
  if (r.from_report) {
    const report::Report& rep = *r.from_report;
    const std::string& where = r.from_report_path;
    const gpus::Gpu* gpu = report_gpu(r);
    if (gpu == nullptr) {
      throw PlanError(
          fmt::format("--from-report {}: the run's device {} is not a GPU of the datasheets "
                      "(configs/gpus.yaml): "
                      "its throughput cannot be held against a GPU's",
                      where, text::quoted(rep.environment.device.name)));
    }
    if (report_dtype(rep) != r.spec.model.dtype) {
      throw PlanError(fmt::format("--from-report {}: the run trained in {}, the spec in {}", where,
                                  text::quoted(report_dtype(rep)),
                                  text::quoted(r.spec.model.dtype)));
    }
    const std::optional<double> achieved = device_tflops(rep, report_flop_spec(rep, r.spec));
    if (!achieved) {
      throw PlanError(fmt::format(
          "--from-report {}: no measured throughput (summary.tokens_per_second.padded is not "
          "above 0: no measured steps?)",
          where));
    }
    const std::optional<double> peak = datasheet_tflops(*gpu, r.spec.model.dtype);
    if (peak && *achieved > *peak) {
      throw PlanError(fmt::format(
          "--from-report {}: {:.1f} TFLOP/s per GPU is above the {}'s dense {} peak of {} TFLOP/s: "
          "not a plausible measurement",
          where, *achieved, gpu->name, r.spec.model.dtype, *peak));
    }
  }
  if (r.gemm) {
    const gpus::Gpu* gpu = gpus::find_gpu(gpus::builtin_gpus(), r.gemm->environment.device.name);
    if (gpu == nullptr) {
      throw PlanError(
          fmt::format("--gemm {}: measured on {}, not a GPU of the datasheets (configs/gpus.yaml)",
                      r.gemm_path, text::quoted(r.gemm->environment.device.name)));
    }
    const bench::GemmDtypeResult* measured = bench::find_measured(*r.gemm, r.spec.model.dtype);
    if (measured == nullptr || !measured->max_tflops) {
      throw PlanError(fmt::format("--gemm {}: no {} result, the spec's dtype", r.gemm_path,
                                  r.spec.model.dtype));
    }
  }
}

namespace {

// A GPU's GEMM throughput in `dtype` short of its datasheet peak: the `ftbench gemm` result when
// it measured this GPU, else the public realised figure (bf16 only); nullopt when neither.
struct GemmFigure {
  double tflops = 0.0;
  std::string basis;  // "measured GEMM 793 (gemm.json)", "public realised GEMM 720"
};

std::optional<GemmFigure> gemm_figure(const PlanRequest& r, const gpus::Gpu& gpu) {
  if (r.gemm) {
    const gpus::Gpu* measured =
        gpus::find_gpu(gpus::builtin_gpus(), r.gemm->environment.device.name);
    const bench::GemmDtypeResult* result = bench::find_measured(*r.gemm, r.spec.model.dtype);
    if (measured != nullptr && measured->name == gpu.name && result != nullptr &&
        result->max_tflops) {
      return GemmFigure{*result->max_tflops,
                        fmt::format("measured GEMM {:.0f} ({})", *result->max_tflops, r.gemm_path)};
    }
  }
  if (r.spec.model.dtype == "bf16" && gpu.realised_bf16_tflops) {
    return GemmFigure{*gpu.realised_bf16_tflops,
                      fmt::format("public realised GEMM {:.0f}", *gpu.realised_bf16_tflops)};
  }
  return std::nullopt;
}

// The efficiency of `gpus` against a measurement on `measured_gpus` of the same GPU, {low, high}:
// 1 for the same count (the measurement holds its own), else the ratio of the stated ranges.
std::pair<double, double> relative_scaling(int64_t gpus, int64_t measured_gpus) {
  if (gpus == measured_gpus) return {1.0, 1.0};
  const auto [low, high] = scaling_efficiency(gpus);
  const auto [measured_low, measured_high] = scaling_efficiency(measured_gpus);
  return {low / measured_high, high / measured_low};
}

}  // namespace

std::pair<double, double> cross_gpu_range(double ratio, bool realised) {
  if (ratio <= 1.0) return {ratio * kCrossGpuGap, ratio};
  return {realised ? ratio : kCrossGpuGap, ratio / kCrossGpuGap};
}

namespace {

// A report of another batch split measured another job's throughput (padding and GEMM shapes
// follow the micro-batch): said beside the figure, not hidden in it. "" for the same split.
std::string other_batch_split(const report::Report& rep, const spec::RunSpec& spec) {
  // The split in effect at the run's end (since 1.6), else its spec's.
  int64_t micro = 0;
  int64_t accum = 0;
  if (rep.batching) {
    micro = rep.batching->micro_batch_size;
    accum = rep.batching->grad_accum_steps;
  } else if (const auto train = rep.spec.find("train");
             train != rep.spec.end() && train->is_object()) {
    micro = train->value("micro_batch_size", int64_t{0});
    accum = train->value("grad_accum_steps", int64_t{0});
  }
  if (micro <= 0 || accum <= 0 ||
      (micro == spec.train.micro_batch_size && accum == spec.train.grad_accum_steps)) {
    return "";
  }
  return fmt::format(
      "; the report's run was micro-batch {} x {}, this job {} x {}: its throughput is another "
      "batch split's",
      micro, accum, spec.train.micro_batch_size, spec.train.grad_accum_steps);
}

}  // namespace

TimeEstimate estimate_time(const PlanRequest& r, const gpus::Gpu& gpu, int64_t gpus) {
  const spec::RunSpec& spec = r.spec;
  TimeEstimate t;
  const spec::DerivedCounts d = spec::derive_counts(spec);
  const double per_step = tokens_per_step(spec);
  t.tokens = r.tokens.value_or(static_cast<double>(d.total_steps) * per_step);
  t.steps = t.tokens / per_step;
  t.flops_per_token = flops_per_token(spec);
  auto [scale_low, scale_high] = scaling_efficiency(gpus);
  const std::optional<double> peak = datasheet_tflops(gpu, spec.model.dtype);
  const gpus::Gpu* measured_gpu = report_gpu(r);
  std::optional<double> measured;
  if (measured_gpu != nullptr) {
    measured = device_tflops(*r.from_report, report_flop_spec(*r.from_report, spec));
  }
  const int64_t measured_gpus = r.from_report ? std::max<int64_t>(1, r.from_report->world_size) : 1;
  const std::optional<double> report_peak =
      measured_gpu != nullptr ? datasheet_tflops(*measured_gpu, spec.model.dtype) : std::nullopt;
  const std::optional<GemmFigure> gemm = gemm_figure(r, gpu);
  const std::optional<GemmFigure> report_gemm =
      measured_gpu != nullptr ? gemm_figure(r, *measured_gpu) : std::nullopt;
  const bool gemm_measured = gemm && r.gemm && gemm->basis.rfind("measured", 0) == 0;
  const std::string other_batch = measured ? other_batch_split(*r.from_report, spec) : "";
  const std::string measured_text =
      measured ? fmt::format("{} ({}: {:.1f} TFLOP/s per GPU as the plan counts it, {} GPU(s){})",
                             r.from_report_path, measured_gpu->name, *measured, measured_gpus,
                             other_batch)
               : "";
  if (measured && measured_gpu->name == gpu.name) {
    t.tflops_low = t.tflops_high = *measured;
    t.measured = true;
    std::tie(scale_low, scale_high) = relative_scaling(gpus, measured_gpus);
    t.throughput_basis = "measured: " + measured_text;
  } else if (measured && gemm && report_gemm) {
    // Another GPU's measurement scaled by the two GPUs' GEMM throughput; end-to-end gaps are
    // wider than GEMM gaps (cross_gpu_range).
    const double ratio = gemm->tflops / report_gemm->tflops;
    const auto [low, high] = cross_gpu_range(ratio, true);
    t.tflops_low = *measured * low;
    t.tflops_high = *measured * high;
    std::tie(scale_low, scale_high) = relative_scaling(gpus, measured_gpus);
    t.throughput_basis = fmt::format(
        "estimate: {} x {:.2f}-{:.2f} ({} / {} TFLOP/s = {:.3f}; end-to-end gaps up to {:.2f}x "
        "wider)",
        measured_text, low, high, gemm->basis, report_gemm->basis, ratio, 1.0 / kCrossGpuGap);
  } else if (measured && peak && report_peak) {
    // Datasheet peaks alone: a guess (the MI300X's says 1.32x an H100, the reference pair
    // measured 0.75x), so its slow end is never faster than the measured GPU.
    const double peak_here = peak.value_or(0.0);
    const double peak_there = report_peak.value_or(0.0);
    const double ratio = peak_here / peak_there;
    const auto [low, high] = cross_gpu_range(ratio, false);
    t.tflops_low = *measured * low;
    t.tflops_high = *measured * high;
    std::tie(scale_low, scale_high) = relative_scaling(gpus, measured_gpus);
    t.throughput_basis = fmt::format(
        "guess: {} x {:.2f}-{:.2f} (datasheet peaks {} / {} = {:.3f}, no GEMM figure for both; "
        "slow end no faster than the measured GPU)",
        measured_text, low, high, peak_here, peak_there, ratio);
  } else if (gemm_measured) {
    t.tflops_low = gemm->tflops * kGemmEfficiencyLow;
    t.tflops_high = gemm->tflops * kGemmEfficiencyHigh;
    t.throughput_basis =
        fmt::format("measured {} GEMM {:.0f} TFLOP/s ({}) x {:.0f}-{:.0f} %", spec.model.dtype,
                    gemm->tflops, r.gemm_path, 100 * kGemmEfficiencyLow, 100 * kGemmEfficiencyHigh);
  } else if (gemm) {
    t.tflops_low = gemm->tflops * kGemmEfficiencyLow;
    t.tflops_high = gemm->tflops * kGemmEfficiencyHigh;
    t.throughput_basis =
        fmt::format("public realised bf16 GEMM {:.0f} TFLOP/s x {:.0f}-{:.0f} %", gemm->tflops,
                    100 * kGemmEfficiencyLow, 100 * kGemmEfficiencyHigh);
  } else if (peak) {
    t.tflops_low = *peak * kEfficiencyLow;
    t.tflops_high = *peak * kEfficiencyHigh;
    t.throughput_basis =
        fmt::format("datasheet dense {} {:.0f} TFLOP/s x {:.0f}-{:.0f} %", spec.model.dtype, *peak,
                    100 * kEfficiencyLow, 100 * kEfficiencyHigh);
  } else {
    t.throughput_basis =
        fmt::format("no {} figure for the {}: no time estimate", spec.model.dtype, gpu.name);
    return t;
  }
  if (t.measured || (measured && t.tflops_low > 0.0 && measured_gpus > 1)) {
    if (gpus != measured_gpus) {
      t.throughput_basis += fmt::format("; {} GPU(s) against the measured {}: x {:.2f}-{:.2f}",
                                        gpus, measured_gpus, scale_low, scale_high);
    }
  } else if (gpus > 1) {
    t.throughput_basis += fmt::format("; {} GPUs at {:.0f}-{:.0f} % scaling", gpus, 100 * scale_low,
                                      100 * scale_high);
  }
  const double job_flops = t.tokens * t.flops_per_token;
  const double n = static_cast<double>(gpus);
  t.training_seconds_low = job_flops / (t.tflops_high * 1e12 * n * scale_high);
  t.training_seconds_high = job_flops / (t.tflops_low * 1e12 * n * scale_low);
  const bool same_model = r.from_report && r.from_report->parameters.base ==
                                               model::count_parameters(spec.model, spec.lora).base;
  if (measured_gpu != nullptr && measured_gpu->name == gpu.name && same_model) {
    t.setup_seconds_low = t.setup_seconds_high = r.from_report->time_to_first_step_seconds;
    t.setup_basis = fmt::format("measured: {}'s time to first step", r.from_report_path);
  } else {
    t.setup_seconds_low = kSetupSecondsLow;
    t.setup_seconds_high = kSetupSecondsHigh;
    t.setup_basis = "assumed 3-14 min (FIELD.md's reference run: H100 3 min, MI300X 14 min)";
  }
  t.run_seconds_low = t.setup_seconds_low + t.training_seconds_low;
  t.run_seconds_high = t.setup_seconds_high + t.training_seconds_high;
  return t;
}

namespace {

// The spot risk of an offer for the slow end of the job.
void add_spot(OfferPlan& p, const PlanRequest& r, const spec::RunSpec& job) {
  // --preemptions-per-hour wins over the offer's own rate.
  const std::optional<double> rate =
      r.preemptions_per_hour ? r.preemptions_per_hour : p.offer.preemptions_per_hour;
  if (p.offer.tier != cost::kSpot || !rate || p.time.tflops_low <= 0.0) return;
  cost::SpotInputs in;
  in.work_seconds = p.time.run_seconds_high;
  in.preemptions_per_hour = *rate;
  const spec::CheckpointSpec& c = job.train.checkpoint;
  if (c.every_minutes > 0) {
    in.checkpoint_interval_seconds = c.every_minutes * 60.0;
  } else if (c.every_steps > 0 && p.time.steps > 0) {
    in.checkpoint_interval_seconds =
        static_cast<double>(c.every_steps) * p.time.training_seconds_high / p.time.steps;
  }
  in.save_seconds = kCheckpointSaveSeconds;
  in.restart_seconds = p.time.setup_seconds_high;
  p.spot = cost::spot_risk(in);
  if (p.spot->expected_seconds) {
    const cost::RunTimes times = run_times(
        p.time, *p.spot->expected_seconds,
        p.time.training_seconds_high + (*p.spot->expected_seconds - in.work_seconds), p.gpus, job);
    p.spot_expected_usd = cost::estimate(times, cost::rate_from_offer(p.offer)).billed_usd;
  }
}

// The GPUs a job runs on with `fit`: --gpus, else 1 when it fits (or fits with checkpointing),
// else the fewest that fit with a split base; 0 when none do.
int64_t job_gpus(const PlanRequest& r, const GpuFit& fit) {
  if (r.gpus) return *r.gpus;
  if (fit.fits || fit.needs_checkpointing) return 1;
  return fit.gpus_with_sharded_base;
}

// The spec as it would run on `fit`: checkpointing on where it needs it to fit.
spec::RunSpec job_spec(const spec::RunSpec& spec, const GpuFit& fit) {
  spec::RunSpec job = spec;
  job.model.activation_checkpointing = fit.checkpointing;
  if (!fit.fits && !fit.needs_checkpointing && fit.gpus_with_sharded_base > 0) {
    job.model.activation_checkpointing = spec::choice::checkpointing::kFull;
  }
  return job;
}

OfferPlan plan_offer(const PlanRequest& r, const cost::Offer& offer, const GpuFit& fit,
                     const cost::Date& today) {
  OfferPlan p;
  p.offer = offer;
  std::vector<std::string> flags;
  const int64_t gpus = job_gpus(r, fit);
  p.gpus = std::max<int64_t>(1, gpus);
  const spec::RunSpec job = job_spec(r.spec, fit);
  if (fit.needs_checkpointing) {
    flags.push_back(fmt::format("needs activation checkpointing {}", fit.checkpointing));
  }
  if (r.gpus) {
    p.fits = fits_on(r.spec, fit.gpu, r.headroom, p.gpus, job.model.activation_checkpointing);
    if (!p.fits) flags.push_back(fmt::format("does not fit on {} GPU(s)", p.gpus));
  } else {
    p.fits = gpus > 0;
    if (!p.fits) flags.push_back(fit.note);
  }
  if (p.gpus > 1 && r.spec.train.grad_accum_steps % p.gpus != 0) {
    p.fits = false;
    flags.push_back(fmt::format(
        "ftbench run needs train.grad_accum_steps ({}) to be a multiple of the GPUs ({})",
        r.spec.train.grad_accum_steps, p.gpus));
  }
  PlanRequest for_job = r;
  for_job.spec = job;
  p.time = estimate_time(for_job, fit.gpu, p.gpus);
  const cost::Rate rate = cost::rate_from_offer(offer);
  p.price_flags = cost::offer_flags(offer, today, r.max_age_days);
  if (!p.price_flags.empty()) flags.push_back(p.price_flags);
  if (offer.note.find("quote-only") != std::string::npos) flags.push_back("quote-only");
  if (p.time.tflops_low <= 0.0) {
    flags.push_back(p.time.throughput_basis);
    p.timed = false;
  } else {
    p.cost_low = cost::estimate(
        run_times(p.time, p.time.run_seconds_low, p.time.training_seconds_low, p.gpus, job), rate);
    p.cost_high = cost::estimate(
        run_times(p.time, p.time.run_seconds_high, p.time.training_seconds_high, p.gpus, job),
        rate);
  }
  if (p.timed && r.deadline_seconds && p.time.run_seconds_high > *r.deadline_seconds) {
    p.meets_deadline = false;
    flags.push_back("may miss the deadline");
  }
  if (p.timed && r.budget_usd && p.cost_high.billed_usd > *r.budget_usd) {
    p.within_budget = false;
    flags.push_back("may exceed the budget");
  }
  if (p.timed && p.cost_high.gpus_billed > p.gpus) {
    flags.push_back(fmt::format("pays for {} GPUs, uses {}", p.cost_high.gpus_billed, p.gpus));
  }
  if (p.gpus > offer.gpus_per_instance) {
    flags.push_back(fmt::format("{} instances of {} GPU(s): the ranks span machines",
                                (p.gpus + offer.gpus_per_instance - 1) / offer.gpus_per_instance,
                                offer.gpus_per_instance));
  }
  add_spot(p, r, job);
  if (p.offer.tier == cost::kSpot && p.timed && !p.spot) {
    p.risk_unpriced = true;
    flags.push_back("spot: reclaims not priced (--preemptions-per-hour), not recommended");
  } else if (p.spot && !p.spot_expected_usd) {
    p.risk_unpriced = true;
    flags.push_back("spot: at this reclaim rate the job practically never finishes");
  }
  if (p.spot && p.spot->expected_seconds && r.deadline_seconds &&
      *p.spot->expected_seconds > *r.deadline_seconds && p.meets_deadline) {
    p.meets_deadline = false;
    flags.push_back("with reclaims, may miss the deadline");
  }
  if (p.spot_expected_usd && r.budget_usd && *p.spot_expected_usd > *r.budget_usd &&
      p.within_budget) {
    p.within_budget = false;
    flags.push_back("with reclaims, may exceed the budget");
  }
  p.flags = fmt::format("{}", fmt::join(flags, "; "));
  return p;
}

// An offer of a GPU without a datasheet: listed, never planned.
OfferPlan unplanned_offer(const cost::Offer& offer) {
  OfferPlan p;
  p.offer = offer;
  p.fits = false;
  p.timed = false;
  p.flags = fmt::format(
      "no datasheet for {}: its memory and speed are unknown (a --catalog "
      "file's gpus: section adds one)",
      text::quoted(offer.gpu));
  return p;
}

bool eligible(const OfferPlan& p) {
  return p.fits && p.timed && p.meets_deadline && p.within_budget && !p.risk_unpriced;
}

// The bill an offer is ranked by: the slow end's, or a spot offer's expected bill with reclaims.
double ranking_usd(const OfferPlan& p) {
  return p.spot_expected_usd.value_or(p.cost_high.billed_usd);
}

// Eligible offers first, then by the bill (ranking_usd); offers without a time last. An offer's
// date and stated billing are flags beside its price, never a rank: ranking dated offers first
// recommended one 40 times the bill of the cheapest that fitted.
bool ranks_before(const OfferPlan& a, const OfferPlan& b) {
  if (eligible(a) != eligible(b)) return eligible(a);
  if (a.timed != b.timed) return a.timed;
  return ranking_usd(a) < ranking_usd(b);
}

// Why no offer is recommended, from what ruled each out.
std::string no_recommendation(const Plan& plan, const PlanRequest& r) {
  if (plan.offers.empty()) {
    return r.gpu.empty()
               ? "no offer in the catalog"
               : fmt::format("no offer of the {} in the catalog", plan.fits.front().gpu.name);
  }
  std::vector<std::string> why;
  const auto count = [&](auto pred) {
    return std::count_if(plan.offers.begin(), plan.offers.end(), pred);
  };
  const auto n_fit = count([](const OfferPlan& o) { return !o.fits; });
  const auto n_time = count([](const OfferPlan& o) { return o.fits && !o.timed; });
  const auto n_late = count([](const OfferPlan& o) { return !o.meets_deadline; });
  const auto n_over = count([](const OfferPlan& o) { return !o.within_budget; });
  const auto n_spot = count([](const OfferPlan& o) { return o.risk_unpriced; });
  if (n_fit > 0) why.push_back(fmt::format("{} do not fit", n_fit));
  if (n_time > 0) why.push_back(fmt::format("{} have no time estimate", n_time));
  if (n_late > 0) why.push_back(fmt::format("{} may miss the deadline", n_late));
  if (n_over > 0) why.push_back(fmt::format("{} may exceed the budget", n_over));
  if (n_spot > 0)
    why.push_back(fmt::format("{} are spot offers whose reclaims are not priced", n_spot));
  return fmt::format("none of the {} offers qualifies: {}", plan.offers.size(),
                     fmt::join(why, ", "));
}

}  // namespace

Plan make_plan(const PlanRequest& r, const cost::Catalog& catalog, const cost::Date& today) {
  check_sources(r);
  Plan plan;
  plan.overheads = default_gpu_overheads();
  plan.policies = estimate_policies(r.spec, gpu_options(r.spec), &plan.overheads);
  const gpus::Gpu* only = nullptr;
  if (!r.gpu.empty()) {
    only = cost::find_gpu(catalog, r.gpu);
    if (only == nullptr) {
      throw PlanError(fmt::format(
          "--gpu: no datasheet for a GPU {} (configs/gpus.yaml and --catalog files' gpus: "
          "sections; ftbench catalog lists the GPUs offered)",
          text::quoted(r.gpu)));
    }
  }
  for (const gpus::Gpu& gpu : catalog.gpus) {
    if (only != nullptr && gpu.name != only->name) continue;
    plan.fits.push_back(fit_on(r.spec, gpu, r.headroom, r.max_gpus));
  }
  // The memory breakdown of the spec's policy; auto's as chosen on the first GPU planned.
  plan.memory_policy = r.spec.model.activation_checkpointing;
  if (plan.memory_policy == spec::choice::checkpointing::kAuto) {
    plan.memory_policy = plan.fits.empty() ? std::string(spec::choice::checkpointing::kNone)
                                           : plan.fits.front().checkpointing;
  }
  for (const PolicyEstimate& e : plan.policies) {
    if (e.policy == plan.memory_policy) plan.memory = e.memory;
  }
  for (const cost::Offer& offer : catalog.offers) {
    const auto fit = std::find_if(plan.fits.begin(), plan.fits.end(),
                                  [&](const GpuFit& f) { return f.gpu.name == offer.gpu; });
    if (fit != plan.fits.end()) {
      plan.offers.push_back(plan_offer(r, offer, *fit, today));
    } else if (only == nullptr && cost::find_gpu(catalog, offer.gpu) == nullptr) {
      plan.offers.push_back(unplanned_offer(offer));
    }
  }
  std::stable_sort(plan.offers.begin(), plan.offers.end(), ranks_before);
  if (plan.offers.empty() || !eligible(plan.offers.front())) {
    plan.recommendation = no_recommendation(plan, r);
    return plan;
  }
  plan.recommended = 0;
  const OfferPlan& best = plan.offers.front();
  const auto range = [](double a, double b, std::string (*f)(double)) {
    return f(a) == f(b) ? f(a) : f(a) + " to " + f(b);
  };
  plan.recommendation = fmt::format(
      "{}: {} GPU(s), {}, billed {}{}", cost::offer_selector(best.offer), best.gpus,
      range(best.time.run_seconds_low, best.time.run_seconds_high, &text::format_duration),
      range(best.cost_low.billed_usd, best.cost_high.billed_usd, &text::format_usd),
      best.price_flags.empty() ? "" : " (price " + best.price_flags + ")");
  if (plan.offers.size() > 1 && eligible(plan.offers[1])) {
    const OfferPlan& next = plan.offers[1];
    plan.break_even_usd_per_gpu_hour = cost::break_even_usd_per_gpu_hour(
        run_times(next.time, next.time.run_seconds_high, next.time.training_seconds_high, next.gpus,
                  job_spec(r.spec, *std::find_if(plan.fits.begin(), plan.fits.end(),
                                                 [&](const GpuFit& f) {
                                                   return f.gpu.name == next.offer.gpu;
                                                 }))),
        cost::rate_from_offer(next.offer), best.cost_high.billed_usd);
  }
  return plan;
}

}  // namespace ftbench::plan
