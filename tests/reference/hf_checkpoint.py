#!/usr/bin/python3
"""Hugging Face Llama checkpoints and PEFT adapters on disk, with NumPy only.

The safetensors format (read and write, BF16 as uint16 bit patterns), a random Llama checkpoint
laid out as transformers' save_pretrained lays it out (config.json, model.safetensors or
model-0000K-of-0000N.safetensors shards plus model.safetensors.index.json) and PEFT LoRA adapter
folders (adapter_config.json, adapter_model.safetensors). Written independently of ftbench's C++
reader so that the two check each other; tests/reference/README.md says how ftbench's tests use it.

Usage (Debian's python3-numpy, i.e. /usr/bin/python3):
  hf_checkpoint.py make DIR --layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 256
                   [--rope-theta T] [--rope-scaling llama3] [--tie] [--dtype float32|bfloat16]
                   [--shards N] [--seed S] [--max-position P]
  hf_checkpoint.py make-adapter DIR --checkpoint CKPT [--r 4] [--alpha 8]
                   [--targets q_proj,v_proj] [--seed S]
  hf_checkpoint.py drop-tensor DIR NAME   (a malformed checkpoint: NAME removed from its file)
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

# safetensors dtype name -> NumPy dtype of the bytes on disk (BF16: its bit patterns).
_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_NUMPY_TO_SAFETENSORS = {v: k for k, v in _DTYPES.items() if k != "BF16"}
# config.json's torch_dtype -> safetensors dtype of the weights.
TORCH_DTYPES = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
# PEFT's prefix of every adapter key for a causal LM (PeftModelForCausalLM -> LoraModel -> model).
PEFT_PREFIX = "base_model.model."

ATTENTION_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_MODULES = ("gate_proj", "up_proj", "down_proj")


class CheckpointError(ValueError):
    """A file that is not what it claims to be; the message starts with the file's path."""


# --------------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------------


def bf16_bits_to_float32(bits):
    """BF16 bit patterns (uint16) -> float32, exactly: BF16 is the top half of a float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16_bits(values):
    """float32 -> BF16 bit patterns, rounding to nearest even as torch's .to(torch.bfloat16)."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    # NaN must stay NaN (rounding may carry a NaN's mantissa into the exponent): quiet NaN.
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    sign = (u >> 16).astype(np.uint16) & np.uint16(0x8000)
    return np.where(nan, sign | np.uint16(0x7FC0), rounded)


