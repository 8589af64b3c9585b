#!/usr/bin/python3
"""An independent float64 NumPy implementation of Hugging Face's Llama forward pass.

LlamaForCausalLM as transformers computes it: token embedding; per layer RMSNorm, attention
(rotary embeddings in the rotate_half layout, rope_theta and the Llama 3 rope_scaling rule of
transformers' _compute_llama3_parameters, grouped-query heads, causal mask), residual, RMSNorm,
SwiGLU MLP, residual; final RMSNorm; LM head (tied to the embedding or not). The loss is
LlamaForCausalLM's with labels=input_ids: mean next-token cross-entropy over the positions whose
label is not -100. PEFT LoRA adapters are merged as W' = W + (lora_alpha / r) B A, or applied
unmerged (x W^T + scale x A^T B^T) for tests.

Usage (Debian's python3-numpy, i.e. /usr/bin/python3):
  llama_numpy.py compare --checkpoint DIR [--adapter DIR] --logits FILE.json [--atol A --rtol R]
      exit 0: FILE's logits (and loss, if it has one) match this implementation's within
      tolerance; 1: they do not; 2: bad input
  llama_numpy.py forward --checkpoint DIR [--adapter DIR] --ids 1,2,3[;4,5,6] -o FILE.json

FILE.json: {"input_ids": [[...], ...], "logits": [[[...]]] (batch x seq x vocab),
"loss": number (optional), "labels": [[...]] (optional; default input_ids, -100 ignored)}.

Tolerance: the defaults (atol = rtol = 1e-4, an element passes when |a - b| <= atol + rtol |b|)
are for ftbench computing in fp32 against this float64 code, on the small models of the tests
(a few layers, dim <= 256, logits of order 1 to 10). fp32 rounds at 6e-8 relative; a forward pass
accumulates some hundred roundings per value. Measured with an fp32 torch implementation: logits
1.5e-6 to 2.7e-6 from float64 on the tests' model (2 layers, dim 64, vocab 128, up to 1024
tokens), 4e-6 on cpu-bench's shape (4 layers, dim 256, vocab 2048); test_hf_reference.py
asserts atol / 10. So 1e-4 leaves a margin of 25 or more, while a wrong GQA head mapping, rotary layout, rope
scaling or merge scale is off by 0.1 to several units. bf16 compute needs its own, looser
tolerance (scripts/reference/check_hf.py).
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_checkpoint  # noqa: E402

DEFAULT_ATOL = 1e-4
DEFAULT_RTOL = 1e-4
IGNORE_INDEX = -100
LOGITS_SCHEMA = "ftbench.logits/1"


class AdapterError(ValueError):
    """An adapter folder PEFT would not load as this code merges it."""


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------


def load_model(directory):
    """(config, weights {name: float64 ndarray}) of an HF checkpoint folder."""
    config, weights = hf_checkpoint.read_checkpoint(directory)
    return config, {k: v.astype(np.float64) for k, v in weights.items()}


def head_dim(config):
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def rope_parameters(config):
    """(theta, scaling dict or None) from transformers 4.x keys (rope_theta, rope_scaling) or
    transformers 5's single rope_parameters dict."""
    if isinstance(config.get("rope_parameters"), dict):
        params = dict(config["rope_parameters"])
        theta = params.pop("rope_theta", config.get("rope_theta", 10000.0))
        return theta, params
    return config.get("rope_theta", 10000.0), config.get("rope_scaling")


def rope_inv_freq(config):
    """Inverse frequencies [head_dim / 2] in float64: theta^(-2i/d), then, for rope_type llama3,
    wavelengths above original_max / low_freq_factor divided by factor, those below
    original_max / high_freq_factor kept, and the ones between blended smoothly."""
    d = head_dim(config)
    theta, scaling = rope_parameters(config)
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    rope_type = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if rope_type == "default":
        return inv_freq
    if rope_type != "llama3":
        raise ValueError(f"rope_scaling type {rope_type!r}: only default and llama3 are supported")
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > old_context / low, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old_context / high) & (wavelen <= old_context / low)
    return np.where(medium, blended, scaled)


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def silu(x):
    return x / (1.0 + np.exp(-x))


