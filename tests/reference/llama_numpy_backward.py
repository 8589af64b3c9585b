#!/usr/bin/python3
"""LoRA training's backward pass and AdamW steps, by hand in float64 NumPy.

The gradients of the next-token loss of the Llama of llama_numpy.py with respect to every LoRA
adapter's A and B, by manual back-propagation (no autograd): cross-entropy, LM head (tied or not,
with or without an adapter), final RMSNorm, and per layer, in reverse, the SwiGLU MLP, RMSNorm,
attention (causal softmax, grouped-query heads, rotary embeddings in the rotate_half layout) and
RMSNorm, through the residual stream; each Linear's adapter path scale * (x A^T) B^T on the way.
Then optimizer steps as ftbench's trainer makes them: global-norm gradient clipping and AdamW
with decoupled weight decay.

The loss of a set of examples is the mean token cross-entropy over all of their target tokens
(sum over every target / number of targets: token-weighted, whatever the micro-batches were),
each example a sequence of its own from position 0. An example is {"tokens": [...],
"prompt_tokens": k}: tokens t >= max(k, 1) are targets, predicted from position t - 1 (as
transformers' labels = input_ids with the first k set to -100).

Usage (Debian's python3-numpy, i.e. /usr/bin/python3):
  llama_numpy_backward.py check --checkpoint DIR --adapter DIR --step STEP.json
      [--grads DIR] [--stepped DIR [--stepped DIR ...]]
      [--grad-atol A --grad-rtol R --weight-atol A --weight-rtol R --scalar-rtol R]
      [-o RESULT.json]
  exit 0: what was given (losses and gradient norms in STEP.json, the gradients in --grads, the
  adapters after the steps in --stepped) matches this implementation within tolerance; 1: it
  does not; 2: bad input.

--adapter: the adapter before the first step (a PEFT folder, read by llama_numpy.load_adapter);
--grads: a PEFT folder holding the first step's gradients in place of A and B (same names and
shapes); --stepped: the adapter after step 1, repeated for step 2 and so on. STEP.json:
{"examples": [...], "steps": n (default 1; every step on all the examples), "optimizer": {"lr",
"beta1", "beta2", "eps", "weight_decay", "max_grad_norm" (0: no clipping)}, "losses": [per
step] and "grad_norms": [per step, before clipping] (ftbench's, optional)}. RESULT.json: the
measured differences and the controls: the clipping coefficients, and how far the adapter would
be from the reference's without clipping, or without weight decay (tests/reference/README.md).

Tolerance: an element passes when |ftbench - reference| <= atol + rtol |reference|. Defaults,
for ftbench in fp32 on the small models of the tests (2 layers, dim 64, losses of order 5,
gradients up to about 0.3): gradients atol 1e-6, rtol 1e-4; adapter weights after a step
atol 1e-6, rtol 1e-5; loss and gradient norm rtol 1e-5. Measured differences: README.md.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_numpy as ref  # noqa: E402

DEFAULT_GRAD_ATOL = 1e-6
DEFAULT_GRAD_RTOL = 1e-4
DEFAULT_WEIGHT_ATOL = 1e-6
DEFAULT_WEIGHT_RTOL = 1e-5
DEFAULT_SCALAR_RTOL = 1e-5
CLIP_EPS = 1e-6  # clipping coefficient max_norm / (norm + 1e-6), as torch's clip_grad_norm_


# --------------------------------------------------------------------------------------------
# Building blocks: forward (keeping what the backward needs) and backward
# --------------------------------------------------------------------------------------------


def _weight(weights, path):
    if path == "lm_head" and "lm_head.weight" not in weights:
        return weights["model.embed_tokens.weight"]  # tied
    return weights[path + ".weight"]


class _Tape:
    """What the forward pass of one sequence kept for its backward, and the adapter gradients
    accumulated by the backward: {module path: [dA, dB]}."""

    def __init__(self, weights, adapter):
        self.weights = weights
        self.adapter = adapter
        self.saved = {}
        self.grads = {}
        self.rope = None  # (cos, sin) [S, head_dim]

    def linear(self, x, path):
        """x W^T, plus scale (x A^T) B^T where the adapter has `path`."""
        y = x @ _weight(self.weights, path).T
        u = None
        if self.adapter is not None and path in self.adapter.modules:
            a, b = self.adapter.modules[path]
            u = x @ a.T
            y = y + self.adapter.scale * (u @ b.T)
        self.saved[path] = (x, u)
        return y

    def linear_backward(self, dy, path):
        """dL/dx from dL/dy; adds dL/dA = scale (dy B)^T x and dL/dB = scale dy^T (x A^T)."""
        x, u = self.saved[path]
        dx = dy @ _weight(self.weights, path)
        if u is not None:
            a, b = self.adapter.modules[path]
            s = self.adapter.scale
            dyb = dy @ b  # [S, r]
            g = self.grads.setdefault(path, [np.zeros_like(a), np.zeros_like(b)])
            g[0] += s * (dyb.T @ x)
            g[1] += s * (dy.T @ u)
            dx = dx + s * (dyb @ a)
        return dx

    def rms_norm(self, x, name, eps):
        """x / sqrt(mean(x^2) + eps) * w."""
        r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
        n = x * r
        self.saved[name] = (n, r)
        return n * self.weights[name]

    def rms_norm_backward(self, dy, name):
        """With n = x r, r = (mean(x^2) + eps)^(-1/2): dn/dx_j = r (e_j - n n_j / D), so
        dx = r (dn - n mean(dn n))."""
        n, r = self.saved[name]
        dn = dy * self.weights[name]
        return r * (dn - n * np.mean(dn * n, axis=-1, keepdims=True))


def _rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def _rope(x, cos, sin):
    return x * cos + _rotate_half(x) * sin


def _rope_backward(dy, cos, sin):
    """rotate_half is x -> R x with R^T = -R, so the transpose of x cos + R x sin is
    dy cos - R (dy sin)."""
    return dy * cos - _rotate_half(dy * sin)


def _attention(tape, h, config, prefix, cos, sin):
    """h [S, D] -> [S, D]. Query head i reads key/value head i // (heads / kv_heads)."""
    seq = h.shape[0]
    heads, kv_heads, d = config["num_attention_heads"], config["num_key_value_heads"], \
        ref.head_dim(config)
    group = heads // kv_heads
    q = tape.linear(h, prefix + "q_proj").reshape(seq, heads, d).transpose(1, 0, 2)
    k = tape.linear(h, prefix + "k_proj").reshape(seq, kv_heads, d).transpose(1, 0, 2)
    v = tape.linear(h, prefix + "v_proj").reshape(seq, kv_heads, d).transpose(1, 0, 2)
    qr, kr = _rope(q, cos, sin), _rope(k, cos, sin)
    kk, vv = np.repeat(kr, group, axis=0), np.repeat(v, group, axis=0)  # [H, S, d]
    scores = qr @ kk.transpose(0, 2, 1) / math.sqrt(d)
    scores[:, np.triu(np.ones((seq, seq), dtype=bool), k=1)] = -np.inf
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = (p @ vv).transpose(1, 0, 2).reshape(seq, heads * d)
    tape.saved[prefix + "attention"] = (qr, kk, vv, p)
    return tape.linear(o, prefix + "o_proj")


