#!/usr/bin/python3
"""Tests of the Hugging Face interop references (tests/reference/): the safetensors and
checkpoint layer of hf_checkpoint.py, the float64 NumPy Llama of llama_numpy.py against a second,
independent implementation in torch (skipped where torch is missing), the loss on hand-made
cases, PEFT adapter merging, the CLI's exit codes, and the transformers-free parts of
scripts/reference/check_hf.py.

Run by ctest `hf_reference` with the pinned environment's Python (FTBENCH_PYTHON,
scripts/python-env.sh: NumPy and PyPI's torch). Without NumPy it exits 77 (skipped),
and without torch the tests against the torch implementation are skipped; on CI either is a
failure (scripts/setup.sh makes the environment). On CI means (docs/ci.md, "Skips and CI"; the same
rule as tests/ci_env.h): CI is set to a non-empty value other than 0 and false (any case).
"""

import contextlib
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts", "reference"))


def on_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


try:
    import numpy as np
except ImportError:
    if on_ci():
        print("error: NumPy is required for this test on CI (scripts/python-env.sh)",
              file=sys.stderr)
        sys.exit(1)
    print("skipped: NumPy is missing (scripts/python-env.sh makes an environment with it)")
    sys.exit(77)

try:
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
except ImportError:
    if on_ci():
        print("error: torch (the pinned environment's) is required for this test on CI: without it "
              "the tests against the torch implementation would be skipped", file=sys.stderr)
        sys.exit(1)
    torch = None

import check_hf  # noqa: E402
import hf_checkpoint as hfc  # noqa: E402
import hf_transformers  # noqa: E402  (its chaining only: the rest needs transformers)
import llama_numpy as ref  # noqa: E402
import llama_numpy_backward as bw  # noqa: E402

needs_torch = unittest.skipIf(torch is None, "torch is missing (scripts/python-env.sh)")

# Rotary settings under which a head_dim of 16 (theta 10000) has frequencies in all three
# regimes of the Llama 3 rule: wavelengths 6.3 .. 3.2e3 against the bounds 64 and 256.
ROPE_LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 256}


def small_config(**overrides):
    kw = dict(layers=2, dim=64, heads=4, kv_heads=2, ffn=96, vocab=128,
              rope_scaling=ROPE_LLAMA3)
    kw.update(overrides)
    return hfc.llama_config(**kw)


def random_ids(config, batch=2, seq=12, seed=1):
    return np.random.default_rng(seed).integers(0, config["vocab_size"], (batch, seq))


# --------------------------------------------------------------------------------------------
# A second implementation: torch.nn.functional, written apart from llama_numpy.py. The rotary
# embedding is a complex rotation of (x[:half], x[half:]) pairs, the Llama 3 rule a scalar loop,
# attention torch's fused causal attention on repeat_interleave'd heads. `mistakes` injects
# errors an implementation could make, to show that the tolerance catches them.
# --------------------------------------------------------------------------------------------


def torch_inv_freq(config, ignore_scaling=False):
    d = ref.head_dim(config)
    theta = config["rope_theta"]
    scaling = None if ignore_scaling else config.get("rope_scaling")
    out = []
    for i in range(0, d, 2):
        f = theta ** (-i / d)
        if scaling:
            old = scaling["original_max_position_embeddings"]
            low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
            wavelength = 2 * math.pi / f
            if wavelength > old / low:
                f = f / scaling["factor"]
            elif wavelength >= old / high:
                s = (old / wavelength - low) / (high - low)
                f = (1 - s) * f / scaling["factor"] + s * f
        out.append(f)
    return out


def torch_causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]  # torch 1.13


