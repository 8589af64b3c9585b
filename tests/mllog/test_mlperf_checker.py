#!/usr/bin/env python3
"""The event log of a ci-tiny run (file data, validation passes) through MLCommons' own training
compliance checker, mlperf-logging's `python -m mlperf_logging.compliance_checker` at the version
python/requirements.txt pins, for every training ruleset from 4.0.0 on. Each ruleset must say
exactly what docs/mllog.md ("What MLPerf's tooling says") says it does: the messages it reports
are compared, as a set, with the expected ones below; one more or one fewer fails the test.

Run with FTBENCH_PYTHON, the pinned environment's interpreter (tests/reference/with_python.sh).
Without mlperf_logging: exit 77 (skipped), on CI a failure (docs/ci.md, "Skips and CI").

Usage: test_mlperf_checker.py FTBENCH WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def on_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


try:
    from importlib.metadata import version
    import mlperf_logging.compliance_checker  # noqa: F401
except ImportError:
    if on_ci():
        print("error: mlperf-logging is required for this test on CI (scripts/python-env.sh)",
              file=sys.stderr)
        sys.exit(1)
    print("skipped: mlperf-logging is missing (scripts/python-env.sh makes an environment with it)")
    sys.exit(77)

CHECKER_VERSION = "4.1.68"
# A validation loss of a tiny model is not below 1.0, which llama2_70b_lora's rules want of at
# least one eval_accuracy (the target of the real benchmark).
LOSS = "Failed checks for eval_accuracy : v['value'] < 1.0"
# 4.x's open division lists no llama2_70b_lora (its closed division does).
BENCHMARK = "CHECK for 'submission_benchmark' failed"
# 6.1.0 makes these keys, optional before, required in every division.
REQUIRED_IN_6_1 = ["lowest_numerical_precision_in_linear", "lowest_numerical_precision_in_attn",
                   "lowest_numerical_precision_in_comm", "tensor_parallelism",
                   "pipeline_parallelism", "context_parallelism", "expert_parallelism",
                   "micro_batch_size", "config_filename"]
EXPECTED = {
    "4.0.0": {BENCHMARK, LOSS},
    "4.1.0": {BENCHMARK, LOSS},
    "5.0.0": {LOSS},
    "5.1.0": {LOSS},
    "6.0.0": {LOSS},
    "6.1.0": {LOSS} | {f"Required EXACTLY_ONE occurrence of '{k}' but found 0"
                       for k in REQUIRED_IN_6_1},
}


def fail(message):
    print("test_mlperf_checker: " + message, file=sys.stderr)
    sys.exit(1)


def messages(output):
    """The checker's messages, each by its first line ("in line N:" left out): it logs them as
    one warning, separated by lines of 30 dashes."""
    start = output.find("WARNING -  ")
    if start < 0:
        return set()
    end = output.find("\nERROR - FAILED", start)
    body = output[start + len("WARNING -  "):end if end >= 0 else len(output)]
    found = set()
    for block in body.split("\n" + "-" * 30 + "\n"):
        first = block.strip().split("\n")[0]
        found.add(re.sub(r" in line \d+:$", "", first))
    return found


def check_docs():
    """docs/mllog.md names the checker's version and has a row per ruleset, `| \`4.0.0\` |
    ...`, that names what that ruleset refuses: the benchmark's name, each missing key, the
    loss."""
    path = os.path.join(ROOT, "docs", "mllog.md")
    text = open(path, encoding="utf-8").read()
    problems = []
    if f"mlperf-logging {CHECKER_VERSION}" not in text:
        problems.append(f"expected the checker's version, \"mlperf-logging {CHECKER_VERSION}\"")
    for ruleset, want in EXPECTED.items():
        rows = [(n, l) for n, l in enumerate(text.split("\n"), 1)
                if l.startswith("| ") and f"`{ruleset}`" in l.split("|")[1]]
        if len(rows) != 1:
            problems.append(f"expected one table row for ruleset {ruleset}, found {len(rows)}")
            continue
        number, row = rows[0]
        words = (["submission_benchmark"] if BENCHMARK in want else []) + \
            [k for k in REQUIRED_IN_6_1 if any(f"'{k}'" in m for m in want)] + \
            (["eval_accuracy"] if LOSS in want else [])
        missing = [w for w in words if f"`{w}`" not in row]
        if missing:
            problems.append(f"line {number} (ruleset {ruleset}): expected {missing} in it, "
                            f"found: {row}")
    if problems:
        fail(f"{path}: " + "; ".join(problems))


def main():
    if len(sys.argv) != 3:
        print("usage: test_mlperf_checker.py FTBENCH WORK_DIR", file=sys.stderr)
        sys.exit(2)
    ftbench, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if version("mlperf-logging") != CHECKER_VERSION:
        fail(f"mlperf-logging {version('mlperf-logging')}, expected {CHECKER_VERSION} "
             "(python/requirements.txt): docs/mllog.md states what that version accepts")
    check_docs()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data = os.path.join(work, "data.jsonl")
    with open(data, "w") as f:
        for i in range(80):
            f.write(json.dumps({"text": f"example {i}: the quick brown fox jumps over {i * 7} dogs"})
                    + "\n")
    log = os.path.join(work, "run.mllog")
    p = subprocess.run(
        [ftbench, "run", "configs/ci-tiny.yaml", "--set", "data.source=file", "--set",
         "data.path=" + data, "--set", "data.validation_fraction=0.25", "--set",
         "train.eval_every_steps=3", "--set", "output.progress=off", "--set",
         "train.checkpoint.dir=" + os.path.join(work, "checkpoints"), "-o",
         os.path.join(work, "run.json"), "--mllog", log],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        fail(f"ftbench run: exit {p.returncode}\n{p.stdout}")

    wrong = []
    for ruleset, want in EXPECTED.items():
        c = subprocess.run(
            [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
             "--ruleset", ruleset, "--log_output", os.path.join(work, f"checker-{ruleset}.log"),
             log],
            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found = messages(c.stdout)
        if c.returncode != (1 if want else 0) or found != want:
            wrong.append(f"ruleset {ruleset}: exit {c.returncode}; unexpected "
                         f"{sorted(found - want)}, missing {sorted(want - found)}\n{c.stdout}")
    if wrong:
        fail(f"{log} through mlperf-logging {CHECKER_VERSION}'s checker:\n" + "\n".join(wrong))
    print(f"test_mlperf_checker: mlperf-logging {CHECKER_VERSION} said of {log} what "
          f"docs/mllog.md says, for rulesets {', '.join(EXPECTED)}")


if __name__ == "__main__":
    main()