def _attention_backward(tape, dy, config, prefix, cos, sin):
    heads, kv_heads, d = config["num_attention_heads"], config["num_key_value_heads"], \
        ref.head_dim(config)
    group = heads // kv_heads
    qr, kk, vv, p = tape.saved[prefix + "attention"]
    seq = p.shape[-1]
    do = tape.linear_backward(dy, prefix + "o_proj").reshape(seq, heads, d).transpose(1, 0, 2)
    dp = do @ vv.transpose(0, 2, 1)
    dvv = p.transpose(0, 2, 1) @ do
    # Softmax: ds = p (dp - sum_j p_j dp_j); masked entries have p = 0 and get none.
    ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True)) / math.sqrt(d)
    dqr = ds @ kk
    dkk = ds.transpose(0, 2, 1) @ qr
    # The query heads sharing a key/value head add their gradients into it.
    dkr = dkk.reshape(kv_heads, group, seq, d).sum(axis=1)
    dv = dvv.reshape(kv_heads, group, seq, d).sum(axis=1)
    dq, dk = _rope_backward(dqr, cos, sin), _rope_backward(dkr, cos, sin)

    def flat(t):  # [n, S, d] -> [S, n * d]
        return t.transpose(1, 0, 2).reshape(seq, -1)

    return (tape.linear_backward(flat(dq), prefix + "q_proj")
            + tape.linear_backward(flat(dk), prefix + "k_proj")
            + tape.linear_backward(flat(dv), prefix + "v_proj"))


