// The command line as one call, run_cli: every subcommand registered, its flags parsed, and the
// one catch that maps ftbench's errors to their exit codes (util/error.h).
#include <cstdint>
#include <iostream>
#include <map>
#include <new>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "device/host_memory.h"
#include "util/error.h"
#include "util/io/output_file.h"
#include "util/text/messages.h"
#include "util/text/parse_number.h"
#include "util/version.h"

namespace ftbench::cli {
namespace {

void add_log_level_option(CLI::App* app, std::string& log_level) {
  app->add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
}

// `ftbench rn`: CLI11 answers "A subcommand is required"; the word the user typed was meant as
// one, so say which it is not and which it may be. Writes the error and returns true when the
// first word left over is not an option and no subcommand was chosen.
bool unknown_subcommand(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0 || !app.get_subcommands().empty()) return false;
  const std::vector<std::string> rest = app.remaining();
  if (rest.empty() || rest.front().empty() || rest.front()[0] == '-') return false;
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  std::cerr << "error: " << text::unknown_name_message("subcommand", rest.front(), names)
            << "\nRun with --help for more information.\n";
  return true;
}

// CLI11 reads an empty value as the type's default: `--energy-price ""` as no price,
// `--rate ""` as 0, `-o ""` as no output path, each silently. Every option that takes a value
// refuses an empty one instead, before its own checks (a transform runs first); the one
// exception is tokenize's text, where "" is a text.
constexpr const char* kEmptyValue = "expected a value, found an empty string";

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string(kEmptyValue) : std::string(); },
      "");
  for (CLI::Option* option : app.get_options()) {
    if (option->get_expected_max() == 0) continue;  // a flag
    if (app.get_name() == "tokenize" && option->get_name() == "text") continue;
    option->transform(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_empty_values(*sub);
}

// CLI11 reads numbers in C's forms too ("0x10" is 16, "0b11" 3, "0o7" 7, "0x1p4" 16.0): `--rate
// 0x10` billed $16/h while the spec, the catalog and every file ftbench reads take decimal
// numbers only. Every option whose value is a number (CLI11's INT, UINT and FLOAT) takes the
// spec's decimal forms (util/text/parse_number.h), refused otherwise before the option's own
// checks. Infinity, NaN and values beyond the type's range pass on to those checks, which name
// them.
constexpr const char* kNotDecimal = "expected a decimal number, found ";

void refuse_non_decimal_numbers(CLI::App& app) {
  const auto decimal = [](const std::string& value, bool integer) {
    if (integer) {
      int64_t i = 0;
      uint64_t u = 0;
      return text::parse_int(value, i) != std::errc::invalid_argument ||
             text::parse_uint(value, u) != std::errc::invalid_argument;
    }
    double d = 0.0;
    return text::parse_double(value, d) != std::errc::invalid_argument;
  };
  for (CLI::Option* option : app.get_options()) {
    if (option->get_expected_max() == 0) continue;  // a flag
    // "INT", or "INT:INT in [1 - 65536]" with a range check.
    const std::string full_type = option->get_type_name();
    const std::string type = full_type.substr(0, full_type.find(':'));
    const bool integer = type == "INT" || type == "UINT";
    if (!integer && type != "FLOAT") continue;
    // A bounded whole number's own check (whole_number) says its bounds for "2.5".
    const bool bounded = full_type.find(kWholeNumberDescription) != std::string::npos;
    option->transform(CLI::Validator(
        [decimal, integer, bounded](std::string& value) {
          const bool taken = value.empty() || decimal(value, integer) ||
                             (integer && bounded && decimal(value, /*integer=*/false));
          return taken ? std::string() : kNotDecimal + text::quoted(value);
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_non_decimal_numbers(*sub);
}

// `--rate=` (nothing after the '='): CLI11 drops the empty value and takes the next word as
// the option's value, so `--rate= 2` priced at 2 and `--log-level= cost` took "cost" as the
// level. Refused before parsing, as an empty value is after it. Returns the option's name.
std::string empty_inline_value(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // what follows is positional text
    if (arg.size() > 3 && arg.compare(0, 2, "--") == 0 && arg.find('=') == arg.size() - 1) {
      return arg.substr(0, arg.size() - 1);
    }
  }
  return "";
}

}  // namespace

namespace {

// An error message as the terminal may show it: every line through text::printable(), so that
// a path or value from a shared file (a spec, a catalog, a report) cannot drive the terminal.
std::string shown(std::string_view message) {
  std::string out;
  for (std::size_t start = 0; start <= message.size();) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    if (start > 0) out += '\n';
    out += text::printable(message.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

const CommandInfo* find_command(std::string_view name) {
  for (const CommandInfo& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

CLI::App* add_subcommand(CLI::App& app, std::string_view name) {
  const CommandInfo* c = find_command(name);
  if (c == nullptr) throw std::logic_error("no such command in kCommands: " + std::string(name));
  return app.add_subcommand(std::string(c->name), std::string(c->summary));
}

bool needs_torch(std::string_view name) {
  const CommandInfo* c = find_command(name);
  return c != nullptr && c->needs_torch;
}

std::string subcommand_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--log-level") {
      ++i;
      continue;
    }
    if (!arg.empty() && arg[0] == '-') continue;
    return arg;
  }
  return "";
}

namespace {

void say_out_of_memory() {
  std::cerr << "error: out of memory: an allocation failed (std::bad_alloc) under "
            << device::describe_memory_limit()
            << "; raise the limit, or make the job smaller (model, micro-batch, sequence "
               "length, threads)\n";
}

int run_commands(int argc, char** argv, const TorchCommands& add_torch_commands) {
  CLI::App app{"ftbench: benchmark harness for LoRA fine-tuning runs"};
  app.set_version_flag("--version",
                       std::string(ftbench::version()) + " (" + ftbench::git_commit() + ")");
  app.require_subcommand(1);
  app.fallthrough();  // --log-level also after the subcommand
  // CLI11's refusals start "error: " as every other of ftbench's do.
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return "error: " + CLI::FailureMessage::simple(failed, e);
  });
  std::string log_level = "info";
  add_log_level_option(&app, log_level);
  std::map<std::string, Action> actions = add_torch_commands(app);
  actions["validate"] = add_validate_command(app);
  actions["cost"] = add_cost_command(app);
  actions["compare"] = add_compare_command(app);
  actions["catalog"] = add_catalog_command(app);
  actions["plan"] = add_plan_command(app);
  actions["report"] = add_report_command(app);
  actions["gate"] = add_gate_command(app);
  actions["tokenize"] = add_tokenize_command(app);
  actions["devices"] = add_devices_command(app);
  // Also each subcommand's own, so that its --help lists it (the top level takes it before).
  for (CLI::App* sub : app.get_subcommands({})) add_log_level_option(sub, log_level);
  refuse_empty_values(app);
  refuse_non_decimal_numbers(app);

  if (const std::string option = empty_inline_value(argc, argv); !option.empty()) {
    std::cerr << "error: " << text::printable(option) << ": " << kEmptyValue
              << "\nRun with --help for more information.\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (unknown_subcommand(app, e)) return kExitBadInput;
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] %^%l%$ %v");

  try {
    // A testing aid (util/io/output_file.h): a value that does not parse is bad input before any
    // work; a set one is said, so that nobody mistakes its failures for a real disk's.
    if (const auto inject = io::write_failure_injection_from_environment()) {
      std::cerr << "warning: FTBENCH_INJECT_WRITE_FAILURE is set: writing output files fails "
                   "on purpose (a testing aid)\n";
    }
    for (const auto& [name, action] : actions) {
      if (app.got_subcommand(name)) return action();
    }
  } catch (const Error& e) {
    // Every library error is of one kind (util/error.h), which decides its exit code.
    std::cerr << e.lead() << shown(e.what()) << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::bad_alloc&) {
    say_out_of_memory();
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << shown(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    std::cerr << "error: an unexpected error that is not a std::exception (a bug in ftbench: "
                 "please report it)\n";
    return kExitInternal;
  }
  return kExitBadInput;
}

}  // namespace

int run_cli(int argc, char** argv, const TorchCommands& add_torch_commands) {
  // The command line's set-up allocates too (CLI11's options, spdlog's pattern): out of memory
  // there is said like anywhere else (exit 3), not ended in std::terminate.
  try {
    return run_commands(argc, argv, add_torch_commands);
  } catch (const std::bad_alloc&) {
    say_out_of_memory();
    return kExitFailure;
  }
}

}  // namespace ftbench::cli
