// `ftbench run SPEC`: its flags read into a run::RunOptions (the request, the instrumentation,
// the test hooks from the environment), run::run_benchmark called, the summary printed.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/gemm_result.h"
#include "cli/inputs.h"
#include "cli/run_command.h"
#include "economics/cost/catalog.h"
#include "economics/cost/estimate.h"
#include "economics/cost/pricing.h"
#include "report/metrics/profile_table.h"
#include "report/metrics/report_figures.h"
#include "report/report_io.h"
#include "report/summary_text.h"
#include "run/rerun.h"
#include "run/run_benchmark.h"
#include "spec/limits.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"
#include "train/dist/launch.h"
#include "train/dist/local_launch.h"
#include "train/oom_fallback.h"
#include "util/text/iso8601.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"
#include "util/text/units.h"

namespace ftbench::cli {
namespace {

struct RunFlags {
  std::string spec_path;
  std::vector<std::string> overrides;
  std::string output;
  bool force = false;
  std::optional<double> t0;
  std::optional<double> peak_tflops;
  std::string gemm_path;
  std::string resume;
  int64_t stop_after_steps = 0;
  int64_t nproc_per_node = 1;  // taken out by the launcher (src/cli/launcher.cpp) when > 1
  std::string mllog;
  std::optional<double> rate;
  std::optional<std::string> billing;
  std::optional<int64_t> min_seconds;
  std::string offer;
  std::vector<std::string> catalogs;
  std::string from_report;
  std::string profile_steps;
};

// The spec to run: the file given, with --set; or with --from-report the report's own spec as is
// (run/rerun.h), with the weights its run trained to check.
spec::RunSpec spec_to_run(const RunFlags& f, run::RunRequest& request) {
  if (f.from_report.empty()) {
    if (f.spec_path.empty()) throw InputError("run: give a spec file, or --from-report REPORT");
    return spec::load_spec(f.spec_path, f.overrides);
  }
  if (!f.spec_path.empty() || !f.overrides.empty()) {
    throw InputError(
        "--from-report runs the report's spec as is: give no spec file and no --set (run the "
        "spec with --set to change it)");
  }
  const report::Report old = [&] {
    try {
      report::Report r = report::read_report(f.from_report);
      metrics::check_summary_figures(r, f.from_report);
      return r;
    } catch (const report::ReportError& e) {
      throw InputError(e.what());
    }
  }();
  if (old.weights) request.expected_weights_fingerprint = old.weights->fingerprint;
  if (old.data) request.expected_data_fingerprint = old.data->fingerprint;
  return run::spec_from_report(old, f.from_report, !f.output.empty());
}

// The price of the live line's dollars: --rate (with --billing, --min-seconds), --offer, else
// the spec's output.price (an offer, or USD per GPU-hour billed per second); nullopt: none.
std::optional<cost::Rate> run_price(const RunFlags& f, const spec::RunSpec& spec) {
  if (f.rate && !f.offer.empty()) throw InputError("--rate and --offer: give the price one way");
  if (!f.rate && (f.billing || f.min_seconds)) {
    throw InputError(std::string(f.billing ? "--billing" : "--min-seconds") +
                     ": goes with --rate (an offer, --offer or output.price, states its own "
                     "billing)");
  }
  if (f.rate) {
    return rate_from_flags(*f.rate, f.billing.value_or("per-second"), f.min_seconds.value_or(0));
  }
  const std::string& text = f.offer.empty() ? spec.output.price : f.offer;
  const std::string what = f.offer.empty() ? "output.price" : "--offer";
  if (text.empty()) return std::nullopt;
  if (double usd = 0.0; text::parse_double(text, usd) == std::errc()) {
    try {
      cost::Rate r = rate_from_flags(usd, "per-second", 0);
      r.label = what + " " + text;
      return r;
    } catch (const BadInput& e) {
      throw InputError(what + ": " + e.what());
    }
  }
  const cost::Catalog catalog = cost::load_catalogs(f.catalogs);
  try {
    const std::vector<const cost::Offer*> offers = cost::resolve_offers(catalog, text);
    // Of several (an offer of several tiers or instance sizes), the cheapest per GPU-hour.
    const cost::Offer* best = *std::min_element(offers.begin(), offers.end(),
                                                [](const cost::Offer* a, const cost::Offer* b) {
                                                  return a->usd_per_gpu_hour < b->usd_per_gpu_hour;
                                                });
    return cost::rate_from_offer(*best);
  } catch (const BadInput& e) {
    throw InputError(what + ": " + e.what());
  }
}

// The external start from --t0 or FTBENCH_T0 (`source` names which), checked: Unix epoch
// seconds within kMaxExternalStartSeconds before the process start. InputError otherwise.
double checked_t0(double t0, const std::string& source, const device::ProcessClock& clock) {
  const std::string problem = device::external_start_problem(t0, clock.start_epoch_seconds());
  if (problem.empty()) return t0;
  const double start = clock.start_epoch_seconds();
  const double earliest = start - device::kMaxExternalStartSeconds;
  throw InputError(
      fmt::format("{}: expected the external start as Unix epoch seconds from {:.0f} ({}, 30 days "
                  "before the process started) to {:.3f} ({}, the process start), found {} ({})",
                  source, std::ceil(earliest), text::iso8601_utc(std::ceil(earliest)), start,
                  text::iso8601_utc(start), t0, problem));
}

// FTBENCH_T0 must be a plain number of Unix epoch seconds.
std::optional<double> t0_from_environment(const device::ProcessClock& clock) {
  const char* value = std::getenv("FTBENCH_T0");
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  const double t0 = std::strtod(value, &end);
  if (*end != '\0' || end == value) {
    throw InputError(
        fmt::format("FTBENCH_T0: expected Unix epoch seconds, found {}", text::quoted(value)));
  }
  return checked_t0(t0, "FTBENCH_T0", clock);
}

// FTBENCH_INJECT_OOM: a simulated memory limit for tests of the out-of-memory fallback
// (train/oom_fallback.h gives the rule syntax).
std::optional<train::OomInjection> oom_injection_from_environment() {
  const char* value = std::getenv("FTBENCH_INJECT_OOM");
  if (value == nullptr || *value == '\0') return std::nullopt;
  try {
    return train::OomInjection::parse(value);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("FTBENCH_INJECT_OOM: ") + e.what());
  }
}

// The summary's cost line: what the run cost at the price it was shown at.
std::string cost_line(const report::Report& rep, const cost::Rate& rate) {
  const cost::Cost c = cost::estimate(cost::run_times(rep), rate);
  return fmt::format("  {:<26}{} at {} ({}; {} of it before the first step)\n", "cost",
                     text::format_usd(c.billed_usd), text::printable(rate.label),
                     cost::describe_rate(rate), text::format_usd(c.before_first_step_usd));
}

}  // namespace

