#!/usr/bin/env python3
"""Two profiles' op tables (and kernel tables) side by side, as Markdown.

The tables are those `ftbench run --profile-steps N[,M]` writes beside its report
(<stem>.profile-ops.csv, <stem>.profile-kernels.csv) and those
scripts/reference/hf_peft_lora_step.py --profile-steps writes in the same format. Rows are joined
by op (kernel) name; an op that ran on one side only has an empty other side. Rows are ordered
by the larger of the two self times (kernels: total times), largest first, ties by name; past
--top, the rest are summed into one row; a totals row ends each table. Shares are of each side's
own total. Standard library only.

Usage:
  scripts/profile-side-by-side.py --left ftbench=run.profile-ops.csv \\
      --right hf=hf.profile-ops.csv [--top 25] \\
      [--left-kernels run.profile-kernels.csv --right-kernels hf.profile-kernels.csv]
Exit 0; 2 on bad arguments or an unreadable or malformed table (file and line named).
"""

import argparse
import csv
import sys
from decimal import Decimal, InvalidOperation

OP_HEADER = ["name", "calls", "self_ms", "total_ms", "self_share", "flops", "tflop_per_s",
             "input_bytes", "input_gb_per_s"]
KERNEL_HEADER = ["name", "kind", "calls", "total_ms", "share", "mean_us"]


class TableError(Exception):
    pass


def _whole(text, path, line, column):
    if not text.isascii() or not text.isdigit():
        raise TableError(f"{path}:{line}: {column}: expected a whole number, found {text!r}")
    return int(text)


def _decimal(text, path, line, column):
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = None
    # Not held to >= 0: a self time can be a little below 0 where the profiler's rounded times
    # leave a call ending after the op that made it.
    if value is None or not value.is_finite():
        raise TableError(f"{path}:{line}: {column}: expected a number of ms, found {text!r}")
    return value


def read_table(path, header, time_column):
    """{name: {"calls", "ms", "flops", "kind"}} of an op or kernel CSV; TableError naming the file
    and line of what is wrong."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(_rows(csv.reader(f), path, header, time_column))
    except OSError as e:
        raise TableError(f"{path}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise TableError(f"{path}: not UTF-8 text ({e.reason})") from None
    except csv.Error as e:
        raise TableError(f"{path}: not a CSV table: {e}") from None
    table = {}
    for name, row, line in rows:
        if name in table:
            raise TableError(f"{path}:{line}: a second row for {name!r}")
        table[name] = row
    return table


def _rows(reader, path, header, time_column):
    first = next(reader, None)
    if first != header:
        found = "nothing (an empty file)" if first is None else repr(",".join(first))
        raise TableError(f"{path}:1: expected the header {','.join(header)!r}, found {found}")
    for fields in reader:
        line = reader.line_num
        if not fields:
            continue
        if len(fields) != len(header):
            raise TableError(f"{path}:{line}: expected {len(header)} fields, found {len(fields)}")
        named = dict(zip(header, fields))
        row = {
            "calls": _whole(named["calls"], path, line, "calls"),
            "ms": _decimal(named[time_column], path, line, time_column),
            "flops": _whole(named["flops"], path, line, "flops") if "flops" in named else 0,
            "kind": named.get("kind", ""),
        }
        yield named["name"], row, line


def _cell(text):
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _flops(n):
    return "" if n == 0 else f"{n:.4g}"


def _percent(part, whole):
    return f"{100 * part / whole:.1f}%" if whole > 0 else ""


def side_by_side(left, right, names, top, kernels=False):
    """The Markdown table (lines) of two tables: `names` the two sides' names."""
    ln, rn = (_cell(n) for n in names)
    every = sorted(set(left) | set(right),
                   key=lambda n: (-max(left[n]["ms"] if n in left else Decimal(0),
                                       right[n]["ms"] if n in right else Decimal(0)), n))
    totals = [sum((t[n]["ms"] for n in t), Decimal(0)) for t in (left, right)]
    what = "kernel" if kernels else "op"
    ms = "total ms" if kernels else "self ms"
    head = [what] + (["kind"] if kernels else [])
    for side in (ln, rn):
        head += [f"{side} calls", f"{side} {ms}"] + ([] if kernels else [f"{side} flops"])
    head += [f"{ln} - {rn} ms", f"{ln} share", f"{rn} share"]
    text_columns = 2 if kernels else 1
    align = ["---"] * text_columns + ["---:"] * (len(head) - text_columns)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]

    def row(label, kind, sides):
        cells = [label] + ([kind] if kernels else [])
        for s in sides:
            if s is None:
                cells += ["", ""] + ([] if kernels else [""])
            else:
                cells += [str(s["calls"]), f"{s['ms']:.3f}"] + ([] if kernels
                                                                else [_flops(s["flops"])])
        lms, rms = (s["ms"] if s is not None else Decimal(0) for s in sides)
        cells += [f"{lms - rms:+.3f}"]
        cells += [_percent(s["ms"], t) if s is not None else "" for s, t in zip(sides, totals)]
        lines.append("| " + " | ".join(cells) + " |")

    def summed(table, group):
        present = [table[n] for n in group if n in table]
        if not present:
            return None
        return {"calls": sum(r["calls"] for r in present),
                "ms": sum((r["ms"] for r in present), Decimal(0)),
                "flops": sum(r["flops"] for r in present)}

    for n in every[:top]:
        kinds = sorted({t[n]["kind"] for t in (left, right) if n in t})
        row(_cell(n), "/".join(kinds), (left.get(n), right.get(n)))
    rest = every[top:]
    if rest:
        row(f"*{len(rest)} more {what}{'' if len(rest) == 1 else 's'}*", "",
            (summed(left, rest), summed(right, rest)))
    row("**total**", "", (summed(left, every) or {"calls": 0, "ms": Decimal(0), "flops": 0},
                          summed(right, every) or {"calls": 0, "ms": Decimal(0), "flops": 0}))
    return lines


