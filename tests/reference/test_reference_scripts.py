#!/usr/bin/env python3
"""The CPU-runnable parts of the device check: the spec -> transformers/peft mapping of
scripts/reference/hf_peft_lora_step.py and scripts/reference/device_check_summary.py; the
reference's --profile-steps (its parsing, and the tables of scripts/reference/profile_tables.py,
ftbench's metrics/profile_table.cpp in Python, on made-up events) and
scripts/profile-side-by-side.py. None needs torch, transformers or peft. Run by ctest
(FTBENCH_BINARY: the ftbench launcher)."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest

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


def op(name, thread, start, duration, flops=0, input_bytes=0):
    return pt.ProfileEvent(name, pt.OP, thread, start, duration, flops, input_bytes)


def scope(name, thread, start, duration):
    return pt.ProfileEvent(name, pt.SCOPE, thread, start, duration, 0, 0)


def kernel(name, start, duration, transfer=False):
    return pt.ProfileEvent(name, pt.TRANSFER if transfer else pt.KERNEL, 7, start, duration)


class ProfileTables(unittest.TestCase):
    """ftbench's tests/metrics/profile_table_test.cpp, on the Python port: the same events, the
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
            kernel("flash_fwd_kernel", 60, 30)])
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
