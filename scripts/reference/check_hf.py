#!/usr/bin/env python3
"""ftbench's Hugging Face interop checked against transformers and peft themselves.

For a machine with torch, transformers and peft (the GPU machines): loads a Hugging Face Llama
checkpoint folder with LlamaForCausalLM.from_pretrained, computes the logits (and the loss with
labels = input_ids, when the file has one) for the input_ids of ftbench's logits file and
compares them; with --adapter, loads the PEFT adapter ftbench exported with
PeftModel.from_pretrained on top and compares with the logits ftbench's trained model gave.
One line per comparison; exit 0 when all match, 1 on a mismatch, 2 on bad input or missing
packages.

Usage: check_hf.py --checkpoint DIR --logits FTBENCH.json
                   [--adapter DIR --adapter-logits FTBENCH_TRAINED.json]
                   [--device cuda] [--dtype float32] [--atol A] [--rtol R] [-o RESULT.json]
       check_hf.py --cases CASES.json [--device ...] [--dtype ...] [--atol A] [--rtol R]
                   [-o RESULT.json]
Logits files: {"input_ids": [[...]], "logits": [[[...]]], "loss": number (optional),
"labels": [[...]] (optional, default input_ids)}, as tests/reference/llama_numpy.py reads them.
CASES.json: [{"name": ..., "checkpoint": DIR, "adapter": DIR (optional), "logits": FILE}, ...]:
many comparisons in one process (importing torch and transformers takes longer than comparing
a small model), each on a fresh LlamaForCausalLM.from_pretrained(checkpoint) (and
PeftModel.from_pretrained(adapter) on it); the tests' controls, which must mismatch, among them.
RESULT.json: {"ok", "cases": [{"name", "ok", "logits": {"ok", "max_abs_diff", "max_rel_diff",
"count", "worst_index"}, "loss": {...} (when the file has one), "error": message (when the case
could not be compared)}], "atol", "rtol"}. A case that cannot be compared (a folder that does
not load) is reported as such and counts as a mismatch; the exit code is then 2.

Importing this file needs neither torch nor transformers: the comparison and the arguments are
tested on CPU machines by tests/reference/test_hf_reference.py.
"""

import argparse
import json
import math
import sys

# (atol, rtol) per dtype of the transformers model; an element passes when
# |ftbench - transformers| <= atol + rtol |transformers|. float32: both sides compute in fp32
# (TF32 off here); on the tests' small models fp32 logits lie 1.5e-6 to 4e-6 from float64
# (tests/reference/README.md), so 1e-4 has a margin of 25 or more. bfloat16: one bf16
# implementation lies up to 0.06 from float64 on the same models, two of them up to about twice
# that; the tolerance only catches gross errors (a wrong GQA head mapping or rotary layout, off
# by 1 or more), not subtle ones. float16 rounds 8 times finer than bfloat16.
TOLERANCES = {"float32": (1e-4, 1e-4), "bfloat16": (0.15, 0.02), "float16": (0.02, 0.005)}


def flatten(values):
    """(flat list of floats, shape) of a nested list; ValueError if it is ragged."""
    if not isinstance(values, list):
        return [float(values)], []
    if not values:
        return [], [0]
    parts = [flatten(v) for v in values]
    shape = parts[0][1]
    if any(p[1] != shape for p in parts):
        raise ValueError("ragged nested list")
    return [x for p in parts for x in p[0]], [len(values)] + shape


