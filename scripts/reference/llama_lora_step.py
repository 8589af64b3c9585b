#!/usr/bin/python3
"""Plain PyTorch eager-mode reference for ftbench's CPU benchmark.

The same Llama-style decoder and the same LoRA training step that ftbench runs for
configs/cpu-bench.yaml, written the way a PyTorch user would write it (in the spirit of
Hugging Face's LlamaModel in eager mode plus PEFT LoRA). It is a timing baseline, not a test:
nothing here is compared numerically with ftbench.

Run with Debian's python3-torch (1.13): /usr/bin/python3 scripts/reference/llama_lora_step.py
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x * self.weight.float()).to(dtype)


class LoRALinear(nn.Module):
    """Frozen nn.Linear plus a trainable low-rank update: base(x) + (alpha/r) * B(A(x))."""

    def __init__(self, in_features, out_features, rank, alpha, dropout):
        super().__init__()
        self.base = nn.Linear(in_features, out_features, bias=False)
        self.lora_A = nn.Linear(in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, out_features, bias=False)
        self.dropout = nn.Dropout(dropout) if dropout > 0.0 else nn.Identity()
        self.scaling = alpha / rank
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.dropout(x))) * self.scaling


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x, cos, sin):
    # x: [B, H, S, D]; cos, sin: [S, D]
    return x * cos + rotate_half(x) * sin


if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0

    def causal_attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

else:  # torch 1.13

    def causal_attention(q, k, v):
        return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.n_kv_heads = cfg.n_kv_heads
        self.head_dim = cfg.dim // cfg.n_heads
        kv_dim = self.n_kv_heads * self.head_dim

        def proj(in_f, out_f, target):
            if target in cfg.lora_targets:
                return LoRALinear(in_f, out_f, cfg.lora_rank, cfg.lora_alpha, cfg.lora_dropout)
            return nn.Linear(in_f, out_f, bias=False)

        self.q_proj = proj(cfg.dim, cfg.dim, "q")
        self.k_proj = proj(cfg.dim, kv_dim, "k")
        self.v_proj = proj(cfg.dim, kv_dim, "v")
        self.o_proj = proj(cfg.dim, cfg.dim, "o")

    def forward(self, x, cos, sin):
        bsz, seq, _ = x.shape
        q = self.q_proj(x).view(bsz, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q = apply_rotary(q, cos, sin)
        k = apply_rotary(k, cos, sin)
        n_rep = self.n_heads // self.n_kv_heads
        if n_rep > 1:
            k = k.repeat_interleave(n_rep, dim=1)
            v = v.repeat_interleave(n_rep, dim=1)
        out = causal_attention(q, k, v)
        out = out.transpose(1, 2).reshape(bsz, seq, self.n_heads * self.head_dim)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, dim, ffn_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, ffn_dim, bias=False)
        self.up_proj = nn.Linear(dim, ffn_dim, bias=False)
        self.down_proj = nn.Linear(ffn_dim, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.mlp = MLP(cfg.dim, cfg.ffn_dim)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False)

        head_dim = cfg.dim // cfg.n_heads
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(cfg.seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos(), persistent=False)
        self.register_buffer("rope_sin", emb.sin(), persistent=False)

        self._init_base_weights()

    def _init_base_weights(self):
        for name, module in self.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding)) and not name.split(".")[-1].startswith("lora_"):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, input_ids, labels):
        seq = input_ids.shape[1]
        cos, sin = self.rope_cos[:seq], self.rope_sin[:seq]
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.lm_head(self.norm(x)).float()
        # labels are already shifted (position t carries token t+1); -100 is ignored.
        n_label_tokens = (labels != -100).sum().clamp(min=1)
        loss = F.cross_entropy(
            logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100, reduction="sum"
        )
        return loss / n_label_tokens


def mark_only_lora_trainable(model):
    for name, p in model.named_parameters():
        p.requires_grad_(".lora_A." in name or ".lora_B." in name)


# --------------------------------------------------------------------------------------------
# Benchmark driver
# --------------------------------------------------------------------------------------------


def loaded_blas():
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    for marker, label in (("openblas", "openblas"), ("libmkl", "mkl"), ("libblis", "blis"),
                          ("libblas", "reference-blas")):
        if marker in maps.lower():
            for line in maps.splitlines():
                if marker in line.lower():
                    return f"{label} ({line.split()[-1]})"
    return "none found in /proc/self/maps"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--n-layers", type=int, default=4)
    p.add_argument("--n-heads", type=int, default=8)
    p.add_argument("--n-kv-heads", type=int, default=4)
    p.add_argument("--ffn-dim", type=int, default=688)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--norm-eps", type=float, default=1e-5)
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-alpha", type=float, default=32.0)
    p.add_argument("--lora-dropout", type=float, default=0.0)
    p.add_argument("--lora-targets", default="q,v,o", help="comma-separated subset of q,k,v,o")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--steps", type=int, default=30, help="optimizer steps, warm-up included")
    p.add_argument("--warmup", type=int, default=5, help="first steps left out of the summary")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-batches", type=int, default=4, help="distinct batches cycled through")
    p.add_argument("--json-out", default=None)
    args = p.parse_args()
    args.lora_targets = set(t.strip() for t in args.lora_targets.split(",") if t.strip())
    if args.steps <= args.warmup:
        p.error("--steps must be greater than --warmup")
    return args


def make_batches(args, gen):
    batches = []
    for _ in range(args.data_batches):
        ids = torch.randint(0, 259, (args.micro_batch, args.seq), generator=gen)
        labels = torch.full_like(ids, -100)
        labels[:, :-1] = ids[:, 1:]
        batches.append((ids, labels))
    return batches


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    model = LlamaForCausalLM(args)
    mark_only_lora_trainable(model)
    model.train()

    total_params = sum(p.numel() for p in model.parameters())
    trainable = [p for p in model.parameters() if p.requires_grad]
    trainable_params = sum(p.numel() for p in trainable)

    optimizer = torch.optim.AdamW(
        trainable, lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=args.weight_decay
    )

    batches = make_batches(args, torch.Generator().manual_seed(args.seed + 1))
    blas = loaded_blas()

    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, blas {blas}")
    print(f"parameters: total {total_params:,}, trainable {trainable_params:,}")
    print(f"shape: micro-batch {args.micro_batch} x seq {args.seq}, steps {args.steps} "
          f"(warm-up {args.warmup})")
    sys.stdout.flush()

    step_seconds = []
    loss_value = float("nan")
    for step in range(args.steps):
        input_ids, labels = batches[step % len(batches)]
        t0 = time.perf_counter()
        loss = model(input_ids, labels)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(trainable, max_norm=args.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss_value = loss.item()
        dt = time.perf_counter() - t0
        step_seconds.append(dt)
        tag = " (warm-up)" if step < args.warmup else ""
        print(f"step {step + 1:3d}  loss {loss_value:.4f}  grad_norm {float(grad_norm):.4f}  "
              f"{dt:.4f} s{tag}")
        sys.stdout.flush()

    timed = sorted(step_seconds[args.warmup:])
    median = statistics.median(timed)
    p90 = timed[min(len(timed) - 1, math.ceil(0.9 * len(timed)) - 1)]
    result = {
        "impl": "python-eager",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "blas": blas,
        "steps": args.steps,
        "warmup": args.warmup,
        "median_step_seconds": median,
        "mean_step_seconds": statistics.fmean(timed),
        "p90_step_seconds": p90,
        "tokens_per_second": args.micro_batch * args.seq / median,
        "final_loss": loss_value,
        "total_params": total_params,
        "trainable_params": trainable_params,
    }
    line = json.dumps(result)
    print(line)
    if args.json_out:
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