def linear(x, weights, path, lora):
    """x W^T for the Linear at HF module `path`, plus scale (x A^T) B^T where `lora` (an
    Adapter, applied unmerged) has one for it."""
    y = x @ weights[path + ".weight"].T
    if lora is not None and path in lora.modules:
        a, b = lora.modules[path]
        y = y + lora.scale * ((x @ a.T) @ b.T)
    return y


def attention(x, config, weights, prefix, cos, sin, lora):
    batch, seq, _ = x.shape
    heads, kv_heads, d = config["num_attention_heads"], config["num_key_value_heads"], head_dim(config)

    def split(y, n):  # [B, S, n*d] -> [B, n, S, d]
        return y.reshape(batch, seq, n, d).transpose(0, 2, 1, 3)

    q = split(linear(x, weights, prefix + "q_proj", lora), heads)
    k = split(linear(x, weights, prefix + "k_proj", lora), kv_heads)
    v = split(linear(x, weights, prefix + "v_proj", lora), kv_heads)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    # Query head h reads key/value head h // (heads / kv_heads), as transformers' repeat_kv.
    group = np.arange(heads) // (heads // kv_heads)
    k, v = k[:, group], v[:, group]
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    future = np.triu(np.ones((seq, seq), dtype=bool), k=1)
    scores = np.where(future, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    out = (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * d)
    return linear(out, weights, prefix + "o_proj", lora)


def forward(config, weights, input_ids, lora=None):
    """Logits [batch, seq, vocab] in float64 for input_ids [batch, seq] (no padding; position
    t of every row is t). lora: an Adapter to apply unmerged, or None."""
    ids = np.asarray(input_ids, dtype=np.int64)
    if ids.ndim != 2 or ids.shape[1] == 0:
        raise ValueError(f"input_ids: expected a non-empty [batch, seq] array, found {ids.shape}")
    vocab = config["vocab_size"]
    if ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(f"input_ids: ids must lie in [0, {vocab}), found {ids.min()}..{ids.max()}")
    eps = config["rms_norm_eps"]
    seq = ids.shape[1]
    angles = np.outer(np.arange(seq, dtype=np.float64), rope_inv_freq(config))
    emb = np.concatenate([angles, angles], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)

    x = weights["model.embed_tokens.weight"][ids]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, weights[p + "input_layernorm.weight"], eps)
        x = x + attention(h, config, weights, p + "self_attn.", cos, sin, lora)
        h = rms_norm(x, weights[p + "post_attention_layernorm.weight"], eps)
        gate = linear(h, weights, p + "mlp.gate_proj", lora)
        up = linear(h, weights, p + "mlp.up_proj", lora)
        x = x + linear(silu(gate) * up, weights, p + "mlp.down_proj", lora)
    x = rms_norm(x, weights["model.norm.weight"], eps)
    head = dict(weights)
    head.setdefault("lm_head.weight", weights["model.embed_tokens.weight"])  # tied
    return linear(x, head, "lm_head", lora)