def _mlp(tape, h, prefix):
    g = tape.linear(h, prefix + "gate_proj")
    u = tape.linear(h, prefix + "up_proj")
    sg = 1.0 / (1.0 + np.exp(-g))
    tape.saved[prefix + "swiglu"] = (g, u, sg)
    return tape.linear(g * sg * u, prefix + "down_proj")


def _mlp_backward(tape, dy, prefix):
    """silu(g) = g sigmoid(g), silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g)))."""
    g, u, sg = tape.saved[prefix + "swiglu"]
    da = tape.linear_backward(dy, prefix + "down_proj")
    dg = da * u * sg * (1.0 + g * (1.0 - sg))
    du = da * g * sg
    return (tape.linear_backward(dg, prefix + "gate_proj")
            + tape.linear_backward(du, prefix + "up_proj"))


def _rope_tables(config, seq):
    angles = np.outer(np.arange(seq, dtype=np.float64), ref.rope_inv_freq(config))
    emb = np.concatenate([angles, angles], axis=-1)
    return np.cos(emb), np.sin(emb)


def forward_with_tape(config, weights, adapter, tokens):
    """Logits [S, vocab] of one sequence, and the tape for backward()."""
    ids = np.asarray(tokens, dtype=np.int64)
    eps = config["rms_norm_eps"]
    cos, sin = _rope_tables(config, len(ids))
    tape = _Tape(weights, adapter)
    tape.rope = (cos, sin)
    x = weights["model.embed_tokens.weight"][ids]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = x + _attention(tape, tape.rms_norm(x, p + "input_layernorm.weight", eps), config,
                           p + "self_attn.", cos, sin)
        x = x + _mlp(tape, tape.rms_norm(x, p + "post_attention_layernorm.weight", eps), p + "mlp.")
    h = tape.rms_norm(x, "model.norm.weight", eps)
    return tape.linear(h, "lm_head"), tape


def backward(config, tape, dlogits):
    """Accumulates into tape.grads the adapter gradients for dL/dlogits [S, vocab]."""
    cos, sin = tape.rope
    dx = tape.rms_norm_backward(tape.linear_backward(dlogits, "lm_head"), "model.norm.weight")
    for i in reversed(range(config["num_hidden_layers"])):
        p = f"model.layers.{i}."
        dh = _mlp_backward(tape, dx, p + "mlp.")
        dx = dx + tape.rms_norm_backward(dh, p + "post_attention_layernorm.weight")
        dh = _attention_backward(tape, dx, config, p + "self_attn.", cos, sin)
        dx = dx + tape.rms_norm_backward(dh, p + "input_layernorm.weight")
    return tape.grads


def example_labels(example):
    """transformers-style labels of an example: its tokens, the first prompt_tokens -100."""
    labels = np.asarray(example["tokens"], dtype=np.int64).copy()
    labels[: example.get("prompt_tokens", 0)] = ref.IGNORE_INDEX
    return labels


