#!/usr/bin/env python3
"""PyTorch-eager reference for ftbench's GPU step: Hugging Face transformers + PEFT LoRA.

The model shape, LoRA placement, precision, activation checkpointing, optimizer and batch of an
ftbench run spec (the JSON of `ftbench validate SPEC --json`), built and trained the way a user of
transformers + peft would: LlamaForCausalLM with random weights (no download) and SDPA attention,
peft.get_peft_model, torch.optim.AdamW (fused on CUDA), gradient accumulation, one
torch.cuda.synchronize() per optimizer step. Every micro-batch is micro_batch_size x seq_len random
token ids, all of them labels, which is what `ftbench run` trains with
`--set data.length_distribution=fixed --set data.max_tokens=<seq_len>` (scripts/device-check.sh).

Activation checkpointing follows the spec's `model.activation_checkpointing` (true = full,
false = none): none; full, every decoder layer recomputed in the backward (transformers' own
non-reentrant checkpointing); selective, every decoder layer checkpointed with a
selective-checkpoint context (torch >= 2.4) that keeps the outputs of the matrix products and of
attention and recomputes the rest. ftbench resolves `auto` with its memory plan, which this script
has not got: `--checkpointing full|selective|none` overrides the spec, and a spec saying auto needs
it (the policy ftbench chose: its report's execution.activation_checkpointing).

On the CPU (`--device cpu`, scripts/bench_cpu_peers.sh) the same, with torch's default AdamW (not
fused, as a user writes it there) and `--threads N` for torch.set_num_threads(N) (give
OMP_NUM_THREADS=N in the environment too: the OpenMP runtime reads it once, when torch loads).

With `--profile-steps N[,M]` (1-based, inclusive, as `ftbench run --profile-steps`), torch.profiler
records those steps, with ftbench's scopes marked by record_function (ftbench::forward: the model
call up to the logits; ftbench::loss: the model's own loss function on them; ftbench::backward;
ftbench::optimizer: clipping, AdamW and zero_grad), and STEM.profile-ops.csv,
STEM.profile-kernels.csv (ftbench's formats, from the same raw events: profile_tables.py) and
STEM.profile-trace.json (torch's Chrome trace) are written; STEM is `--profile-out`, by default
the --out path without .json (else "hf-peft"). The profiled steps are left out of the timing
figures as ftbench leaves them out (unless that leaves no step), and the JSON's `profile` says
which steps were profiled. scripts/profile-side-by-side.py sets the tables beside ftbench's.

Usage: python3 hf_peft_lora_step.py --spec spec.json [--steps 12] [--warmup 3] [--out r.json]
         [--device cuda|cpu] [--threads N] [--attn sdpa|eager]
         [--checkpointing full|selective|none] [--profile-steps N[,M] [--profile-out STEM]]
       python3 hf_peft_lora_step.py --spec spec.json --plan   (print the mapping; needs no torch)
Prints and writes JSON: per-step seconds, tokens/s over the measured steps (their tokens over
their total time, as ftbench's summary counts), peak memory.
"""

import argparse
import contextlib
import functools
import json
import statistics
import sys
import time

import profile_tables
from profile_tables import parse_profile_steps, profile_stem  # noqa: F401  (tested from here)

# ftbench LoRA targets -> the Linear modules of transformers' Llama.
TARGET_MODULES = {
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "o": "o_proj",
    "gate": "gate_proj",
    "up": "up_proj",
    "down": "down_proj",
    "output": "lm_head",
}
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# model.activation_checkpointing: the policies this script runs; ftbench's spec may also say auto.
CHECKPOINTING_POLICIES = ("full", "selective", "none")
# The aten ops whose outputs selective checkpointing keeps: the matrix products and attention, the
# costly part of a layer to recompute. Not every torch has every one (the cuDNN and CPU attention
# kernels are recent; linear is composite and reaches a policy as mm or addmm on most builds).
SELECTIVE_SAVED_OPS = (
    "mm", "addmm", "bmm", "baddbmm", "linear",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
)


class SpecError(ValueError):
    pass


class UnsupportedError(RuntimeError):
    """The installed libraries cannot run what was asked (exit 2, as for a bad spec)."""