def next_token_loss(logits, labels):
    """Mean cross-entropy of logits[:, t] against labels[:, t + 1] over the pairs whose label is
    not -100, as LlamaForCausalLM(labels=...) computes it; None when no label counts."""
    logits = np.asarray(logits, dtype=np.float64)[:, :-1]
    target = np.asarray(labels, dtype=np.int64)[:, 1:]
    keep = target != IGNORE_INDEX
    if not keep.any():
        return None
    z = logits[keep]
    m = z.max(axis=-1, keepdims=True)
    log_norm = (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[:, 0]
    picked = z[np.arange(len(z)), target[keep]]
    return float(np.mean(log_norm - picked))


# --------------------------------------------------------------------------------------------
# PEFT adapters
# --------------------------------------------------------------------------------------------


class Adapter:
    """A PEFT LoRA adapter: modules {HF module path: (A [r, in], B [out, r]) float64} and the
    scale lora_alpha / r (lora_alpha / sqrt(r) with use_rslora)."""

    def __init__(self, modules, scale):
        self.modules = modules
        self.scale = scale


def load_adapter(directory, config):
    """Reads adapter_config.json and adapter_model.safetensors (PEFT's key names) and checks
    them as PEFT would use them: every targeted module has both matrices with the right shapes,
    and no key is left over (PEFT ignores keys it has no module for, silently)."""
    path = os.path.join(directory, hf_checkpoint.ADAPTER_CONFIG)
    with open(path) as f:
        ac = json.load(f)
    for key, ok in (("peft_type", lambda v: v in (None, "LORA")),
                    ("use_dora", lambda v: not v), ("fan_in_fan_out", lambda v: not v),
                    ("bias", lambda v: v in (None, "none")),
                    ("rank_pattern", lambda v: not v), ("alpha_pattern", lambda v: not v),
                    ("layers_to_transform", lambda v: v is None),
                    ("modules_to_save", lambda v: not v)):
        if not ok(ac.get(key)):
            raise AdapterError(f"{path}: {key} = {ac[key]!r} is not supported here")
    r, alpha, targets = ac.get("r"), ac.get("lora_alpha"), ac.get("target_modules")
    if not isinstance(r, int) or r < 1 or not isinstance(alpha, (int, float)):
        raise AdapterError(f"{path}: expected a positive integer r and a number lora_alpha, "
                           f"found r={r!r}, lora_alpha={alpha!r}")
    if not isinstance(targets, (list, str)) or not targets:
        raise AdapterError(f"{path}: target_modules: expected a list or a regex, found {targets!r}")
    scale = alpha / math.sqrt(r) if ac.get("use_rslora") else alpha / r

    weights_path = os.path.join(directory, hf_checkpoint.ADAPTER_WEIGHTS)
    tensors, _ = hf_checkpoint.read_safetensors(weights_path)
    shapes = hf_checkpoint.module_paths(config)
    targeted = {p for p in shapes if hf_checkpoint.peft_targets(p, targets)}
    found = {}
    for key, array in tensors.items():
        prefix, _, leaf = key.rpartition(".lora_")
        module = prefix[len(hf_checkpoint.PEFT_PREFIX):]
        if (not key.startswith(hf_checkpoint.PEFT_PREFIX) or leaf not in ("A.weight", "B.weight")
                or module not in targeted):
            raise AdapterError(f"{weights_path}: key {key!r} is not "
                               f"{hf_checkpoint.PEFT_PREFIX}<targeted module>.lora_A.weight or "
                               f".lora_B.weight (targeted: {targets!r})")
        out_f, in_f = shapes[module]
        want = (r, in_f) if leaf == "A.weight" else (out_f, r)
        if tuple(array.shape) != want:
            raise AdapterError(f"{weights_path}: {key}: shape {list(array.shape)}, expected "
                               f"{list(want)}")
        found.setdefault(module, {})[leaf[0]] = array.astype(np.float64)
    incomplete = sorted(p for p in targeted if set(found.get(p, {})) != {"A", "B"})
    if incomplete:
        raise AdapterError(f"{weights_path}: targeted modules without both lora_A and lora_B: "
                           f"{incomplete}")
    return Adapter({p: (m["A"], m["B"]) for p, m in found.items()}, scale)


def merge_adapter(weights, adapter):
    """New weights with W + scale B A for every adapted module. With tied embeddings an adapted
    lm_head gets its own weight; the embedding stays as it is (PEFT's unmerged behaviour)."""
    merged = dict(weights)
    for path, (a, b) in adapter.modules.items():
        base = merged.get(path + ".weight")
        if base is None and path == "lm_head":
            base = merged["model.embed_tokens.weight"]
        merged[path + ".weight"] = base + adapter.scale * (b @ a)
    return merged


# --------------------------------------------------------------------------------------------
# Comparison and CLI
# --------------------------------------------------------------------------------------------


def compare_values(actual, expected, atol, rtol):
    """Element-wise |actual - expected| <= atol + rtol |expected| (NaN never passes). Returns
    {"ok", "max_abs_diff", "max_rel_diff" (over |expected| >= atol: relative differences of
    near-zero values say nothing), "worst_index"}."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise ValueError(f"shapes differ: {list(a.shape)} against {list(e.shape)}")
    diff = np.abs(a - e)
    excess = np.where(np.isnan(diff), np.inf, diff - (atol + rtol * np.abs(e)))
    worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.size else ()
    big = np.abs(e) >= atol
    return {
        "ok": bool(np.all(excess <= 0)),
        "max_abs_diff": float(np.max(diff)) if a.size else 0.0,
        "max_rel_diff": float(np.max(diff[big] / np.abs(e[big]))) if big.any() else 0.0,
        "worst_index": [int(i) for i in worst],
    }


def read_logits_file(path):
    with open(path) as f:
        doc = json.load(f)
    for key in ("input_ids", "logits"):
        if key not in doc:
            raise ValueError(f"{path}: no {key!r}")
    return doc


def logits_document(input_ids, logits, loss, labels=None):
    doc = {"schema": LOGITS_SCHEMA, "input_ids": np.asarray(input_ids).tolist()}
    if labels is not None:
        doc["labels"] = np.asarray(labels).tolist()
    doc["logits"] = np.asarray(logits, dtype=np.float64).tolist()
    doc["loss"] = loss
    return doc


def reference_logits(checkpoint, adapter_dir, input_ids):
    config, weights = load_model(checkpoint)
    if adapter_dir:
        weights = merge_adapter(weights, load_adapter(adapter_dir, config))
    return forward(config, weights, input_ids)


def run_compare(args):
    doc = read_logits_file(args.logits)
    logits = reference_logits(args.checkpoint, args.adapter, doc["input_ids"])
    what = f"{args.logits} against float64 NumPy (atol {args.atol:g}, rtol {args.rtol:g})"
    result = compare_values(doc["logits"], logits, args.atol, args.rtol)
    print(f"logits {what}: max abs diff {result['max_abs_diff']:.3e}, max rel diff "
          f"{result['max_rel_diff']:.3e} over {'x'.join(map(str, logits.shape))} values, worst at "
          f"{result['worst_index']}: {'ok' if result['ok'] else 'MISMATCH'}")
    ok = result["ok"]
    if doc.get("loss") is not None:
        loss = next_token_loss(logits, doc.get("labels", doc["input_ids"]))
        if loss is None:
            print("loss: the file has one, but no position has a label")
            return 1
        r = compare_values(doc["loss"], loss, args.atol, args.rtol)
        print(f"loss {what}: {doc['loss']!r} against {loss!r}, abs diff {r['max_abs_diff']:.3e}: "
              f"{'ok' if r['ok'] else 'MISMATCH'}")
        ok = ok and r["ok"]
    return 0 if ok else 1


def parse_ids(text):
    rows = [[int(t) for t in row.split(",") if t.strip()] for row in text.split(";")]
    if not rows or any(len(r) != len(rows[0]) or not r for r in rows):
        raise ValueError(f"--ids {text!r}: expected rows of equal, non-zero length")
    return rows


def run_forward(args):
    ids = parse_ids(args.ids)
    logits = reference_logits(args.checkpoint, args.adapter, ids)
    doc = logits_document(ids, logits, next_token_loss(logits, ids))
    with open(args.output, "w") as f:
        json.dump(doc, f, allow_nan=False)
        f.write("\n")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="compare a logits file with this implementation")
    c.add_argument("--checkpoint", required=True)
    c.add_argument("--adapter", help="PEFT adapter folder, merged into the checkpoint")
    c.add_argument("--logits", required=True)
    c.add_argument("--atol", type=float, default=DEFAULT_ATOL)
    c.add_argument("--rtol", type=float, default=DEFAULT_RTOL)
    f = sub.add_parser("forward", help="write this implementation's logits and loss")
    f.add_argument("--checkpoint", required=True)
    f.add_argument("--adapter", help="PEFT adapter folder, merged into the checkpoint")
    f.add_argument("--ids", required=True, help="token ids: 1,2,3 or rows 1,2,3;4,5,6")
    f.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    try:
        return run_compare(args) if args.command == "compare" else run_forward(args)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
