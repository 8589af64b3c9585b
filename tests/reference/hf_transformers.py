#!/usr/bin/env python3
"""Checkpoints and adapters written by transformers and peft themselves, and wrong copies of them.

ftbench's Hugging Face interop is checked against the libraries its users run (issue 38): the
checkpoints here are LlamaForCausalLM(config).save_pretrained(DIR), the adapters
peft.get_peft_model(...).save_pretrained(DIR), as transformers 5 and peft write them (config.json
with rope_parameters and dtype), not a re-implementation of their formats. The controls are
copies with one plausible mapping mistake in them, which every comparison must catch.

Usage (the pinned environment's interpreter, FTBENCH_PYTHON: torch, transformers, peft):
  hf_transformers.py make DIR --layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 96 --vocab 97
      [--rope-theta T] [--rope-scaling llama3 [--rope-factor F] [--rope-low-freq-factor L]
       [--rope-high-freq-factor H] [--rope-original-max-position N]] [--rms-norm-eps E]
      [--max-position P] [--tie] [--seed S]
  hf_transformers.py make-adapter DIR --checkpoint CK --targets k_proj,gate_proj,...
      [--r 4] [--alpha 12] [--seed S]
  hf_transformers.py alter SRC DST (--transpose NAME | --rope-permute | --swap NAME NAME)
  hf_transformers.py check-hf ARGS...   (scripts/reference/check_hf.py ARGS in this process)
Several commands separated by a lone "+" run in one process, in order (importing torch and
transformers takes some 10 s on the test machines); the exit code is the first non-zero one.

make: the weights are drawn after construction, from torch.manual_seed(S), as
tests/reference/hf_checkpoint.py draws them (standard deviations: Linear 1/sqrt(in), embedding 1,
or 1/sqrt(dim) when tied, norms 1 plus 0.1), not with transformers' initialisation (0.02), under
which attention is nearly uniform and the logits nearly zero, so that a wrong rotary layout or
head mapping would hardly show.
make-adapter: LoraConfig(r, lora_alpha, target_modules, lora_dropout 0, task_type CAUSAL_LM) on
the checkpoint, A and B random with standard deviations 1/sqrt(in) and 0.1/r (both nonzero: PEFT's
initial B = 0 changes nothing).
alter (every *.safetensors of SRC rewritten, the other files copied):
  --transpose NAME   the square tensor NAME transposed (a loader that mixes [out, in] and
                     [in, out] up);
  --rope-permute     every q_proj and k_proj weight permuted as transformers'
                     convert_llama_weights_to_hf permutes Meta's (interleaved rotary pairs) into
                     its own rotate_half layout: what a loader that takes HF weights for Meta's
                     does;
  --swap NAME NAME   two tensors of one shape exchanged (an adapter mapped onto the wrong slice
                     of a fused projection, e.g. k_proj's A for q_proj's).
Exit codes: 0 done, 2 bad input or missing packages.
"""

import argparse
import os
import shutil
import sys

# Nothing may be downloaded: every folder here is local.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

CHAIN_SEPARATOR = "+"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def split_chain(argv):
    """argv split at every lone CHAIN_SEPARATOR into the argument lists of the commands."""
    commands = [[]]
    for arg in argv:
        if arg == CHAIN_SEPARATOR:
            commands.append([])
        else:
            commands[-1].append(arg)
    return [c for c in commands if c]


def run_chain(argv, run_one):
    """Runs run_one(args) for every command of argv in order; the first non-zero exit code, or
    0. Every command runs, so that one that fails still leaves the others' results."""
    status = 0
    for args in split_chain(argv):
        code = run_one(args)
        if code and not status:
            status = code
    return status