def loss_and_gradients(config, weights, adapter, examples):
    """(loss, {module path: (dA, dB)}, target tokens): the token-weighted mean next-token
    cross-entropy over every target of `examples`, and its gradients."""
    targets = [example_labels(e)[1:] for e in examples]
    count = sum(int(np.sum(t != ref.IGNORE_INDEX)) for t in targets)
    if count == 0:
        raise ValueError("no example has a target token")
    total = 0.0
    grads = {path: [np.zeros_like(a), np.zeros_like(b)] for path, (a, b) in adapter.modules.items()}
    for example, target in zip(examples, targets):
        logits, tape = forward_with_tape(config, weights, adapter, example["tokens"])
        z = logits[:-1]
        keep = target != ref.IGNORE_INDEX
        m = z.max(axis=-1, keepdims=True)
        log_norm = m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True))
        rows = np.arange(len(z))[keep]
        total += float(np.sum(log_norm[keep, 0] - z[rows, target[keep]]))
        # d(sum of CE / count) / dz = (softmax - one_hot) / count on the target rows.
        dz = np.exp(z - log_norm)
        dz[rows, target[keep]] -= 1.0
        dz[~keep] = 0.0
        dlogits = np.zeros_like(logits)
        dlogits[:-1] = dz / count
        for path, (da, db) in backward(config, tape, dlogits).items():
            grads[path][0] += da
            grads[path][1] += db
    return total / count, {p: (g[0], g[1]) for p, g in grads.items()}, count


# --------------------------------------------------------------------------------------------
# The optimizer step
# --------------------------------------------------------------------------------------------


def global_norm(grads):
    return math.sqrt(sum(float(np.sum(a * a) + np.sum(b * b)) for a, b in grads.values()))


def clip_coefficient(norm, max_grad_norm):
    """min(1, max_grad_norm / (norm + 1e-6)); 1 without clipping (max_grad_norm 0)."""
    if max_grad_norm <= 0:
        return 1.0
    return min(1.0, max_grad_norm / (norm + CLIP_EPS))


def adamw_update(p, g, m, v, t, opt):
    """AdamW's update number t (1-based) of parameter p with gradient g and moments m, v (from
    the update before; zero before the first): returns (p, m, v) after it. Decoupled weight decay
    p (1 - lr wd), then p - lr m_hat / (sqrt(v_hat) + eps) with the bias-corrected moments
    m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t); eps outside the root, as torch."""
    lr, beta1, beta2 = opt["lr"], opt["beta1"], opt["beta2"]
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    m_hat, v_hat = m / (1.0 - beta1 ** t), v / (1.0 - beta2 ** t)
    p = p * (1.0 - lr * opt["weight_decay"]) - lr * m_hat / (np.sqrt(v_hat) + opt["eps"])
    return p, m, v


def train(config, weights, adapter, examples, opt, steps):
    """`steps` optimizer steps on `examples` (every step the same examples, as an epoch per
    step): gradients, clipping by the global norm, AdamW. Returns a list with, per step, {"loss",
    "grad_norm" (before clipping), "clip_coefficient", "grads" {path: (dA, dB)} (before
    clipping), "adapter" {path: (A, B)} after the step}."""
    params = {p: [a, b] for p, (a, b) in adapter.modules.items()}
    moments = {p: [[np.zeros_like(a), np.zeros_like(a)], [np.zeros_like(b), np.zeros_like(b)]]
               for p, (a, b) in adapter.modules.items()}
    records = []
    for t in range(1, steps + 1):
        current = ref.Adapter({p: tuple(ab) for p, ab in params.items()}, adapter.scale)
        loss, grads, _ = loss_and_gradients(config, weights, current, examples)
        norm = global_norm(grads)
        coef = clip_coefficient(norm, opt["max_grad_norm"])
        for path, ab in params.items():
            for i in (0, 1):
                m, v = moments[path][i]
                ab[i], m, v = adamw_update(ab[i], coef * grads[path][i], m, v, t, opt)
                moments[path][i] = [m, v]
        records.append({"loss": loss, "grad_norm": norm, "clip_coefficient": coef, "grads": grads,
                        "adapter": {p: tuple(ab) for p, ab in params.items()}})
    return records


