#!/usr/bin/env python3
"""Checks that an HTML report's charts plot the reports' own values (standard library only).

Usage: check_report_values.py RESULT.json REPORT.json [REPORT.json ...]

RESULT.json is what check_html_report.py read back from the page in Chromium: every chart's
datasets as Chart.js holds them, and the page's data object. The reports are read here as
plain JSON (docs/report-schema.md), independently of ftbench's reader, and each plotted value
is held against them:
  * loss: every training point is (step, loss) of a step, every validation point (after_step,
    loss) of an evaluation; all of them are drawn up to 1000 points, and above that the
    decimated line keeps the first and last and draws at most 1000 of the report's points;
  * step time: the measured and warm-up points together are every step's (step, wall_seconds),
    the warm-up ones as many as summary.warmup_steps_excluded;
  * the step-time histogram holds summary.step_seconds.count steps, from its min to its max, in
    as many bins as the count calls for (histogram_bins: the least k with k^3 >= 8n, at most 30
    and at most n; one bin when every step took the same time);
  * the headline: each report's time from t0 to the end (the waterfall's last bar), real tokens/s,
    MFU (the first entry) and cost (the chosen offer's billed dollars, none when not priced);
  * the memory axes: every tick a whole number of one binary unit ("200 MiB", "10 GiB") at that
    many bytes, from 0 in equal steps of 1, 2 or 5 x 10^k units, up to at least the largest bar;
  * the waterfall: a resumed run's earlier processes first (each its segment's run_seconds),
    then each phase's [start, end] shifted by them and timing.t0_before_process_seconds (runs
    of one phase joined);
  * memory by phase: the largest host peak RSS of each kind of phase;
  * throughput and MFU: summary.tokens_per_second and the first MFU entry;
  * cost: each bar's two parts add up to the offer's billed dollars.
Exit 0 when every check passes; 1 with one line per mismatch on stderr; 2 on bad usage.
"""
import json
import math
import re
import sys

DRAWN_POINTS = 1000  # src/analysis/view/assets/page.js: lines above this are decimated (LTTB)
MAX_BINS = 30  # view::kMaxHistogramBins
UNITS = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40, "PiB": 2 ** 50,
         "EiB": 2 ** 60}


def histogram_bins(n):
    """The least k with k^3 >= 8n (2 n^(1/3), Rice's rule), at most MAX_BINS and at most n."""
    k = 1
    while k ** 3 < 8 * n:
        k += 1
    return max(1, min(k, MAX_BINS, n))


def round_step(units):
    """True when `units` is 1, 2 or 5 x 10^k for a whole k >= 0."""
    while units >= 10 and units % 10 == 0:
        units //= 10
    return units in (1, 2, 5)


def close(a, b):
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


class Checker:
    def __init__(self):
        self.problems = []

    def expect(self, ok, message):
        if not ok:
            self.problems.append(message)

    def points(self, where, drawn, expected):
        """Drawn {x, y} points against the report's (x, y) pairs, in order."""
        # A null is a gap the line keeps (a non-finite loss), not a point.
        drawn = [(p["x"], p["y"]) for p in drawn if p["y"] is not None]
        if len(expected) <= DRAWN_POINTS:
            self.expect(drawn == expected, f"{where}: plotted {drawn[:3]}... ({len(drawn)} "
                        f"points), the report has {expected[:3]}... ({len(expected)})")
            return
        allowed = set(expected)
        self.expect(0 < len(drawn) <= DRAWN_POINTS,
                    f"{where}: {len(drawn)} points drawn of {len(expected)}, expected at most "
                    f"{DRAWN_POINTS}")
        self.expect(all(p in allowed for p in drawn),
                    f"{where}: a drawn point is not one of the report's")
        self.expect(drawn[:1] == expected[:1] and drawn[-1:] == expected[-1:],
                    f"{where}: the first and last points are not the report's first and last")


def dataset(chart, label):
    for d in chart["datasets"]:
        if d["label"] == label:
            return d["data"]
    return None


