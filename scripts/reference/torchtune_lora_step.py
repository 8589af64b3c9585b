#!/usr/bin/env python3
"""PyTorch-eager reference for ftbench's CPU step: torchtune's LoRA recipe on an ftbench spec.

Two ways, both on the model shape, LoRA placement, optimizer and batch of an ftbench run spec (the
JSON of `ftbench validate SPEC --json`), random weights, the spec's fp32, no torch.compile, no
activation checkpointing (the spec's):

- `--prepare-recipe DIR`: the inputs of torchtune's own `lora_finetune_single_device` recipe, run
  as `tune run lora_finetune_single_device --config DIR/config.yaml`: a config (model
  `lora_llama3` with plain RoPE at the spec's theta, the recipe configs' loss
  CEWithChunkedOutputLoss and optimizer torch.optim.AdamW(fused=True), device cpu, dtype fp32,
  clip_grad_norm, batch size, max_steps_per_epoch = steps), a random base checkpoint
  (FullModelTorchTuneCheckpointer), a SentencePiece tokenizer of 1,000 pieces trained here on
  made-up words, and a JSON-lines text dataset (text_completion_dataset) whose rows are longer
  than seq_len, so every row is truncated to seq_len tokens, all of them labels. Nothing is
  downloaded. `--read-recipe-log LOG` turns the recipe's DiskLogger file into this script's JSON:
  step seconds = tokens per step / the logged tokens_per_second_per_gpu (the recipe's own step
  clock, which also covers its data loader).
- no mode flag: the recipe's step in a loop of this script (recipes/lora_finetune_single_device.py
  of torchtune 0.6.1, `_loss_step` and `train`) on random token ids: labels shifted by appending
  the ignore index, the loss x label tokens, backward, `training.scale_grads(model, 1 / tokens)`,
  `clip_grad_norm_` over `model.parameters()`, AdamW(fused=True), zero_grad(set_to_none).

Every micro-batch is micro_batch_size x seq_len tokens, all of them labels (as
hf_peft_lora_step.py; ftbench with `--set data.train_on_input=true`).

Needs torchtune 0.6.1 and torchao <= 0.15 (scripts/bench_cpu_peers.sh installs them into a scratch
venv that reuses the pinned venv's torch); the spec mapping is shared with hf_peft_lora_step.py.

Usage: python3 torchtune_lora_step.py --spec spec.json [--steps 30] [--warmup 5] [--threads N]
         [--out r.json]
       python3 torchtune_lora_step.py --spec spec.json --prepare-recipe DIR [--steps 30]
       python3 torchtune_lora_step.py --spec spec.json --read-recipe-log LOG [--warmup 5]
         [--out r.json]
"""

import argparse
import json
import os
import random
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_peft_lora_step as hf  # noqa: E402  (the spec -> plan mapping)

# ftbench LoRA targets -> torchtune's attention module names.
ATTN_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}


def model_kwargs(spec):
    model, lora = spec["model"], spec["lora"]
    if model.get("rope_scaling"):
        raise hf.SpecError("model.rope_scaling: lora_llama3 has plain RoPE (use lora_llama3_1)")
    if model.get("tie_embeddings"):
        raise hf.SpecError("model.tie_embeddings: lora_llama3 has an untied output")
    mlp = {"gate", "up", "down"} & set(lora["targets"])
    if mlp and mlp != {"gate", "up", "down"}:
        raise hf.SpecError("lora.targets: torchtune adapts all of gate/up/down or none")
    unknown = set(lora["targets"]) - set(ATTN_MODULES) - {"gate", "up", "down", "output"}
    if unknown:
        raise hf.SpecError(f"lora.targets: no torchtune module for {sorted(unknown)}")
    return {
        "lora_attn_modules": [ATTN_MODULES[t] for t in lora["targets"] if t in ATTN_MODULES],
        "apply_lora_to_mlp": bool(mlp),
        "apply_lora_to_output": "output" in lora["targets"],
        "vocab_size": model["vocab_size"],
        "num_layers": model["n_layers"],
        "num_heads": model["n_heads"],
        "num_kv_heads": model["n_kv_heads"],
        "embed_dim": model["dim"],
        "max_seq_len": model["max_seq_len"],
        "intermediate_dim": model["ffn_dim"],
        "norm_eps": model["norm_eps"],
        "rope_base": model["rope_theta"],
        "lora_rank": lora["rank"],
        "lora_alpha": lora["alpha"],
        "lora_dropout": lora["dropout"],
    }