# --------------------------------------------------------------------------------------------
# Comparison and CLI
# --------------------------------------------------------------------------------------------


def compare_tensors(actual, expected, atol, rtol):
    """ref.compare_values over {path: (A, B)} pairs of arrays: {"ok", "max_abs_diff",
    "max_rel_diff", "tolerance_used" (max |a - e| / (atol + rtol |e|): above 1 fails), "worst"
    (the element where that is largest, as name[index]), "values", "tensors", "failed" (names
    of the tensors outside the tolerance), "smallest_max_abs" (the least max |e| of a tensor:
    far above atol, a flipped sign in any tensor fails)}."""
    if set(actual) != set(expected):
        raise ValueError(f"modules differ: {sorted(set(actual) ^ set(expected))}")
    out = {"ok": True, "max_abs_diff": 0.0, "max_rel_diff": 0.0, "tolerance_used": 0.0,
           "worst": None, "values": 0, "tensors": 0, "failed": [], "smallest_max_abs": np.inf}
    for path in sorted(expected):
        for which, a, e in zip("AB", actual[path], expected[path]):
            name = f"{path}.lora_{which}"
            r = ref.compare_values(a, e, atol, rtol)
            used = np.abs(np.asarray(a, dtype=np.float64) - e) / (atol + rtol * np.abs(e))
            if out["worst"] is None or np.max(used) > out["tolerance_used"]:
                out["tolerance_used"] = float(np.max(used))
                where = [int(i) for i in np.unravel_index(int(np.argmax(used)), e.shape)]
                out["worst"] = f"{name}{where}"
            out["max_abs_diff"] = max(out["max_abs_diff"], r["max_abs_diff"])
            out["max_rel_diff"] = max(out["max_rel_diff"], r["max_rel_diff"])
            out["smallest_max_abs"] = min(out["smallest_max_abs"], float(np.max(np.abs(e))))
            out["values"] += e.size
            out["tensors"] += 1
            if not r["ok"]:
                out["ok"] = False
                out["failed"].append(name)
    return out


def max_difference(x, y):
    return max(float(np.max(np.abs(a - b))) for p in x for a, b in zip(x[p], y[p]))


def scalar_result(actual, expected, rtol):
    diff = abs(actual - expected)
    return {"ftbench": actual, "reference": expected, "abs_diff": diff,
            "rel_diff": diff / abs(expected) if expected else diff,
            "ok": bool(diff <= rtol * abs(expected))}


def read_step(path):
    with open(path) as f:
        step = json.load(f)
    if not isinstance(step.get("examples"), list) or not step["examples"]:
        raise ValueError(f"{path}: no examples")
    opt = step.get("optimizer")
    keys = ("lr", "beta1", "beta2", "eps", "weight_decay", "max_grad_norm")
    if not isinstance(opt, dict) or any(not isinstance(opt.get(k), (int, float)) for k in keys):
        raise ValueError(f"{path}: optimizer: expected numbers {', '.join(keys)}")
    steps = step.setdefault("steps", 1)
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"{path}: steps: expected a positive integer, found {steps!r}")
    for key in ("losses", "grad_norms"):
        if len(step.get(key, [])) > steps:
            raise ValueError(f"{path}: {key}: more values than steps")
    return step