def compare(actual, expected, atol, rtol):
    """Element-wise |actual - expected| <= atol + rtol |expected| over nested lists (NaN never
    passes). Returns {"ok", "max_abs_diff", "max_rel_diff" (over |expected| >= atol),
    "count", "worst_index"}: the rule of llama_numpy.compare_values, without NumPy."""
    a, a_shape = flatten(actual)
    e, e_shape = flatten(expected)
    if a_shape != e_shape:
        raise ValueError(f"shapes differ: {a_shape} against {e_shape}")
    max_abs = max_rel = 0.0
    worst, worst_excess = 0, -math.inf
    for i, (x, y) in enumerate(zip(a, e)):
        diff = abs(x - y)
        excess = math.inf if math.isnan(diff) else diff - (atol + rtol * abs(y))
        if excess > worst_excess:
            worst, worst_excess = i, excess
        max_abs = max(max_abs, diff) if not math.isnan(diff) else math.nan
        if abs(y) >= atol and not math.isnan(diff):
            max_rel = max(max_rel, diff / abs(y))
    index = []
    for n in reversed(e_shape):
        index.insert(0, worst % n)
        worst //= n
    return {"ok": worst_excess <= 0 if e else True, "max_abs_diff": max_abs,
            "max_rel_diff": max_rel, "count": len(e), "worst_index": index}


