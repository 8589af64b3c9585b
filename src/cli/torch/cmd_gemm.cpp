// `ftbench gemm`: achievable matmul TFLOP/s of a device over a sweep of shapes, per dtype.
#include <iostream>
#include <memory>
#include <optional>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/torch/gemm.h"
#include "cli/run_command.h"
#include "util/io/output_file.h"
#include "util/io/output_rules.h"

namespace ftbench::cli {
namespace {

struct GemmFlags {
  std::string dtypes;         // "" : the backend's defaults
  spec::BackendSpec backend;  // --device, --device-index, --threads
  std::string shapes;         // "" : the backend's default sweep
  bool quick = false;
  std::optional<int64_t> warmup;
  std::optional<int64_t> iterations;
  std::optional<double> max_seconds;
  std::optional<double> cache_flush_mib;
  bool json = false;
  std::string output;
  bool force = false;
};

}  // namespace

void add_backend_options(CLI::App* cmd, spec::BackendSpec& backend) {
  cmd->add_option("--device", backend.device, "auto, cpu, cuda or rocm (default auto)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "rocm"}));
  cmd->add_option("--device-index", backend.device_index, "GPU to use (default 0)")
      ->check(whole_number(0, 1023));
  cmd->add_option("--threads", backend.threads, "CPU threads (default: all hardware threads)")
      ->check(whole_number(0, 4096));
}

Action add_gemm_command(CLI::App& app) {
  auto f = std::make_shared<GemmFlags>();
  CLI::App* cmd = add_subcommand(app, "gemm");
  cmd->add_option("--dtype", f->dtypes,
                  "bf16, fp8, fp16, tf32, fp32, comma-separated, or all (default: bf16,fp32 on "
                  "CPU; bf16,fp8,fp16,tf32,fp32 on a GPU)");
  add_backend_options(cmd, f->backend);
  cmd->add_option("--shapes", f->shapes,
                  "Sweep: groups 'M x N x K' or cubes 'D', ';'-separated; each dimension a size, "
                  "a list a,b,c or start:stop:step (stop included). Default depends on the "
                  "device");
  cmd->add_flag("--quick", f->quick, "A few small shapes and few calls: a first look");
  cmd->add_option("--warmup", f->warmup, "Untimed calls per shape before the timed ones")
      ->check(whole_number(0, 100000));
  cmd->add_option("--iterations", f->iterations, "Timed calls per shape")
      ->check(whole_number(1, 100000));
  cmd->add_option("--max-seconds", f->max_seconds,
                  "Time budget of the sweep; shapes not started by then are skipped")
      ->check(finite_number(0.0, 1e9, /*above_lo=*/true));
  cmd->add_option("--cache-flush-mib", f->cache_flush_mib,
                  "MiB written before every call (default: twice the L2, see docs); 0: no flush")
      ->check(finite_number(0.0, 65536.0));
  cmd->add_flag("--json", f->json, "Print the result as JSON (ftbench.gemm/1.1) instead of tables");
  cmd->add_option("-o,--output", f->output,
                  "Also write the JSON result to this file (for ftbench run --gemm)");
  cmd->add_flag("--force", f->force, "Overwrite an existing output file");

  return [f]() {
    // Progress and logs go to stderr, so that --json leaves stdout to the JSON alone.
    spdlog::set_default_logger(spdlog::stderr_color_mt("ftbench-gemm"));
    // Everything the user typed is checked before the device is touched.
    std::vector<std::string> dtypes;
    if (!f->dtypes.empty()) dtypes = bench::parse_dtypes(f->dtypes, "--dtype");
    std::vector<bench::GemmShape> shapes;
    if (!f->shapes.empty()) shapes = bench::parse_shape_sweep(f->shapes, "--shapes");
    if (!f->output.empty()) {
      // Never over a report or another ftbench file of another kind (util/io/output_rules.h).
      io::check_output_rules("-o", f->output, "gemm result", {});
      io::check_writable(f->output, f->force);
    }

    const device::Backend backend(f->backend);

    const bench::SweepDefaults defaults = bench::default_sweep(backend.kind(), f->quick);
    bench::GemmRunOptions o;
    o.dtypes = dtypes.empty() ? defaults.dtypes : dtypes;
    o.shapes_spec = f->shapes.empty() ? defaults.shapes : f->shapes;
    o.shapes = shapes.empty() ? bench::parse_shape_sweep(o.shapes_spec, "--shapes") : shapes;
    o.warmup_iterations = f->warmup.value_or(defaults.warmup_iterations);
    o.iterations = f->iterations.value_or(defaults.iterations);
    o.max_seconds = f->max_seconds.value_or(defaults.max_seconds);
    if (f->cache_flush_mib) {
      o.cache_flush_bytes = static_cast<int64_t>(*f->cache_flush_mib * (1 << 20));
    }
    o.progress = [](const std::string& line) { std::cerr << "gemm: " << line << std::endl; };
    std::cerr << fmt::format(
        "gemm: {} on {} ({}): {} shapes x {} dtypes, {} warm-up + {} timed calls "
        "each, budget {:.0f} s\n",
        o.shapes_spec, backend.info().name, backend.kind(), o.shapes.size(), o.dtypes.size(),
        o.warmup_iterations, o.iterations, o.max_seconds);

    bench::GemmResult result;
    try {
      result = bench::run_gemm_sweep(o, backend);
    } catch (const c10::Error& e) {
      throw torch_failure(e);
    }

    const std::string json = bench::to_json(result).dump(2) + "\n";
    if (!f->output.empty()) io::write_file_atomically(json, f->output, f->force);
    if (f->json) {
      std::cout << json;
    } else {
      std::cout << bench::render_gemm_text(result);
      if (!f->output.empty()) std::cout << "result written to " << f->output << "\n";
    }

    bool measured = false;
    for (const bench::GemmDtypeResult& d : result.dtypes) measured = measured || d.max_tflops;
    if (!measured) throw RunFailure("gemm: no dtype could be measured on this device");
    std::string failure;
    if (!bench::checks_passed(result, &failure)) {
      throw RunFailure("gemm: a product differs from its fp64 reference: " + failure);
    }
    return kExitOk;
  };
}

}  // namespace ftbench::cli