def llama_config_kwargs(model):
    """transformers.LlamaConfig keyword arguments for ftbench's resolved `model` section."""
    for key in ("dim", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "vocab_size"):
        if not isinstance(model.get(key), int) or model[key] < 1:
            raise SpecError(f"model.{key}: expected a positive integer, found {model.get(key)!r}")
    kwargs = {
        "hidden_size": model["dim"],
        "num_hidden_layers": model["n_layers"],
        "num_attention_heads": model["n_heads"],
        "num_key_value_heads": model["n_kv_heads"],
        "intermediate_size": model["ffn_dim"],
        "vocab_size": model["vocab_size"],
        "max_position_embeddings": model["max_seq_len"],
        "rms_norm_eps": model["norm_eps"],
        "rope_theta": model["rope_theta"],
        "tie_word_embeddings": bool(model.get("tie_embeddings", False)),
        "attention_bias": False,
        "mlp_bias": False,
        "hidden_act": "silu",
    }
    scaling = model.get("rope_scaling")
    if scaling:
        kwargs["rope_scaling"] = {
            "rope_type": "llama3",
            "factor": scaling["factor"],
            "low_freq_factor": scaling["low_freq_factor"],
            "high_freq_factor": scaling["high_freq_factor"],
            "original_max_position_embeddings": scaling["original_max_position_embeddings"],
        }
    return kwargs


def lora_kwargs(lora):
    """peft.LoraConfig keyword arguments for ftbench's resolved `lora` section."""
    unknown = [t for t in lora["targets"] if t not in TARGET_MODULES]
    if unknown:
        raise SpecError(f"lora.targets: no transformers module for {unknown}")
    return {
        "r": lora["rank"],
        "lora_alpha": lora["alpha"],
        "lora_dropout": lora["dropout"],
        "target_modules": [TARGET_MODULES[t] for t in lora["targets"]],
        "bias": "none",
        "task_type": "CAUSAL_LM",
    }


def config_for_version(kwargs, transformers_major):
    """transformers 5 takes RoPE settings as one `rope_parameters` dict (theta included);
    earlier versions take `rope_theta` and `rope_scaling`."""
    kw = dict(kwargs)
    if transformers_major < 5:
        return kw
    rope = {"rope_type": "default", "rope_theta": kw.pop("rope_theta")}
    rope.update(kw.pop("rope_scaling", None) or {})
    kw["rope_parameters"] = rope
    return kw


def checkpointing_policy(value, override=None):
    """full, selective or none for the spec's model.activation_checkpointing (true = full,
    false = none, absent = none) and --checkpointing (`override`, None without it), which wins.
    SpecError for any other value, the override notwithstanding, and for auto without it."""
    if value is True or value is False:
        value = "full" if value else "none"
    if value not in CHECKPOINTING_POLICIES + ("auto",):
        raise SpecError("model.activation_checkpointing: expected full, selective, none, auto or a "
                        f"boolean, found {value!r}")
    if override is not None:
        return override
    if value == "auto":
        raise SpecError("model.activation_checkpointing: auto is resolved by ftbench's memory "
                        "plan, which this script has not got: pass --checkpointing "
                        "full|selective|none, the policy ftbench chose (its report's "
                        "execution.activation_checkpointing)")
    return value


def saved_op_packets(aten):
    """The SELECTIVE_SAVED_OPS this torch has, as overload packets of `aten` (torch.ops.aten),
    by name."""
    found = {name: getattr(aten, name, None) for name in SELECTIVE_SAVED_OPS}
    return {name: packet for name, packet in found.items() if packet is not None}


def selective_policy(saved, checkpoint_policy):
    """The policy_fn of torch.utils.checkpoint.create_selective_checkpoint_contexts: MUST_SAVE for
    an op (an OpOverload such as aten.mm.default) of one of the `saved` packets, PREFER_RECOMPUTE
    for any other. `checkpoint_policy` is torch.utils.checkpoint.CheckpointPolicy."""
    saved = frozenset(saved)

    def policy_fn(ctx, op, *args, **kwargs):
        if getattr(op, "overloadpacket", op) in saved:
            return checkpoint_policy.MUST_SAVE
        return checkpoint_policy.PREFER_RECOMPUTE

    return policy_fn


