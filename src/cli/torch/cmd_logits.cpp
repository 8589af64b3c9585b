// `ftbench logits`: the logits (and next-token loss) ftbench's model gives for a Hugging Face
// checkpoint, optionally with a PEFT adapter on top, as a logits file (ftbench.logits/1) that
// tests/reference/llama_numpy.py and scripts/reference/check_hf.py compare with independent
// implementations.
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "cli/run_command.h"
#include "device/torch/backend.h"
#include "model/hf/checkpoint_layout.h"
#include "model/hf/peft_config.h"
#include "model/hf/torch/hf_load.h"
#include "model/hf/torch/peft_adapter.h"
#include "model/torch/llama.h"
#include "spec/checkpoint_config.h"
#include "util/io/output_file.h"
#include "util/io/output_rules.h"

namespace ftbench::cli {
namespace {

struct LogitsFlags {
  std::string checkpoint;
  std::string adapter;
  std::string ids;
  std::string dtype = "fp32";
  spec::BackendSpec backend;  // --device, --device-index, --threads
  std::string output;
  bool force = false;
};

// "1,2,3;4,5,6": rows of equal, non-zero length of token ids in [0, vocab).
std::vector<std::vector<int64_t>> parse_ids(const std::string& text, int64_t vocab) {
  std::vector<std::vector<int64_t>> rows(1);
  std::string token;
  auto flush = [&]() {
    if (token.empty()) return;
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(token.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || id < 0 || id >= vocab) {
      throw InputError(fmt::format(
          "--ids: expected token ids in [0, {}) (the checkpoint's vocab_size), found \"{}\"", vocab,
          token));
    }
    rows.back().push_back(id);
    token.clear();
  };
  for (const char c : text) {
    if (c == ',' || c == ' ') {
      flush();
    } else if (c == ';') {
      flush();
      rows.emplace_back();
    } else {
      token += c;
    }
  }
  flush();
  for (const auto& row : rows) {
    if (row.empty() || row.size() != rows.front().size()) {
      throw InputError(fmt::format(
          "--ids: expected rows of equal, non-zero length separated by ';', found \"{}\"", text));
    }
  }
  return rows;
}

}  // namespace

Action add_logits_command(CLI::App& app) {
  auto f = std::make_shared<LogitsFlags>();
  CLI::App* cmd = add_subcommand(app, "logits");
  cmd->add_option("--checkpoint", f->checkpoint, "Hugging Face checkpoint folder")->required();
  cmd->add_option("--adapter", f->adapter, "PEFT adapter folder to apply on top");
  cmd->add_option("--ids", f->ids, "Token ids: rows of equal length, e.g. \"1,2,3;4,5,6\"")
      ->required();
  cmd->add_option("--dtype", f->dtype, "Model dtype: fp32 (default), bf16, fp16")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  add_backend_options(cmd, f->backend);
  cmd->add_option("-o,--output", f->output, "Write the JSON here instead of standard output");
  cmd->add_flag("--force", f->force, "Overwrite an existing output file");

  return [f]() {
    spdlog::set_default_logger(spdlog::stderr_color_mt("ftbench-logits"));
    if (!f->output.empty()) {
      // Never over the weights it reads, a report or another ftbench file of another kind.
      io::check_output_rules("-o", f->output, "logits file",
                             {{"the checkpoint's config.json", f->checkpoint + "/config.json"},
                              {"the checkpoint's weights", f->checkpoint + "/model.safetensors"}});
      io::check_writable(f->output, f->force);
    }
    const std::string config_path = f->checkpoint + "/config.json";
    spec::ModelSpec shape =
        spec::parse_hf_config(spec::read_hf_file(config_path), config_path).shape;
    shape.dtype = f->dtype;
    spec::LoraSpec lora;
    lora.targets.clear();
    if (!f->adapter.empty()) {
      const std::string path = f->adapter + "/adapter_config.json";
      lora = hf::parse_peft_adapter_config(spec::read_hf_file(path), path).lora;
    }
    const std::vector<std::vector<int64_t>> rows = parse_ids(f->ids, shape.vocab_size);
    const auto batch = static_cast<int64_t>(rows.size());
    const auto seq = static_cast<int64_t>(rows.front().size());

    const device::Backend backend(f->backend);
    backend.check_dtype_supported(f->dtype);

    nlohmann::ordered_json doc;
    try {
      torch::NoGradGuard no_grad;
      model::Llama llama(shape, lora, seq, backend.device());
      llama->init_adapters();
      hf::load_hf_weights(llama, f->checkpoint, shape);
      if (!f->adapter.empty()) hf::load_peft_adapter(llama, shape, lora, f->adapter);
      llama->eval();

      std::vector<int64_t> flat;
      for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
      const at::Tensor ids = at::tensor(flat, at::kLong).reshape({batch, seq}).to(backend.device());
      const at::Tensor logits = llama->forward(ids).to(at::kDouble).cpu().contiguous();
      // JSON has no NaN or infinity: such logits would be written as null.
      const int64_t not_finite = logits.numel() - at::isfinite(logits).sum().item<int64_t>();
      if (not_finite > 0) {
        throw RunFailure(
            fmt::format("the logits are not all finite: {} of {} are NaN or infinite in {}{}",
                        not_finite, logits.numel(), f->dtype,
                        f->adapter.empty()
                            ? std::string()
                            : fmt::format(" (the adapter scales by lora_alpha {:g} / r {} = {:g})",
                                          lora.alpha, lora.rank, lora.alpha / double(lora.rank))));
      }
      // Next-token loss as transformers computes it with labels = input_ids: the mean over
      // every position but the last of each row.
      double loss = std::nan("");
      if (seq > 1) {
        at::Tensor labels = at::full({batch, seq}, -100, at::kLong);
        labels.narrow(1, 0, seq - 1).copy_(ids.cpu().narrow(1, 1, seq - 1));
        const at::Tensor sum = llama->loss_sum(ids, labels.to(backend.device()));
        loss = sum.item<double>() / double(batch * (seq - 1));
      }

      doc["schema"] = "ftbench.logits/1";
      doc["checkpoint"] = f->checkpoint;
      doc["adapter"] =
          f->adapter.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(f->adapter);
      doc["dtype"] = f->dtype;
      doc["device"] = backend.kind();
      doc["input_ids"] = rows;
      const double* v = logits.data_ptr<double>();
      const int64_t vocab = logits.size(2);
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (int64_t b = 0; b < batch; ++b) {
        nlohmann::ordered_json row = nlohmann::ordered_json::array();
        for (int64_t s = 0; s < seq; ++s) {
          const double* p = v + (b * seq + s) * vocab;
          row.push_back(std::vector<double>(p, p + vocab));
        }
        all.push_back(std::move(row));
      }
      doc["logits"] = std::move(all);
      doc["loss"] = std::isfinite(loss) ? nlohmann::ordered_json(loss) : nlohmann::ordered_json();
    } catch (const c10::Error& e) {
      throw torch_failure(e);
    }
    const std::string json = doc.dump() + "\n";
    if (f->output.empty()) {
      std::cout << json;
    } else {
      io::write_file_atomically(json, f->output, f->force);
    }
    return kExitOk;
  };
}

}  // namespace ftbench::cli