def llama_config(args):
    """A transformers LlamaConfig of the command-line shape; rope settings as rope_parameters."""
    from transformers import LlamaConfig

    rope = {"rope_type": "default", "rope_theta": args.rope_theta}
    if args.rope_scaling == "llama3":
        rope.update(rope_type="llama3", factor=args.rope_factor,
                    low_freq_factor=args.rope_low_freq_factor,
                    high_freq_factor=args.rope_high_freq_factor,
                    original_max_position_embeddings=args.rope_original_max_position)
    return LlamaConfig(vocab_size=args.vocab, hidden_size=args.dim, intermediate_size=args.ffn,
                       num_hidden_layers=args.layers, num_attention_heads=args.heads,
                       num_key_value_heads=args.kv_heads, head_dim=args.dim // args.heads,
                       max_position_embeddings=args.max_position, rms_norm_eps=args.rms_norm_eps,
                       rope_parameters=rope, tie_word_embeddings=args.tie, bos_token_id=1,
                       eos_token_id=2)


def draw_weights(model, seed):
    """Every parameter drawn again from torch.manual_seed(seed), in named_parameters() order:
    embedding N(0, 1) (N(0, 1/dim) when tied to the LM head, which keeps the logits of order
    one; the first RMSNorm makes the scale of the input irrelevant), Linear (lm_head included)
    N(0, 1/in_features), norms 1 + N(0, 0.1)."""
    import torch

    torch.manual_seed(seed)
    tied = model.config.tie_word_embeddings
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.normal_(0.0, p.shape[1] ** -0.5 if tied else 1.0)
            elif p.dim() == 2:
                p.normal_(0.0, p.shape[1] ** -0.5)
            else:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))


def make_checkpoint(args):
    import torch
    from transformers import LlamaForCausalLM

    config = llama_config(args)
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    draw_weights(model, args.seed)
    model.save_pretrained(args.dir)
    print(f"{args.dir}: LlamaForCausalLM written by transformers "
          f"{__import__('transformers').__version__}")
    return 0


