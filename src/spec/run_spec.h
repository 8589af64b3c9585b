// The run spec: one struct per YAML section, defaults in one place.
//
// A RunSpec is produced by spec::load_spec() (YAML + --set overrides), validated once there and
// treated as immutable afterwards. Every key is documented in docs/spec.md; keep the two in
// step. Quantities carry their unit in the name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ftbench::spec {

// Llama 3.1 style frequency scaling of rotary embeddings ("rope_scaling" in HF configs).
struct RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelSpec {
  // Preset name: tiny, llama3.2-1b, llama3.1-8b, llama3.1-70b, llama2-7b, llama2-70b, or
  // "custom" (every shape key below must then be given). Shape keys given next to a preset
  // override the preset's value.
  std::string preset = "tiny";
  int64_t dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t ffn_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;  // positions the rotary table covers
  double norm_eps = 0.0;
  double rope_theta = 0.0;
  std::optional<RopeScaling> rope_scaling;
  bool tie_embeddings = false;
  // bf16, fp16 or fp32: dtype of the frozen base weights and activations.
  std::string dtype = "fp32";
  // full, selective, none or auto (spec/choices.h: checkpointing); a run resolves auto before it
  // builds the model (the report's execution.activation_checkpointing says what ran).
  std::string activation_checkpointing = "none";
  // A Hugging Face Llama checkpoint folder (config.json and safetensors weights) to load the
  // base weights from; "" (default): random weights (timing does not depend on their values).
  // With a checkpoint the shape keys come from its config.json (spec/checkpoint_config.h); a shape
  // key given here must agree with it, except max_seq_len. Where the folder lives is not part
  // of the fingerprint: the report's weights fingerprint says what it held.
  std::string checkpoint;
};

struct LoraSpec {
  int64_t rank = 16;
  double alpha = 32.0;
  double dropout = 0.0;
  // Subset of q, k, v, o, gate, up, down, output.
  std::vector<std::string> targets = {"q", "v"};
  // Adapter parameter dtype: fp32 (default), bf16, fp16, or "base" for the model dtype.
  std::string dtype = "fp32";
};

struct DataSpec {
  // "synthetic": a deterministic instruction-like data set generated from this section;
  // "file": the data set at `path` (data/file_dataset.h).
  std::string source = "synthetic";
  // "byte", a tokenizer.json file or a folder holding one, or a SentencePiece .model file.
  std::string tokenizer = "byte";
  // source: file only. The file (.json array or .jsonl), its format (auto, alpaca, chat, text,
  // tokenized), how many examples to take (0 = all; `subset` first or a seeded random N), what
  // to do with an example longer than seq_len (truncate, drop) and with a bad record (fail,
  // skip and count).
  std::string path;
  std::string format = "auto";
  int64_t max_examples = 0;
  std::string subset = "first";
  std::string too_long = "truncate";
  std::string on_error = "fail";
  // source: file: held-out examples for validation loss, a fraction of the file (drawn with
  // `seed`) or a second file; at most one of the two. 0 / "": none.
  double validation_fraction = 0.0;
  std::string validation_path;
  int64_t num_examples = 256;  // source: synthetic only: examples generated
  int64_t seq_len = 256;  // maximum tokens per example after tokenisation (longer ones truncate)
  // Distribution of example lengths in tokens: fixed (= max_tokens), uniform in
  // [min_tokens, max_tokens], or lognormal with the given median and sigma, clipped to
  // [min_tokens, max_tokens].
  std::string length_distribution = "uniform";
  int64_t min_tokens = 32;
  int64_t max_tokens = 256;
  double lognormal_median_tokens = 128.0;
  double lognormal_sigma = 0.5;
  double prompt_fraction = 0.5;  // share of each example that is prompt (masked from the loss)
  bool train_on_input = false;
  // "longest": pad each micro-batch to its longest example; "max_length": pad to seq_len;
  // "pack": several examples per sequence of seq_len tokens, position ids restarting and
  // attention kept inside each example.
  std::string padding = "longest";
  bool shuffle = true;
  uint64_t seed = 1234;
};

// train.checkpoint: when to save the training state (train/torch/checkpoint.h) for `run --resume`.
// A checkpoint is also written when the run is stopped by SIGTERM/SIGINT, whatever these say.
struct CheckpointSpec {
  std::string dir = "checkpoints/{name}";  // "{name}" expands to output.name
  int64_t every_steps = 0;                 // 0: not by step count
  double every_minutes = 0.0;              // 0: not by time (host clock since the last one)
  int64_t keep_last = 2;                   // older checkpoints are deleted after a save
};

