#!/usr/bin/env python3
"""LoRA training's gradients and AdamW steps as transformers, peft and torch compute them.

The second, independent reference of ftbench's LoRA step (the first is the float64 NumPy
backward written by hand, llama_numpy_backward.py, whose command line, inputs, result file and
exit codes this one shares): LlamaForCausalLM.from_pretrained(CHECKPOINT) with
PeftModel.from_pretrained(model, BEFORE, is_trainable=True) on top (so peft itself reads
ftbench's exported adapter), torch autograd for the gradients, torch.nn.utils.clip_grad_norm_ and
torch.optim.AdamW for the steps: what a transformers + peft user runs.

The loss of a step is transformers' own: every example a sequence of its own (batch of one, no
padding), labels = its tokens with the first prompt_tokens set to -100, and
model(input_ids, labels=labels, num_items_in_batch=N) with N the step's target tokens over all
the examples (transformers' ForCausalLMLoss then sums the token cross-entropies and divides by
N: the token-weighted mean that the Trainer's gradient accumulation computes), back-propagated
example by example, the gradients accumulating. Then clip_grad_norm_(adapters, max_grad_norm)
(its return value, the norm before clipping, is the step's gradient norm; max_grad_norm 0: no
clipping) and AdamW(lr, betas, eps, weight_decay).step().

Usage (the pinned environment's interpreter, FTBENCH_PYTHON):
  peft_reference.py check --checkpoint DIR --adapter BEFORE --step STEP.json [--grads DIR]
      [--stepped DIR ...] [--grad-atol A --grad-rtol R --weight-atol A --weight-rtol R
      --scalar-rtol R] [-o RESULT.json]
  Several `check` commands separated by a lone "+" run in one process (importing torch,
  transformers and peft takes some 10 s); the exit code is the first non-zero one.
  exit 0: everything given matches within tolerance; 1: something does not; 2: bad input or
  missing packages. STEP.json, the folders and RESULT.json: llama_numpy_backward.py's docstring.

Tolerance: the NumPy reference's defaults (gradients atol 1e-6, rtol 1e-4; adapter weights after
a step atol 1e-6, rtol 1e-5; losses and gradient norms rtol 1e-5), for ftbench in fp32 against
this reference in fp32 (what users run) on the tests' small models. Both sides round at 6e-8
relative; their gradients (of order 1e-3 to 0.3) differ by some 1e-7 at most, as ftbench's from
the float64 reference (tests/reference/README.md has the measurements). There is no float64 mode:
transformers' Llama computes its RMSNorm and rotary tables in float32 whatever the model's dtype,
and peft keeps a float32 adapter in float32, so a float64 model would not be a float64 reference.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_transformers  # noqa: E402
import llama_numpy_backward as numpy_backward  # noqa: E402  (comparison and STEP.json only)

PEFT_PREFIX = "base_model.model."
IGNORE_INDEX = -100


class PeftStep:
    """The PEFT model of a checkpoint and an adapter folder, and its adapters by module path:
    {"model.layers.0.self_attn.q_proj": (A, B)} (PEFT's lora_A / lora_B parameters)."""

    def __init__(self, checkpoint, adapter):
        import torch
        from peft import PeftModel
        from transformers import LlamaForCausalLM

        self.torch = torch
        base = LlamaForCausalLM.from_pretrained(checkpoint, dtype=torch.float32,
                                                attn_implementation="eager")
        self.model = PeftModel.from_pretrained(base, adapter, is_trainable=True)
        self.model.eval()  # no dropout anywhere; gradients flow all the same
        found = {}
        for name, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            # base_model.model.<path>.lora_A.default.weight
            head, which, _adapter_name, _ = name.rsplit(".", 3)
            if which not in ("lora_A", "lora_B") or not head.startswith(PEFT_PREFIX):
                raise ValueError(f"{adapter}: unexpected trainable parameter {name}")
            found.setdefault(head[len(PEFT_PREFIX):], {})[which] = p
        self.modules = {path: (ab["lora_A"], ab["lora_B"]) for path, ab in sorted(found.items())}
        self.initial = {path: (a.detach().clone(), b.detach().clone())
                        for path, (a, b) in self.modules.items()}
        self.scale = {path: self.model.base_model.model.get_submodule(path).scaling["default"]
                      for path in self.modules}

    def params(self):
        return [p for ab in self.modules.values() for p in ab]

    def reset(self):
        with self.torch.no_grad():
            for path, (a, b) in self.modules.items():
                a.copy_(self.initial[path][0])
                b.copy_(self.initial[path][1])

    def loss_and_gradients(self, examples):
        """(loss, gradients {path: (dA, dB)} as float64 NumPy, target tokens): the gradients
        accumulated in the parameters' .grad as well."""
        torch = self.torch
        labels_of = [numpy_backward.example_labels(e) for e in examples]
        count = int(sum((labels[1:] != IGNORE_INDEX).sum() for labels in labels_of))
        if count == 0:
            raise ValueError("no example has a target token")
        self.model.zero_grad(set_to_none=True)
        total = 0.0
        for example, labels in zip(examples, labels_of):
            ids = torch.tensor([example["tokens"]], dtype=torch.long)
            out = self.model(input_ids=ids, labels=torch.tensor([labels.tolist()]),
                             num_items_in_batch=count)
            out.loss.backward()
            total += float(out.loss.detach())
        grads = {path: (a.grad.double().numpy().copy(), b.grad.double().numpy().copy())
                 for path, (a, b) in self.modules.items()}
        return total, grads, count

    def train(self, examples, opt, steps):
        """`steps` steps from the initial adapter, as numpy_backward.train returns them: per
        step {"loss", "grad_norm" (before clipping), "clip_coefficient", "grads" (before
        clipping), "adapter" (after the step)}, arrays as float64 NumPy."""
        torch = self.torch
        self.reset()
        params = self.params()
        optimizer = torch.optim.AdamW(params, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]),
                                      eps=opt["eps"], weight_decay=opt["weight_decay"])
        records = []
        for _ in range(steps):
            loss, grads, _count = self.loss_and_gradients(examples)
            if opt["max_grad_norm"] > 0:
                norm = float(torch.nn.utils.clip_grad_norm_(params, opt["max_grad_norm"]))
            else:
                norm = float(torch.linalg.vector_norm(
                    torch.stack([torch.linalg.vector_norm(p.grad) for p in params])))
            optimizer.step()
            records.append({
                "loss": loss, "grad_norm": norm,
                "clip_coefficient": numpy_backward.clip_coefficient(norm, opt["max_grad_norm"]),
                "grads": grads,
                "adapter": {path: (a.detach().double().numpy().copy(),
                                   b.detach().double().numpy().copy())
                            for path, (a, b) in self.modules.items()}})
        self.model.zero_grad(set_to_none=True)
        return records