namespace {

// `ftbench run` once its flags are read: the spec, the run's options, the run, the summary.
int run_command(const RunFlags& flags, const device::ProcessClock& clock,
                const train::StopSignals& signals) {
  if (flags.nproc_per_node > 1) {
    throw InputError(
        "--nproc-per-node: ranks are started by the ftbench command (ftbench run "
        "--nproc-per-node N), not by ftbench-bin");
  }
  run::RunOptions options;
  run::RunRequest& request = options.request;
  run::Instrumentation& instrumentation = options.instrumentation;
  dist::follow_launcher();
  request.launch = dist::launch_from_environment(dist::environment_snapshot());
  if (request.launch.distributed()) {
    // Every rank logs to the same terminal under torchrun and srun: each line says whose.
    spdlog::set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}] %^%l%$ %v", request.launch.rank));
    spdlog::info("{}", dist::describe(request.launch));
  }
  request.spec = spec_to_run(flags, request);
  run::check_step_switches(request.spec);
  instrumentation.spec_loaded_seconds = clock.now();
  request.output_path =
      flags.output.empty() ? run::default_report_path(request.spec) : flags.output;
  request.force = flags.force;
  instrumentation.mllog_path = flags.mllog.empty() ? run::mllog_path(request.spec) : flags.mllog;
  instrumentation.rate = run_price(flags, request.spec);
  instrumentation.peak_tflops = flags.peak_tflops;
  options.test_hooks.inject_oom = oom_injection_from_environment();
  options.test_hooks.inject_rank_fault = dist::rank_fault_from_environment();
  request.resume = flags.resume;
  request.stop_after_steps = flags.stop_after_steps;
  if (!flags.profile_steps.empty()) {
    instrumentation.profile_steps = metrics::parse_profile_steps(flags.profile_steps);
  }
  request.inputs = {{"the report of --from-report", flags.from_report},
                    {"the GEMM result of --gemm", flags.gemm_path}};
  for (const std::string& catalog : flags.catalogs)
    request.inputs.push_back({"--catalog", catalog});
  if (!flags.gemm_path.empty()) {
    // Read and checked before the run starts: a bad file costs no machine time.
    const bench::GemmResult gemm = bench::read_gemm_result(flags.gemm_path);
    // A peak measured on wrong results is no peak (docs/methodology.md, "Correctness").
    std::string failure;
    if (!bench::checks_passed(gemm, &failure)) {
      throw InputError(fmt::format(
          "--gemm {}: the sweep's correctness check does not pass: {}; a rate measured on "
          "wrong results is no peak (measure again with ftbench gemm)",
          flags.gemm_path, failure));
    }
    instrumentation.gemm = bench::carried_gemm(gemm, flags.gemm_path);
    if (bench::find_measured(gemm, request.spec.model.dtype) == nullptr) {
      spdlog::warn(
          "--gemm {} has no {} measurement (the run's model.dtype): no MFU against a "
          "measured GEMM peak",
          flags.gemm_path, request.spec.model.dtype);
    }
  }
  if (flags.t0) {
    instrumentation.t0_epoch_seconds = checked_t0(*flags.t0, "--t0", clock);
    instrumentation.t0_source = "--t0";
  } else if (auto env_t0 = t0_from_environment(clock)) {
    instrumentation.t0_epoch_seconds = env_t0;
    instrumentation.t0_source = "FTBENCH_T0";
  }
  report::Report rep;
  try {
    rep = run::run_benchmark(options, clock, signals);
  } catch (const c10::Error& e) {
    // LibTorch errors carry a C++ backtrace after the first line; the first line says it.
    throw torch_failure(e);
  }
  // Rank 0 wrote the job's report; the others' share is in it.
  if (request.launch.rank == 0) {
    std::cout << report::render_summary(rep, request.output_path);
    if (instrumentation.rate) std::cout << cost_line(rep, *instrumentation.rate);
  }
  return kExitOk;
}

}  // namespace