struct TrainSpec {
  int64_t epochs = 1;
  int64_t max_steps = 0;  // 0 = no cap; otherwise stop after this many optimizer steps
  int64_t micro_batch_size = 4;
  int64_t grad_accum_steps = 1;
  std::string optimizer = "adamw";
  double lr = 3e-4;
  double weight_decay = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  std::string lr_schedule = "cosine";  // cosine, linear, constant (after warm-up)
  int64_t lr_warmup_steps = 0;
  double min_lr_ratio = 0.0;   // final lr as a fraction of lr (cosine, linear)
  double max_grad_norm = 1.0;  // 0 = no clipping (the norm is still computed and reported)
  uint64_t seed = 42;
  int64_t timing_warmup_steps = 2;  // optimizer steps left out of the timing summary
  int64_t loss_window = 10;         // final loss is also reported as the mean of the last N
  // Validation loss (no gradients) every N optimizer steps and after the last one; 0: only
  // after the last one. Needs validation data (data.validation_fraction / validation_path).
  int64_t eval_every_steps = 0;
  int64_t eval_max_batches = 0;  // micro-batches per validation pass; 0: all
  // On out of memory in a step: free its memory, halve micro_batch_size, scale grad_accum_steps
  // to keep the effective batch, and redo the step (train/oom_fallback.h), at most
  // oom_max_fallbacks times in a run. Off: the run fails at the first out-of-memory error.
  // Neither key is part of the spec fingerprint: they change how a job runs, not the job.
  bool oom_fallback = true;
  int64_t oom_max_fallbacks = 4;
  // Not part of the spec fingerprint either: a checkpoint of the job resumes under any policy.
  CheckpointSpec checkpoint;
};

struct BackendSpec {
  std::string device = "auto";  // auto, cpu, cuda, rocm
  int64_t device_index = 0;
  int64_t threads = 0;                // CPU intra-op threads; 0 = all hardware threads
  std::optional<double> peak_tflops;  // peak for MFU; else the GPU spec table; else none
  // Board power / energy sampling interval during training (device/energy_sampler.h), GPUs
  // only: 10 to 10,000 ms.
  int64_t energy_sample_ms = 100;
};

// How a job of several processes (torchrun, srun, `run --nproc-per-node`) runs: how long its
// ranks wait for each other. Left out of the fingerprint: the same job on 1 or 8 GPUs is the
// same job run differently.
struct DistributedSpec {
  std::string backend = "auto";       // auto (NCCL on GPUs where built, else Gloo), gloo, nccl
  double init_timeout_seconds = 300;  // the rendezvous: every rank's store connection and handshake
  double timeout_seconds = 600;       // one collective waiting for its peers
  // Adapters compared bitwise across ranks every this many optimizer steps (0: at the end only).
  int64_t check_every_steps = 0;
  // The frozen base weights split across ranks, each block gathered whole only while it computes
  // (train/dist/torch/sharded_base.h): none (every rank holds all of it), node (split among the
  // ranks of a node, whole on every node), all (split among every rank of the job).
  std::string shard_base = "none";
};

struct OutputSpec {
  std::string report = "reports/{name}.json";  // "{name}" expands to the run name
  // Folders the trained adapter is exported to when the run completes ("" = none; "{name}"
  // expands as in report): in PEFT's format, and merged into full weights in Hugging Face
  // layout (model/hf/torch/peft_adapter.h).
  std::string adapter;
  std::string merged;
  std::string name = "run";
  std::string progress = "auto";  // auto (live line on a terminal), on, off
  int64_t log_every_steps = 1;
  // The MLPerf-style event log (run/mllog.h): a path ("{name}" expands), "" = none.
  std::string mllog;
  // The price the live line shows dollars at: a catalog offer (PROVIDER/GPU[/TIER]) or USD per
  // GPU-hour billed per second ("2.97"); "" = none.
  std::string price;
};

struct RunSpec {
  ModelSpec model;
  LoraSpec lora;
  DataSpec data;
  TrainSpec train;
  BackendSpec backend;
  DistributedSpec distributed;
  OutputSpec output;
  std::string source_path;  // the YAML file it came from ("" for built-in)
  // Where each key read came from, for problems found after loading (a file it names that is
  // not there): "--set" with line 0 for an override, else source_path and the key's 1-based
  // line. Not part of the spec: never written, compared or fingerprinted.
  std::map<std::string, std::pair<std::string, int64_t>> key_origins;
};

}  // namespace ftbench::spec