def run(spec, steps, warmup, threads):
    import torch
    import torchtune
    from torchtune import training
    from torchtune.models.llama3 import lora_llama3
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    from torchtune.modules.peft import get_adapter_params, set_trainable_params

    p = hf.plan(spec)
    if p["dtype"] != "float32":
        raise hf.SpecError("model.dtype: this CPU reference runs fp32 only")
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(p["seed"])
    t_build = time.perf_counter()
    with training.set_default_dtype(torch.float32), torch.device("cpu"):
        model = lora_llama3(**model_kwargs(spec))
    adapter_params = get_adapter_params(model)
    set_trainable_params(model, adapter_params)
    model.train()
    loss_fn = CEWithChunkedOutputLoss()
    model.set_num_output_chunks(loss_fn.num_output_chunks)
    opt = torch.optim.AdamW(model.parameters(), lr=p["optimizer"]["lr"],
                            betas=tuple(p["optimizer"]["betas"]), eps=p["optimizer"]["eps"],
                            weight_decay=p["optimizer"]["weight_decay"], fused=True)
    build_seconds = time.perf_counter() - t_build

    mb, accum, seq = p["micro_batch_size"], p["grad_accum_steps"], p["seq_len"]
    vocab = spec["model"]["vocab_size"]
    gen = torch.Generator().manual_seed(p["seed"])
    batches = [torch.randint(0, vocab, (mb, seq), generator=gen) for _ in range(accum)]
    ignore_labels_cache = torch.full((mb, 1), loss_fn.ignore_index)
    step_seconds, losses = [], []
    for _ in range(steps):
        start = time.perf_counter()
        running_loss, num_tokens = 0, 0
        for ids in batches:
            batch = {"tokens": ids, "labels": ids.clone()}
            current_num_tokens = (batch["labels"] != loss_fn.ignore_index).sum()
            num_tokens += current_num_tokens
            labels = batch.pop("labels")
            logits = model(**batch)
            labels = torch.hstack((labels[..., 1:], ignore_labels_cache[: labels.shape[0]]))
            current_loss = loss_fn(logits, labels) * current_num_tokens
            del logits
            running_loss += current_loss
            current_loss.backward()
        training.scale_grads(model, 1 / num_tokens)
        if p["max_grad_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=float(p["max_grad_norm"]))
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_to_log = running_loss.item() / num_tokens
        step_seconds.append(time.perf_counter() - start)
        losses.append(float(loss_to_log))
    measured = step_seconds[warmup:]
    tokens_per_step = mb * accum * seq
    return {
        "implementation": f"torchtune {torchtune.__version__} lora_llama3 + recipe step, "
                          f"torch {torch.__version__}, AdamW(fused=True)",
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "build_seconds": build_seconds,
        "steps": steps,
        "warmup_steps_excluded": warmup,
        "tokens_per_step": tokens_per_step,
        "step_seconds": step_seconds,
        "median_step_seconds": statistics.median(measured),
        "mean_step_seconds": statistics.fmean(measured),
        "tokens_per_second": tokens_per_step / statistics.fmean(measured),
        "losses": losses,
        "trainable_parameters": sum(t.numel() for t in adapter_params.values()),
    }


def recipe_config(spec, p, steps, directory):
    """The config of `tune run lora_finetune_single_device` for the spec (written as JSON, which
    is YAML). Paths are absolute, inside `directory`."""
    kw = model_kwargs(spec)
    return {
        "output_dir": os.path.join(directory, "out"),
        "model": {"_component_": "torchtune.models.llama3.lora_llama3", **kw},
        "tokenizer": {"_component_": "torchtune.models.llama2.llama2_tokenizer",
                      "path": os.path.join(directory, "tokenizer.model"),
                      # the dataset truncates to max_seq_len - 1 tokens
                      "max_seq_len": p["seq_len"] + 1, "prompt_template": None},
        "checkpointer": {"_component_": "torchtune.training.FullModelTorchTuneCheckpointer",
                         "checkpoint_dir": os.path.join(directory, "checkpoint"),
                         "checkpoint_files": ["model.pt"], "recipe_checkpoint": None,
                         "output_dir": os.path.join(directory, "out"), "model_type": "LLAMA3"},
        "resume_from_checkpoint": False,
        "save_adapter_weights_only": True,
        "dataset": {"_component_": "torchtune.datasets.text_completion_dataset", "source": "json",
                    "data_files": os.path.join(directory, "data.json"), "column": "text",
                    "add_eos": True, "packed": False},
        "seed": p["seed"],
        "shuffle": True,
        "batch_size": p["micro_batch_size"],
        "optimizer": {"_component_": "torch.optim.AdamW", "fused": True,
                      "lr": p["optimizer"]["lr"], "betas": p["optimizer"]["betas"],
                      "eps": p["optimizer"]["eps"],
                      "weight_decay": p["optimizer"]["weight_decay"]},
        "lr_scheduler": {"_component_":
                         "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
                         "num_warmup_steps": 0},
        "loss": {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"},
        "epochs": 1,
        "max_steps_per_epoch": steps,
        "gradient_accumulation_steps": p["grad_accum_steps"],
        "clip_grad_norm": p["max_grad_norm"] if p["max_grad_norm"] > 0 else None,
        "compile": False,
        "metric_logger": {"_component_": "torchtune.training.metric_logging.DiskLogger",
                          "log_dir": os.path.join(directory, "out", "logs")},
        "log_every_n_steps": 1,
        "log_peak_memory_stats": False,
        "device": "cpu",
        "dtype": "fp32",
        "enable_activation_checkpointing": False,
        "enable_activation_offloading": False,
        "profiler": {"_component_": "torchtune.training.setup_torch_profiler", "enabled": False},
    }


def prepare_recipe(spec, steps, directory):
    """Writes config.yaml, tokenizer.model, data.json and checkpoint/model.pt into directory."""
    import sentencepiece
    import torch
    from torchtune.models.llama3 import lora_llama3

    p = hf.plan(spec)
    if p["dtype"] != "float32":
        raise hf.SpecError("model.dtype: this CPU reference runs fp32 only")
    directory = os.path.abspath(directory)
    os.makedirs(os.path.join(directory, "checkpoint"), exist_ok=True)
    rng = random.Random(p["seed"])
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(3000)]
    corpus = os.path.join(directory, "corpus.txt")
    with open(corpus, "w") as f:
        for _ in range(3000):
            f.write(" ".join(rng.choice(words) for _ in range(30)) + "\n")
    pieces = min(1000, spec["model"]["vocab_size"])
    sentencepiece.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(directory, "tokenizer"), vocab_size=pieces,
        model_type="bpe", pad_id=0, bos_id=1, eos_id=2, unk_id=3, minloglevel=2)
    # Rows of 2 x seq_len words: at least one token a word, so every row is truncated to seq_len.
    rows = steps * p["micro_batch_size"] * p["grad_accum_steps"]
    with open(os.path.join(directory, "data.json"), "w") as f:
        for _ in range(rows):
            text = " ".join(rng.choice(words) for _ in range(2 * p["seq_len"]))
            f.write(json.dumps({"text": text}) + "\n")
    torch.manual_seed(p["seed"])
    model = lora_llama3(**model_kwargs(spec))
    base = {k: v for k, v in model.state_dict().items() if "lora" not in k}
    torch.save(base, os.path.join(directory, "checkpoint", "model.pt"))
    with open(os.path.join(directory, "config.yaml"), "w") as f:
        json.dump(recipe_config(spec, p, steps, directory), f, indent=2)
    return {"config": os.path.join(directory, "config.yaml"), "rows": rows,
            "tokenizer_pieces": pieces}