def read_safetensors_header(path):
    """(tensors {name: {"dtype", "shape", "data_offsets"}}, metadata dict, data start offset),
    validated as the reference implementation validates: known dtypes, sizes matching shapes,
    ranges covering the data section without gaps or overlaps."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise CheckpointError(f"{path}: not a safetensors file ({size} bytes)")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise CheckpointError(f"{path}: header length {n} exceeds the file ({size} bytes)")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CheckpointError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    ranges = []
    for name, info in header.items():
        try:
            dtype = _DTYPES.get(info["dtype"])
            begin, end = (int(x) for x in info["data_offsets"])
            count = math.prod(int(x) for x in info["shape"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: tensor {name!r}: expected dtype, shape and "
                                  f"data_offsets [begin, end], found {info!r}") from None
        if dtype is None:
            raise CheckpointError(f"{path}: tensor {name!r}: unsupported dtype {info['dtype']!r}")
        if end - begin != count * dtype.itemsize:
            raise CheckpointError(f"{path}: tensor {name!r}: data_offsets [{begin}, {end}] hold "
                                  f"{end - begin} bytes, shape {info['shape']} needs "
                                  f"{count * dtype.itemsize}")
        ranges.append((begin, end, name))
    expected = 0
    for begin, end, name in sorted(ranges):
        if begin != expected:
            raise CheckpointError(f"{path}: tensor {name!r} starts at {begin}, expected {expected}")
        expected = end
    if 8 + n + expected != size:
        raise CheckpointError(f"{path}: tensors hold {expected} bytes, the data section has "
                              f"{size - 8 - n}")
    return header, metadata, 8 + n


def read_safetensors(path, keep_bf16_bits=False):
    """(tensors {name: ndarray}, metadata). BF16 tensors come back as float32 (exact), or as
    their uint16 bit patterns with keep_bf16_bits."""
    header, metadata, data_start = read_safetensors_header(path)
    with open(path, "rb") as f:
        f.seek(data_start)
        data = f.read()
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        a = np.frombuffer(data[begin:end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
        if info["dtype"] == "BF16" and not keep_bf16_bits:
            a = bf16_bits_to_float32(a)
        tensors[name] = a.copy()
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None, float_dtype=None):
    """Writes {name: ndarray} in the order given. float_dtype ("F32", "BF16", "F16") converts
    every floating tensor to that type; otherwise each keeps its NumPy dtype. Returns the bytes
    of tensor data written (what an index's total_size counts)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        array = np.asarray(array)
        if float_dtype and np.issubdtype(array.dtype, np.floating):
            dtype = float_dtype
            if dtype == "BF16":
                raw = float32_to_bf16_bits(array.astype(np.float32))
            else:
                raw = array.astype(_DTYPES[dtype])
        else:
            dtype = _NUMPY_TO_SAFETENSORS.get(array.dtype.newbyteorder("<"))
            if dtype is None:
                raise CheckpointError(f"{path}: tensor {name!r}: no safetensors dtype for "
                                      f"{array.dtype}")
            raw = array.astype(_DTYPES[dtype])
        blob = np.ascontiguousarray(raw).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the reference writer pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    return offset


# --------------------------------------------------------------------------------------------
# Llama checkpoints
# --------------------------------------------------------------------------------------------


def llama_config(layers, dim, heads, kv_heads, ffn, vocab, rope_theta=10000.0, rope_scaling=None,
                 tie=False, dtype="float32", max_position=2048, rms_norm_eps=1e-5):
    """config.json of a LlamaForCausalLM as transformers 4.x writes it. rope_scaling: None or a
    dict {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}."""
    if dim % heads or heads % kv_heads:
        raise ValueError(f"dim {dim} must divide by heads {heads}, heads by kv_heads {kv_heads}")
    if (dim // heads) % 2:
        raise ValueError(f"head_dim {dim // heads} must be even for rotary embeddings")
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {sorted(TORCH_DTYPES)}")
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": dim,
        "intermediate_size": ffn,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": dim // heads,
        "vocab_size": vocab,
        "max_position_embeddings": max_position,
        "rms_norm_eps": rms_norm_eps,
        "rope_theta": rope_theta,
        "rope_scaling": None,
        "tie_word_embeddings": tie,
        "torch_dtype": dtype,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "pretraining_tp": 1,
        "use_cache": True,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    if rope_scaling:
        config["rope_scaling"] = {"rope_type": "llama3", **rope_scaling}
    return config


def tensor_names(config):
    """HF parameter names in state-dict (module) order; lm_head.weight only when untied."""
    names = ["model.embed_tokens.weight"]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        names += [p + f"self_attn.{m}.weight" for m in ATTENTION_MODULES]
        names += [p + f"mlp.{m}.weight" for m in MLP_MODULES]
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
    names.append("model.norm.weight")
    if not config.get("tie_word_embeddings", False):
        names.append("lm_head.weight")
    return names


def linear_shapes(config):
    """{module suffix: (out_features, in_features)} of one layer's Linear weights."""
    dim, ffn = config["hidden_size"], config["intermediate_size"]
    head_dim = config.get("head_dim") or dim // config["num_attention_heads"]
    q_dim = config["num_attention_heads"] * head_dim
    kv_dim = config["num_key_value_heads"] * head_dim
    return {"q_proj": (q_dim, dim), "k_proj": (kv_dim, dim), "v_proj": (kv_dim, dim),
            "o_proj": (dim, q_dim), "gate_proj": (ffn, dim), "up_proj": (ffn, dim),
            "down_proj": (dim, ffn)}


def random_weights(config, seed=0):
    """float32 weights {name: ndarray}. Linear weights N(0, 1/in_features) and embeddings N(0, 1)
    keep activations and attention scores of order one, so that attention is far from uniform
    and a wrong rotary or mask shows in the logits; norm weights 1 + N(0, 0.1), never all ones,
    so that a norm whose weight is lost or misplaced shows too."""
    rng = np.random.default_rng(seed)
    dim, vocab = config["hidden_size"], config["vocab_size"]
    shapes = linear_shapes(config)
    weights = {}
    for name in tensor_names(config):
        module = name.split(".")[-2]
        if module == "embed_tokens":
            shape, std = (vocab, dim), 1.0
        elif module == "lm_head":
            shape, std = (vocab, dim), 1.0 / math.sqrt(dim)
        elif module in shapes:
            shape = shapes[module]
            std = 1.0 / math.sqrt(shape[1])
        else:  # input_layernorm, post_attention_layernorm, norm
            weights[name] = (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32)
            continue
        weights[name] = (std * rng.standard_normal(shape)).astype(np.float32)
    return weights


def shard_names(names, sizes, shards):
    """Splits names (in order) into `shards` consecutive non-empty groups of about equal bytes,
    as save_pretrained's max_shard_size does: a tensor goes to the shard its middle byte falls
    in, never skipping a shard and leaving at least one tensor for each shard still to come."""
    if not 1 <= shards <= len(names):
        raise ValueError(f"shards {shards}: expected 1 to {len(names)} (the tensor count)")
    target = sum(sizes) / shards
    groups = [[] for _ in range(shards)]
    filled, k = 0, 0
    for i, (name, size) in enumerate(zip(names, sizes)):
        by_bytes = min(int((filled + size / 2) // target), shards - 1)
        k = max(min(max(by_bytes, k), k + 1 if i else 0), shards - (len(names) - i))
        groups[k].append(name)
        filled += size
    return groups


def write_checkpoint(directory, config, weights, shards=1):
    """Writes config.json and the weights (cast to config["torch_dtype"]) as save_pretrained:
    one model.safetensors, or shards model-0000K-of-0000N.safetensors and
    model.safetensors.index.json {"metadata": {"total_size"}, "weight_map"}. Every safetensors
    file carries metadata {"format": "pt"}, which transformers' loader requires."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    float_dtype = TORCH_DTYPES[config["torch_dtype"]]
    names = [n for n in tensor_names(config) if n in weights]
    missing = set(tensor_names(config)) - set(weights)
    if missing:
        raise ValueError(f"weights missing: {sorted(missing)}")
    if shards == 1:
        write_safetensors(os.path.join(directory, SINGLE_FILE), {n: weights[n] for n in names},
                          {"format": "pt"}, float_dtype)
        return
    itemsize = _DTYPES[float_dtype].itemsize
    sizes = [weights[n].size * itemsize for n in names]
    weight_map, total_size = {}, 0
    groups = shard_names(names, sizes, shards)
    for k, group in enumerate(groups, start=1):
        file = f"model-{k:05d}-of-{len(groups):05d}.safetensors"
        total_size += write_safetensors(os.path.join(directory, file),
                                        {n: weights[n] for n in group}, {"format": "pt"},
                                        float_dtype)
        weight_map.update({n: file for n in group})
    index = {"metadata": {"total_size": total_size},
             "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(directory, INDEX_FILE), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


def read_checkpoint(directory):
    """(config, weights {name: float32 or float64 ndarray}) of an HF Llama checkpoint folder,
    single file or sharded. A sharded one is checked against its index: every file named, every
    tensor in the file the index names and nowhere else, total_size equal to the tensor bytes."""
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    index_path = os.path.join(directory, INDEX_FILE)
    weights = {}
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        weight_map = index["weight_map"]
        total = 0
        for file in sorted(set(weight_map.values())):
            path = os.path.join(directory, file)
            header, _, _ = read_safetensors_header(path)
            total += sum(i["data_offsets"][1] - i["data_offsets"][0] for i in header.values())
            tensors, _ = read_safetensors(path)
            for name, array in tensors.items():
                if weight_map.get(name) != file:
                    raise CheckpointError(f"{path}: holds {name!r}, which {INDEX_FILE} places in "
                                          f"{weight_map.get(name)!r}")
                weights[name] = array
        absent = set(weight_map) - set(weights)
        if absent:
            raise CheckpointError(f"{index_path}: tensors in no file: {sorted(absent)}")
        stated = index.get("metadata", {}).get("total_size")
        if stated is not None and stated != total:
            raise CheckpointError(f"{index_path}: total_size {stated}, the files hold {total}")
    else:
        weights, _ = read_safetensors(os.path.join(directory, SINGLE_FILE))
    expected = set(tensor_names(config))
    if config.get("tie_word_embeddings", False):
        weights.pop("lm_head.weight", None)  # some writers keep the tied copy; it is ignored
    if set(weights) != expected:
        raise CheckpointError(f"{directory}: tensors missing {sorted(expected - set(weights))}, "
                              f"unexpected {sorted(set(weights) - expected)}")
    return config, weights


# --------------------------------------------------------------------------------------------
# PEFT LoRA adapters
# --------------------------------------------------------------------------------------------


def module_paths(config):
    """{HF module path: (out, in)} of every Linear a LoRA adapter may target."""
    shapes = linear_shapes(config)
    paths = {}
    for i in range(config["num_hidden_layers"]):
        for m in ATTENTION_MODULES:
            paths[f"model.layers.{i}.self_attn.{m}"] = shapes[m]
        for m in MLP_MODULES:
            paths[f"model.layers.{i}.mlp.{m}"] = shapes[m]
    paths["lm_head"] = (config["vocab_size"], config["hidden_size"])
    return paths


def peft_targets(path, target_modules):
    """Whether PEFT's LoraConfig.target_modules selects the module at `path`: a list matches a
    name equal to an entry or ending in "." + entry; a string is a regular expression that must
    match the whole path."""
    if isinstance(target_modules, str):
        import re
        return re.fullmatch(target_modules, path) is not None
    return any(path == t or path.endswith("." + t) for t in target_modules)


def adapter_config(r, lora_alpha, target_modules, use_rslora=False):
    """adapter_config.json as PEFT writes it, with only fields every PEFT >= 0.9 accepts."""
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": None,
        "revision": None,
        "inference_mode": True,
        "r": r,
        "lora_alpha": lora_alpha,
        "lora_dropout": 0.0,
        "target_modules": list(target_modules),
        "bias": "none",
        "fan_in_fan_out": False,
        "use_rslora": use_rslora,
        "use_dora": False,
        "modules_to_save": None,
        "init_lora_weights": True,
        "layers_to_transform": None,
        "layers_pattern": None,
        "rank_pattern": {},
        "alpha_pattern": {},
    }


def random_adapter(config, r, target_modules, seed=0, scale=0.1):
    """{module path: (A [r, in], B [out, r])} in float32 for every targeted module, both
    nonzero (a freshly initialised PEFT adapter has B = 0 and changes nothing)."""
    rng = np.random.default_rng(seed)
    adapters = {}
    for path, (out_f, in_f) in module_paths(config).items():
        if peft_targets(path, target_modules):
            a = (rng.standard_normal((r, in_f)) / math.sqrt(in_f)).astype(np.float32)
            b = (scale * rng.standard_normal((out_f, r)) / math.sqrt(r)).astype(np.float32)
            adapters[path] = (a, b)
    return adapters


def write_adapter(directory, adapters, r, lora_alpha, target_modules, use_rslora=False):
    """adapter_config.json and adapter_model.safetensors with PEFT's key names
    (base_model.model.<module path>.lora_A.weight / .lora_B.weight)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ADAPTER_CONFIG), "w") as f:
        json.dump(adapter_config(r, lora_alpha, target_modules, use_rslora), f, indent=2)
        f.write("\n")
    tensors = {}
    for path, (a, b) in adapters.items():
        tensors[f"{PEFT_PREFIX}{path}.lora_A.weight"] = a
        tensors[f"{PEFT_PREFIX}{path}.lora_B.weight"] = b
    write_safetensors(os.path.join(directory, ADAPTER_WEIGHTS), tensors, {"format": "pt"})


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def drop_tensor(directory, name):
    """Rewrites the safetensors file of `directory` that holds `name` without it, every other
    tensor's bytes and dtype unchanged (the index, if any, still lists it)."""
    for file in sorted(os.listdir(directory)):
        if not file.endswith(".safetensors"):
            continue
        path = os.path.join(directory, file)
        header, metadata, data_start = read_safetensors_header(path)
        if name not in header:
            continue
        with open(path, "rb") as f:
            f.seek(data_start)
            data = f.read()
        out, blobs, offset = {}, [], 0
        if metadata:
            out["__metadata__"] = metadata
        for key, info in header.items():
            if key == name:
                continue
            begin, end = info["data_offsets"]
            out[key] = {"dtype": info["dtype"], "shape": info["shape"],
                        "data_offsets": [offset, offset + end - begin]}
            blobs.append(data[begin:end])
            offset += end - begin
        text = json.dumps(out, separators=(",", ":")).encode("utf-8")
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for blob in blobs:
                f.write(blob)
        return
    raise CheckpointError(f"{directory}: no tensor {name!r}")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="write a random Llama checkpoint in Hugging Face layout")
    m.add_argument("directory")
    m.add_argument("--layers", type=int, required=True)
    m.add_argument("--dim", type=int, required=True)
    m.add_argument("--heads", type=int, required=True)
    m.add_argument("--kv-heads", type=int, required=True)
    m.add_argument("--ffn", type=int, required=True)
    m.add_argument("--vocab", type=int, required=True)
    m.add_argument("--rope-theta", type=float, default=10000.0)
    m.add_argument("--rope-scaling", choices=["llama3"], default=None)
    m.add_argument("--rope-factor", type=float, default=8.0)
    m.add_argument("--rope-low-freq-factor", type=float, default=1.0)
    m.add_argument("--rope-high-freq-factor", type=float, default=4.0)
    m.add_argument("--rope-original-max-position", type=int, default=8192)
    m.add_argument("--rms-norm-eps", type=float, default=1e-5)
    m.add_argument("--tie", action="store_true", help="tie_word_embeddings (no lm_head.weight)")
    m.add_argument("--dtype", choices=sorted(TORCH_DTYPES), default="float32")
    m.add_argument("--shards", type=int, default=1)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--max-position", type=int, default=2048)
    a = sub.add_parser("make-adapter", help="write a random PEFT LoRA adapter for a checkpoint")
    a.add_argument("directory")
    a.add_argument("--checkpoint", required=True)
    a.add_argument("--r", type=int, default=4)
    a.add_argument("--alpha", type=float, default=8.0)
    a.add_argument("--targets", default="q_proj,v_proj", help="comma-separated HF module names")
    a.add_argument("--seed", type=int, default=0)
    d = sub.add_parser("drop-tensor", help="remove one tensor from a checkpoint's file")
    d.add_argument("directory")
    d.add_argument("name")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.command == "make":
            scaling = None
            if args.rope_scaling == "llama3":
                scaling = {"factor": args.rope_factor,
                           "low_freq_factor": args.rope_low_freq_factor,
                           "high_freq_factor": args.rope_high_freq_factor,
                           "original_max_position_embeddings": args.rope_original_max_position}
            config = llama_config(args.layers, args.dim, args.heads, args.kv_heads, args.ffn,
                                  args.vocab, args.rope_theta, scaling, args.tie, args.dtype,
                                  args.max_position, args.rms_norm_eps)
            write_checkpoint(args.directory, config, random_weights(config, args.seed),
                             args.shards)
        elif args.command == "drop-tensor":
            drop_tensor(args.directory, args.name)
        else:
            with open(os.path.join(args.checkpoint, "config.json")) as f:
                config = json.load(f)
            targets = [t.strip() for t in args.targets.split(",") if t.strip()]
            adapters = random_adapter(config, args.r, targets, args.seed)
            write_adapter(args.directory, adapters, args.r, args.alpha, targets)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