def timeline(report):
    timing = report["timing"]
    bars, offset = [], 0.0
    for g in (report.get("segments") or [])[:-1]:  # a resumed run's earlier processes
        bars.append(["process %d (resumed after)" % g["index"], offset, offset + g["run_seconds"]])
        offset += g["run_seconds"]
    before = timing.get("t0_before_process_seconds") or 0.0
    if before > 0:
        bars.append(["t0 to process start", offset, offset + before])
    shift = offset + before
    for p in timing["phases"]:
        start = shift + p["start_seconds"]
        end = start + p["seconds"]
        if bars and bars[-1][0] == p["name"]:
            bars[-1][2] = max(bars[-1][2], end)
        else:
            bars.append([p["name"], start, end])
    return bars


def check_report(c, charts, label, index, report):
    steps = report["steps"]
    expected = [(s["step"], s["loss"]) for s in steps if s["loss"] is not None]
    c.points(f"loss {label}", dataset(charts["loss"], f"{label} training") or [], expected)
    evaluations = report.get("evaluations") or []
    if evaluations:
        c.points(f"validation loss {label}", dataset(charts["loss"], f"{label} validation") or [],
                 [(e["after_step"], e["loss"]) for e in evaluations if e["loss"] is not None])
    warm = dataset(charts["step-time"], f"{label} warm-up") or []
    measured = dataset(charts["step-time"], f"{label} measured") or []
    summary = report["summary"]
    c.expect(len(warm) == summary["warmup_steps_excluded"],
             f"step time {label}: {len(warm)} warm-up points, the report left out "
             f"{summary['warmup_steps_excluded']}")
    walls = [(s["step"], s["wall_seconds"]) for s in steps]
    if len(walls) <= DRAWN_POINTS:
        c.expect(sorted((p["x"], p["y"]) for p in warm + measured) == sorted(walls),
                 f"step time {label}: the points are not the steps' wall times")
    else:
        c.points(f"step time {label}", measured, walls[summary["warmup_steps_excluded"]:])
    hist = charts.get(f"step-histogram-{label}")
    if hist is not None:
        count = summary["step_seconds"]["count"]
        c.expect(sum(hist["datasets"][0]["data"]) == count,
                 f"histogram {label}: counts do not add up to the measured steps")
        equal = summary["step_seconds"]["min"] == summary["step_seconds"]["max"]
        bins = 1 if equal else histogram_bins(count)
        c.expect(len(hist["datasets"][0]["data"]) == bins,
                 f"histogram {label}: {len(hist['datasets'][0]['data'])} bins for {count} steps, "
                 f"expected {bins}")
    bars = charts["waterfall"]
    for name, start, end in timeline(report):
        found = any(d["label"] == name and d["data"][index] is not None
                    and close(d["data"][index][0], start) and close(d["data"][index][1], end)
                    for d in bars["datasets"])
        c.expect(found, f"waterfall {label}: no bar {name} [{start}, {end}]")
    throughput = charts["throughput"]["datasets"]
    if summary["measured_steps"] > 0:
        c.expect(close(throughput[0]["data"][index], summary["tokens_per_second"]["real"]),
                 f"throughput {label}: real tokens/s differs")
        c.expect(close(throughput[1]["data"][index], summary["tokens_per_second"]["padded"]),
                 f"throughput {label}: padded tokens/s differs")
    else:  # no measured step: no throughput drawn
        c.expect(throughput[0]["data"][index] is None and throughput[1]["data"][index] is None,
                 f"throughput {label}: drawn for a run without measured steps")
    entries = summary.get("mfu", {}).get("entries") or []
    mfu = entries[0].get("mfu") if entries else None
    c.expect(charts["mfu"]["datasets"][0]["data"][index] == mfu or
             close(charts["mfu"]["datasets"][0]["data"][index], mfu), f"MFU {label} differs")
    host = {}
    for p in report["timing"]["phases"]:
        rss = (p.get("memory") or {}).get("peak_rss_bytes")
        if rss is not None:
            host[p["name"]] = max(host.get(p["name"], rss), rss)
    if host:
        chart = charts["memory-host"]
        plotted = dict(zip(chart["labels"], dataset(chart, f"{label} host peak RSS") or []))
        c.expect(all(plotted.get(k) == v for k, v in host.items()),
                 f"memory {label}: host peak RSS by phase differs")