def named_path(text):
    name, eq, path = text.partition("=")
    if not eq or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, found {text!r}")
    return name, path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--left", required=True, type=named_path,
                    metavar="NAME=PATH", help="the first op table (ftbench's)")
    ap.add_argument("--right", required=True, type=named_path,
                    metavar="NAME=PATH", help="the second op table (the reference's)")
    ap.add_argument("--top", type=int, default=25, help="rows shown before the rest are summed")
    ap.add_argument("--left-kernels", metavar="PATH", help="the left side's kernel table")
    ap.add_argument("--right-kernels", metavar="PATH", help="the right side's kernel table")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error(f"--top: expected a whole number of rows from 1, found {args.top}")
    if (args.left_kernels is None) != (args.right_kernels is None):
        ap.error("--left-kernels and --right-kernels go together")
    names = (args.left[0], args.right[0])
    if names[0] == names[1]:
        ap.error(f"--left and --right have the same name {names[0]!r}")
    try:
        left = read_table(args.left[1], OP_HEADER, "self_ms")
        right = read_table(args.right[1], OP_HEADER, "self_ms")
        kernel_tables = None
        if args.left_kernels is not None:
            kernel_tables = (read_table(args.left_kernels, KERNEL_HEADER, "total_ms"),
                             read_table(args.right_kernels, KERNEL_HEADER, "total_ms"))
    except TableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = [f"## Ops by self time: {names[0]} ({args.left[1]}) and {names[1]} ({args.right[1]})",
           ""]
    out += side_by_side(left, right, names, args.top)
    if kernel_tables is not None:
        out += ["", f"## Device kernels by total time: {names[0]} ({args.left_kernels}) and "
                f"{names[1]} ({args.right_kernels})", ""]
        if kernel_tables[0] or kernel_tables[1]:
            out += side_by_side(*kernel_tables, names, args.top, kernels=True)
        else:
            out.append("No device kernels on either side (a CPU profile).")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
