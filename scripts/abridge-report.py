#!/usr/bin/env python3
"""Abridges an ftbench report for docs/report-schema.md's example.

Usage: scripts/abridge-report.py REPORT.json

Prints the report with the spec cut to its model preset, only the first step, the first two
phases and the first two environment variables, and every number rounded to 6 significant
digits; the field order is the report's. Nothing else is changed, so every field shown is what
the run wrote.
"""
import json
import sys


def rounded(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def abridge(report):
    spec = report.get("spec")
    if isinstance(spec, dict):
        model = spec.get("model", {})
        report["spec"] = {"model": {"preset": model.get("preset"), "...": "..."}, "...": "..."}
    if isinstance(report.get("steps"), list):
        report["steps"] = report["steps"][:1]
    timing = report.get("timing")
    if isinstance(timing, dict) and isinstance(timing.get("phases"), list):
        timing["phases"] = timing["phases"][:2]
    environment = report.get("environment", {})
    if isinstance(environment.get("variables"), dict) and len(environment["variables"]) > 2:
        keep = list(environment["variables"].items())[:2]
        environment["variables"] = dict(keep + [("...", "...")])
    return rounded(report)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/abridge-report.py REPORT.json")
    path = sys.argv[1]
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: {e}")
    if not isinstance(report, dict) or not str(report.get("schema", "")).startswith(
        "ftbench.report/"
    ):
        sys.exit(f"{path}: not an ftbench report (no \"schema\": \"ftbench.report/...\")")
    print(json.dumps(abridge(report), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
