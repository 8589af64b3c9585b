#!/usr/bin/env python3
"""The CPU-runnable parts of the device check: the spec -> transformers/peft mapping of
scripts/reference/hf_peft_lora_step.py and scripts/reference/device_check_summary.py; the
reference's --profile-steps (its parsing, and the tables of scripts/reference/profile_tables.py,
ftbench's report/metrics/profile_table.cpp in Python, on made-up events) and
scripts/profile-side-by-side.py; the reference's activation-checkpointing policies (the spec's
values, --checkpointing, the ops selective keeps). None needs torch, transformers or peft but
CheckpointingWithTorch, which runs the policies on a tiny Llama and is skipped without them. Run
by ctest (FTBENCH_BINARY: the ftbench launcher)."""

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "reference"))

import device_check_summary  # noqa: E402
import hf_peft_lora_step as ref  # noqa: E402
import profile_tables as pt  # noqa: E402

SIDE_BY_SIDE = os.path.join(ROOT, "scripts", "profile-side-by-side.py")


def validated(spec="configs/llama3.1-8b-lora-synthetic.yaml", *overrides):
    args = [os.environ["FTBENCH_BINARY"], "validate", spec, "--json"]
    for o in overrides:
        args += ["--set", o]
    return json.loads(subprocess.check_output(args, cwd=ROOT))