def torch_forward(config, weights, input_ids, dtype=None, mistakes=()):
    """Logits [B, S, V] as a torch tensor; dtype float64 unless given. `weights` may hold torch
    tensors (the backward tests pass weights with LoRA merged in, W + s B A, to differentiate)."""
    dtype = dtype or torch.float64
    w = {k: (v if torch.is_tensor(v) else torch.from_numpy(np.asarray(v, dtype=np.float64)))
         .to(dtype) for k, v in weights.items()}
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    batch, seq = ids.shape
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    d, eps = ref.head_dim(config), config["rms_norm_eps"]

    # Angles in at least fp32 (complex bf16 does not exist; transformers too keeps them fp32).
    rope_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = torch.tensor(torch_inv_freq(config, "ignore_rope_scaling" in mistakes),
                            dtype=rope_dtype)
    angle = torch.arange(seq, dtype=rope_dtype)[:, None] * inv_freq[None, :]  # [S, d/2]
    rotation = torch.polar(torch.ones_like(angle), angle)

    def rope(x):  # [B, H, S, d]
        x = x.to(rope_dtype)
        if "interleaved_rope" in mistakes:  # the GPT-J / Meta layout: pairs (2i, 2i+1)
            z = torch.complex(x[..., 0::2], x[..., 1::2]) * rotation
            return torch.stack([z.real, z.imag], dim=-1).flatten(-2).to(dtype)
        z = torch.complex(x[..., : d // 2], x[..., d // 2:]) * rotation
        return torch.cat([z.real, z.imag], dim=-1).to(dtype)

    def norm(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    x = F.embedding(ids, w["model.embed_tokens.weight"])
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = norm(x, w[p + "input_layernorm.weight"])
        q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(batch, seq, heads, d).transpose(1, 2)
        k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(batch, seq, kv_heads, d).transpose(1, 2)
        v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(batch, seq, kv_heads, d).transpose(1, 2)
        q, k = rope(q), rope(k)
        if "tiled_kv_heads" in mistakes:  # query head h reading kv head h % kv_heads
            k, v = k.repeat(1, heads // kv_heads, 1, 1), v.repeat(1, heads // kv_heads, 1, 1)
        else:
            k = k.repeat_interleave(heads // kv_heads, dim=1)
            v = v.repeat_interleave(heads // kv_heads, dim=1)
        attn = torch_causal_attention(q, k, v).transpose(1, 2).reshape(batch, seq, heads * d)
        x = x + F.linear(attn, w[p + "self_attn.o_proj.weight"])
        h = norm(x, w[p + "post_attention_layernorm.weight"])
        mlp = F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"])
        x = x + F.linear(mlp, w[p + "mlp.down_proj.weight"])
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return F.linear(norm(x, w["model.norm.weight"]), head)


def torch_loss(logits, labels):
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    return float(F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).double(),
                                 labels[:, 1:].reshape(-1), ignore_index=-100))


class TempDir(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="hf_reference_")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)


# --------------------------------------------------------------------------------------------
# safetensors and checkpoints
# --------------------------------------------------------------------------------------------


class Safetensors(TempDir):
    def test_layout_is_the_formats(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.array([7, -8], dtype=np.int64)
        n_bytes = hfc.write_safetensors(self.path("t.safetensors"), {"a": a, "b": b},
                                        {"format": "pt"})
        self.assertEqual(n_bytes, 24 + 16)
        with open(self.path("t.safetensors"), "rb") as f:
            raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        self.assertEqual(n % 8, 0)
        header = json.loads(raw[8:8 + n])
        self.assertEqual(header, {
            "__metadata__": {"format": "pt"},
            "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
            "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}})
        self.assertEqual(raw[8 + n:], a.tobytes() + b.tobytes())
        tensors, metadata = hfc.read_safetensors(self.path("t.safetensors"))
        self.assertEqual(metadata, {"format": "pt"})
        np.testing.assert_array_equal(tensors["a"], a)
        np.testing.assert_array_equal(tensors["b"], b)
        self.assertEqual((tensors["a"].dtype, tensors["b"].dtype), (np.float32, np.int64))

    def test_bf16_bits_round_to_nearest_even(self):
        values = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2.5,
                           np.inf, -0.0, 3.0e38], dtype=np.float32)
        bits = hfc.float32_to_bf16_bits(values)
        self.assertEqual([hex(b) for b in bits],
                         ["0x3f80", "0x3f80", "0x3f82", "0x3f81", "0xc020", "0x7f80", "0x8000",
                          "0x7f62"])
        self.assertTrue(np.isnan(hfc.bf16_bits_to_float32(hfc.float32_to_bf16_bits(
            np.array([np.nan], dtype=np.float32))))[0])
        self.assertEqual(list(hfc.bf16_bits_to_float32(bits[:5])),
                         [1.0, 1.0, 1 + 2 ** -6, 1 + 2 ** -7, -2.5])

    @needs_torch
    def test_bf16_conversion_matches_torch(self):
        x = np.random.default_rng(0).standard_normal(10000).astype(np.float32) * 100
        theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(hfc.float32_to_bf16_bits(x), theirs)

    def test_bf16_and_f16_round_trip(self):
        x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
        hfc.write_safetensors(self.path("b.safetensors"), {"x": x}, float_dtype="BF16")
        back, _ = hfc.read_safetensors(self.path("b.safetensors"))
        np.testing.assert_array_equal(back["x"], hfc.bf16_bits_to_float32(hfc.float32_to_bf16_bits(x)))
        self.assertLess(np.max(np.abs(back["x"] - x) / np.abs(x)), 2 ** -8)
        bits, _ = hfc.read_safetensors(self.path("b.safetensors"), keep_bf16_bits=True)
        self.assertEqual(bits["x"].dtype, np.uint16)
        hfc.write_safetensors(self.path("again.safetensors"), {"x": back["x"]}, float_dtype="BF16")
        with open(self.path("b.safetensors"), "rb") as f1, \
                open(self.path("again.safetensors"), "rb") as f2:
            self.assertEqual(f1.read(), f2.read())
        hfc.write_safetensors(self.path("h.safetensors"), {"x": x}, float_dtype="F16")
        header, _, _ = hfc.read_safetensors_header(self.path("h.safetensors"))
        self.assertEqual(header["x"]["dtype"], "F16")

    def test_a_gap_or_short_file_is_refused(self):
        hfc.write_safetensors(self.path("t.safetensors"), {"a": np.zeros(4, np.float32)})
        with open(self.path("t.safetensors"), "rb") as f:
            raw = f.read()
        with open(self.path("short.safetensors"), "wb") as f:
            f.write(raw[:-1])
        with self.assertRaisesRegex(hfc.CheckpointError, "tensors hold 16 bytes, the data "
                                                         "section has 15"):
            hfc.read_safetensors(self.path("short.safetensors"))
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + n])
        header["a"]["data_offsets"] = [4, 20]
        text = json.dumps(header).encode()
        with open(self.path("gap.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"\0" * 20)
        with self.assertRaisesRegex(hfc.CheckpointError, "'a' starts at 4, expected 0"):
            hfc.read_safetensors(self.path("gap.safetensors"))


class Checkpoints(TempDir):
    def test_config_json_as_transformers_writes_it(self):
        config = small_config(tie=True, dtype="bfloat16", max_position=512)
        hfc.write_checkpoint(self.path("c"), config, hfc.random_weights(config))
        with open(self.path("c", "config.json")) as f:
            written = json.load(f)
        self.assertEqual(written["architectures"], ["LlamaForCausalLM"])
        self.assertEqual({k: written[k] for k in (
            "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
            "rms_norm_eps", "rope_theta", "tie_word_embeddings", "torch_dtype",
            "max_position_embeddings", "bos_token_id", "eos_token_id")},
            {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "head_dim": 16, "vocab_size": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
             "tie_word_embeddings": True, "torch_dtype": "bfloat16",
             "max_position_embeddings": 512, "bos_token_id": 1, "eos_token_id": 2})
        self.assertEqual(written["rope_scaling"], {"rope_type": "llama3", **ROPE_LLAMA3})
        self.assertEqual(os.listdir(self.path("c")).count("model.safetensors"), 1)
        header, metadata, _ = hfc.read_safetensors_header(self.path("c", "model.safetensors"))
        self.assertEqual(metadata, {"format": "pt"})
        self.assertNotIn("lm_head.weight", header)  # tied: save_pretrained leaves it out
        k_proj = header["model.layers.1.self_attn.k_proj.weight"]
        self.assertEqual((k_proj["dtype"], k_proj["shape"]), ("BF16", [32, 64]))
        self.assertEqual(len(header), 1 + 2 * 9 + 1)

    def test_norm_weights_are_not_all_ones(self):
        w = hfc.random_weights(small_config())
        for name in ("model.norm.weight", "model.layers.0.input_layernorm.weight",
                     "model.layers.1.post_attention_layernorm.weight"):
            self.assertGreater(np.std(w[name]), 0.05)
            self.assertAlmostEqual(float(np.mean(w[name])), 1.0, delta=0.1)

    def test_shards_and_index_like_save_pretrained(self):
        config = small_config(dtype="bfloat16")
        weights = hfc.random_weights(config, seed=3)
        hfc.write_checkpoint(self.path("one"), config, weights)
        hfc.write_checkpoint(self.path("three"), config, weights, shards=3)
        files = sorted(os.listdir(self.path("three")))
        self.assertEqual(files, ["config.json", "model-00001-of-00003.safetensors",
                                 "model-00002-of-00003.safetensors",
                                 "model-00003-of-00003.safetensors",
                                 "model.safetensors.index.json"])
        with open(self.path("three", "model.safetensors.index.json")) as f:
            index = json.load(f)
        self.assertEqual(set(index["weight_map"]), set(hfc.tensor_names(config)))
        self.assertEqual(list(index["weight_map"]), sorted(index["weight_map"]))
        data_bytes = 0
        for file in files[1:4]:
            header, _, start = hfc.read_safetensors_header(self.path("three", file))
            self.assertEqual(set(header), {n for n, f in index["weight_map"].items() if f == file})
            data_bytes += os.path.getsize(self.path("three", file)) - start
        n_params = sum(v.size for v in weights.values())
        self.assertEqual(index["metadata"]["total_size"], data_bytes)
        self.assertEqual(index["metadata"]["total_size"], 2 * n_params)
        # Consecutive shards in module order: the embedding first, lm_head last.
        self.assertEqual(index["weight_map"]["model.embed_tokens.weight"], files[1])
        self.assertEqual(index["weight_map"]["lm_head.weight"], files[3])
        _, single = hfc.read_checkpoint(self.path("one"))
        _, sharded = hfc.read_checkpoint(self.path("three"))
        self.assertEqual(set(single), set(sharded))
        for name in single:
            np.testing.assert_array_equal(single[name], sharded[name])

    def test_an_inconsistent_index_is_refused(self):
        config = small_config()
        hfc.write_checkpoint(self.path("c"), config, hfc.random_weights(config), shards=2)
        index_path = self.path("c", "model.safetensors.index.json")
        with open(index_path) as f:
            index = json.load(f)
        bad = dict(index, metadata={"total_size": index["metadata"]["total_size"] + 4})
        with open(index_path, "w") as f:
            json.dump(bad, f)
        with self.assertRaisesRegex(hfc.CheckpointError, "total_size"):
            hfc.read_checkpoint(self.path("c"))
        moved = dict(index["weight_map"], **{"model.norm.weight": "model-00001-of-00002.safetensors"})
        with open(index_path, "w") as f:
            json.dump({"metadata": index["metadata"], "weight_map": moved}, f)
        with self.assertRaisesRegex(hfc.CheckpointError, "holds 'model.norm.weight'"):
            hfc.read_checkpoint(self.path("c"))

    def test_shard_split_is_even_and_never_empty(self):
        self.assertEqual(hfc.shard_names(list("abcd"), [1, 1, 1, 1], 2), [["a", "b"], ["c", "d"]])
        self.assertEqual(hfc.shard_names(list("abc"), [100, 1, 1], 3), [["a"], ["b"], ["c"]])
        self.assertEqual(hfc.shard_names(list("abc"), [1, 1, 100], 2), [["a", "b"], ["c"]])
        with self.assertRaises(ValueError):
            hfc.shard_names(list("ab"), [1, 1], 3)

    def test_cli_make(self):
        rc = hfc.main(["make", self.path("m"), "--layers", "1", "--dim", "32", "--heads", "4",
                       "--kv-heads", "1", "--ffn", "48", "--vocab", "64", "--rope-scaling",
                       "llama3", "--tie", "--shards", "2", "--seed", "5"])
        self.assertEqual(rc, 0)
        config, weights = hfc.read_checkpoint(self.path("m"))
        self.assertEqual(config["rope_scaling"]["original_max_position_embeddings"], 8192)
        self.assertNotIn("lm_head.weight", weights)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            rc = hfc.main(["make", self.path("bad"), "--layers", "1", "--dim", "30", "--heads",
                           "4", "--kv-heads", "1", "--ffn", "8", "--vocab", "8"])
        self.assertEqual(rc, 2)
        self.assertIn("dim 30 must divide by heads 4", err.getvalue())


# --------------------------------------------------------------------------------------------
# The forward pass and the loss
# --------------------------------------------------------------------------------------------


class DisableTf32(unittest.TestCase):
    """check_hf.disable_tf32 on both PyTorch APIs, with stand-ins for torch.backends."""

    class OldModule:
        """torch.backends.cuda.matmul before 2.9: allow_tf32 only, AttributeError otherwise."""

        def __init__(self):
            object.__setattr__(self, "allow_tf32", True)

        def __getattr__(self, name):
            raise AttributeError("Unknown attribute " + name)

        def __setattr__(self, name, value):
            if name != "allow_tf32":
                raise AttributeError("Unknown attribute " + name)
            object.__setattr__(self, name, value)

    def test_before_2_9_allow_tf32(self):
        from types import SimpleNamespace
        backends = SimpleNamespace(cuda=SimpleNamespace(matmul=self.OldModule()),
                                   cudnn=SimpleNamespace(allow_tf32=True))
        check_hf.disable_tf32(backends)
        self.assertFalse(backends.cuda.matmul.allow_tf32)
        self.assertFalse(backends.cudnn.allow_tf32)

    def test_from_2_9_fp32_precision(self):
        from types import SimpleNamespace
        backends = SimpleNamespace(
            cuda=SimpleNamespace(matmul=SimpleNamespace(fp32_precision="tf32")),
            cudnn=SimpleNamespace(conv=SimpleNamespace(fp32_precision="tf32"),
                                  rnn=SimpleNamespace(fp32_precision="tf32")))
        check_hf.disable_tf32(backends)
        self.assertEqual(backends.cuda.matmul.fp32_precision, "ieee")
        self.assertEqual(backends.cudnn.conv.fp32_precision, "ieee")
        self.assertEqual(backends.cudnn.rnn.fp32_precision, "ieee")
        self.assertFalse(hasattr(backends.cuda.matmul, "allow_tf32"))


class RotaryFrequencies(unittest.TestCase):
    def test_llama3_rule_in_all_three_regimes(self):
        config = small_config()
        plain = ref.rope_inv_freq(small_config(rope_scaling=None))
        scaled = ref.rope_inv_freq(config)
        wavelength = 2 * math.pi / plain
        high = wavelength < 256 / 4
        low = wavelength > 256 / 1
        medium = ~high & ~low
        self.assertEqual((int(high.sum()), int(medium.sum()), int(low.sum())), (3, 1, 4))
        np.testing.assert_array_equal(scaled[high], plain[high])
        np.testing.assert_array_equal(scaled[low], plain[low] / 8)
        self.assertTrue(np.all((scaled[medium] < plain[medium]) &
                               (scaled[medium] > plain[medium] / 8)))
        np.testing.assert_allclose(scaled, torch_inv_freq(config), rtol=1e-15)

    def test_transformers_5_rope_parameters(self):
        v4 = small_config()
        v5 = {k: v for k, v in v4.items() if k not in ("rope_theta", "rope_scaling")}
        v5["rope_parameters"] = {"rope_theta": 10000.0, **v4["rope_scaling"]}
        np.testing.assert_array_equal(ref.rope_inv_freq(v5), ref.rope_inv_freq(v4))
        with self.assertRaisesRegex(ValueError, "'yarn'"):
            ref.rope_inv_freq(small_config(rope_scaling={"rope_type": "yarn", "factor": 4.0}))


class Loss(TempDir):
    def test_hand_made_case(self):
        # Vocabulary of 2. Position 0 predicts label 1 from logits (0, 0): ln 2. Position 1
        # predicts label 0 from (ln 3, 0): -ln(3/4). Position 2 predicts -100: not counted.
        # Position 3 is the last: nothing to predict.
        logits = np.array([[[0.0, 0.0], [math.log(3), 0.0], [5.0, -5.0], [9.0, 9.0]]])
        labels = np.array([[7, 1, 0, -100]])
        self.assertAlmostEqual(ref.next_token_loss(logits, labels),
                               (math.log(2) + math.log(4 / 3)) / 2, places=15)
        self.assertIsNone(ref.next_token_loss(logits, np.array([[1, -100, -100, -100]])))
        self.assertIsNone(ref.next_token_loss(logits[:, :1], labels[:, :1]))

    @needs_torch
    def test_agrees_with_torch_cross_entropy(self):
        rng = np.random.default_rng(0)
        logits = rng.standard_normal((3, 7, 11)) * 4
        labels = rng.integers(0, 11, (3, 7))
        labels[1, 2:5] = -100
        self.assertAlmostEqual(ref.next_token_loss(logits, labels),
                               torch_loss(torch.from_numpy(logits), labels), places=13)

    def test_zero_head_gives_ln_vocab(self):
        config = small_config(vocab=50)
        weights = {k: v.astype(np.float64) for k, v in hfc.random_weights(config).items()}
        weights["lm_head.weight"][:] = 0.0
        logits = ref.forward(config, weights, random_ids(config))
        self.assertEqual(np.count_nonzero(logits), 0)
        # ln(50) exactly, up to the rounding of a mean of 22 equal terms.
        self.assertAlmostEqual(ref.next_token_loss(logits, random_ids(config)), math.log(50),
                               places=14)


@needs_torch
class ForwardAgainstTorch(TempDir):
    """float64 against float64: the two implementations agree to rounding (4e-15 observed;
    1e-10 asserted). Each configuration goes through a checkpoint on disk."""

    def check(self, config, shards=1, seed=0):
        hfc.write_checkpoint(self.path("c"), config, hfc.random_weights(config, seed), shards)
        config, weights = ref.load_model(self.path("c"))
        ids = random_ids(config)
        ours = ref.forward(config, weights, ids)
        theirs = torch_forward(config, weights, ids)
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-10)
        self.assertGreater(np.std(ours), 0.5)  # logits of order one, not washed out
        self.assertAlmostEqual(ref.next_token_loss(ours, ids), torch_loss(theirs, ids), places=10)
        return config, weights, ids, ours

    def test_gqa_llama3_rope_untied(self):
        self.check(small_config())

    def test_one_kv_head_tied_bf16_sharded(self):
        self.check(small_config(heads=4, kv_heads=1, tie=True, dtype="bfloat16",
                                rope_scaling=None, rope_theta=500000.0), shards=3, seed=4)

    def test_multi_head_three_layers(self):
        self.check(small_config(layers=3, heads=8, kv_heads=8, ffn=80, rms_norm_eps=1e-6))

    def test_fp32_passes_the_default_tolerance_with_margin(self):
        # What ftbench does: fp32 compute. The difference from float64 is measured here;
        # the default tolerance must hold it ten times over.
        config, weights, ids, ours = self.check(small_config())
        fp32 = torch_forward(config, weights, ids, dtype=torch.float32).double().numpy()
        r = ref.compare_values(fp32, ours, ref.DEFAULT_ATOL / 10, ref.DEFAULT_RTOL / 10)
        self.assertTrue(r["ok"], r)
        self.assertGreater(r["max_abs_diff"], 0)

    def test_the_default_tolerance_catches_plausible_mistakes(self):
        config, weights, ids, ours = self.check(small_config())
        for mistake in ("tiled_kv_heads", "ignore_rope_scaling", "interleaved_rope"):
            wrong = torch_forward(config, weights, ids, dtype=torch.float32,
                                  mistakes={mistake}).double().numpy()
            r = ref.compare_values(wrong, ours, ref.DEFAULT_ATOL, ref.DEFAULT_RTOL)
            self.assertFalse(r["ok"], mistake)
            self.assertGreater(r["max_abs_diff"], 100 * ref.DEFAULT_ATOL, mistake)
        eps = dict(config, rms_norm_eps=1e-3)
        r = ref.compare_values(ref.forward(eps, weights, ids), ours, ref.DEFAULT_ATOL,
                               ref.DEFAULT_RTOL)
        self.assertFalse(r["ok"])


# --------------------------------------------------------------------------------------------
# PEFT adapters
# --------------------------------------------------------------------------------------------


class Adapters(TempDir):
    TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

    def setUp(self):
        super().setUp()
        self.config = small_config()
        hfc.write_checkpoint(self.path("c"), self.config, hfc.random_weights(self.config))
        _, self.weights = ref.load_model(self.path("c"))
        self.ids = random_ids(self.config)

    def write(self, adapters, r=4, alpha=8.0, targets=None, use_rslora=False):
        hfc.write_adapter(self.path("a"), adapters, r, alpha, targets or self.TARGETS, use_rslora)
        return ref.load_adapter(self.path("a"), self.config)

    def test_peft_key_names_and_config(self):
        adapters = hfc.random_adapter(self.config, 4, ["q_proj", "v_proj"])
        self.write(adapters, targets=["q_proj", "v_proj"])
        tensors, _ = hfc.read_safetensors(self.path("a", "adapter_model.safetensors"))
        self.assertEqual(len(tensors), 2 * 2 * 2)
        self.assertEqual(tensors["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"].shape,
                         (4, 64))
        self.assertEqual(tensors["base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"].shape,
                         (32, 4))
        with open(self.path("a", "adapter_config.json")) as f:
            ac = json.load(f)
        self.assertEqual((ac["peft_type"], ac["task_type"], ac["r"], ac["lora_alpha"],
                          ac["target_modules"], ac["use_rslora"]),
                         ("LORA", "CAUSAL_LM", 4, 8.0, ["q_proj", "v_proj"], False))

    def test_zero_b_gives_the_base_logits_exactly(self):
        adapters = {p: (a, np.zeros_like(b)) for p, (a, b) in
                    hfc.random_adapter(self.config, 4, self.TARGETS).items()}
        adapter = self.write(adapters)
        base = ref.forward(self.config, self.weights, self.ids)
        merged = ref.forward(self.config, ref.merge_adapter(self.weights, adapter), self.ids)
        np.testing.assert_array_equal(merged, base)

    def test_merged_equals_the_unmerged_lora_path(self):
        adapter = self.write(hfc.random_adapter(self.config, 4, self.TARGETS, seed=2))
        self.assertEqual(adapter.scale, 2.0)
        base = ref.forward(self.config, self.weights, self.ids)
        unmerged = ref.forward(self.config, self.weights, self.ids, lora=adapter)
        merged = ref.forward(self.config, ref.merge_adapter(self.weights, adapter), self.ids)
        np.testing.assert_allclose(merged, unmerged, rtol=0, atol=1e-11)
        self.assertGreater(np.max(np.abs(merged - base)), 0.1)  # the adapter does change them

    def test_rslora_scale_and_tied_lm_head(self):
        config = small_config(tie=True)
        weights = {k: v.astype(np.float64) for k, v in hfc.random_weights(config).items()}
        adapters = hfc.random_adapter(config, 4, ["lm_head"], seed=3)
        hfc.write_adapter(self.path("a"), adapters, 4, 8.0, ["lm_head"], use_rslora=True)
        adapter = ref.load_adapter(self.path("a"), config)
        self.assertEqual(adapter.scale, 4.0)  # 8 / sqrt(4)
        merged = ref.merge_adapter(weights, adapter)
        np.testing.assert_array_equal(merged["model.embed_tokens.weight"],
                                      weights["model.embed_tokens.weight"])
        np.testing.assert_allclose(ref.forward(config, merged, self.ids),
                                   ref.forward(config, weights, self.ids, lora=adapter),
                                   rtol=0, atol=1e-11)

    def test_adapters_peft_would_misread_are_refused(self):
        good = hfc.random_adapter(self.config, 4, ["q_proj"])
        # A key for a module target_modules does not name: PEFT would drop it silently.
        hfc.write_adapter(self.path("a"), good, 4, 8.0, ["v_proj"])
        with self.assertRaisesRegex(ref.AdapterError, "not base_model.model.<targeted module>"):
            ref.load_adapter(self.path("a"), self.config)
        # The adapter name in the key, as in a live PEFT model's state_dict(), not its file.
        a, b = good["model.layers.0.self_attn.q_proj"]
        hfc.write_safetensors(self.path("a", "adapter_model.safetensors"), {
            "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight": a})
        with self.assertRaisesRegex(ref.AdapterError, "lora_A.default.weight"):
            ref.load_adapter(self.path("a"), self.config)
        # A targeted module without its matrices, and a wrong shape.
        missing = dict(good)
        del missing["model.layers.1.self_attn.q_proj"]
        hfc.write_adapter(self.path("a"), missing, 4, 8.0, ["q_proj"])
        with self.assertRaisesRegex(ref.AdapterError, r"without both .*layers.1.self_attn.q_proj"):
            ref.load_adapter(self.path("a"), self.config)
        wrong = dict(good, **{"model.layers.1.self_attn.q_proj": (a.T.copy(), b)})
        hfc.write_adapter(self.path("a"), wrong, 4, 8.0, ["q_proj"])
        with self.assertRaisesRegex(ref.AdapterError, r"shape \[64, 4\], expected \[4, 64\]"):
            ref.load_adapter(self.path("a"), self.config)
        hfc.write_adapter(self.path("a"), good, 4, 8.0, ["q_proj"])
        with open(self.path("a", "adapter_config.json")) as f:
            ac = json.load(f)
        with open(self.path("a", "adapter_config.json"), "w") as f:
            json.dump(dict(ac, use_dora=True), f)
        with self.assertRaisesRegex(ref.AdapterError, "use_dora = True is not supported"):
            ref.load_adapter(self.path("a"), self.config)

    def test_regex_target_modules(self):
        self.assertTrue(hfc.peft_targets("model.layers.1.self_attn.q_proj", r".*\.1\..*q_proj"))
        self.assertFalse(hfc.peft_targets("model.layers.0.self_attn.q_proj", r".*\.1\..*q_proj"))
        self.assertTrue(hfc.peft_targets("model.layers.0.mlp.up_proj", ["up_proj"]))
        self.assertFalse(hfc.peft_targets("model.layers.0.mlp.up_proj", ["p_proj"]))


# --------------------------------------------------------------------------------------------
# The backward pass and the optimizer steps (llama_numpy_backward.py)
# --------------------------------------------------------------------------------------------

ALL_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
               "lm_head"]
BACKWARD_EXAMPLES = [{"tokens": [1, 40, 7, 7, 60, 12, 3, 95, 4, 4, 81, 17], "prompt_tokens": 3},
                     {"tokens": [1, 5, 9, 33, 2, 96, 40, 7, 11], "prompt_tokens": 0},
                     {"tokens": [1, 23, 42, 11, 9, 1, 64, 64, 70, 3, 8, 90, 13, 44, 2, 6],
                      "prompt_tokens": 5},
                     {"tokens": [1, 88, 3, 19, 27, 5, 5], "prompt_tokens": 2}]
BACKWARD_OPTIMIZER = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-3, "weight_decay": 0.1,
                      "max_grad_norm": 0.5}


def float64_adapter(adapters, scale):
    return ref.Adapter({p: (a.astype(np.float64), b.astype(np.float64))
                        for p, (a, b) in adapters.items()}, scale)


def torch_loss_and_gradients(config, weights, adapter, examples, dtype):
    """The same loss through torch_forward with every adapter merged (W + s B A, differentiable
    in A and B) and torch's cross-entropy, and autograd's gradients of it."""
    leaves = {p: tuple(torch.tensor(m, dtype=dtype, requires_grad=True) for m in ab)
              for p, ab in adapter.modules.items()}
    merged = {k: torch.from_numpy(v).to(dtype) for k, v in weights.items()}
    for path, (a, b) in leaves.items():
        base = merged.get(path + ".weight", merged["model.embed_tokens.weight"])
        merged[path + ".weight"] = base + adapter.scale * (b @ a)
    total, count = 0.0, 0
    for e in examples:
        logits = torch_forward(config, merged, [e["tokens"]], dtype=dtype)[0]
        labels = torch.as_tensor(bw.example_labels(e))
        total = total + F.cross_entropy(logits[:-1], labels[1:], ignore_index=-100,
                                        reduction="sum")
        count += int((labels[1:] != -100).sum())
    loss = total / count
    loss.backward()
    return float(loss), {p: tuple(m.grad.double().numpy() for m in ab) for p, ab in leaves.items()}


class Backward(TempDir):
    """The hand-written backward against finite differences (always) and torch autograd (where
    torch is), and the optimizer steps against torch.optim.AdamW."""

    def setUp(self):
        super().setUp()
        self.config = small_config(vocab=97, rms_norm_eps=1e-3, rope_theta=500000.0,
                                   rope_scaling=dict(ROPE_LLAMA3,
                                                     original_max_position_embeddings=16))
        self.weights = {k: v.astype(np.float64)
                        for k, v in hfc.random_weights(self.config, seed=11).items()}
        self.adapter = float64_adapter(hfc.random_adapter(self.config, 4, ALL_TARGETS, seed=3),
                                       3.0)

    def test_forward_is_llama_numpys_and_the_loss_token_weighted(self):
        total, count = 0.0, 0
        for e in BACKWARD_EXAMPLES:
            logits, _ = bw.forward_with_tape(self.config, self.weights, self.adapter, e["tokens"])
            theirs = ref.forward(self.config, self.weights, [e["tokens"]], lora=self.adapter)[0]
            np.testing.assert_allclose(logits, theirs, rtol=0, atol=1e-12)
            n = int(np.sum(bw.example_labels(e)[1:] != -100))
            total += n * ref.next_token_loss(theirs[None], [bw.example_labels(e)])
            count += n
        loss, grads, tokens = bw.loss_and_gradients(self.config, self.weights, self.adapter,
                                                    BACKWARD_EXAMPLES)
        self.assertEqual(tokens, count)
        self.assertEqual(tokens, 9 + 8 + 11 + 5)
        self.assertAlmostEqual(loss, total / count, places=12)
        self.assertEqual(len(grads), 2 * 7 + 1)

    def check_finite_differences(self, config, weights, adapter, entries):
        """Central differences (step 1e-5) of the loss at `entries` [(module, 0 for A / 1 for
        B, index)] against the backward. Their own error is about 1e-10 here."""
        _, grads, _ = bw.loss_and_gradients(config, weights, adapter, BACKWARD_EXAMPLES)
        h = 1e-5
        for path, which, index in entries:
            losses = []
            for sign in (1, -1):
                modules = {p: [m.copy() for m in ab] for p, ab in adapter.modules.items()}
                modules[path][which][index] += sign * h
                losses.append(bw.loss_and_gradients(config, weights,
                                                    ref.Adapter(modules, adapter.scale),
                                                    BACKWARD_EXAMPLES)[0])
            numeric = (losses[0] - losses[1]) / (2 * h)
            analytic = grads[path][which][index]
            self.assertGreater(abs(analytic), 1e-6, (path, which, index))  # not a trivial zero
            self.assertLess(abs(numeric - analytic), 1e-8 + 1e-6 * abs(analytic),
                            (path, which, index, numeric, analytic))

    def test_finite_differences_every_target(self):
        entries = []
        for i, path in enumerate(sorted(self.adapter.modules)):
            a, b = self.adapter.modules[path]
            entries += [(path, 0, (i % a.shape[0], (7 * i) % a.shape[1])),
                        (path, 1, ((5 * i) % b.shape[0], i % b.shape[1]))]
        self.check_finite_differences(self.config, self.weights, self.adapter, entries)

    def test_finite_differences_tied_head_one_kv_head(self):
        config = small_config(vocab=97, kv_heads=1, tie=True, rope_scaling=None)
        weights = {k: v.astype(np.float64) for k, v in hfc.random_weights(config, seed=2).items()}
        adapter = float64_adapter(hfc.random_adapter(config, 2, ["k_proj", "lm_head"], seed=4),
                                  2.0)
        self.check_finite_differences(config, weights, adapter, [
            ("model.layers.0.self_attn.k_proj", 0, (1, 5)),
            ("model.layers.1.self_attn.k_proj", 1, (3, 0)),
            ("lm_head", 0, (0, 9)), ("lm_head", 1, (40, 1))])

    def test_a_gradient_is_zero_where_b_is(self):
        modules = dict(self.adapter.modules)
        a, b = modules["model.layers.0.self_attn.q_proj"]
        modules["model.layers.0.self_attn.q_proj"] = (a, np.zeros_like(b))
        _, grads, _ = bw.loss_and_gradients(self.config, self.weights,
                                            ref.Adapter(modules, 3.0), BACKWARD_EXAMPLES)
        ga, gb = grads["model.layers.0.self_attn.q_proj"]
        np.testing.assert_array_equal(ga, 0.0)
        self.assertGreater(np.max(np.abs(gb)), 1e-3)

    @needs_torch
    def test_against_torch_autograd(self):
        loss, grads, _ = bw.loss_and_gradients(self.config, self.weights, self.adapter,
                                               BACKWARD_EXAMPLES)
        theirs_loss, theirs = torch_loss_and_gradients(self.config, self.weights, self.adapter,
                                                       BACKWARD_EXAMPLES, torch.float64)
        self.assertAlmostEqual(loss, theirs_loss, places=12)
        r = bw.compare_tensors(theirs, grads, 1e-12, 1e-9)
        self.assertTrue(r["ok"], r)
        # fp32 (merged weights: not ftbench's arithmetic, but of its kind) within the default
        # tolerance, with a margin.
        _, fp32 = torch_loss_and_gradients(self.config, self.weights, self.adapter,
                                           BACKWARD_EXAMPLES, torch.float32)
        r = bw.compare_tensors(fp32, grads, bw.DEFAULT_GRAD_ATOL / 3, bw.DEFAULT_GRAD_RTOL / 3)
        self.assertTrue(r["ok"], r)
        self.assertGreater(r["max_abs_diff"], 0)

    @needs_torch
    def test_clipping_and_adamw_against_torch_optim(self):
        rng = np.random.default_rng(8)
        params = [rng.standard_normal((4, 6)), rng.standard_normal((5, 4))]
        grads = [[rng.standard_normal(p.shape) * 0.01 for p in params] for _ in range(3)]
        opt = BACKWARD_OPTIMIZER
        leaves = [torch.tensor(p, requires_grad=True) for p in params]
        optimizer = torch.optim.AdamW(leaves, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]),
                                      eps=opt["eps"], weight_decay=opt["weight_decay"])
        ours = [p.copy() for p in params]
        moments = [[np.zeros_like(p), np.zeros_like(p)] for p in params]
        for t, step_grads in enumerate(grads, 1):
            for leaf, g in zip(leaves, step_grads):
                leaf.grad = torch.tensor(g)
            norm = float(torch.nn.utils.clip_grad_norm_(leaves, opt["max_grad_norm"]))
            optimizer.step()
            self.assertAlmostEqual(norm, math.sqrt(sum(float(np.sum(g * g)) for g in step_grads)),
                                   places=12)
            coef = bw.clip_coefficient(norm, opt["max_grad_norm"])
            for i, g in enumerate(step_grads):
                ours[i], moments[i][0], moments[i][1] = bw.adamw_update(
                    ours[i], coef * g, moments[i][0], moments[i][1], t, opt)
            for leaf, p in zip(leaves, ours):
                np.testing.assert_allclose(leaf.detach().numpy(), p, rtol=0, atol=1e-14)
        self.assertEqual(bw.clip_coefficient(0.1, 0.5), 1.0)
        self.assertEqual(bw.clip_coefficient(10.0, 0.0), 1.0)

    def test_clipping_and_decay_move_the_adapters_far_beyond_the_tolerance(self):
        # With the tests' settings (ftbench's too: tests/model/hf/torch/lora_backward_test.cpp): a comparison
        # would catch a step that skipped either.
        records = bw.train(self.config, self.weights, self.adapter, BACKWARD_EXAMPLES,
                           BACKWARD_OPTIMIZER, 2)
        self.assertLess(max(r["clip_coefficient"] for r in records), 0.5)
        for change in ({"max_grad_norm": 0.0}, {"weight_decay": 0.0}):
            other = bw.train(self.config, self.weights, self.adapter, BACKWARD_EXAMPLES,
                             dict(BACKWARD_OPTIMIZER, **change), 2)
            self.assertGreater(bw.max_difference(other[-1]["adapter"], records[-1]["adapter"]),
                               100 * bw.DEFAULT_WEIGHT_ATOL, change)

    def run_check(self, *args):
        p = subprocess.run([sys.executable, os.path.join(HERE, "llama_numpy_backward.py"),
                            "check", *args], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def test_cli_check(self):
        targets = ["q_proj", "v_proj", "down_proj"]
        hfc.write_checkpoint(self.path("c"), self.config, hfc.random_weights(self.config, 11))
        adapters = hfc.random_adapter(self.config, 4, targets, seed=3)
        hfc.write_adapter(self.path("a"), adapters, 4, 12.0, targets)
        adapter = float64_adapter(adapters, 3.0)
        records = bw.train(self.config, self.weights, adapter, BACKWARD_EXAMPLES,
                           BACKWARD_OPTIMIZER, 2)
        as_f32 = lambda m: {p: tuple(x.astype(np.float32) for x in ab) for p, ab in m.items()}
        hfc.write_adapter(self.path("g"), as_f32(records[0]["grads"]), 4, 12.0, targets)
        for t in (1, 2):
            hfc.write_adapter(self.path(f"s{t}"), as_f32(records[t - 1]["adapter"]), 4, 12.0,
                              targets)
        step = {"examples": BACKWARD_EXAMPLES, "steps": 2, "optimizer": BACKWARD_OPTIMIZER,
                "losses": [r["loss"] for r in records],
                "grad_norms": [r["grad_norm"] for r in records]}
        with open(self.path("step.json"), "w") as f:
            json.dump(step, f)
        common = ["--checkpoint", self.path("c"), "--adapter", self.path("a"), "--step",
                  self.path("step.json"), "--grads", self.path("g")]
        rc, out = self.run_check(*common, "--stepped", self.path("s1"), "--stepped",
                                 self.path("s2"), "-o", self.path("r.json"))
        self.assertEqual(rc, 0, out)
        self.assertIn("gradients of step 1", out)
        self.assertIn("adapter after step 2", out)
        with open(self.path("r.json")) as f:
            result = json.load(f)
        self.assertTrue(result["ok"])
        self.assertEqual(result["gradients"]["tensors"], 2 * 2 * 3)
        self.assertLess(result["gradients"]["max_abs_diff"], 1e-8)  # float32 rounding only
        self.assertEqual(result["target_tokens"], 33)
        self.assertGreater(result["unclipped_diff"], 1e-4)

        # One adapter's gradient with its sign flipped fails, naming the tensor.
        name = "base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight"
        tensors, _ = hfc.read_safetensors(self.path("g", "adapter_model.safetensors"))
        tensors[name] = -tensors[name]
        hfc.write_safetensors(self.path("g", "adapter_model.safetensors"), tensors,
                              {"format": "pt"})
        rc, out = self.run_check(*common)
        self.assertEqual(rc, 1, out)
        self.assertIn("MISMATCH in model.layers.1.self_attn.v_proj.lora_A", out)
        # A loss off by 1e-4 relative fails; bad input exits 2.
        step["losses"][1] *= 1 + 1e-4
        with open(self.path("step.json"), "w") as f:
            json.dump(step, f)
        rc, out = self.run_check("--checkpoint", self.path("c"), "--adapter", self.path("a"),
                                 "--step", self.path("step.json"))
        self.assertEqual(rc, 1, out)
        self.assertIn("step 2 loss", out)
        with open(self.path("step.json"), "w") as f:
            json.dump(dict(step, optimizer={"lr": 1e-2}), f)
        rc, out = self.run_check("--checkpoint", self.path("c"), "--adapter", self.path("a"),
                                 "--step", self.path("step.json"))
        self.assertEqual(rc, 2, out)
        self.assertIn("optimizer: expected numbers", out)


# --------------------------------------------------------------------------------------------
# The CLI, as ftbench's C++ tests call it
# --------------------------------------------------------------------------------------------


class Cli(TempDir):
    def run_cli(self, *args):
        p = subprocess.run([sys.executable, os.path.join(HERE, "llama_numpy.py"), *args],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def setUp(self):
        super().setUp()
        config = small_config()
        hfc.write_checkpoint(self.path("c"), config, hfc.random_weights(config))
        hfc.write_adapter(self.path("a"), hfc.random_adapter(config, 2, ["q_proj", "down_proj"]),
                          2, 4.0, ["q_proj", "down_proj"])

    def rewrite(self, source, target, change):
        with open(source) as f:
            doc = json.load(f)
        change(doc)
        with open(target, "w") as f:
            json.dump(doc, f)

    def test_forward_then_compare(self):
        rc, out = self.run_cli("forward", "--checkpoint", self.path("c"), "--ids",
                               "1,2,3,4,5;6,7,8,9,10", "-o", self.path("ref.json"))
        self.assertEqual(rc, 0, out)
        with open(self.path("ref.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema"], "ftbench.logits/1")
        self.assertEqual(np.asarray(doc["logits"]).shape, (2, 5, 128))
        self.assertIsInstance(doc["loss"], float)

        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("ref.json"))
        self.assertEqual(rc, 0, out)
        self.assertIn("max abs diff 0.000e+00", out)

        def nudge(size, key="logits"):
            def change(doc):
                if key == "loss":
                    doc["loss"] += size
                else:
                    doc["logits"][1][3][7] += size
            return change

        self.rewrite(self.path("ref.json"), self.path("near.json"), nudge(3e-5))
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("near.json"))
        self.assertEqual(rc, 0, out)
        self.rewrite(self.path("ref.json"), self.path("far.json"), nudge(1e-3))
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("far.json"))
        self.assertEqual(rc, 1, out)
        self.assertIn("worst at [1, 3, 7]: MISMATCH", out)
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("far.json"), "--atol", "1e-2")
        self.assertEqual(rc, 0, out)
        self.rewrite(self.path("ref.json"), self.path("loss.json"), nudge(1e-2, "loss"))
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("loss.json"))
        self.assertEqual(rc, 1, out)
        self.assertIn("loss", out.splitlines()[1])
        self.assertIn("MISMATCH", out.splitlines()[1])

    def test_adapter_logits(self):
        rc, out = self.run_cli("forward", "--checkpoint", self.path("c"), "--adapter",
                               self.path("a"), "--ids", "3,1,4,1,5,9", "-o", self.path("t.json"))
        self.assertEqual(rc, 0, out)
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--adapter",
                               self.path("a"), "--logits", self.path("t.json"))
        self.assertEqual(rc, 0, out)
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("t.json"))  # the base model: the adapter is missed
        self.assertEqual(rc, 1, out)

    def test_bad_input_exits_2(self):
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("absent.json"))
        self.assertEqual(rc, 2, out)
        with open(self.path("short.json"), "w") as f:
            json.dump({"input_ids": [[1, 2]], "logits": [[[0.0] * 128]]}, f)
        rc, out = self.run_cli("compare", "--checkpoint", self.path("c"), "--logits",
                               self.path("short.json"))
        self.assertEqual(rc, 2, out)
        self.assertIn("shapes differ: [1, 1, 128] against [1, 2, 128]", out)
        rc, out = self.run_cli("forward", "--checkpoint", self.path("c"), "--ids", "1,999",
                               "-o", self.path("x.json"))
        self.assertEqual(rc, 2, out)
        self.assertIn("ids must lie in [0, 128)", out)