def read_adapter_tensors(folder, modules):
    """{path: (A, B)} of a PEFT folder's adapter_model.safetensors, as float64 NumPy, read
    directly (the gradients folders hold gradients, not an adapter to apply). Its keys must be
    exactly the PEFT model's."""
    from safetensors.numpy import load_file

    tensors = load_file(os.path.join(folder, hf_transformers.ADAPTER_WEIGHTS))
    out, keys = {}, set()
    for path in modules:
        pair = []
        for which in ("lora_A", "lora_B"):
            key = f"{PEFT_PREFIX}{path}.{which}.weight"
            if key not in tensors:
                raise ValueError(f"{folder}: no {key}")
            keys.add(key)
            pair.append(tensors[key].astype("float64"))
        out[path] = tuple(pair)
    extra = sorted(set(tensors) - keys)
    if extra:
        raise ValueError(f"{folder}: keys the adapter does not have: {', '.join(extra)}")
    return out


def run_check(args):
    import torch

    step = numpy_backward.read_step(args.step)
    opt, steps, examples = step["optimizer"], step["steps"], step["examples"]
    if len(args.stepped) > steps:
        raise ValueError(f"{len(args.stepped)} --stepped folders for {steps} steps")
    model = PeftStep(args.checkpoint, args.adapter)
    records = model.train(examples, opt, steps)
    final = records[-1]["adapter"]
    result = {
        "reference": f"peft {__import__('peft').__version__}, transformers "
                     f"{__import__('transformers').__version__}, torch {torch.__version__}, "
                     "float32",
        "target_tokens": model.loss_and_gradients(examples)[2],
        "reference_losses": [r["loss"] for r in records],
        "reference_grad_norms": [r["grad_norm"] for r in records],
        "clip_coefficients": [r["clip_coefficient"] for r in records],
        "scales": sorted(set(model.scale.values())),
        "unclipped_diff": numpy_backward.max_difference(
            model.train(examples, dict(opt, max_grad_norm=0.0), steps)[-1]["adapter"], final),
        "no_decay_diff": numpy_backward.max_difference(
            model.train(examples, dict(opt, weight_decay=0.0), steps)[-1]["adapter"], final),
        "tolerance": {"grad_atol": args.grad_atol, "grad_rtol": args.grad_rtol,
                      "weight_atol": args.weight_atol, "weight_rtol": args.weight_rtol,
                      "scalar_rtol": args.scalar_rtol},
    }
    print(result["reference"] + f": {args.adapter}, scale {result['scales']}")
    for t, r in enumerate(records, 1):
        print(f"reference step {t}: loss {r['loss']:.10g} over {result['target_tokens']} target "
              f"tokens, gradient norm {r['grad_norm']:.6g}, clipping coefficient "
              f"{r['clip_coefficient']:.6g}")
    print(f"controls: without clipping the adapter after step {steps} would differ by "
          f"{result['unclipped_diff']:.3e}, without weight decay by {result['no_decay_diff']:.3e}")
    ok = True
    for key, name in (("losses", "loss"), ("grad_norms", "grad_norm")):
        result[key] = []
        for t, value in enumerate(step.get(key, []), 1):
            r = numpy_backward.scalar_result(float(value), records[t - 1][name],
                                             args.scalar_rtol)
            result[key].append(r)
            ok = ok and r["ok"]
            print(f"step {t} {name}: ftbench {r['ftbench']!r} against {r['reference']!r}, rel diff "
                  f"{r['rel_diff']:.3e} (rtol {args.scalar_rtol:g}): "
                  f"{'ok' if r['ok'] else 'MISMATCH'}")
    checks = []
    if args.grads:
        checks.append(("gradients", "gradients of step 1", args.grads, records[0]["grads"],
                       args.grad_atol, args.grad_rtol))
    for t, folder in enumerate(args.stepped, 1):
        checks.append((f"weights_after_step_{t}", f"adapter after step {t}", folder,
                       records[t - 1]["adapter"], args.weight_atol, args.weight_rtol))
    for key, what, folder, expected, atol, rtol in checks:
        r = numpy_backward.compare_tensors(read_adapter_tensors(folder, model.modules), expected,
                                           atol, rtol)
        result[key] = r
        ok = ok and r["ok"]
        print(f"{what} ({folder}) against peft + torch float32 (atol {atol:g}, rtol "
              f"{rtol:g}): max abs diff {r['max_abs_diff']:.3e}, max rel diff "
              f"{r['max_rel_diff']:.3e} over {r['values']} values in {r['tensors']} tensors, "
              f"{100 * r['tolerance_used']:.3g}% of the tolerance used at {r['worst']}: "
              f"{'ok' if r['ok'] else 'MISMATCH in ' + ', '.join(r['failed'])}")
    result["ok"] = ok
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=1, allow_nan=False)
            f.write("\n")
    sys.stdout.flush()
    return 0 if ok else 1


