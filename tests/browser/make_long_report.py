#!/usr/bin/env python3
"""Writes a report of many steps for the HTML report's large-report test (standard library only).

Usage: make_long_report.py FIXTURE.json STEPS OUT.json

The fixture's steps are repeated (numbered on, their epochs counted from the fixture's steps
per epoch) and its training phase and derived step counts stretched to match, and its summary
recomputed from the steps as ftbench computes it (src/report/metrics/run_summary.cpp; the reader holds
every figure to them), so the result reads as a consistent report of STEPS steps: the
22,500-step case of issue 19 without a run.
"""
import json
import math
import sys


def percentile(xs, q):
    """numpy's "linear" percentile of sorted xs, with its interpolation from the nearer end."""
    rank = q * (len(xs) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    t = rank - lo
    d = xs[hi] - xs[lo]
    return xs[hi] - d * (1.0 - t) if t >= 0.5 else xs[lo] + d * t


def resummarize(report):
    """The summary's figures from the steps after the warm-up (one segment: the first ones)."""
    summary = report["summary"]
    steps = report["steps"]
    measured = steps[summary["warmup_steps_excluded"]:]
    walls = [s["wall_seconds"] for s in measured]
    n = len(walls)
    mean = sum(walls) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in walls) / (n - 1)) if n > 1 else 0.0
    ordered = sorted(walls)
    summary["measured_steps"] = n
    summary["step_seconds"] = {
        "count": n, "mean": mean, "median": percentile(ordered, 0.5),
        "p90": percentile(ordered, 0.9), "p99": percentile(ordered, 0.99), "min": ordered[0],
        "max": ordered[-1], "stddev": sd, "cv": sd / mean if mean else 0.0}
    wall = sum(walls)
    real = sum(s["real_tokens"] for s in measured)
    padded = sum(s["padded_tokens"] for s in measured)
    summary["tokens_per_second"] = {"real": real / wall, "padded": padded / wall}
    summary["padding_fraction"] = 1.0 - real / padded if padded else 0.0
    summary["data_wait_fraction"] = sum(s["data_wait_seconds"] for s in measured) / wall
    mfu = summary["mfu"]
    devices = report["run"].get("world_size", 1)
    for e in mfu["entries"]:
        if e["formula"] == "lora_frozen_base" and not e["recompute"]:
            e["flops_per_step"] = sum(s["model_flops"] for s in measured) / n
        e["achieved_tflops"] = e["flops_per_step"] * n / wall / 1e12
        for key, peak in (("mfu", mfu["peak_tflops"]), ("mfu_gemm", mfu.get("gemm_peak_tflops"))):
            if key in e:
                e[key] = e["achieved_tflops"] / (peak * devices) if peak else None
    window = min(max(summary["loss"]["window"], 1), len(steps))
    summary["loss"] = {"final": steps[-1]["loss"], "window": window,
                       "mean_last": sum(s["loss"] for s in steps[-window:]) / window}


def main(argv):
    if len(argv) != 4:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    count = int(argv[2])
    base = report["steps"]
    per_epoch = report["derived"]["steps_per_epoch"]
    steps = []
    for i in range(count):
        s = dict(base[i % len(base)])
        s["step"] = i + 1
        s["epoch"] = i // per_epoch + 1
        steps.append(s)
    report["steps"] = steps
    report["derived"]["total_steps"] = count
    resummarize(report)
    phases = report["timing"]["phases"]
    training = next(p for p in phases if p["name"] == "training")
    extra = sum(s["wall_seconds"] for s in steps[1:]) - training["seconds"]
    training["seconds"] += extra
    after = False
    for p in phases:
        if after:
            p["start_seconds"] += extra
        after = after or p is training
    report["run"]["name"] = "long-%d-steps" % count
    with open(argv[3], "w", encoding="utf-8") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