class Mapping(unittest.TestCase):
    def test_llama31_8b_as_transformers_and_peft_name_it(self):
        p = ref.plan(validated()["spec"])
        self.assertEqual(p["config"], {
            "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
            "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
            "hidden_act": "silu",
            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192}})
        self.assertEqual(p["lora"], {"r": 16, "lora_alpha": 32.0, "lora_dropout": 0.05,
                                     "target_modules": ["q_proj", "v_proj", "o_proj"],
                                     "bias": "none", "task_type": "CAUSAL_LM"})
        # The adapters in bf16, as torchtune's recipe has them in the published run's config.
        self.assertEqual((p["dtype"], p["adapter_dtype"], p["gradient_checkpointing"]),
                         ("bfloat16", "bfloat16", True))
        fp32 = ref.plan(validated("configs/llama3.1-8b-lora-synthetic.yaml",
                                  "lora.dtype=fp32")["spec"])
        self.assertEqual(fp32["adapter_dtype"], "float32")
        self.assertEqual((p["micro_batch_size"], p["grad_accum_steps"], p["seq_len"]), (4, 4, 2048))
        self.assertEqual(p["optimizer"], {"lr": 0.0003, "betas": [0.9, 0.999], "eps": 1e-08,
                                          "weight_decay": 0.01})

    def test_transformers_5_takes_one_rope_parameters_dict(self):
        kw = ref.plan(validated()["spec"])["config"]
        self.assertEqual(ref.config_for_version(kw, 4), kw)
        v5 = ref.config_for_version(kw, 5)
        self.assertNotIn("rope_theta", v5)
        self.assertNotIn("rope_scaling", v5)
        self.assertEqual(v5["rope_parameters"], {
            "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
        tiny = ref.plan(validated("configs/ci-tiny.yaml")["spec"])["config"]
        self.assertEqual(ref.config_for_version(tiny, 5)["rope_parameters"],
                         {"rope_type": "default", "rope_theta": tiny["rope_theta"]})

    def test_every_target_maps_and_bad_specs_are_named(self):
        spec = validated("configs/ci-tiny.yaml")["spec"]
        self.assertEqual(ref.plan(spec)["lora"]["target_modules"],
                         ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                          "down_proj"])
        spec["lora"]["targets"] = ["q", "router"]
        with self.assertRaisesRegex(ref.SpecError, r"lora.targets: no transformers module for \['router'\]"):
            ref.plan(spec)
        spec = validated("configs/ci-tiny.yaml")["spec"]
        spec["model"]["dim"] = 0
        with self.assertRaisesRegex(ref.SpecError, "model.dim: expected a positive integer, found 0"):
            ref.plan(spec)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("{not json")
            f.flush()
            self.assertEqual(ref.main(["--spec", f.name, "--plan"]), 2)


class Summary(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(ROOT, "tests/fixtures/reports/h100-reference.json")) as f:
            self.report = json.load(f)
        # A reference 3 s per step of the same 32,768 tokens.
        self.reference = {"tokens_per_step": 32768, "mean_step_seconds": 3.0,
                          "tokens_per_second": 32768 / 3.0, "implementation": "hf"}

    def test_ratio_and_mfu_of_both(self):
        s = device_check_summary.summarize(self.report, self.reference)
        self.assertEqual(s["peak_tflops"], 989.0)
        self.assertAlmostEqual(s["ratio"], 0.2156460396718703, places=15)
        self.assertEqual(len(s["mfu"]), 1)
        self.assertEqual(s["mfu"][0]["formula"], "lora_frozen_base")
        # The report's own MFU for ftbench; its FLOPs per step over 3 s for the reference.
        self.assertAlmostEqual(s["mfu"][0]["ftbench_mfu"], 0.07649788217941599, places=15)
        self.assertAlmostEqual(s["mfu"][0]["reference_mfu"], 0.061327054026726426, places=15)
        self.assertFalse(s["mfu_target_met"])
        self.assertFalse(s["ratio_target_met"])
        text = device_check_summary.markdown(s)
        self.assertIn("ratio ftbench / reference: 0.216x (target >= 1.0x: NOT met)", text)
        self.assertIn("MFU lora_frozen_base: ftbench 7.6 %, reference 6.1 %", text)

    def test_a_different_batch_is_refused(self):
        self.reference["tokens_per_step"] = 16384
        with self.assertRaisesRegex(ValueError, "different batches"):
            device_check_summary.summarize(self.report, self.reference)
        s = device_check_summary.summarize(self.report, {**self.reference, "tokens_per_step": 32768},
                                           peak_tflops=100.0)
        self.assertAlmostEqual(s["mfu"][0]["ftbench_mfu"], 0.7565640547544241, places=15)
        self.assertTrue(s["mfu_target_met"])


def bad_steps_message(text):
    return ("--profile-steps: expected N or N,M (whole numbers of steps, 1 <= N <= M <= "
            f'1000000000), found "{text}"')


class ProfileSteps(unittest.TestCase):
    def test_one_step_or_a_range_as_ftbench_takes_them(self):
        self.assertEqual(ref.parse_profile_steps("5"), (5, 5))
        self.assertEqual(ref.parse_profile_steps("5,7"), (5, 7))
        self.assertEqual(ref.parse_profile_steps("1000000000"), (1000000000, 1000000000))

    def test_anything_else_is_refused_with_ftbenchs_words(self):
        # The list of ftbench's ProfileSteps.AnythingElseIsRefusedWithWhatWasFound, and more.
        for bad in ("", "0", "-1", "+3", "7,5", "5,", ",5", "5,6,7", "5 ,7", "1e3", "2.5",
                    "1000000001", "99999999999999999999", "a", " 5", "\u0665", "0,3"):
            with self.subTest(bad=bad), self.assertRaises(ValueError) as caught:
                ref.parse_profile_steps(bad)
            self.assertEqual(str(caught.exception), bad_steps_message(bad))
        with self.assertRaises(ValueError) as caught:
            ref.parse_profile_steps("5\n")
        self.assertEqual(str(caught.exception), bad_steps_message("5\\x0A"))

    def test_the_window_is_held_to_the_runs_steps(self):
        self.assertIsNone(ref.profile_window(None, None, 12))
        self.assertEqual(ref.profile_window("2,12", None, 12), (2, 12))
        with self.assertRaises(ValueError) as caught:
            ref.profile_window("2,13", None, 12)
        self.assertEqual(str(caught.exception), "--profile-steps 2,13: the run has 12 optimizer "
                                                "steps; profile steps from 1 to 12")
        with self.assertRaisesRegex(ValueError, "^--profile-out: needs --profile-steps$"):
            ref.profile_window(None, "x", 12)

    def test_profiled_steps_leave_the_timing_unless_none_would_be_left(self):
        self.assertEqual(ref.measured_steps(6, 2, None), ([3, 4, 5, 6], 0))
        self.assertEqual(ref.measured_steps(6, 2, (4, 5)), ([3, 6], 2))
        self.assertEqual(ref.measured_steps(6, 2, (1, 3)), ([4, 5, 6], 1))  # one in the warm-up
        self.assertEqual(ref.measured_steps(4, 1, (2, 4)), ([2, 3, 4], 0))  # none would be left

    def test_the_files_go_beside_the_out_json(self):
        self.assertEqual(ref.profile_stem("out/r.json"), "out/r")
        self.assertEqual(ref.profile_stem("out/r"), "out/r")
        self.assertEqual(ref.profile_stem(".json"), ".json")
        self.assertEqual(ref.profile_stem(None), "hf-peft")
        self.assertEqual(pt.profile_paths("out/r")["ops_table"], "out/r.profile-ops.csv")

    def test_bad_flags_end_the_plan_with_exit_2_and_the_script_needs_no_torch(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(validated("configs/ci-tiny.yaml"), f)
            f.flush()
            for flags, message in ((["--profile-steps", "0"], bad_steps_message("0")),
                                   (["--steps", "4", "--warmup", "1", "--profile-steps", "3,5"],
                                    "--profile-steps 3,5: the run has 4 optimizer steps; "
                                    "profile steps from 1 to 4")):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    self.assertEqual(ref.main(["--spec", f.name, "--plan"] + flags), 2)
                self.assertEqual(err.getvalue(), f"error: {message}\n")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(ref.main(["--spec", f.name, "--plan", "--profile-steps", "4,5"]),
                                 0)
        probe = ("import sys; sys.path.insert(0, sys.argv[1]); import hf_peft_lora_step; "
                 "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                 "('torch', 'transformers', 'peft')))")
        self.assertEqual(subprocess.check_output(
            [sys.executable, "-c", probe, os.path.join(ROOT, "scripts", "reference")],
            text=True), "[]\n")


AUTO_MESSAGE = ("model.activation_checkpointing: auto is resolved by ftbench's memory plan, which "
                "this script has not got: pass --checkpointing full|selective|none, the policy "
                "ftbench chose (its report's execution.activation_checkpointing)")


def bad_checkpointing_message(found):
    return ("model.activation_checkpointing: expected full, selective, none, auto or a boolean, "
            f"found {found}")


def report_spec():
    """The resolved spec of a report fixture (llama3.1-8b, activation_checkpointing: true): a spec
    as `ftbench validate --json` writes it, without the ftbench binary."""
    with open(os.path.join(ROOT, "tests/fixtures/reports/h100-reference.json")) as f:
        return json.load(f)["spec"]


class FakePacket:
    """A stand-in for torch's OpOverloadPacket (torch.ops.aten.NAME): hashable, equal only to
    itself."""

    def __init__(self, name):
        self.name = name


def overload(packet, overload_name="default"):
    """A stand-in for torch's OpOverload (torch.ops.aten.NAME.OVERLOAD), as a policy_fn gets it."""
    return types.SimpleNamespace(overloadpacket=packet, name=overload_name)


FAKE_POLICY = types.SimpleNamespace(MUST_SAVE="must_save", PREFER_RECOMPUTE="prefer_recompute")


class Checkpointing(unittest.TestCase):
    def test_every_value_and_the_booleans(self):
        for value, policy in ((True, "full"), (False, "none"), ("full", "full"),
                              ("selective", "selective"), ("none", "none")):
            with self.subTest(value=value):
                self.assertEqual(ref.checkpointing_policy(value), policy)
        spec = report_spec()
        self.assertIs(spec["model"]["activation_checkpointing"], True)
        for value, policy, recomputes in ((True, "full", True), (False, "none", False),
                                          ("full", "full", True),
                                          ("selective", "selective", True),
                                          ("none", "none", False)):
            spec["model"]["activation_checkpointing"] = value
            p = ref.plan(spec)
            self.assertEqual((p["activation_checkpointing"], p["gradient_checkpointing"]),
                             (policy, recomputes))
        del spec["model"]["activation_checkpointing"]
        self.assertEqual(ref.plan(spec)["activation_checkpointing"], "none")

    def test_the_flag_overrides_the_spec(self):
        for value in (True, False, "full", "selective", "none", "auto"):
            for flag in ("full", "selective", "none"):
                with self.subTest(value=value, flag=flag):
                    self.assertEqual(ref.checkpointing_policy(value, flag), flag)
        spec = report_spec()
        spec["model"]["activation_checkpointing"] = "auto"
        p = ref.plan(spec, "selective")
        self.assertEqual((p["activation_checkpointing"], p["gradient_checkpointing"]),
                         ("selective", True))
        p = ref.plan(spec, "none")
        self.assertEqual((p["activation_checkpointing"], p["gradient_checkpointing"]),
                         ("none", False))

    def test_auto_without_the_flag_and_bad_values_are_refused(self):
        with self.assertRaises(ref.SpecError) as caught:
            ref.checkpointing_policy("auto")
        self.assertEqual(str(caught.exception), AUTO_MESSAGE)
        for bad, found in (("partial", "'partial'"), ("Full", "'Full'"), ("", "''"),
                           ("true", "'true'"), (1, "1"), (0, "0"), (None, "None"),
                           (["full"], "['full']")):
            for flag in (None, "full"):  # the flag does not excuse a bad spec
                with self.subTest(bad=bad, flag=flag), self.assertRaises(ref.SpecError) as caught:
                    ref.checkpointing_policy(bad, flag)
                self.assertEqual(str(caught.exception), bad_checkpointing_message(found))

    def test_the_plan_ends_with_exit_2_and_the_message_or_takes_the_flag(self):
        spec = report_spec()
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            def main(value, *flags):
                spec["model"]["activation_checkpointing"] = value
                f.seek(0)
                f.truncate()
                json.dump({"spec": spec}, f)
                f.flush()
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                    rc = ref.main(["--spec", f.name, "--plan", *flags])
                return rc, out.getvalue(), err.getvalue()

            self.assertEqual(main("auto"), (2, "", f"error: {f.name}: {AUTO_MESSAGE}\n"))
            self.assertEqual(main("sometimes", "--checkpointing", "full"),
                             (2, "", f"error: {f.name}: "
                                     f"{bad_checkpointing_message(repr('sometimes'))}\n"))
            rc, out, err = main("auto", "--checkpointing", "selective")
            self.assertEqual((rc, err), (0, ""))
            p = json.loads(out)
            self.assertEqual((p["activation_checkpointing"], p["gradient_checkpointing"]),
                             ("selective", True))
            rc, out, err = main(True, "--checkpointing", "none")
            self.assertEqual((rc, err), (0, ""))
            p = json.loads(out)
            self.assertEqual((p["activation_checkpointing"], p["gradient_checkpointing"]),
                             ("none", False))
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as caught:
                ref.main(["--spec", f.name, "--plan", "--checkpointing", "auto"])
            self.assertEqual(caught.exception.code, 2)
            # (Python 3.12.8 stopped quoting the choices that follow.)
            self.assertIn("argument --checkpointing: invalid choice: 'auto' (choose from ",
                          err.getvalue())

    def test_selective_saves_matrix_products_and_attention_only(self):
        self.assertEqual(ref.SELECTIVE_SAVED_OPS, (
            "mm", "addmm", "bmm", "baddbmm", "linear", "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
            "_scaled_dot_product_flash_attention_for_cpu"))
        # An older torch: no cuDNN or CPU flash attention, no linear among the ops it dispatches.
        present = ("mm", "addmm", "bmm", "baddbmm", "_scaled_dot_product_flash_attention",
                   "_scaled_dot_product_efficient_attention", "add", "mul", "silu", "_softmax",
                   "rsqrt", "matmul", "scaled_dot_product_attention")
        aten = types.SimpleNamespace(**{name: FakePacket(name) for name in present})
        saved = ref.saved_op_packets(aten)
        self.assertEqual(sorted(saved), ["_scaled_dot_product_efficient_attention",
                                         "_scaled_dot_product_flash_attention", "addmm",
                                         "baddbmm", "bmm", "mm"])
        self.assertTrue(all(saved[name] is getattr(aten, name) for name in saved))
        policy_fn = ref.selective_policy(saved.values(), FAKE_POLICY)
        decisions = {f"{name}.{o}": policy_fn(None, overload(getattr(aten, name), o), "x", k=1)
                     for name in present for o in ("default", "out")}
        self.assertEqual(sorted(k for k, v in decisions.items() if v == "must_save"), [
            "_scaled_dot_product_efficient_attention.default",
            "_scaled_dot_product_efficient_attention.out",
            "_scaled_dot_product_flash_attention.default",
            "_scaled_dot_product_flash_attention.out", "addmm.default", "addmm.out",
            "baddbmm.default", "baddbmm.out", "bmm.default", "bmm.out", "mm.default", "mm.out"])
        self.assertEqual(sorted(k for k, v in decisions.items() if v == "prefer_recompute"), [
            "_softmax.default", "_softmax.out", "add.default", "add.out", "matmul.default",
            "matmul.out", "mul.default", "mul.out", "rsqrt.default", "rsqrt.out",
            "scaled_dot_product_attention.default", "scaled_dot_product_attention.out",
            "silu.default", "silu.out"])
        # An op of the same name from another namespace is not saved: packets are compared.
        self.assertEqual(policy_fn(None, overload(FakePacket("mm"))), "prefer_recompute")

    def test_checkpoint_arguments_of_each_policy(self):
        def create(policy_fn):
            return ("contexts", policy_fn)

        checkpoint = types.SimpleNamespace(create_selective_checkpoint_contexts=create,
                                           CheckpointPolicy=FAKE_POLICY)
        aten = types.SimpleNamespace(mm=FakePacket("mm"), add=FakePacket("add"))
        self.assertIsNone(ref.checkpoint_kwargs("none", checkpoint, aten, "2.15.0"))
        self.assertEqual(ref.checkpoint_kwargs("full", checkpoint, aten, "2.15.0"),
                         {"use_reentrant": False})
        kwargs = ref.checkpoint_kwargs("selective", checkpoint, aten, "2.15.0")
        self.assertEqual(sorted(kwargs), ["context_fn", "use_reentrant"])
        self.assertIs(kwargs["use_reentrant"], False)
        contexts, policy_fn = kwargs["context_fn"]()
        self.assertEqual(contexts, "contexts")
        self.assertEqual((policy_fn(None, overload(aten.mm)), policy_fn(None, overload(aten.add))),
                         ("must_save", "prefer_recompute"))
        old = types.SimpleNamespace(checkpoint=lambda *a, **k: None)  # torch 2.3's module
        with self.assertRaises(ref.UnsupportedError) as caught:
            ref.checkpoint_kwargs("selective", old, aten, "2.3.1")
        self.assertEqual(str(caught.exception),
                         "activation checkpointing selective: needs torch >= 2.4 "
                         "(torch.utils.checkpoint.create_selective_checkpoint_contexts), found "
                         "torch 2.3.1; pass --checkpointing full or none")
        self.assertEqual(ref.checkpoint_kwargs("full", old, aten, "2.3.1"),
                         {"use_reentrant": False})


def has_modules(*names):
    return all(importlib.util.find_spec(name) is not None for name in names)


def tiny_spec():
    """A 2-layer Llama of hidden size 32 with LoRA on every projection, fp32, no dropout."""
    spec = report_spec()
    spec["model"].update(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=64, vocab_size=128,
                         max_seq_len=64, rope_scaling=None, dtype="fp32")
    spec["lora"].update(rank=4, alpha=8.0, dropout=0.0, dtype="fp32",
                        targets=["q", "k", "v", "o", "gate", "up", "down"])
    spec["data"]["seq_len"] = 16
    spec["train"].update(micro_batch_size=2, grad_accum_steps=1, seed=7)
    return spec


@unittest.skipUnless(has_modules("torch", "transformers", "peft"),
                     "needs torch, transformers and peft (the pinned venv, scripts/python-env.sh)")
class CheckpointingWithTorch(unittest.TestCase):
    """The policies on a real tiny model, on the CPU with one thread."""

    @classmethod
    def setUpClass(cls):
        import torch
        import transformers
        cls.torch = torch
        cls.threads = torch.get_num_threads()
        torch.set_num_threads(1)
        transformers.logging.set_verbosity_error()  # "use_cache=True is incompatible ..."

    @classmethod
    def tearDownClass(cls):
        cls.torch.set_num_threads(cls.threads)

    def test_this_torchs_ops_as_the_policy_decides_them(self):
        torch = self.torch
        kwargs = ref.checkpoint_kwargs("selective", torch.utils.checkpoint, torch.ops.aten,
                                       torch.__version__)
        policy_fn = kwargs["context_fn"].args[0]
        must_save = torch.utils.checkpoint.CheckpointPolicy.MUST_SAVE
        aten = torch.ops.aten
        decisions = {}
        for name, overload_name in (
                ("mm", "default"), ("mm", "out"), ("addmm", "default"), ("bmm", "default"),
                ("baddbmm", "default"), ("linear", "default"),
                ("_scaled_dot_product_flash_attention", "default"),
                ("_scaled_dot_product_efficient_attention", "default"),
                ("_scaled_dot_product_cudnn_attention", "default"),
                ("_scaled_dot_product_flash_attention_for_cpu", "default"),
                ("scaled_dot_product_attention", "default"), ("matmul", "default"),
                ("mul", "Tensor"), ("add", "Tensor"), ("silu", "default"), ("rsqrt", "default"),
                ("pow", "Tensor_Scalar"), ("mean", "dim"), ("_softmax", "default"),
                ("embedding", "default"), ("_to_copy", "default"), ("t", "default"),
                ("view", "default"), ("cat", "default"), ("neg", "default")):
            op = getattr(getattr(aten, name, None), overload_name, None)
            if op is not None:  # this torch has it
                decisions[f"{name}.{overload_name}"] = policy_fn(None, op) == must_save
        saved = {n for n, save in decisions.items() if save}
        expected = {"mm.default", "mm.out", "addmm.default", "bmm.default", "baddbmm.default",
                    "linear.default", "_scaled_dot_product_flash_attention.default",
                    "_scaled_dot_product_efficient_attention.default",
                    "_scaled_dot_product_cudnn_attention.default",
                    "_scaled_dot_product_flash_attention_for_cpu.default"}
        self.assertEqual(saved, expected & set(decisions))
        self.assertIn("mm.default", decisions)
        self.assertGreater(len(decisions) - len(saved), 10)

    def step(self, policy):
        """One forward and backward of the tiny model: (loss, LoRA gradients by name, how many
        times each aten op ran in the backward)."""
        from torch.utils._python_dispatch import TorchDispatchMode  # counting only

        torch = self.torch

        class CountOps(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.calls = {}

            def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
                name = func.overloadpacket.__name__
                self.calls[name] = self.calls.get(name, 0) + 1
                return func(*args, **(kwargs or {}))

        p = ref.plan(tiny_spec(), policy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # peft asks is_gradient_checkpointing
            model, config, trainable = ref.build_model(p, torch.device("cpu"))
        # PEFT starts every B at zero; random adapters give A gradients too.
        gen = torch.Generator().manual_seed(3)
        with torch.no_grad():
            for q in trainable:
                q.copy_(0.1 * torch.randn(q.shape, generator=gen))
        ids = torch.randint(0, config.vocab_size, (2, 16), generator=gen)
        loss = ref.causal_lm_loss(model, model(input_ids=ids).logits, ids, config.vocab_size)
        counted = CountOps()
        with counted:
            loss.backward()
        grads = {n: q.grad for n, q in model.named_parameters() if q.requires_grad}
        return loss.item(), grads, counted.calls

    def test_selective_gives_nones_loss_and_gradients_recomputing_all_but_products(self):
        steps = {policy: self.step(policy) for policy in ("none", "selective", "full")}
        loss, grads, calls = steps["none"]
        self.assertEqual(len(grads), 2 * 7 * 2)  # A and B of 7 projections in 2 layers
        self.assertGreater(min(g.abs().max().item() for g in grads.values()), 0)
        for policy in ("selective", "full"):
            with self.subTest(policy=policy):
                other_loss, other_grads, _ = steps[policy]
                self.assertLessEqual(abs(other_loss - loss), 1e-6)
                self.assertEqual(sorted(other_grads), sorted(grads))
                for name, grad in grads.items():
                    self.assertLessEqual((other_grads[name] - grad).abs().max().item(), 1e-6,
                                         name)
        # In the backward: each checkpointed layer's forward replayed (one SiLU a layer), its
        # attention and its products again under full only.
        replayed = {policy: (c.get("silu", 0),
                             c.get("_scaled_dot_product_flash_attention_for_cpu", 0))
                    for policy, (_, _, c) in steps.items()}
        self.assertEqual(replayed, {"none": (0, 0), "selective": (2, 0), "full": (2, 2)})
        self.assertGreater(steps["full"][2]["mm"], steps["selective"][2]["mm"])

    def test_the_run_records_the_policy(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"spec": tiny_spec()}, f)
            f.flush()
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # as in step()
                rc = ref.main(["--spec", f.name, "--device", "cpu", "--threads", "1", "--steps",
                               "2", "--warmup", "1", "--checkpointing", "selective"])
        self.assertEqual(rc, 0)
        result = json.loads(out.getvalue())
        self.assertEqual((result["activation_checkpointing"], result["gradient_checkpointing"]),
                         ("selective", True))
        self.assertEqual(len(result["losses"]), 2)


def op(name, thread, start, duration, flops=0, input_bytes=0):
    return pt.ProfileEvent(name, pt.OP, thread, start, duration, flops, input_bytes)


def scope(name, thread, start, duration):
    return pt.ProfileEvent(name, pt.SCOPE, thread, start, duration, 0, 0)


def kernel(name, start, duration, transfer=False):
    return pt.ProfileEvent(name, pt.TRANSFER if transfer else pt.KERNEL, 7, start, duration)


class ProfileTables(unittest.TestCase):
    """ftbench's tests/report/metrics/profile_table_test.cpp, on the Python port: the same events, the
    same figures and the same CSV text."""

    def test_dtype_sizes_and_input_bytes(self):
        self.assertEqual(pt.profiler_dtype_bytes("c10::BFloat16"), 2)
        self.assertEqual(pt.profiler_dtype_bytes("long int"), 8)
        self.assertEqual(pt.profiler_dtype_bytes("Scalar"), 0)
        self.assertIsNone(pt.profiler_dtype_bytes("c10::qint8"))
        self.assertEqual(pt.input_bytes_of([[2048, 256], [], [], [256]],
                                           ["float", "Scalar", "c10::BFloat16", "long int"]),
                         2048 * 256 * 4 + 2 + 256 * 8)
        self.assertIsNone(pt.input_bytes_of([[4]], ["c10::qint8"]))

    def test_self_time_excludes_what_an_op_calls(self):
        t = pt.tabulate_profile([
            op("aten::linear", 1, 0, 100, 0, 1000), op("aten::matmul", 1, 10, 80, 0, 1000),
            op("aten::mm", 1, 20, 60, 4000, 1000), op("aten::add", 1, 100, 30, 0, 64),
            op("aten::mm", 2, 0, 50, 2000, 500)])
        self.assertEqual([(r["name"], r["calls"], r["self_ns"], r["total_ns"]) for r in t["ops"]],
                         [("aten::mm", 2, 110, 110), ("aten::add", 1, 30, 30),
                          ("aten::linear", 1, 20, 100), ("aten::matmul", 1, 20, 80)])
        self.assertEqual((t["ops"][0]["flops"], t["ops"][0]["input_bytes"]), (6000, 1500))
        self.assertEqual((t["op_self_ns"], t["flops"]), (180, 6000))
        self.assertEqual((t["leaf_input_bytes"], t["leaf_calls_without_bytes"]), (1564, 0))
        self.assertEqual((t["kernels"], t["attention_ops"]), ([], []))

    def test_a_call_ending_just_after_its_caller_is_still_inside_it(self):
        t = pt.tabulate_profile([op("aten::linear", 1, 0, 100000),
                                 op("aten::mm", 1, 10000, 91000),
                                 op("aten::add", 1, 101000, 5000)])
        self.assertEqual([(r["name"], r["self_ns"]) for r in t["ops"]],
                         [("aten::mm", 91000), ("aten::linear", 10000), ("aten::add", 5000)])

    def test_views_read_no_bytes(self):
        t = pt.tabulate_profile([op("aten::narrow", 1, 0, 10, 0, 1000000),
                                 op("aten::as_strided", 1, 20, 10, 0, 1000000),
                                 op("aten::add", 1, 40, 10, 0, 64)])
        self.assertEqual(t["leaf_input_bytes"], 64)
        self.assertEqual(len(t["ops"]), 3)

    def test_an_op_calling_itself_counts_once_in_its_total(self):
        t = pt.tabulate_profile([op("aten::copy_", 1, 0, 100), op("aten::copy_", 1, 10, 50)])
        self.assertEqual([(r["calls"], r["self_ns"], r["total_ns"]) for r in t["ops"]],
                         [(2, 100, 100)])

    def test_scopes_nest_through_ops_and_keep_their_own_time(self):
        t = pt.tabulate_profile([
            scope("forward", 1, 0, 100), op("aten::mm", 1, 10, 80),
            scope("backward", 1, 100, 300), op("CppNode<UnitFunction>", 1, 150, 200),
            scope("recompute", 1, 160, 140), op("aten::mm", 1, 170, 80),
            scope("optimizer", 1, 400, 50)])
        self.assertEqual([(s["name"], s["total_ns"], s["self_ns"]) for s in t["scopes"]],
                         [("forward", 100, 100), ("backward", 300, 160),
                          ("recompute", 140, 140), ("optimizer", 50, 50)])
        self.assertEqual([(r["name"], r["self_ns"]) for r in t["ops"]],
                         [("aten::mm", 160), ("CppNode<UnitFunction>", 60)])
        record = pt.profile_record(t, (2, 3), False, pt.profile_paths("r"))
        self.assertEqual(record["scopes"][1], {"name": "backward", "calls": 1,
                                               "seconds": 300e-9, "self_seconds": 160e-9})
        self.assertEqual((record["first_step"], record["last_step"], record["ops_table"]),
                         (2, 3, "r.profile-ops.csv"))

    def test_kernels_and_attention_ops(self):
        t = pt.tabulate_profile([
            op("aten::_scaled_dot_product_flash_attention", 1, 0, 10, 0, None),
            op("aten::scaled_dot_product_attention", 1, 0, 20),
            kernel("flash_fwd_kernel", 5, 30),
            kernel("Memcpy HtoD (Pageable -> Device)", 40, 10, True),
            kernel("flash_fwd_kernel", 60, 30),
            # Autograd's nodes around attention are not attention ops: the ATen op inside them is.
            op("torch::autograd::CppNode<ftbench::model::ReplayAttentionFunction>", 1, 100, 5),
            op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", 1,
               110, 5)])
        self.assertEqual(t["attention_ops"], ["aten::_scaled_dot_product_flash_attention",
                                              "aten::scaled_dot_product_attention"])
        self.assertEqual((t["leaf_input_bytes"], t["leaf_calls_without_bytes"]), (0, 1))
        self.assertEqual(t["kernel_ns"], 70)
        self.assertEqual(pt.kernel_table_csv(t),
                         "name,kind,calls,total_ms,share,mean_us\n"
                         "flash_fwd_kernel,kernel,2,0.000,0.8571,0.030\n"
                         "Memcpy HtoD (Pageable -> Device),transfer,1,0.000,0.1429,0.010\n")

    def test_op_csv_rates_over_self_time(self):
        t = pt.tabulate_profile([op("aten::mm", 1, 0, 2_000_000, 4_000_000_000, 8_000_000),
                                 op('a,"b"', 1, 2_000_000, 2_000_000, 0, None)])
        self.assertEqual(pt.op_table_csv(t),
                         "name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,"
                         "input_gb_per_s\n"
                         '"a,""b""",1,2.000,2.000,0.5000,0,,,\n'
                         "aten::mm,1,2.000,2.000,0.5000,4000000000,2,8000000,4\n")

    def test_torchs_raw_events_as_ftbench_reads_them(self):
        def event(name, activity, device="CPU", scope=0, thread=1, start=0, duration=10,
                  flops=0, shapes=(), dtypes=(), stream=3):
            return types.SimpleNamespace(
                name=lambda: name, activity_type=lambda: activity,
                device_type=lambda: types.SimpleNamespace(name=device), scope=lambda: scope,
                start_thread_id=lambda: thread, start_ns=lambda: start,
                duration_ns=lambda: duration, flops=lambda: flops, shapes=lambda: list(shapes),
                dtypes=lambda: list(dtypes), device_resource_id=lambda: stream)
        events = pt.events_of_kineto([
            event("ftbench::forward", "user_annotation", scope=7, duration=100),
            event("aten::mm", "cpu_op", start=5, duration=50, flops=128,
                  shapes=[[2, 4], [4, 8]], dtypes=["float", "float"]),
            event("MmBackward0", "cpu_op", scope=1, start=60),  # no shapes: unknown bytes
            event("profiler::_record_function_enter_new", "cpu_op", start=1),
            event("overhead", "overhead"),
            event("cudaLaunchKernel", "cuda_runtime", start=70, duration=5),
            event("ftbench::forward", "gpu_user_annotation", device="CUDA"),
            event("gemm", "kernel", device="CUDA", start=80, stream=7),
            event("Memset (Device)", "gpu_memset", device="CUDA", start=90, stream=7),
        ])
        self.assertEqual(events, [
            pt.ProfileEvent("ftbench::forward", pt.SCOPE, 1, 0, 100, 0, None),
            pt.ProfileEvent("aten::mm", pt.OP, 1, 5, 50, 128, 2 * 4 * 4 + 4 * 8 * 4),
            pt.ProfileEvent("MmBackward0", pt.OP, 1, 60, 10, 0, None),
            pt.ProfileEvent("cudaLaunchKernel", pt.OP, 1, 70, 5, 0, None),
            pt.ProfileEvent("gemm", pt.KERNEL, 7, 80, 10, 0, None),
            pt.ProfileEvent("Memset (Device)", pt.TRANSFER, 7, 90, 10, 0, None)])


OPS_HEADER = "name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,input_gb_per_s"


class SideBySide(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text).lstrip("\n"))
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SIDE_BY_SIDE, *args], capture_output=True,
                              text=True)

    def test_ops_and_kernels_joined_by_name(self):
        left = self.write("ftbench.profile-ops.csv", f"""
            {OPS_HEADER}
            aten::mm,4,6.000,6.500,0.6000,8000000000,1.333,1000,0.0001667
            "a,""b""|c",1,3.000,3.000,0.3000,0,,,
            aten::add,2,1.000,1.000,0.1000,0,,64,0.064
            """)
        right = self.write("hf.profile-ops.csv", f"""
            {OPS_HEADER}
            aten::mm,6,4.500,4.500,0.5455,6000000000,1.333,1000,0.0002222
            aten::mul,3,2.000,2.000,0.2424,0,,,
            aten::add,2,1.500,1.500,0.1818,0,,64,0.04267
            aten::add_,1,0.250,0.250,0.0303,0,,,
            """)
        left_k = self.write("ftbench.profile-kernels.csv", """
            name,kind,calls,total_ms,share,mean_us
            gemm_a,kernel,4,2.000,0.8000,500.000
            Memcpy HtoD (Pageable -> Device),transfer,2,0.500,0.2000,250.000
            """)
        right_k = self.write("hf.profile-kernels.csv", """
            name,kind,calls,total_ms,share,mean_us
            gemm_b,kernel,4,3.000,0.8571,750.000
            Memcpy HtoD (Pageable -> Device),transfer,1,0.500,0.1429,500.000
            """)
        done = self.run_script("--left", f"ftbench={left}", "--right", f"hf={right}", "--top", "3",
                               "--left-kernels", left_k, "--right-kernels", right_k)
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        self.assertEqual(done.stdout, textwrap.dedent(f"""\
            ## Ops by self time: ftbench ({left}) and hf ({right})

            | op | ftbench calls | ftbench self ms | ftbench flops | hf calls | hf self ms | hf flops | ftbench - hf ms | ftbench share | hf share |
            |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
            | aten::mm | 4 | 6.000 | 8e+09 | 6 | 4.500 | 6e+09 | +1.500 | 60.0% | 54.5% |
            | a,"b"\\|c | 1 | 3.000 |  |  |  |  | +3.000 | 30.0% |  |
            | aten::mul |  |  |  | 3 | 2.000 |  | -2.000 |  | 24.2% |
            | *2 more ops* | 2 | 1.000 |  | 3 | 1.750 |  | -0.750 | 10.0% | 21.2% |
            | **total** | 7 | 10.000 | 8e+09 | 12 | 8.250 | 6e+09 | +1.750 | 100.0% | 100.0% |

            ## Device kernels by total time: ftbench ({left_k}) and hf ({right_k})

            | kernel | kind | ftbench calls | ftbench total ms | hf calls | hf total ms | ftbench - hf ms | ftbench share | hf share |
            |---|---|---:|---:|---:|---:|---:|---:|---:|
            | gemm_b | kernel |  |  | 4 | 3.000 | -3.000 |  | 85.7% |
            | gemm_a | kernel | 4 | 2.000 |  |  | +2.000 | 80.0% |  |
            | Memcpy HtoD (Pageable -> Device) | transfer | 2 | 0.500 | 1 | 0.500 | +0.000 | 20.0% | 14.3% |
            | **total** |  | 6 | 2.500 | 5 | 3.500 | -1.000 | 100.0% | 100.0% |
            """))  # noqa: E501

    def test_the_references_own_csv_reads_back(self):
        t = pt.tabulate_profile([op("aten::mm", 1, 0, 2_000_000, 4_000_000_000, 8_000_000),
                                 op('a,"b"', 1, 2_000_000, 1_000_000, 0, None)])
        path = self.write("hf.profile-ops.csv", pt.op_table_csv(t))
        done = self.run_script("--left", f"x={path}", "--right", f"y={path}", "--top", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("| *1 more op* | 1 | 1.000 |  | 1 | 1.000 |  | +0.000 | 33.3% | 33.3% |",
                      done.stdout)
        self.assertIn("| **total** | 2 | 3.000 | 4e+09 | 2 | 3.000 | 4e+09 | +0.000 | 100.0% | "
                      "100.0% |", done.stdout)

    def test_a_wrong_header_a_bad_row_or_a_missing_file_is_named(self):
        ops = self.write("ops.csv", f"{OPS_HEADER}\naten::mm,1,1.000,1.000,1.0000,0,,,\n")
        kernels = self.write("kernels.csv", "name,kind,calls,total_ms,share,mean_us\n")
        done = self.run_script("--left", f"a={kernels}", "--right", f"b={ops}")
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stdout, "")
        self.assertEqual(done.stderr, f"error: {kernels}:1: expected the header '{OPS_HEADER}', "
                                      "found 'name,kind,calls,total_ms,share,mean_us'\n")
        empty = self.write("empty.csv", "")
        done = self.run_script("--left", f"a={ops}", "--right", f"b={empty}")
        self.assertEqual((done.returncode, done.stderr),
                         (2, f"error: {empty}:1: expected the header '{OPS_HEADER}', found "
                             "nothing (an empty file)\n"))
        done = self.run_script("--left", f"a={ops}", "--right", f"b={ops}",
                               "--left-kernels", kernels, "--right-kernels", ops)
        self.assertEqual((done.returncode, done.stderr),
                         (2, f"error: {ops}:1: expected the header "
                             "'name,kind,calls,total_ms,share,mean_us', found "
                             f"'{OPS_HEADER}'\n"))
        bad = self.write("bad.csv", f"{OPS_HEADER}\naten::mm,1,1.000,1.000,1.0000,0,,,\n"
                                    "aten::add,x,1.000,1.000,1.0000,0,,,\n")
        done = self.run_script("--left", f"a={ops}", "--right", f"b={bad}")
        self.assertEqual((done.returncode, done.stderr),
                         (2, f"error: {bad}:3: calls: expected a whole number, found 'x'\n"))
        short = self.write("short.csv", f"{OPS_HEADER}\naten::mm,1,1.000\n")
        done = self.run_script("--left", f"a={short}", "--right", f"b={ops}")
        self.assertEqual((done.returncode, done.stderr),
                         (2, f"error: {short}:2: expected 9 fields, found 3\n"))
        missing = os.path.join(self.dir.name, "missing.csv")
        done = self.run_script("--left", f"a={ops}", "--right", f"b={missing}")
        self.assertEqual((done.returncode, done.stderr),
                         (2, f"error: {missing}: cannot read it: No such file or directory\n"))
        done = self.run_script("--left", ops, "--right", f"b={ops}")
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"argument --left: expected NAME=PATH, found '{ops}'", done.stderr)


if __name__ == "__main__":
    unittest.main()
