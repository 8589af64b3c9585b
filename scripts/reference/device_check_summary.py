#!/usr/bin/env python3
"""Puts an ftbench report and the transformers + peft reference side by side (device check).

Usage: device_check_summary.py FTBENCH_REPORT REFERENCE_JSON [--peak-tflops 989] [--json]

Both ran the same model shape, LoRA placement, precision and batch (scripts/device-check.sh), so
they do the same FLOPs per step: the reference's MFU is ftbench's FLOPs per step for each
formula over the reference's mean step time (ftbench's achieved TFLOP/s and tokens/s are
totals over time, so means match them). Targets (issue 5): ftbench MFU >= 45 % of the
dense bf16 peak, and ftbench tokens/s >= 1.0x the reference's.
"""

import argparse
import json
import sys

MFU_TARGET = 0.45
RATIO_TARGET = 1.0


def summarize(report, reference, peak_tflops=None):
    summary = report["summary"]
    mfu = summary["mfu"]
    peak = peak_tflops if peak_tflops is not None else mfu.get("peak_tflops")
    if not peak:
        raise ValueError("no peak: the report has none; pass --peak-tflops")
    if reference["tokens_per_step"] != report["derived"]["max_tokens_per_step"]:
        raise ValueError(
            f"different batches: the reference ran {reference['tokens_per_step']} tokens per step, "
            f"ftbench at most {report['derived']['max_tokens_per_step']}")
    # Mean step times, as ftbench's own achieved TFLOP/s and tokens/s are (total over time).
    ref_mean = reference["mean_step_seconds"]
    rows = []
    for entry in mfu["entries"]:
        rows.append({
            "formula": entry["formula"] + (" + recompute" if entry["recompute"] else ""),
            "ftbench_mfu": entry["achieved_tflops"] / peak,
            "reference_mfu": entry["flops_per_step"] / ref_mean / (peak * 1e12),
        })
    ft_tps = summary["tokens_per_second"]["real"]
    ratio = ft_tps / reference["tokens_per_second"]
    best_mfu = max(r["ftbench_mfu"] for r in rows) if rows else None
    return {
        "device": report["environment"]["device"]["name"],
        "peak_tflops": peak,
        "ftbench_mean_step_seconds": summary["step_seconds"]["mean"],
        "reference_mean_step_seconds": ref_mean,
        "ftbench_tokens_per_second": ft_tps,
        "reference_tokens_per_second": reference["tokens_per_second"],
        "ratio": ratio,
        "mfu": rows,
        "mfu_target_met": best_mfu is not None and best_mfu >= MFU_TARGET,
        "ratio_target_met": ratio >= RATIO_TARGET,
        "reference": reference.get("implementation", ""),
    }


def markdown(s):
    lines = [
        f"device: {s['device']}; peak {s['peak_tflops']:g} TFLOP/s",
        f"ftbench:   mean step {s['ftbench_mean_step_seconds']:.4f} s, "
        f"{s['ftbench_tokens_per_second']:.0f} tokens/s",
        f"reference: mean step {s['reference_mean_step_seconds']:.4f} s, "
        f"{s['reference_tokens_per_second']:.0f} tokens/s ({s['reference']})",
        f"ratio ftbench / reference: {s['ratio']:.3f}x "
        f"(target >= {RATIO_TARGET:.1f}x: {'met' if s['ratio_target_met'] else 'NOT met'})",
    ]
    for r in s["mfu"]:
        lines.append(f"MFU {r['formula']}: ftbench {100 * r['ftbench_mfu']:.1f} %, "
                     f"reference {100 * r['reference_mfu']:.1f} %")
    lines.append(f"MFU target >= {100 * MFU_TARGET:.0f} %: "
                 f"{'met' if s['mfu_target_met'] else 'NOT met'}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("reference")
    ap.add_argument("--peak-tflops", type=float)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        with open(args.report) as f:
            report = json.load(f)
        with open(args.reference) as f:
            reference = json.load(f)
        s = summarize(report, reference, args.peak_tflops)
    except (OSError, json.JSONDecodeError, KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(s, indent=2) if args.json else markdown(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