def verdict(name, result, atol, rtol):
    """The one line printed per comparison."""
    return (f"{name}: {'ok' if result['ok'] else 'MISMATCH'}: max abs diff "
            f"{result['max_abs_diff']:.3e}, max rel diff {result['max_rel_diff']:.3e} over "
            f"{result['count']} values, worst at {result['worst_index']} "
            f"(atol {atol:.0e}, rtol {rtol:.0e})")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", help="Hugging Face checkpoint folder")
    ap.add_argument("--logits", help="ftbench's logits of the base model")
    ap.add_argument("--adapter", help="PEFT adapter folder ftbench exported")
    ap.add_argument("--adapter-logits", help="ftbench's logits of the trained model")
    ap.add_argument("--cases", help="JSON list of comparisons instead of the four above")
    ap.add_argument("-o", "--output", help="write the results here (JSON)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=sorted(TOLERANCES), default="float32")
    ap.add_argument("--atol", type=float, help="default: by --dtype (see TOLERANCES)")
    ap.add_argument("--rtol", type=float, help="default: by --dtype (see TOLERANCES)")
    args = ap.parse_args(argv)
    if args.cases:
        if args.checkpoint or args.logits or args.adapter or args.adapter_logits:
            ap.error("--cases replaces --checkpoint, --logits, --adapter and --adapter-logits")
    elif not (args.checkpoint and args.logits):
        ap.error("--checkpoint and --logits are required (or --cases)")
    if bool(args.adapter) != bool(args.adapter_logits):
        ap.error("--adapter and --adapter-logits go together")
    atol, rtol = TOLERANCES[args.dtype]
    args.atol = atol if args.atol is None else args.atol
    args.rtol = rtol if args.rtol is None else args.rtol
    return args


def read_logits_file(path):
    with open(path) as f:
        doc = json.load(f)
    for key in ("input_ids", "logits"):
        if key not in doc:
            raise ValueError(f"{path}: no {key!r}")
    return doc


def transformers_outputs(model, doc, device):
    """(logits as nested lists, loss or None) of a transformers model for a logits file."""
    import torch

    ids = torch.tensor(doc["input_ids"], dtype=torch.long, device=device)
    labels = None
    if doc.get("loss") is not None:
        labels = torch.tensor(doc.get("labels", doc["input_ids"]), dtype=torch.long, device=device)
    with torch.no_grad():
        out = model(input_ids=ids, labels=labels)
    loss = None if labels is None else float(out.loss.float())
    return out.logits.float().cpu().tolist(), loss


def check(name, model, doc, args):
    """Prints the verdicts for one logits file; {"ok", "logits": compare's result, "loss": its
    result (when the file has a loss)}."""
    logits, loss = transformers_outputs(model, doc, args.device)
    result = compare(doc["logits"], logits, args.atol, args.rtol)
    print(verdict(f"{name} logits", result, args.atol, args.rtol))
    out = {"ok": result["ok"], "logits": result}
    if loss is not None:
        r = compare(doc["loss"], loss, args.atol, args.rtol)
        print(verdict(f"{name} loss (ftbench {doc['loss']!r}, transformers {loss!r})", r,
                      args.atol, args.rtol))
        out["loss"] = dict(r, ftbench=doc["loss"], transformers=loss)
        out["ok"] = out["ok"] and r["ok"]
    sys.stdout.flush()
    return out


def disable_tf32(backends):
    """fp32 means fp32: no TF32 matmuls or convolutions on Ampere and later. PyTorch 2.9
    replaced allow_tf32 (deprecated, it warns) by fp32_precision ("ieee" or "tf32"); older
    versions have only allow_tf32 (their backends raise AttributeError for other names)."""
    matmul = backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "ieee"
        backends.cudnn.conv.fp32_precision = "ieee"
        backends.cudnn.rnn.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False
        backends.cudnn.allow_tf32 = False


def json_safe(value):
    """value with every NaN or infinity replaced by None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def read_cases(path):
    """The --cases file: a list of {"name", "checkpoint", "logits", "adapter" (optional)}, each
    with its logits file read."""
    with open(path) as f:
        cases = json.load(f)
    if not isinstance(cases, list) or not cases:
        raise ValueError(f"{path}: expected a non-empty list of cases")
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or any(not isinstance(case.get(k), str)
                                             for k in ("name", "checkpoint", "logits")):
            raise ValueError(f"{path}: case {i}: expected strings name, checkpoint and logits")
        case["doc"] = read_logits_file(case["logits"])
    return cases


def load_model(transformers, torch, checkpoint, args):
    """LlamaForCausalLM.from_pretrained(checkpoint) in eval mode: eager attention, args.dtype, on
    args.device."""
    dtype = getattr(torch, args.dtype)
    major = int(transformers.__version__.split(".")[0])
    dtype_arg = {"dtype": dtype} if major >= 5 else {"torch_dtype": dtype}  # renamed in 5
    model = transformers.LlamaForCausalLM.from_pretrained(
        checkpoint, attn_implementation="eager", **dtype_arg).to(args.device)
    return model.eval()


def run_cases(cases, args, transformers, torch):
    """Every case on a fresh model; (results, exit code)."""
    results, status = [], 0
    for case in cases:
        name = case["name"]
        try:
            model = load_model(transformers, torch, case["checkpoint"], args)
            if case.get("adapter"):
                import peft

                model = peft.PeftModel.from_pretrained(model, case["adapter"]).to(args.device)
                model.eval()
            r = check(name, model, case["doc"], args)
        except Exception as e:  # a folder that does not load: reported, and the exit code 2
            print(f"{name}: ERROR: {type(e).__name__}: {e}")
            r, status = {"ok": False, "error": f"{type(e).__name__}: {e}"}, 2
        results.append(dict(r, name=name))
        if not r["ok"] and not status:
            status = 1
    return results, status


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.cases:
            cases = read_cases(args.cases)
        else:
            cases = [{"name": "base", "checkpoint": args.checkpoint,
                      "doc": read_logits_file(args.logits)}]
            if args.adapter:
                cases.append({"name": "adapter", "checkpoint": args.checkpoint,
                              "adapter": args.adapter,
                              "doc": read_logits_file(args.adapter_logits)})
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        import torch
        import transformers
        if any(c.get("adapter") for c in cases):
            import peft
    except ImportError as e:
        print(f"error: check_hf.py needs torch, transformers (and peft with --adapter): {e}",
              file=sys.stderr)
        return 2

    disable_tf32(torch.backends)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}"
          + (f", peft {peft.__version__}" if any(c.get("adapter") for c in cases) else "")
          + f", {args.device}, {args.dtype}")
    for case in cases:
        print(f"{case['name']}: {case['checkpoint']}"
              + (f" + adapter {case['adapter']}" if case.get("adapter") else ""))
    results, status = run_cases(cases, args, transformers, torch)
    ok = status == 0
    print("all match" if ok else "MISMATCH")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(json_safe({"ok": ok, "atol": args.atol, "rtol": args.rtol,
                                 "cases": results}), f, indent=1, allow_nan=False)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