def make_adapter(args):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(args.checkpoint, dtype=torch.float32)
    targets = [t for t in args.targets.split(",") if t]
    config = LoraConfig(r=args.r, lora_alpha=args.alpha, target_modules=targets,
                        lora_dropout=0.0, task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, config)
    torch.manual_seed(args.seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if ".lora_A." in name:
                p.normal_(0.0, p.shape[1] ** -0.5)
            elif ".lora_B." in name:
                p.normal_(0.0, 0.1 / args.r)
    peft_model.save_pretrained(args.dir)
    print(f"{args.dir}: adapter on {', '.join(targets)} written by peft "
          f"{__import__('peft').__version__}")
    return 0


def rope_permute(w, heads):
    """convert_llama_weights_to_hf's permute: Meta's interleaved rotary pairs (2i, 2i + 1) of
    each head's rows to HF's rotate_half pairs (i, i + head_dim / 2)."""
    out_features, in_features = w.shape
    return (w.view(heads, out_features // heads // 2, 2, in_features).transpose(1, 2)
            .reshape(out_features, in_features))


def alter(args):
    """A copy of SRC with one mistake (see the module's docstring)."""
    import json

    from safetensors.torch import load_file, save_file

    if os.path.exists(args.dst):
        raise ValueError(f"{args.dst} exists")
    shutil.copytree(args.src, args.dst)
    files = sorted(f for f in os.listdir(args.dst) if f.endswith(".safetensors"))
    if not files:
        raise ValueError(f"{args.src}: no .safetensors file")
    heads, kv_heads = None, None
    if args.rope_permute:
        with open(os.path.join(args.src, "config.json")) as f:
            config = json.load(f)
        heads = config["num_attention_heads"]
        kv_heads = config.get("num_key_value_heads") or heads
    wanted = set(args.swap or []) | ({args.transpose} if args.transpose else set())
    found = {}
    changed = []
    tensors_of = {}
    for name in files:
        tensors_of[name] = load_file(os.path.join(args.dst, name))
        for key, t in tensors_of[name].items():
            if key in wanted:
                found[key] = name
    missing = sorted(wanted - set(found))
    if missing:
        raise ValueError(f"{args.src}: no tensor {', '.join(missing)}")
    if args.transpose:
        file = found[args.transpose]
        t = tensors_of[file][args.transpose]
        if t.dim() != 2 or t.shape[0] != t.shape[1]:
            raise ValueError(f"{args.transpose}: shape {list(t.shape)} is not square")
        tensors_of[file][args.transpose] = t.t().contiguous()
        changed.append(args.transpose)
    if args.swap:
        a, b = args.swap
        ta, tb = tensors_of[found[a]][a], tensors_of[found[b]][b]
        if ta.shape != tb.shape:
            raise ValueError(f"{a} {list(ta.shape)} and {b} {list(tb.shape)}: not one shape")
        tensors_of[found[a]][a], tensors_of[found[b]][b] = tb.clone(), ta.clone()
        changed += [a, b]
    if args.rope_permute:
        for tensors in tensors_of.values():
            for key in list(tensors):
                for proj, n in (("self_attn.q_proj.weight", heads),
                                ("self_attn.k_proj.weight", kv_heads)):
                    if key.endswith(proj):
                        tensors[key] = rope_permute(tensors[key], n).contiguous()
                        changed.append(key)
        if not changed:
            raise ValueError(f"{args.src}: no q_proj or k_proj weight")
    for name, tensors in tensors_of.items():
        save_file(tensors, os.path.join(args.dst, name), metadata={"format": "pt"})
    print(f"{args.dst}: {args.src} with {len(changed)} tensors altered: {', '.join(changed)}")
    return 0


def check_hf(argv):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "scripts", "reference"))
    import check_hf as checker

    return checker.main(argv)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="hf_transformers.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="a random LlamaForCausalLM saved by transformers")
    m.add_argument("dir")
    for name, default in (("--layers", 2), ("--dim", 64), ("--heads", 4), ("--kv-heads", 2),
                          ("--ffn", 96), ("--vocab", 97), ("--max-position", 64), ("--seed", 0)):
        m.add_argument(name, type=int, default=default)
    m.add_argument("--rope-theta", type=float, default=10000.0)
    m.add_argument("--rope-scaling", choices=["llama3"])
    m.add_argument("--rope-factor", type=float, default=8.0)
    m.add_argument("--rope-low-freq-factor", type=float, default=1.0)
    m.add_argument("--rope-high-freq-factor", type=float, default=4.0)
    m.add_argument("--rope-original-max-position", type=int, default=8192)
    m.add_argument("--rms-norm-eps", type=float, default=1e-5)
    m.add_argument("--tie", action="store_true", help="tie_word_embeddings")
    a = sub.add_parser("make-adapter", help="a random LoRA adapter saved by peft")
    a.add_argument("dir")
    a.add_argument("--checkpoint", required=True)
    a.add_argument("--targets", required=True, help="module names, comma-separated")
    a.add_argument("--r", type=int, default=4)
    a.add_argument("--alpha", type=float, default=12.0)
    a.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("alter", help="a copy of a checkpoint or adapter with one mistake")
    c.add_argument("src")
    c.add_argument("dst")
    how = c.add_mutually_exclusive_group(required=True)
    how.add_argument("--transpose", metavar="NAME")
    how.add_argument("--rope-permute", action="store_true")
    how.add_argument("--swap", nargs=2, metavar="NAME")
    return p.parse_args(argv)


def quiet_transformers():
    """No progress bar per loaded model in the tests' logs."""
    try:
        from transformers.utils import logging
    except ImportError:
        return
    logging.disable_progress_bar()


def run_one(argv):
    quiet_transformers()
    if argv and argv[0] == "check-hf":
        return check_hf(argv[1:])
    try:
        args = parse_args(argv)
    except SystemExit as e:  # argparse's exit on a bad command line
        return 2 if e.code else 0
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        if args.command == "make-adapter":
            import peft  # noqa: F401
    except ImportError as e:
        print(f"error: hf_transformers.py needs torch, transformers and peft: {e}",
              file=sys.stderr)
        return 2
    try:
        return {"make": make_checkpoint, "make-adapter": make_adapter, "alter": alter}[
            args.command](args)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {args.command}: {e}", file=sys.stderr)
        return 2


def main(argv=None):
    return run_chain(sys.argv[1:] if argv is None else argv, run_one)


if __name__ == "__main__":
    sys.exit(main())
