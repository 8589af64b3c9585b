#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "ftbench/model/shape_math.h"
#include "ftbench/report/summary_text.h"
#include "ftbench/spec/canonical.h"
#include "ftbench/spec/derived.h"
#include "ftbench/spec/spec_loader.h"

namespace ftbench::cli {
namespace {

struct ValidateFlags {
  std::string spec_path;
  std::vector<std::string> overrides;
  bool json = false;
};

}  // namespace

Action add_validate_command(CLI::App& app) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a spec; print it resolved, with batch sizes, steps and parameters");
  cmd->add_option("spec", flags->spec_path, "YAML run spec")->required();
  cmd->add_option("--set", flags->overrides, "Override a key: --set lora.rank=8 (repeatable)");
  cmd->add_flag("--json", flags->json, "Print one JSON object instead of text");
  return [flags]() {
    const spec::RunSpec s = spec::load_spec(flags->spec_path, flags->overrides);
    const spec::DerivedCounts d = spec::derive_counts(s);
    const model::ParamCounts p = model::count_parameters(s.model, s.lora);
    const double trainable_percent = 100.0 * double(p.lora) / double(p.base);
    if (flags->json) {
      nlohmann::ordered_json out;
      out["spec"] = spec::to_json(s);
      out["spec_fingerprint"] = spec::fingerprint(s);
      out["derived"] = {{"effective_batch", d.effective_batch},
                        {"micro_batches_per_epoch", d.micro_batches_per_epoch},
                        {"steps_per_epoch", d.steps_per_epoch},
                        {"total_steps", d.total_steps},
                        {"max_tokens_per_step", d.max_tokens_per_step}};
      out["parameters"] = {{"base", p.base}, {"trainable", p.lora}, {"total", p.total()}};
      std::cout << out.dump(2) << "\n";
      return kExitOk;
    }
    std::cout << "resolved spec (" << flags->spec_path << "):\n"
              << spec::to_json(s).dump(2) << "\n\n";
    using report::group_thousands;
    auto line = [](const std::string& label, const std::string& value) {
      std::cout << fmt::format("{:<30}{}\n", label, value);
    };
    line("spec fingerprint", spec::fingerprint(s));
    line("effective batch", fmt::format("{} ({} micro-batch x {} accumulation)", d.effective_batch,
                                        s.train.micro_batch_size, s.train.grad_accum_steps));
    line("micro-batches per epoch", group_thousands(d.micro_batches_per_epoch));
    line("steps per epoch", group_thousands(d.steps_per_epoch));
    line("total steps", fmt::format("{}{}", group_thousands(d.total_steps),
                                    s.train.max_steps > 0 ? " (capped by train.max_steps)" : ""));
    line("tokens per step (max)", group_thousands(d.max_tokens_per_step));
    line("total parameters", group_thousands(p.base));
    line("trainable parameters",
         fmt::format("{} ({:.4f}% of total)", group_thousands(p.lora), trainable_percent));
    line("parameters with adapters", group_thousands(p.total()));
    std::cout << "spec is valid\n";
    return kExitOk;
  };
}

}  // namespace ftbench::cli
