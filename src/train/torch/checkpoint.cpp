#include "train/torch/checkpoint.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/utils.h>

#include "device/torch/dtype.h"
#include "model/torch/safetensors_dtype.h"
#include "spec/choices.h"
#include "util/io/safetensors.h"

namespace ftbench::train {
namespace {

std::string safetensors_dtype(at::ScalarType type) {
  const std::optional<std::string> name = model::safetensors_dtype_name(type);
  if (!name) {
    throw CheckpointWriteError(
        fmt::format("cannot checkpoint a tensor of dtype {}", c10::toString(type)));
  }
  return *name;
}

// The checkpoint's tensor file, mapped, its header checked; CheckpointError when it is not one.
std::unique_ptr<io::SafetensorsReader> open_tensors(const std::string& path) {
  try {
    return std::make_unique<io::SafetensorsReader>(path);
  } catch (const io::SafetensorsError& e) {
    throw CheckpointError(e.what());
  }
}

at::Tensor generator_state(at::Device device) {
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

}  // namespace

SavedCheckpointFolder save_checkpoint(
    const std::string& dir, int64_t keep_last, const Trainer& trainer, CheckpointManifest manifest,
    int64_t steps_per_epoch, at::Device device,
    const std::function<void(CheckpointManifest&)>& before_manifest) {
  const MicroBatching split = trainer.split();
  const AdamW& optimizer = trainer.optimizer();
  manifest.step = trainer.steps_done();
  manifest.epoch = steps_per_epoch > 0 ? (manifest.step - 1) / steps_per_epoch + 1 : 0;
  manifest.micro_batches_done = manifest.step * split.grad_accum_steps;
  manifest.micro_batch_size = split.micro_batch_size;
  manifest.grad_accum_steps = split.grad_accum_steps;
  manifest.device_type = device.is_cpu() ? "cpu" : "cuda";
  manifest.optimizer_implementation = optimizer.implementation();
  manifest.parameters = trainer.parameter_names();
  manifest.parameter_steps = optimizer.param_steps();
  manifest.loss_scaler_enabled = trainer.loss_scaler().enabled();
  manifest.loss_scale = trainer.loss_scaler().scale();
  manifest.loss_scale_clean_steps = trainer.loss_scaler().clean_steps();
  manifest.has_device_rng = !device.is_cpu();

  // Host copies, contiguous, kept alive until the file is written.
  std::vector<std::pair<std::string, at::Tensor>> host;
  auto add = [&](std::string name, const at::Tensor& t) {
    host.emplace_back(std::move(name), t.detach().to(at::kCPU).contiguous());
  };
  {
    torch::NoGradGuard no_grad;
    const std::vector<std::string>& names = trainer.parameter_names();
    const std::vector<at::Tensor>& params = trainer.parameters();
    auto& exp_avg = const_cast<AdamW&>(optimizer).exp_avg();
    auto& exp_avg_sq = const_cast<AdamW&>(optimizer).exp_avg_sq();
    for (size_t i = 0; i < names.size(); ++i) add("model." + names[i], params[i]);
    for (size_t i = 0; i < names.size(); ++i) add("optimizer.exp_avg." + names[i], exp_avg[i]);
    for (size_t i = 0; i < names.size(); ++i) {
      add("optimizer.exp_avg_sq." + names[i], exp_avg_sq[i]);
    }
    add("rng.cpu", generator_state(at::kCPU));
    if (!device.is_cpu()) add("rng.device", generator_state(device));
  }
  std::vector<io::TensorToWrite> tensors;
  for (const auto& [name, t] : host) {
    tensors.push_back({name, safetensors_dtype(t.scalar_type()), t.sizes().vec(), t.data_ptr()});
  }
  return save_checkpoint_folder(
      dir, std::move(manifest), keep_last,
      [&](const std::string& path) {
        io::write_safetensors(path, tensors, {{"format", kCheckpointFormat}}, "checkpoint");
      },
      before_manifest);
}

void check_checkpoint_for_resume(const std::string& folder, const CheckpointManifest& m,
                                 const spec::RunSpec& spec) {
  verify_checkpoint_tensors(folder, m);
  const std::string path = folder + "/" + kCheckpointTensors;
  const std::unique_ptr<io::SafetensorsReader> reader = open_tensors(path);
  // Two tensors (A, B) per target: per decoder layer for the block's targets, once for the head.
  int64_t block_targets = 0;
  for (const std::string& t : spec.lora.targets) block_targets += t == "output" ? 0 : 1;
  const bool head = std::find(spec.lora.targets.begin(), spec.lora.targets.end(), "output") !=
                    spec.lora.targets.end();
  const int64_t adapters = 2 * (spec.model.n_layers * block_targets + (head ? 1 : 0));
  if (static_cast<int64_t>(m.parameters.size()) != adapters) {
    throw CheckpointError(fmt::format(
        "{}: the checkpoint lists {} adapter tensors; this spec's model has {} ({} layers, "
        "lora.targets {})",
        folder, m.parameters.size(), adapters, spec.model.n_layers,
        fmt::join(spec.lora.targets, ", ")));
  }
  const std::string& lora_dtype =
      spec.lora.dtype == ftbench::spec::choice::dtype::kBase ? spec.model.dtype : spec.lora.dtype;
  const std::string dtype = *model::safetensors_dtype_name(device::scalar_type_of(lora_dtype));
  for (const std::string& name : m.parameters) {
    const io::TensorInfo* weight = nullptr;
    for (const std::string prefix : {"model.", "optimizer.exp_avg.", "optimizer.exp_avg_sq."}) {
      const io::TensorInfo* info = reader->index().find(prefix + name);
      if (info == nullptr) {
        throw CheckpointError(fmt::format("{}: no tensor \"{}{}\"", path, prefix, name));
      }
      if (info->dtype != dtype || (weight != nullptr && info->shape != weight->shape)) {
        throw CheckpointError(
            fmt::format("{}: tensor \"{}{}\" is {} {}; the adapter is {} {} (lora.dtype {})", path,
                        prefix, name, info->dtype, fmt::join(info->shape, "x"), dtype,
                        weight != nullptr ? fmt::format("{}", fmt::join(weight->shape, "x"))
                                          : "of rank " + std::to_string(spec.lora.rank),
                        spec.lora.dtype));
      }
      if (weight == nullptr) weight = info;
    }
    if (weight->shape.size() != 2 ||
        (weight->shape[0] != spec.lora.rank && weight->shape[1] != spec.lora.rank)) {
      throw CheckpointError(fmt::format("{}: tensor \"model.{}\" is {}, not an adapter of rank {}",
                                        path, name, fmt::join(weight->shape, "x"), spec.lora.rank));
    }
  }
  const int64_t cpu_state_bytes = generator_state(at::kCPU).numel();
  const io::TensorInfo* cpu = reader->index().find("rng.cpu");
  if (cpu == nullptr || cpu->dtype != "U8" || cpu->shape.size() != 1 ||
      cpu->shape[0] != cpu_state_bytes) {
    throw CheckpointError(fmt::format(
        "{}: \"rng.cpu\" is {}; this LibTorch's CPU generator keeps a state of {} bytes (U8): "
        "the random numbers (dropout, shuffling) could not continue where they stopped",
        path,
        cpu == nullptr ? std::string("missing")
                       : fmt::format("{} {}", cpu->dtype, fmt::join(cpu->shape, "x")),
        cpu_state_bytes));
  }
  // The bytes must be a state the generator takes (its own checks: a valid Mersenne Twister
  // position and seed), tried on a generator of its own: a checkpoint whose tensors were
  // re-signed after a change is bad input, found before any machine time, not a failed run.
  {
    at::Tensor bytes = at::empty({cpu->shape[0]}, at::TensorOptions().dtype(at::kByte));
    reader->read_tensor(*cpu, bytes.data_ptr());
    at::Generator scratch = at::detail::createCPUGenerator();
    try {
      std::lock_guard<std::mutex> lock(scratch.mutex());
      scratch.set_state(bytes);
    } catch (const c10::Error& e) {
      throw CheckpointError(fmt::format(
          "{}: \"rng.cpu\" is not a state of the CPU generator ({}): the random numbers could "
          "not continue where they stopped",
          path, e.what_without_backtrace()));
    }
  }
  if (m.has_device_rng) {
    const io::TensorInfo* device = reader->index().find("rng.device");
    if (device == nullptr || device->dtype != "U8" || device->shape.size() != 1) {
      throw CheckpointError(
          fmt::format("{}: the manifest lists \"rng.device\"; the file has no "
                      "byte tensor of that name",
                      path));
    }
  }
}

void check_device_generator_state(const std::string& folder, const CheckpointManifest& m,
                                  at::Device device) {
  if (device.is_cpu()) return;
  if (!m.has_device_rng) {
    throw CheckpointError(
        fmt::format("{}: saved on {} without a device generator state; this run is on a GPU",
                    folder, m.device_type));
  }
  const std::string path = folder + "/" + kCheckpointTensors;
  const io::TensorInfo* info = open_tensors(path)->index().find("rng.device");
  const int64_t want = generator_state(device).numel();
  if (info == nullptr || info->shape.size() != 1 || info->shape[0] != want) {
    throw CheckpointError(fmt::format(
        "{}: \"rng.device\" holds {} bytes; this device's generator keeps {} (saved on another "
        "kind of device?)",
        path, info == nullptr || info->shape.empty() ? 0 : info->shape[0], want));
  }
}

ResumeState load_checkpoint(const std::string& folder, const CheckpointManifest& m,
                            model::Llama& model, at::Device device) {
  const std::string path = folder + "/" + kCheckpointTensors;
  const std::unique_ptr<io::SafetensorsReader> reader = open_tensors(path);
  // Reads tensor `name` into a new host tensor shaped and typed like `like`, then to `device`.
  auto read = [&](const std::string& name, const at::Tensor& like) {
    const io::TensorInfo* info = reader->index().find(name);
    if (info == nullptr) throw CheckpointError(fmt::format("{}: no tensor \"{}\"", path, name));
    const std::string want_dtype = safetensors_dtype(like.scalar_type());
    if (info->dtype != want_dtype || info->shape != like.sizes().vec()) {
      throw CheckpointError(fmt::format(
          "{}: tensor \"{}\" is {} {}, this run's is {} {} (another model or LoRA shape?)", path,
          name, info->dtype, fmt::join(info->shape, "x"), want_dtype,
          fmt::join(like.sizes().vec(), "x")));
    }
    at::Tensor host = at::empty(like.sizes(), like.options().device(at::kCPU));
    try {
      reader->read_tensor(*info, host.data_ptr());
    } catch (const io::SafetensorsError& e) {
      throw CheckpointError(e.what());
    }
    return host.to(device);
  };
  auto read_bytes = [&](const std::string& name) {
    const io::TensorInfo* info = reader->index().find(name);
    if (info == nullptr || info->dtype != "U8" || info->shape.size() != 1) {
      throw CheckpointError(fmt::format("{}: no byte tensor \"{}\"", path, name));
    }
    at::Tensor host = at::empty({info->shape[0]}, at::TensorOptions().dtype(at::kByte));
    reader->read_tensor(*info, host.data_ptr());
    return host;
  };

  const std::vector<std::pair<std::string, at::Tensor>> params =
      model->trainable_named_parameters();
  std::vector<std::string> names;
  for (const auto& [name, tensor] : params) names.push_back(name);
  if (names != m.parameters) {
    throw CheckpointError(fmt::format(
        "{}: the checkpoint has {} adapter tensors, this model {}; they must be the same "
        "(lora.targets or the model differ?)",
        folder, m.parameters.size(), names.size()));
  }
  ResumeState state;
  state.steps_done = m.step;
  state.micro_batch_size = m.micro_batch_size;
  state.grad_accum_steps = m.grad_accum_steps;
  state.param_steps = m.parameter_steps;
  state.loss_scale = m.loss_scale;
  state.loss_scale_clean_steps = m.loss_scale_clean_steps;
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, tensor] : params) {
      tensor.copy_(read("model." + name, tensor));
      state.exp_avg.push_back(read("optimizer.exp_avg." + name, tensor));
      state.exp_avg_sq.push_back(read("optimizer.exp_avg_sq." + name, tensor));
    }
  }
  state.cpu_rng_state = read_bytes("rng.cpu");
  if (!device.is_cpu()) {
    check_device_generator_state(folder, m, device);
    state.device_rng_state = read_bytes("rng.device");
  }
  return state;
}

}  // namespace ftbench::train
