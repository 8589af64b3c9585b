#!/usr/bin/env python3
"""The CPU-runnable parts of the device check: the spec -> transformers/peft mapping of
scripts/reference/hf_peft_lora_step.py and scripts/reference/device_check_summary.py. Neither
needs torch, transformers or peft. Run by ctest (FTBENCH_BINARY: the ftbench launcher)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "reference"))

import device_check_summary  # noqa: E402
import hf_peft_lora_step as ref  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