def check_headline(c, headline, data, label, index, report):
    figures = {f["figure"]: f for f in headline["figures"] if f["report"] == label}
    value = lambda name: None if name not in figures or figures[name]["value"] in ("", None) \
        else float(figures[name]["value"])
    c.expect(set(figures) == {"time", "tokens", "cost", "mfu"},
             f"headline {label}: figures {sorted(figures)}, expected time, tokens, cost and mfu")
    c.expect(all(f["text"].strip() for f in figures.values()), f"headline {label}: an empty figure")
    bars = timeline(report)
    c.expect(close(value("time"), bars[-1][2]), f"headline {label}: time {value('time')}, the run "
             f"took {bars[-1][2]} s from t0")
    summary = report["summary"]
    tokens = summary["tokens_per_second"]["real"] if summary["measured_steps"] > 0 else None
    c.expect(value("tokens") == tokens or close(value("tokens"), tokens),
             f"headline {label}: tokens/s {value('tokens')}, the report's {tokens}")
    entries = summary.get("mfu", {}).get("entries") or []
    mfu = entries[0].get("mfu") if entries else None
    c.expect(value("mfu") == mfu or close(value("mfu"), mfu),
             f"headline {label}: MFU {value('mfu')}, the report's {mfu}")
    chosen = [o["billed_usd"] for o in data["reports"][index]["cost"]["offers"] if o["chosen"]]
    usd = chosen[0] if chosen else None
    c.expect(value("cost") == usd or close(value("cost"), usd),
             f"headline {label}: cost {value('cost')}, the chosen offer's {usd}")


def check_memory_axis(c, chart):
    ticks = chart.get("ticks", {}).get("y") or []
    labels = [t["label"] for t in ticks]
    parsed = [re.fullmatch(r"(\d+) (B|KiB|MiB|GiB|TiB|PiB|EiB)", str(t)) for t in labels]
    where = f"{chart['id']}: ticks {labels}"
    if not ticks or not all(parsed):
        c.expect(False, f"{where}: each should be a whole number of one binary unit")
        return
    units = {m.group(2) for m in parsed}
    c.expect(len(units) == 1, f"{where}: more than one unit")
    unit = UNITS[parsed[0].group(2)]
    counts = [int(m.group(1)) for m in parsed]
    c.expect(all(t["value"] == n * unit for t, n in zip(ticks, counts)),
             f"{where}: a tick's label is not its value")
    steps = {b - a for a, b in zip(counts, counts[1:])}
    c.expect(counts[0] == 0 and len(steps) == 1 and round_step(steps.pop()),
             f"{where}: not from 0 in equal steps of 1, 2 or 5 x 10^k units")
    largest = max((v for d in chart["datasets"] for v in d["data"] if v is not None), default=0)
    c.expect(ticks[-1]["value"] >= largest, f"{where}: the largest bar ({largest}) is above the top")


def check_costs(c, charts, data):
    if "cost" not in charts:
        c.expect(all(not r["cost"]["offers"] for r in data["reports"]),
                 "cost: offers priced but no cost chart")
        return
    parts = charts["cost"]["datasets"]
    offers = [o for r in data["reports"] for o in r["cost"]["offers"]]
    c.expect(len(parts[0]["data"]) == len(offers), "cost: one bar per offer expected")
    for i, o in enumerate(offers):
        c.expect(close(parts[0]["data"][i] + parts[1]["data"][i], o["billed_usd"]),
                 f"cost: {o['name']}: the bar's parts do not add up to the billed dollars")


def main(argv):
    if len(argv) < 3:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        result = json.load(f)
    reports = []
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            reports.append(json.load(f))
    c = Checker()
    charts = {chart["id"]: chart for chart in result["charts"]}
    data = result["data"]
    c.expect(len(data["reports"]) == len(reports), "the page holds another number of reports")
    for index, report in enumerate(reports):
        label = chr(ord("A") + index)
        c.expect(data["reports"][index]["label"] == label, f"report {label}: wrong label")
        check_report(c, charts, label, index, report)
        check_headline(c, result["headline"], data, label, index, report)
    for chart_id in ("memory-host", "memory-device"):
        if chart_id in charts:
            check_memory_axis(c, charts[chart_id])
    check_costs(c, charts, data)
    for p in c.problems:
        print("check_report_values: " + p, file=sys.stderr)
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
