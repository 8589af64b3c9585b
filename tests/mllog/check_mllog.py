#!/usr/bin/env python3
"""Checks an MLPerf-style event log against the mlperf-logging format (standard library only).

Usage: check_mllog.py LOG [--report REPORT.json] [--status success|aborted]

The rules are those of MLCommons' mlperf-logging (mllog's writer, the training compliance
checker's common rules, the llama2_70b_lora benchmark's conventions; docs/mllog.md lists them
with their sources), written here independently of ftbench:
  * every line is ":::MLLOG " and one JSON object whose keys are, in order, namespace,
    time_ms, event_type, key, value, metadata, written as Python's json.dumps writes it;
  * time_ms an integer of milliseconds since the Unix epoch, never decreasing from the first
    line on (init_start may lie at an external t0 before the process; what comes before it is
    stamped no later);
  * event_type INTERVAL_START for *_start keys, INTERVAL_END for *_stop, else POINT_IN_TIME;
  * metadata an object beginning with "file" (a string) and "lineno" (an integer);
  * exactly once: the submission keys, init_stop, run_start, run_stop, train_samples,
    eval_samples, global_batch_size, gradient_accumulation_steps (an integer > 0), seed (an
    integer), opt_base_learning_rate; at least once: cache_clear, init_start, block_start,
    block_stop;
  * in order: init_start, then init_stop (submission_division before it), then run_start,
    then the blocks; run_stop the last line, with metadata.status "success" or "aborted";
  * blocks and evaluations as intervals that open and close in turn, each block_start with
    samples_count >= 0, every eval_accuracy a finite number with samples_count, inside an
    eval_start/eval_stop pair; samples_count never decreasing.
With --report, the log is also held against the run's report: train and eval samples, the
last samples_count (steps x effective batch), each eval_accuracy the report's validation loss,
and run_start to run_stop within the report's timeline (a resumed run's: from its first
process's start to its last's end).
Exit 0 when every rule holds; 1 with one line per broken rule; 2 on bad usage.
"""
import datetime
import json
import math
import sys

KEYS = ["namespace", "time_ms", "event_type", "key", "value", "metadata"]
EXACTLY_ONE = ["submission_benchmark", "submission_org", "submission_division",
               "submission_status", "submission_platform", "init_stop", "run_start",
               "run_stop", "train_samples", "eval_samples", "global_batch_size",
               "gradient_accumulation_steps", "seed", "opt_base_learning_rate"]
AT_LEAST_ONE = ["cache_clear", "init_start", "block_start", "block_stop"]
INTEGERS = ["seed", "global_batch_size", "gradient_accumulation_steps", "train_samples",
            "eval_samples", "lora_rank", "max_sequence_length"]
YEAR_2000_MS, YEAR_2100_MS = 946684800000, 4102444800000


def event_type_of(key):
    if key.endswith("_start"):
        return "INTERVAL_START"
    if key.endswith("_stop"):
        return "INTERVAL_END"
    return "POINT_IN_TIME"


def parse(lines, problems):
    events = []
    for n, line in enumerate(lines, 1):
        if not line.startswith(":::MLLOG "):
            problems.append(f"line {n}: does not start with ':::MLLOG '")
            continue
        text = line[len(":::MLLOG "):]
        try:
            e = json.loads(text, object_pairs_hook=lambda pairs: dict(pairs),
                           parse_constant=lambda c: problems.append(f"line {n}: {c}") or None)
        except json.JSONDecodeError as error:
            problems.append(f"line {n}: not JSON: {error}")
            continue
        if list(e) != KEYS:
            problems.append(f"line {n}: keys {list(e)}, expected {KEYS}")
            continue
        if json.dumps(e) != text:
            problems.append(f"line {n}: not written as Python's json.dumps writes it")
        e["line"] = n
        events.append(e)
    return events


def check_event(e, problems):
    n, key, m = e["line"], e["key"], e["metadata"]
    if not isinstance(e["time_ms"], int) or not YEAR_2000_MS < e["time_ms"] < YEAR_2100_MS:
        problems.append(f"line {n}: time_ms {e['time_ms']!r} is not integer epoch milliseconds")
    if e["namespace"] != "":
        problems.append(f"line {n}: namespace {e['namespace']!r}, expected ''")
    if e["event_type"] != event_type_of(key):
        problems.append(f"line {n}: {key} is {e['event_type']}, expected {event_type_of(key)}")
    if not isinstance(m, dict) or list(m)[:2] != ["file", "lineno"] or \
            not isinstance(m["file"], str) or not isinstance(m["lineno"], int):
        problems.append(f"line {n}: metadata must begin with file (string) and lineno (integer)")
        return
    if key in INTEGERS and (not isinstance(e["value"], int) or isinstance(e["value"], bool)):
        problems.append(f"line {n}: {key} must be an integer, found {e['value']!r}")
    if key == "gradient_accumulation_steps" and isinstance(e["value"], int) and e["value"] <= 0:
        problems.append(f"line {n}: gradient_accumulation_steps must be > 0")
    if key == "submission_division" and e["value"] not in ("open", "closed"):
        problems.append(f"line {n}: submission_division must be open or closed")
    if key in ("block_start", "block_stop", "eval_start", "eval_stop", "eval_accuracy",
               "epoch_start", "epoch_stop", "run_stop"):
        sc = m.get("samples_count")
        if not isinstance(sc, int) or sc < 0:
            problems.append(f"line {n}: {key} needs an integer samples_count >= 0")
    if key == "eval_accuracy" and (not isinstance(e["value"], (int, float)) or
                                   isinstance(e["value"], bool) or
                                   not math.isfinite(e["value"])):
        problems.append(f"line {n}: eval_accuracy must be a finite number")