def read_recipe_log(spec, path, warmup):
    """The recipe's DiskLogger lines ("Step N | loss:L ... tokens_per_second_per_gpu:T ...") as
    this script's result."""
    p = hf.plan(spec)
    tokens_per_step = p["micro_batch_size"] * p["grad_accum_steps"] * p["seq_len"]
    step_seconds, losses = [], []
    with open(path) as f:
        for line in f:
            tps = re.search(r"tokens_per_second_per_gpu:([0-9.eE+-]+)", line)
            loss = re.search(r"\bloss:([0-9.eE+-]+|nan|inf)", line)
            if tps:
                step_seconds.append(tokens_per_step / float(tps.group(1)))
                losses.append(float(loss.group(1)) if loss else None)
    if len(step_seconds) <= warmup:
        raise hf.SpecError(f"{path}: {len(step_seconds)} steps logged, need more than {warmup}")
    measured = step_seconds[warmup:]
    return {
        "implementation": "torchtune lora_finetune_single_device (tune run), lora_llama3, "
                          "AdamW(fused=True)",
        "device": "cpu",
        "steps": len(step_seconds),
        "warmup_steps_excluded": warmup,
        "tokens_per_step": tokens_per_step,
        "step_seconds": step_seconds,
        "median_step_seconds": statistics.median(measured),
        "mean_step_seconds": statistics.fmean(measured),
        "tokens_per_second": tokens_per_step / statistics.fmean(measured),
        "losses": losses,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help="JSON of `ftbench validate SPEC --json`")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5, help="first steps left out of the median")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--out", help="also write the JSON here")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--prepare-recipe", metavar="DIR",
                      help="write the inputs of `tune run lora_finetune_single_device` here")
    mode.add_argument("--read-recipe-log", metavar="LOG",
                      help="the recipe's DiskLogger file -> this script's JSON")
    args = ap.parse_args(argv)
    if args.steps <= args.warmup:
        ap.error(f"--steps ({args.steps}) must exceed --warmup ({args.warmup})")
    try:
        with open(args.spec) as f:
            doc = json.load(f)
        spec = doc.get("spec", doc)
        if args.prepare_recipe:
            result = prepare_recipe(spec, args.steps, args.prepare_recipe)
        elif args.read_recipe_log:
            result = read_recipe_log(spec, args.read_recipe_log, args.warmup)
        else:
            result = run(spec, args.steps, args.warmup, args.threads)
    except (OSError, json.JSONDecodeError, KeyError, hf.SpecError) as e:
        print(f"error: {args.spec}: {e}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
