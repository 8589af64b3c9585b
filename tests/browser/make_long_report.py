#!/usr/bin/env python3
"""Writes a report of many steps for the HTML report's large-report test (standard library only).

Usage: make_long_report.py FIXTURE.json STEPS OUT.json

The fixture's steps are repeated (numbered on, their epochs counted from the fixture's steps
per epoch) and its training phase and derived step counts stretched to match, so the result
reads as a consistent report of STEPS steps (the summary's counts follow; its other figures
stay the fixture's): the 22,500-step case of issue 19 without a run.
"""
import json
import sys


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
    # The repeated steps have the fixture's least and largest times; the counts grow.
    measured = count - report["summary"]["warmup_steps_excluded"]
    report["summary"]["measured_steps"] = measured
    report["summary"]["step_seconds"]["count"] = measured
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