def check_order(events, problems, status):
    keys = [e["key"] for e in events]
    for k in EXACTLY_ONE:
        if keys.count(k) != 1:
            problems.append(f"{k}: {keys.count(k)} times, expected exactly once")
    for k in AT_LEAST_ONE:
        if k not in keys:
            problems.append(f"{k}: missing, expected at least once")
    first = {k: keys.index(k) for k in set(keys)}
    for a, b in [("init_start", "init_stop"), ("submission_division", "init_stop"),
                 ("init_stop", "run_start"), ("run_start", "block_start")]:
        if a in first and b in first and first[a] > first[b]:
            problems.append(f"{a} must come before {b}")
    if keys and keys[-1] != "run_stop":
        problems.append("run_stop must be the last line")
    if "run_stop" in first:
        got = events[first["run_stop"]]["metadata"].get("status")
        if got not in ("success", "aborted") or (status and got != status):
            problems.append(f"run_stop status {got!r}, expected {status or 'success or aborted'}")
    open_ = {"block": False, "eval": False, "epoch": False}
    last_time, last_samples = None, 0
    for e in events:
        kind, _, edge = e["key"].rpartition("_")
        if kind in open_ and edge in ("start", "stop"):
            if open_[kind] == (edge == "start"):
                problems.append(f"line {e['line']}: {e['key']} while the {kind} is "
                                f"{'open' if open_[kind] else 'closed'}")
            open_[kind] = edge == "start"
        if e["key"] == "eval_accuracy" and not open_["eval"]:
            problems.append(f"line {e['line']}: eval_accuracy outside eval_start/eval_stop")
        sc = e["metadata"].get("samples_count") if isinstance(e["metadata"], dict) else None
        if isinstance(sc, int):
            if sc < last_samples:
                problems.append(f"line {e['line']}: samples_count went back to {sc}")
            last_samples = sc
        if last_time is not None and e["time_ms"] < last_time:
            problems.append(f"line {e['line']}: time_ms {e['time_ms']} ({e['key']}) is before "
                            f"the line above's, {last_time}")
        last_time = e["time_ms"]


def check_against_report(events, report, problems):
    by_key = {}
    for e in events:
        by_key.setdefault(e["key"], []).append(e)
    value = lambda k: by_key[k][0]["value"] if k in by_key else None
    data = report.get("data") or {}
    if value("train_samples") != data.get("examples"):
        problems.append(f"train_samples {value('train_samples')} != data.examples")
    validation = (data.get("validation") or {}).get("examples", 0)
    if value("eval_samples") != validation:
        problems.append(f"eval_samples {value('eval_samples')} != validation examples")
    batch = report["derived"]["effective_batch"]
    if value("global_batch_size") != batch:
        problems.append("global_batch_size != derived.effective_batch")
    steps = report["steps"]
    last = steps[-1]["step"] if steps else 0
    stop = by_key.get("run_stop", [{}])[0]
    if stop.get("metadata", {}).get("samples_count") != last * batch:
        problems.append(f"run_stop samples_count != {last} steps x {batch}")
    losses = [e["loss"] for e in report.get("evaluations") or [] if e["loss"] is not None]
    logged = [e["value"] for e in by_key.get("eval_accuracy", [])]
    if logged != losses:
        problems.append(f"eval_accuracy {logged} != the report's validation losses {losses}")
    samples = [e["metadata"]["samples_count"] for e in by_key.get("eval_accuracy", [])]
    expected = [e["after_step"] * batch for e in report.get("evaluations") or []
                if e["loss"] is not None]
    if samples != expected:
        problems.append(f"eval_accuracy samples_count {samples} != after_step x batch {expected}")
    if "run_start" in by_key and "run_stop" in by_key:
        run_ms = by_key["run_stop"][0]["time_ms"] - by_key["run_start"][0]["time_ms"]
        phases = report["timing"]["phases"]
        whole = (phases[-1]["start_seconds"] + phases[-1]["seconds"]) * 1e3
        segments = report.get("segments") or []
        if len(segments) > 1:  # a resumed run: from its first process's start to its last's end
            stamp = lambda t: datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
            whole = (stamp(segments[-1]["finished_at_utc"]) -
                     stamp(segments[0]["started_at_utc"])).total_seconds() * 1e3
        if not 0 < run_ms <= whole + 1:
            problems.append(f"run_start to run_stop {run_ms} ms is not within the run's {whole} ms")


def main(argv):
    args = argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    report_path = args[args.index("--report") + 1] if "--report" in args else None
    status = args[args.index("--status") + 1] if "--status" in args else None
    with open(args[0], encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems = []
    events = parse(lines, problems)
    for e in events:
        check_event(e, problems)
    check_order(events, problems, status)
    if report_path:
        with open(report_path, encoding="utf-8") as f:
            check_against_report(events, json.load(f), problems)
    for p in problems:
        print("check_mllog: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