Action add_run_command(CLI::App& app, const device::ProcessClock& clock,
                       const train::StopSignals& signals) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = add_subcommand(app, "run");
  cmd->add_option("spec", flags->spec_path, "YAML run spec (or --from-report)");
  cmd->add_option("--from-report", flags->from_report,
                  "Run a report's run again: its resolved spec as is, relative paths from the "
                  "folder it started in, its data and tokenizer files checked against the "
                  "digests it recorded (the same job by compare's fingerprints)");
  cmd->add_option("--set", flags->overrides, "Override a key: --set lora.rank=8 (repeatable)");
  cmd->add_option("-o,--output", flags->output, "Report path (default: the spec's output.report)");
  cmd->add_flag("--force", flags->force, "Overwrite an existing report");
  cmd->add_option("--t0", flags->t0,
                  "External start as Unix epoch seconds (instance boot, image pull); "
                  "also FTBENCH_T0. Time to first step is measured from it");
  // At least 1 GFLOP/s: a smaller peak makes MFU an overflow ("MFU inf%"), not a figure.
  cmd->add_option("--peak-tflops", flags->peak_tflops, "Peak TFLOP/s for MFU")
      ->check(finite_number(spec::kMinPeakTflops, 1e9));
  cmd->add_option("--gemm", flags->gemm_path,
                  "A result of ftbench gemm --json/-o on this device: carried into the report, "
                  "and MFU is also given against its measured peak for the run's dtype");
  cmd->add_option("--resume", flags->resume,
                  "Continue a checkpointed run: latest (the newest in train.checkpoint.dir), a "
                  "checkpoint folder, or a folder of checkpoints. The spec and data must be "
                  "those of the checkpoint");
  cmd->add_option("--stop-after-steps", flags->stop_after_steps,
                  "Stop after this optimizer step as if interrupted: checkpoint, partial report "
                  "(status interrupted), exit code 4")
      ->check(whole_number(1, spec::kMaxTotalSteps));
  cmd->add_option("--nproc-per-node", flags->nproc_per_node,
                  "Run the job as N data-parallel ranks on this machine (Gloo on CPU), without "
                  "torchrun: the ranks share each step's micro-batches, so train.grad_accum_steps "
                  "must be a multiple of N; rank 0 writes the report (docs/distributed.md)")
      ->check(whole_number(1, 1024));
  cmd->add_option("--profile-steps", flags->profile_steps,
                  "Profile steps N to M (N alone: step N) with LibTorch's profiler: a Chrome trace "
                  "and per-op and per-kernel tables (CSV) beside the report, the step's scopes and "
                  "attention ops in it; the profiled steps are left out of the timing figures")
      ->type_name("N[,M]")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              (void)metrics::parse_profile_steps(value);
              return "";
            } catch (const std::invalid_argument& e) {
              constexpr std::string_view kFlag = "--profile-steps: ";
              const std::string what = e.what();
              return what.rfind(kFlag, 0) == 0 ? what.substr(kFlag.size()) : what;
            }
          },
          "N[,M]", "step window"));
  cmd->add_option("--mllog", flags->mllog,
                  "Write the run as an MLPerf-style event log (:::MLLOG lines) to this file; "
                  "default: the spec's output.mllog (docs/mllog.md)");
  cmd->add_option("--rate", flags->rate,
                  "USD per GPU-hour: the live line shows the dollars so far and projected, the "
                  "summary the run's cost (default: the spec's output.price)");
  cmd->add_option("--billing", flags->billing,
                  "per-second (default), per-minute or per-hour, for --rate");
  cmd->add_option("--min-seconds", flags->min_seconds, "Minimum billed time for --rate, seconds")
      ->check(whole_number(0, cost::kMaxMinBilledSeconds));
  cmd->add_option("--offer", flags->offer,
                  "Catalog offer (PROVIDER/GPU[/TIER]) to show dollars at, as --rate");
  cmd->add_option("--catalog", flags->catalogs,
                  "Extra catalog file for --offer, YAML or SkyPilot CSV ([PROVIDER=]PATH)");
  return [flags, &clock, &signals]() { return run_command(*flags, clock, signals); };
}

}  // namespace ftbench::cli