# --------------------------------------------------------------------------------------------
# scripts/reference/check_hf.py without transformers
# --------------------------------------------------------------------------------------------


class CheckHf(TempDir):
    def test_arguments(self):
        args = check_hf.parse_args(["--checkpoint", "c", "--logits", "l.json"])
        self.assertEqual((args.device, args.dtype, args.atol, args.rtol),
                         ("cuda", "float32", 1e-4, 1e-4))
        args = check_hf.parse_args(["--checkpoint", "c", "--logits", "l.json", "--dtype",
                                    "bfloat16", "--atol", "0.5"])
        self.assertEqual((args.atol, args.rtol), (0.5, check_hf.TOLERANCES["bfloat16"][1]))
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            check_hf.parse_args(["--checkpoint", "c", "--logits", "l.json", "--adapter", "a"])

    def test_comparison_and_verdict(self):
        expected = [[[1.0, -2.0], [0.5, 0.0]]]
        r = check_hf.compare(expected, expected, 1e-4, 1e-4)
        self.assertTrue(r["ok"])
        self.assertEqual(r["max_abs_diff"], 0.0)
        near = [[[1.0001, -2.0], [0.5, 0.00005]]]
        r = check_hf.compare(near, expected, 1e-4, 1e-4)
        self.assertTrue(r["ok"], r)
        far = [[[1.0, -2.001], [0.5, 0.0]]]
        r = check_hf.compare(far, expected, 1e-4, 1e-4)
        self.assertFalse(r["ok"])
        self.assertEqual(r["worst_index"], [0, 0, 1])
        self.assertAlmostEqual(r["max_abs_diff"], 1e-3, places=12)
        self.assertEqual(check_hf.verdict("logits", r, 1e-4, 1e-4),
                         "logits: MISMATCH: max abs diff 1.000e-03, max rel diff 5.000e-04 "
                         "over 4 values, worst at [0, 0, 1] (atol 1e-04, rtol 1e-04)")
        self.assertFalse(check_hf.compare([float("nan"), 1.0], [0.0, 1.0], 1, 1)["ok"])
        with self.assertRaisesRegex(ValueError, "shapes differ"):
            check_hf.compare([[1.0, 2.0]], [[1.0], [2.0]], 1e-4, 1e-4)
        # The same rule as llama_numpy's.
        rng = np.random.default_rng(0)
        e = rng.standard_normal((2, 3, 5))
        a = e + rng.standard_normal(e.shape) * 1e-4
        mine, theirs = check_hf.compare(a.tolist(), e.tolist(), 1e-4, 1e-4), \
            ref.compare_values(a, e, 1e-4, 1e-4)
        self.assertEqual(mine["ok"], theirs["ok"])
        self.assertEqual(mine["worst_index"], theirs["worst_index"])
        self.assertAlmostEqual(mine["max_abs_diff"], theirs["max_abs_diff"], places=15)

    def test_cases_arguments(self):
        args = check_hf.parse_args(["--cases", "c.json", "--device", "cpu", "-o", "r.json"])
        self.assertEqual((args.cases, args.output, args.checkpoint), ("c.json", "r.json", None))
        for wrong in (["--cases", "c.json", "--checkpoint", "c"], ["--checkpoint", "c"],
                      ["--logits", "l.json"], []):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                check_hf.parse_args(wrong)

    def test_cases_file_and_result(self):
        with open(self.path("l.json"), "w") as f:
            json.dump({"input_ids": [[1, 2]], "logits": [[[0.0], [0.0]]]}, f)
        with open(self.path("cases.json"), "w") as f:
            json.dump([{"name": "a", "checkpoint": "ck", "logits": self.path("l.json")},
                       {"name": "b", "checkpoint": "ck", "adapter": "ad",
                        "logits": self.path("l.json")}], f)
        cases = check_hf.read_cases(self.path("cases.json"))
        self.assertEqual([c["name"] for c in cases], ["a", "b"])
        self.assertEqual(cases[1]["doc"]["input_ids"], [[1, 2]])
        for bad in ([], [{"name": "a", "checkpoint": "ck"}], {"name": "a"}):
            with open(self.path("bad.json"), "w") as f:
                json.dump(bad, f)
            with self.assertRaises(ValueError):
                check_hf.read_cases(self.path("bad.json"))
        # A NaN difference is written as null: the result file stays JSON.
        self.assertEqual(check_hf.json_safe({"x": [float("nan"), 1.0, float("inf")]}),
                         {"x": [None, 1.0, None]})

    def test_without_transformers_it_says_so(self):
        # Where transformers is installed (the pinned environment), a module of that name that
        # fails to import stands in for its absence, first on the path.
        shadow = self.path("no-transformers")
        os.makedirs(shadow, exist_ok=True)
        with open(os.path.join(shadow, "transformers.py"), "w") as f:
            f.write("raise ImportError('transformers stands absent for this test')\n")
        with open(self.path("l.json"), "w") as f:
            json.dump({"input_ids": [[1, 2]], "logits": [[[0.0], [0.0]]]}, f)
        env = dict(os.environ, PYTHONPATH=shadow)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "reference", "check_hf.py"),
                            "--checkpoint", self.tmp, "--logits", self.path("l.json")],
                           capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("needs torch, transformers", p.stderr)


class HfTransformersChain(unittest.TestCase):
    """tests/reference/hf_transformers.py and peft_reference.py run several commands in one
    process, separated by a lone "+"."""

    def test_split(self):
        self.assertEqual(hf_transformers.split_chain(["make", "a", "+", "alter", "a", "b"]),
                         [["make", "a"], ["alter", "a", "b"]])
        self.assertEqual(hf_transformers.split_chain(["+", "make", "a", "+"]), [["make", "a"]])
        self.assertEqual(hf_transformers.split_chain(["make", "a+b"]), [["make", "a+b"]])

    def test_every_command_runs_and_the_first_failure_is_the_exit_code(self):
        ran = []

        def run_one(args):
            ran.append(args[0])
            return {"ok": 0, "mismatch": 1, "bad": 2}[args[0]]

        run = hf_transformers.run_chain
        self.assertEqual(run(["ok", "+", "ok"], run_one), 0)
        self.assertEqual(run(["ok", "+", "mismatch", "+", "bad"], run_one), 1)
        self.assertEqual(run(["bad", "+", "mismatch"], run_one), 2)
        self.assertEqual(ran, ["ok", "ok", "ok", "mismatch", "bad", "bad", "mismatch"])


if __name__ == "__main__":
    unittest.main()
