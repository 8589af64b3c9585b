// ftbench: times LoRA fine-tuning runs and reports them. One catch at this boundary maps every
// error to a documented exit code.
#include <cstdio>
#include <iostream>

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "ftbench/device/backend.h"
#include "ftbench/report/report_io.h"
#include "ftbench/run/host_allocator.h"
#include "ftbench/spec/spec_error.h"
#include "ftbench/version.h"

int main(int argc, char** argv) {
  // First thing: the clock that measures launch and time to first step.
  const ftbench::metrics::ProcessClock clock = ftbench::metrics::ProcessClock::from_process_start();
  ftbench::run::tune_host_allocator();
  namespace cli = ftbench::cli;

  CLI::App app{"ftbench: benchmark harness for LoRA fine-tuning runs"};
  app.set_version_flag("--version",
                       std::string(ftbench::version()) + " (" + ftbench::git_commit() + ")");
  app.require_subcommand(1);
  app.fallthrough();  // --log-level also after the subcommand
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  const cli::Action run = cli::add_run_command(app, clock);
  const cli::Action validate = cli::add_validate_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? cli::kExitOk : cli::kExitBadInput;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] %^%l%$ %v");

  try {
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("validate")) return validate();
  } catch (const ftbench::spec::SpecError& e) {
    std::cerr << "error: invalid run spec\n" << e.what() << "\n";
    return cli::kExitBadInput;
  } catch (const ftbench::report::ReportExistsError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return cli::kExitOutputExists;
  } catch (const ftbench::report::ReportError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return cli::kExitFailure;
  } catch (const ftbench::device::BackendError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return cli::kExitFailure;
  } catch (const c10::Error& e) {
    // LibTorch errors carry a C++ backtrace after the first line; the first line says it.
    const std::string msg = e.what_without_backtrace();
    std::cerr << "error: LibTorch: " << msg << "\n";
    return cli::kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return cli::kExitFailure;
  }
  return cli::kExitBadInput;
}