def checkpoint_kwargs(policy, checkpoint, aten, torch_version):
    """The keyword arguments of torch.utils.checkpoint.checkpoint (`checkpoint`, the module) for a
    policy; None for none. UnsupportedError for selective on a torch without selective-checkpoint
    contexts (before 2.4)."""
    if policy == "none":
        return None
    kwargs = {"use_reentrant": False}
    if policy == "selective":
        if not (hasattr(checkpoint, "create_selective_checkpoint_contexts")
                and hasattr(checkpoint, "CheckpointPolicy")):
            raise UnsupportedError(
                "activation checkpointing selective: needs torch >= 2.4 "
                "(torch.utils.checkpoint.create_selective_checkpoint_contexts), found torch "
                f"{torch_version}; pass --checkpointing full or none")
        policy_fn = selective_policy(saved_op_packets(aten).values(), checkpoint.CheckpointPolicy)
        kwargs["context_fn"] = functools.partial(checkpoint.create_selective_checkpoint_contexts,
                                                 policy_fn)
    return kwargs


def enable_checkpointing(model, kwargs):
    """Checkpoint every decoder layer of a transformers model with these checkpoint() keyword
    arguments: transformers hands them to torch.utils.checkpoint.checkpoint itself (a partial
    of it that each layer calls). Recent transformers (5.25 here) name it
    activation_checkpointing_enable, gradient_checkpointing_enable being its deprecated alias (a
    FutureWarning); earlier versions have only the old name."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def plan(spec, checkpointing=None):
    """Everything the run takes from the spec, as plain data; `checkpointing` is --checkpointing
    (None without it)."""
    model, lora, train, data = spec["model"], spec["lora"], spec["train"], spec["data"]
    if model["dtype"] not in DTYPES:
        raise SpecError(f"model.dtype: expected one of {sorted(DTYPES)}, found {model['dtype']!r}")
    if train.get("optimizer", "adamw") != "adamw":
        raise SpecError(f"train.optimizer: only adamw, found {train['optimizer']!r}")
    policy = checkpointing_policy(model.get("activation_checkpointing", False), checkpointing)
    return {
        "config": llama_config_kwargs(model),
        "lora": lora_kwargs(lora),
        "dtype": DTYPES[model["dtype"]],
        "adapter_dtype": DTYPES.get(lora.get("dtype", "fp32"), "float32"),
        "activation_checkpointing": policy,
        # For readers from before the policies: whether any layer is recomputed.
        "gradient_checkpointing": policy != "none",
        "micro_batch_size": train["micro_batch_size"],
        "grad_accum_steps": train["grad_accum_steps"],
        "seq_len": data["seq_len"],
        "optimizer": {
            "lr": train["lr"],
            "betas": [train["beta1"], train["beta2"]],
            "eps": train["eps"],
            "weight_decay": train["weight_decay"],
        },
        "max_grad_norm": train["max_grad_norm"],
        "seed": train["seed"],
    }


def causal_lm_loss(model, logits, labels, vocab_size):
    """What LlamaForCausalLM's forward computes when given labels= (its loss_function, transformers
    4.46 and later; before, the shifted cross-entropy of the logits in float), called apart from
    the forward so that the loss is a scope of its own."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    loss_function = getattr(base, "loss_function", None)
    if loss_function is not None:
        return loss_function(logits=logits, labels=labels, vocab_size=vocab_size)
    import torch.nn.functional as F
    shifted = logits.float()[..., :-1, :].contiguous()
    return F.cross_entropy(shifted.view(-1, vocab_size), labels[..., 1:].contiguous().view(-1))


def measured_steps(steps, warmup, window):
    """The 1-based steps the timing figures use, and how many profiled steps they leave out:
    those after the warm-up less the profiled ones, unless that leaves none (then 0 left out), as
    ftbench's summary does (metrics::exclude_profiled_steps)."""
    after_warmup = list(range(warmup + 1, steps + 1))
    if window is None:
        return after_warmup, 0
    kept = [s for s in after_warmup if not window[0] <= s <= window[1]]
    if not kept:
        return after_warmup, 0
    return kept, len(after_warmup) - len(kept)