def parse_args(argv):
    p = argparse.ArgumentParser(prog="peft_reference.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check gradients and optimizer steps against peft + torch")
    c.add_argument("--checkpoint", required=True)
    c.add_argument("--adapter", required=True, help="PEFT adapter folder before the first step")
    c.add_argument("--step", required=True, help="examples, optimizer, ftbench's losses, norms")
    c.add_argument("--grads", help="PEFT folder holding ftbench's gradients as A and B")
    c.add_argument("--stepped", action="append", default=[],
                   help="PEFT folder of ftbench's adapter after step 1; again for step 2, ...")
    c.add_argument("--grad-atol", type=float, default=numpy_backward.DEFAULT_GRAD_ATOL)
    c.add_argument("--grad-rtol", type=float, default=numpy_backward.DEFAULT_GRAD_RTOL)
    c.add_argument("--weight-atol", type=float, default=numpy_backward.DEFAULT_WEIGHT_ATOL)
    c.add_argument("--weight-rtol", type=float, default=numpy_backward.DEFAULT_WEIGHT_RTOL)
    c.add_argument("--scalar-rtol", type=float, default=numpy_backward.DEFAULT_SCALAR_RTOL)
    c.add_argument("-o", "--output", help="write the measured differences here (JSON)")
    return p.parse_args(argv)


def run_one(argv):
    try:
        args = parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        import peft  # noqa: F401
        import safetensors  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"error: peft_reference.py needs torch, transformers, peft and safetensors: {e}",
              file=sys.stderr)
        return 2
    try:
        return run_check(args)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def main(argv=None):
    return hf_transformers.run_chain(sys.argv[1:] if argv is None else argv, run_one)


if __name__ == "__main__":
    sys.exit(main())