def run_check(args):
    config, weights = ref.load_model(args.checkpoint)
    adapter = ref.load_adapter(args.adapter, config)
    step = read_step(args.step)
    opt, steps = step["optimizer"], step["steps"]
    if len(args.stepped) > steps:
        raise ValueError(f"{len(args.stepped)} --stepped folders for {steps} steps")
    records = train(config, weights, adapter, step["examples"], opt, steps)
    final = records[-1]["adapter"]
    result = {
        "target_tokens": loss_and_gradients(config, weights, adapter, step["examples"])[2],
        "reference_losses": [r["loss"] for r in records],
        "reference_grad_norms": [r["grad_norm"] for r in records],
        "clip_coefficients": [r["clip_coefficient"] for r in records],
        # Controls: how far the adapter after the last step would be from the reference's if the
        # steps did not clip, or did not decay; a comparison that cannot tell those apart would
        # let a step without them pass.
        "unclipped_diff": max_difference(train(config, weights, adapter, step["examples"],
                                               dict(opt, max_grad_norm=0.0), steps)[-1]["adapter"],
                                         final),
        "no_decay_diff": max_difference(train(config, weights, adapter, step["examples"],
                                              dict(opt, weight_decay=0.0), steps)[-1]["adapter"],
                                        final),
        "tolerance": {"grad_atol": args.grad_atol, "grad_rtol": args.grad_rtol,
                      "weight_atol": args.weight_atol, "weight_rtol": args.weight_rtol,
                      "scalar_rtol": args.scalar_rtol},
    }
    ok = True
    for t, r in enumerate(records, 1):
        print(f"reference step {t}: loss {r['loss']:.10g} over {result['target_tokens']} target "
              f"tokens, gradient norm {r['grad_norm']:.6g}, clipping coefficient "
              f"{r['clip_coefficient']:.6g}")
    print(f"controls: without clipping the adapter after step {steps} would differ by "
          f"{result['unclipped_diff']:.3e}, without weight decay by {result['no_decay_diff']:.3e}")
    for key, name in (("losses", "loss"), ("grad_norms", "grad_norm")):
        result[key] = []
        for t, value in enumerate(step.get(key, []), 1):
            r = scalar_result(float(value), records[t - 1][name], args.scalar_rtol)
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
        r = compare_tensors(ref.load_adapter(folder, config).modules, expected, atol, rtol)
        result[key] = r
        ok = ok and r["ok"]
        print(f"{what} ({folder}) against float64 NumPy (atol {atol:g}, rtol {rtol:g}): max abs "
              f"diff {r['max_abs_diff']:.3e}, max rel diff {r['max_rel_diff']:.3e} over "
              f"{r['values']} values in {r['tensors']} tensors, {100 * r['tolerance_used']:.3g}% "
              f"of the tolerance used at {r['worst']}: "
              f"{'ok' if r['ok'] else 'MISMATCH in ' + ', '.join(r['failed'])}")
    result["ok"] = ok
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=1, allow_nan=False)
            f.write("\n")
    return 0 if ok else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check gradients and one optimizer step against this code")
    c.add_argument("--checkpoint", required=True)
    c.add_argument("--adapter", required=True, help="PEFT adapter folder before the step")
    c.add_argument("--step", required=True, help="examples, optimizer, ftbench's loss and norm")
    c.add_argument("--grads", help="PEFT folder holding ftbench's gradients as A and B")
    c.add_argument("--stepped", action="append", default=[],
                   help="PEFT folder of ftbench's adapter after step 1; again for step 2, ...")
    c.add_argument("--grad-atol", type=float, default=DEFAULT_GRAD_ATOL)
    c.add_argument("--grad-rtol", type=float, default=DEFAULT_GRAD_RTOL)
    c.add_argument("--weight-atol", type=float, default=DEFAULT_WEIGHT_ATOL)
    c.add_argument("--weight-rtol", type=float, default=DEFAULT_WEIGHT_RTOL)
    c.add_argument("--scalar-rtol", type=float, default=DEFAULT_SCALAR_RTOL)
    c.add_argument("-o", "--output", help="write the measured differences here (JSON)")
    args = p.parse_args(argv)
    try:
        return run_check(args)
    except (OSError, ValueError, KeyError, ref.AdapterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