def _unmarked(name):
    return contextlib.nullcontext()


def write_profile(prof, window, device_activity, stem):
    """The tables and the trace of a stopped torch.profiler.profile; the report's record."""
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is None:
        raise RuntimeError("--profile-steps: this torch's profiler keeps no raw events "
                           "(torch.profiler.profile().profiler.kineto_results)")
    events = profile_tables.events_of_kineto(results.events())
    tables = profile_tables.tabulate_profile(events)
    paths = profile_tables.profile_paths(stem)
    with open(paths["ops_table"], "w", newline="") as f:
        f.write(profile_tables.op_table_csv(tables))
    with open(paths["kernels_table"], "w", newline="") as f:
        f.write(profile_tables.kernel_table_csv(tables))
    prof.export_chrome_trace(paths["trace"])
    return profile_tables.profile_record(tables, window, device_activity, paths)


def build_model(p, device, attn="sdpa"):
    """The PEFT model of a plan on a torch.device, in training mode, seeded with the plan's seed:
    (model, LlamaConfig, trainable parameters). UnsupportedError, before anything is built, for a
    checkpointing policy this torch lacks."""
    import torch
    import torch.utils.checkpoint
    import transformers
    import peft

    checkpointing = checkpoint_kwargs(p["activation_checkpointing"], torch.utils.checkpoint,
                                      torch.ops.aten, torch.__version__)
    torch.manual_seed(p["seed"])
    dtype = getattr(torch, p["dtype"])
    major = int(transformers.__version__.split(".")[0])
    config = transformers.LlamaConfig(**config_for_version(p["config"], major))
    # transformers 5 renamed torch_dtype to dtype.
    dtype_arg = {"dtype": dtype} if major >= 5 else {"torch_dtype": dtype}
    with device:
        model = transformers.LlamaForCausalLM._from_config(config, attn_implementation=attn,
                                                           **dtype_arg)
    model.requires_grad_(False)
    if checkpointing is not None:
        enable_checkpointing(model, checkpointing)
    model = peft.get_peft_model(model, peft.LoraConfig(**p["lora"]))
    adapter_dtype = getattr(torch, p["adapter_dtype"])
    trainable = [q for q in model.parameters() if q.requires_grad]
    for q in trainable:
        q.data = q.data.to(adapter_dtype)
    model.train()
    return model, config, trainable


