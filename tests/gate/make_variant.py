#!/usr/bin/env python3
"""Writes a copy of an ftbench report made to differ by known amounts, for the gate's tests.

Each change keeps the report consistent (ftbench reads it back and holds every summary figure to
the steps): scaled step times come with the step-time summary, the throughput, the data-wait
share and the MFU entries recomputed from the measured steps (numpy-linear percentiles, as
src/util/stats/summary.cpp computes them); scaled phases with the time to first step and the
segments' times scaled alike; a scaled allocator peak with the phases' peaks it is the largest
of; a shifted loss with every step's loss shifted.

Usage: make_variant.py IN.json OUT.json [--steps F] [--phases F] [--allocated F] [--loss D]
       [--status S] [--later SECONDS]
"""
import argparse
import datetime
import json
import math
import statistics


def percentile(xs, q):
    s = sorted(xs)
    rank = q * (len(s) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (rank - lo)


def rescale_steps(r, f):
    """The measured steps (after the timing warm-up) take f times as long."""
    warm = r["summary"]["warmup_steps_excluded"]
    measured = r["steps"][warm:]
    added = 0.0
    for s in measured:
        added += (f - 1.0) * s["wall_seconds"]
        s["wall_seconds"] *= f
    walls = [s["wall_seconds"] for s in measured]
    mean = sum(walls) / len(walls)
    sd = statistics.stdev(walls) if len(walls) > 1 else 0.0
    r["summary"]["step_seconds"] = {
        "count": len(walls), "mean": mean, "median": percentile(walls, 0.5),
        "p90": percentile(walls, 0.9), "p99": percentile(walls, 0.99), "min": min(walls),
        "max": max(walls), "stddev": sd, "cv": sd / mean}
    seconds = sum(walls)
    r["summary"]["tokens_per_second"] = {
        "real": sum(s["real_tokens"] for s in measured) / seconds,
        "padded": sum(s["padded_tokens"] for s in measured) / seconds}
    r["summary"]["data_wait_fraction"] = sum(s["data_wait_seconds"] for s in measured) / seconds
    devices = r["run"].get("world_size", 1)
    mfu = r["summary"]["mfu"]
    for e in mfu["entries"]:
        e["achieved_tflops"] = e["flops_per_step"] * len(walls) / seconds / 1e12
        for key, peak in (("mfu", mfu["peak_tflops"]), ("mfu_gemm", mfu.get("gemm_peak_tflops"))):
            if key in e and peak:
                e[key] = e["achieved_tflops"] / (peak * devices)
    # The training phase holds those steps: it grows by what they added, what follows moves on.
    shift = 0.0
    for p in r["timing"]["phases"]:
        p["start_seconds"] += shift
        if p["name"] == "training":
            p["seconds"] += added
            shift = added
    r["timing"]["total_run_seconds"] += added
    for g in r.get("segments", []):
        g["run_seconds"] += added


def rescale_phases(r, f):
    for p in r["timing"]["phases"]:
        p["start_seconds"] *= f
        p["seconds"] *= f
    r["timing"]["time_to_first_step_seconds"] *= f
    r["timing"]["total_run_seconds"] *= f
    for g in r.get("segments", []):
        g["run_seconds"] *= f
        g["time_to_first_step_seconds"] *= f


def shift_time(text, seconds):
    t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return (t + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def shift_run(r, seconds):
    """Another run of the same job: its start and end moved by `seconds`."""
    for key in ("started_at_utc", "finished_at_utc"):
        r["run"][key] = shift_time(r["run"][key], seconds)
    for g in r.get("segments", []):
        for key in ("started_at_utc", "finished_at_utc"):
            g[key] = shift_time(g[key], seconds)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("inp")
    a.add_argument("out")
    a.add_argument("--steps", type=float)
    a.add_argument("--phases", type=float)
    a.add_argument("--allocated", type=float)
    a.add_argument("--loss", type=float)
    a.add_argument("--status")
    a.add_argument("--run-name")
    a.add_argument("--later", type=float, help="another run: started and finished this many "
                   "seconds later")
    o = a.parse_args()
    r = json.load(open(o.inp))
    if o.steps is not None:
        rescale_steps(r, o.steps)
    if o.phases is not None:
        rescale_phases(r, o.phases)
    if o.allocated is not None:
        r["memory"]["peak_allocated_bytes"] = round(r["memory"]["peak_allocated_bytes"] * o.allocated)
        for p in r["timing"]["phases"]:
            m = p.get("memory") or {}
            if m.get("peak_allocated_bytes") is not None:
                m["peak_allocated_bytes"] = round(m["peak_allocated_bytes"] * o.allocated)
    if o.loss is not None:
        for s in r["steps"]:
            s["loss"] += o.loss
        r["summary"]["loss"]["final"] += o.loss
        r["summary"]["loss"]["mean_last"] += o.loss
    if o.status is not None:
        r["run"]["status"] = o.status
        for g in r.get("segments", []):
            g["status"] = o.status
    if o.later is not None:
        shift_run(r, o.later)
    if o.run_name is not None:
        r["run"]["name"] = o.run_name
    json.dump(r, open(o.out, "w"), indent=1)


if __name__ == "__main__":
    main()