def run(p, steps, warmup, device_name, threads=None, attn="sdpa", window=None,
        stem="hf-peft"):
    import torch
    from torch.profiler import ProfilerActivity, record_function
    import transformers
    import peft

    if threads:
        torch.set_num_threads(threads)
    device = torch.device(device_name)
    t_build = time.perf_counter()
    model, config, trainable = build_model(p, device, attn)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(trainable, lr=p["optimizer"]["lr"], betas=tuple(p["optimizer"]["betas"]),
                            eps=p["optimizer"]["eps"], weight_decay=p["optimizer"]["weight_decay"],
                            fused=fused)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    build_seconds = time.perf_counter() - t_build

    mb, accum, seq = p["micro_batch_size"], p["grad_accum_steps"], p["seq_len"]
    gen = torch.Generator(device="cpu").manual_seed(p["seed"])
    batches = [torch.randint(0, config.vocab_size, (mb, seq), generator=gen).to(device)
               for _ in range(accum)]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    prof = None
    step_seconds, losses = [], []
    for step in range(1, steps + 1):
        recording = window is not None and window[0] <= step <= window[1]
        if recording and step == window[0]:
            prof = torch.profiler.profile(activities=activities, record_shapes=True,
                                          with_flops=True)
            prof.start()
        mark = record_function if recording else _unmarked
        start = time.perf_counter()
        total = None
        for ids in batches:
            with mark("ftbench::forward"):
                logits = model(input_ids=ids).logits
            with mark("ftbench::loss"):
                loss = causal_lm_loss(model, logits, ids, config.vocab_size) / accum
            del logits  # as model(labels=...) keeps no logits beyond the loss's graph
            with mark("ftbench::backward"):
                loss.backward()
            total = loss.detach() if total is None else total + loss.detach()
        with mark("ftbench::optimizer"):
            if p["max_grad_norm"] > 0:
                torch.nn.utils.clip_grad_norm_(trainable, p["max_grad_norm"])
            opt.step()
            opt.zero_grad(set_to_none=True)
        sync()
        step_seconds.append(time.perf_counter() - start)
        losses.append(float(total))
        if recording and step == window[1]:
            prof.stop()
    kept, profiled_excluded = measured_steps(steps, warmup, window)
    measured = [step_seconds[s - 1] for s in kept]
    profile = (write_profile(prof, window, device.type == "cuda", stem)
               if prof is not None else None)
    tokens_per_step = mb * accum * seq
    result = {
        "implementation": f"transformers {transformers.__version__} + peft {peft.__version__}, "
                          f"torch {torch.__version__}, {attn}, AdamW(fused={fused})",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "attn_implementation": attn,
        "activation_checkpointing": p["activation_checkpointing"],
        # For readers from before the policies: whether any layer is recomputed.
        "gradient_checkpointing": p["gradient_checkpointing"],
        "build_seconds": build_seconds,
        "steps": steps,
        "warmup_steps_excluded": warmup,
        "profiled_steps_excluded": profiled_excluded,
        "measured_steps": len(measured),
        "tokens_per_step": tokens_per_step,
        "step_seconds": step_seconds,
        "median_step_seconds": statistics.median(measured),
        "mean_step_seconds": statistics.fmean(measured),
        # As ftbench's summary: tokens over the measured steps / their total time.
        "tokens_per_second": tokens_per_step / statistics.fmean(measured),
        "losses": losses,
        "trainable_parameters": sum(q.numel() for q in trainable),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else None,
        # --profile-steps: the profiled steps, the files and the totals (ftbench's report's
        # `profile`); null without it.
        "profile": profile,
    }
    return result


def profile_window(profile_steps, profile_out, steps):
    """--profile-steps as (N, M), None without it; ValueError for a bad value, a window past the
    run's last step, or --profile-out alone."""
    if profile_steps is None:
        if profile_out is not None:
            raise ValueError("--profile-out: needs --profile-steps")
        return None
    window = parse_profile_steps(profile_steps)
    if window[1] > steps:
        raise ValueError(f"--profile-steps {profile_tables.window_text(window)}: the run has "
                         f"{steps} optimizer step{'' if steps == 1 else 's'}; profile steps "
                         f"from 1 to {steps}")
    return window


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help="JSON of `ftbench validate SPEC --json`")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3, help="first steps left out of the median")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch.set_num_threads (default: torch's own choice)")
    ap.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa",
                    help="transformers' attn_implementation")
    ap.add_argument("--checkpointing", choices=CHECKPOINTING_POLICIES,
                    help="activation checkpointing, in place of the spec's "
                         "model.activation_checkpointing (needed where it says auto: give the "
                         "policy ftbench chose, its report's execution.activation_checkpointing)")
    ap.add_argument("--plan", action="store_true", help="print the mapping only (no torch needed)")
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--profile-steps", metavar="N[,M]",
                    help="record steps N to M (1-based) with torch.profiler, as ftbench run does")
    ap.add_argument("--profile-out", metavar="STEM",
                    help="the profile's files are STEM.profile-{ops,kernels}.csv and "
                         "STEM.profile-trace.json (default: --out without .json, else hf-peft)")
    args = ap.parse_args(argv)
    if args.steps <= args.warmup:
        ap.error(f"--steps ({args.steps}) must exceed --warmup ({args.warmup})")
    try:
        window = profile_window(args.profile_steps, args.profile_out, args.steps)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        with open(args.spec) as f:
            doc = json.load(f)
        p = plan(doc.get("spec", doc), args.checkpointing)
    except (OSError, json.JSONDecodeError, KeyError, SpecError) as e:
        print(f"error: {args.spec}: {e}", file=sys.stderr)
        return 2
    stem = args.profile_out if args.profile_out is not None else profile_stem(args.out)
    try:
        result = p if args.plan else run(p, args.steps, args.warmup, args.device, args.threads,
                                         args.attn, window, stem)
    except UnsupportedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
