#!/usr/bin/env python3
"""Measures the shape of ftbench's code: function and file lengths, and the includes between
modules (cycles, and whether each include is one docs/architecture.md allows).

Usage:
  scripts/code-structure.py            every figure (function lengths need Universal Ctags)
  scripts/code-structure.py --check    the same, exit 1 when a limit below is broken
  scripts/code-structure.py --includes-only [--check]
                                       only the module includes (no ctags; ctest runs this)
  --json: the figures as JSON; --root DIR: another checkout (the script's own by default)

A module is a folder of src/: src/<module>/, its headers beside its sources, its LibTorch side
in src/<module>/torch/; a module of several parts has a folder for each, named by the part's
namespace, with its own torch/ (src/economics/cost/, src/model/hf/torch/). Every include is
written from src/ ("economics/cost/catalog.h"); one that names a file of another module is an arrow from the including file's module to that one (an include
written relative to the including file, "../cost/price.h", too). The allowed arrows are the "may
include" column of the table under "## Modules" in docs/architecture.md: one row a module, the
modules it may include in backticks; every module may include `util` (the error kinds, the
version). A source or header that includes LibTorch (<ATen/...>, <torch/...>, <c10/...>,
directly or through ftbench headers) must be in a torch/ folder: the folder decides the target.
Some calls are banned from src/ (BANNED_CALLS says which and why). The layout before issue 41
(headers in include/ftbench/<module>/, included as "ftbench/<module>/x.h") is still read, for
--root on an older checkout.

Function lengths: Universal Ctags' function definitions (kind f, with their end lines) in src/
and include/, lambdas counted inside the function that holds them; a function's length is
its last line minus its first plus one. A file over the file limit states why in a comment
that begins "// Long file:" in its first 40 lines.
"""

import argparse
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # --root changes it
MAX_FUNCTION_LINES = 120
MAX_MEDIAN_FUNCTION_LINES = 10
MAX_FILE_LINES = 800
SOURCE_ENDINGS = (".cpp", ".h")
# Any quoted include: written from src/ ("economics/cost/catalog.h"); "ftbench/..." in the old
# layout.
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# LibTorch, however the include is written.
TORCH_HEADER = re.compile(r'^\s*#\s*include\s+[<"](ATen|torch|c10)/', re.M)
# Sources that are the LibTorch side by their folder (a module's torch/, or a part's); every other
# source is torch-free.
TORCH_SIDE = re.compile(r"^src/[a-z_]+/(?:[a-z_]+/)?torch/")


def source_files():
    out = []
    for top in ("src", "include"):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            out += [os.path.join(folder, n) for n in names if n.endswith(SOURCE_ENDINGS)]
    return sorted(os.path.relpath(p, ROOT) for p in out)


# Everyone's module: any module may include it.
EVERYONES = "util"


def module_of(path):
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "ftbench"] and len(parts) > 3:
        return parts[2]
    return None  # include/ftbench/version.h (the layout before issue 41): everyone's


def resolve_include(path, written):
    """The checkout's file that `path`'s #include "written" names, or None: "ftbench/..." in
    include/ (the old layout), else beside `path`, else from src/."""
    if written.startswith("ftbench/"):
        candidates = [os.path.join("include", written)]
    else:
        candidates = [os.path.normpath(os.path.join(os.path.dirname(path), written)),
                      os.path.join("src", written)]
    for candidate in candidates:
        if not candidate.startswith("..") and os.path.isfile(os.path.join(ROOT, candidate)):
            return candidate
    return None


@functools.lru_cache(maxsize=None)
def read(path):
    """A file of the checkout, read once (the checks read each file several times)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def included_modules(path, modules):
    """The modules `path` includes: the module of each file its quoted includes name (from src/,
    beside it, or "ftbench/<module>/..." in the old layout); an include of a file that is not
    there counts by its first folder when that is a module of `modules`."""
    targets = []
    for written in QUOTED_INCLUDE.findall(read(path)):
        resolved = resolve_include(path, written)
        if resolved is not None:
            target = module_of(resolved)
        else:
            parts = written.split("/")
            if parts[0] == "ftbench" and len(parts) > 2:
                target = parts[1]
            else:
                target = parts[0] if len(parts) > 1 and parts[0] in modules else None
        if target is not None:
            targets.append(target)
    return targets


def include_arrows(files):
    """{(from, to): [file, ...]} for includes between different modules."""
    arrows = {}
    modules = {m for m in map(module_of, files) if m}
    for path in files:
        here = module_of(path)
        if here is None:
            continue
        for target in included_modules(path, modules):
            if target != here and path not in arrows.get((here, target), []):
                arrows.setdefault((here, target), []).append(path)
    return arrows


def cycles(modules, arrows):
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {m: sorted({b for (a, b) in arrows if a == m}) for m in modules}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(m):
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for n in graph.get(m, []):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = []
            while True:
                n = stack.pop()
                on_stack.discard(n)
                component.append(n)
                if n == m:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return found


def allowed_includes():
    """{module: set of modules it may include}, from docs/architecture.md's module table."""
    text = read("docs/architecture.md")
    section = re.search(r"^## Modules\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not section:
        sys.exit("docs/architecture.md: no '## Modules' section with the module table")
    table = {}  # in the table's order: from the bottom of the layering up
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not re.fullmatch(r"`[a-z_]+`", cells[0]):
            continue
        table[cells[0].strip("`")] = set(re.findall(r"`([a-z_]+)`", cells[-1]))
    return table


def quoted_includes(path):
    """[(as written, the file it names or None)] of `path`'s quoted includes."""
    return [(w, resolve_include(path, w)) for w in QUOTED_INCLUDE.findall(read(path))]


def torch_headers(files):
    """The headers of the checkout that include LibTorch, directly or through its other
    headers (paths)."""
    includes = {}
    for path in files:
        if path.endswith(".h"):
            includes[path] = (bool(TORCH_HEADER.search(read(path))),
                              [r for _, r in quoted_includes(path) if r])
    torch = {h for h, (direct, _) in includes.items() if direct}
    changed = True
    while changed:
        changed = False
        for h, (_, inner) in includes.items():
            if h not in torch and any(i in torch for i in inner):
                torch.add(h)
                changed = True
    return torch


def check_torch_side(files):
    """A source or header of src/ outside a torch/ folder must not include LibTorch."""
    torch = torch_headers(files)
    problems = []
    for path in files:
        if not path.startswith("src/") or TORCH_SIDE.match(path):
            continue
        text = read(path)
        through = [w for w, r in quoted_includes(path) if r in torch]
        if TORCH_HEADER.search(text) or through:
            how = "includes LibTorch" + (f" (through {', '.join(through)})" if through else "")
            problems.append(f"{path} {how} but is not in a torch/ folder: the torch-free "
                            "targets compile it")
    return problems


# Calls the code of src/ and include/ must not make, each with why and what to call instead.
BANNED_CALLS = [
    (re.compile(r"\bremove_all\s*\("),
     "std::filesystem::remove_all crashed in programs linking a PyTorch wheel's LibTorch, "
     "which exports its own std::filesystem; call ftbench::io::remove_tree "
     "(src/util/io/remove_tree.h)"),
]
LINE_COMMENT = re.compile(r"//.*$", re.M)


def check_banned_calls(files):
    """No call of BANNED_CALLS in src/ or include/ (comments aside)."""
    problems = []
    for path in files:
        code = LINE_COMMENT.sub("", read(path))
        for pattern, why in BANNED_CALLS:
            for match in pattern.finditer(code):
                line = code.count("\n", 0, match.start()) + 1
                problems.append(f"{path}:{line}: {match.group(0).strip()}...: {why}")
    return problems


def check_layout(files):
    """The header rule of docs/architecture.md ("Modules"), for the layout without include/:
    every include in src/ written from src/, not relative to the including file; no header
    outside a module's folder; a header in a torch/ folder brings in LibTorch, and one that does
    not is in its module's folder, where torch-free code may include it."""
    problems = []
    if any(path.startswith("include/") for path in files):
        return problems  # the layout before issue 41
    torch = torch_headers(files)
    for path in files:
        if not path.startswith("src/"):
            continue
        if module_of(path) is None:
            problems.append(f"{path}: a file of src/ outside every module's folder")
        for written, resolved in quoted_includes(path):
            if resolved is not None and resolved != os.path.join("src", written):
                problems.append(f'{path}: #include "{written}" is written relative to the '
                                f'file; write it from src/ ("{resolved[len("src/"):]}")'
                                if resolved.startswith("src/") else
                                f'{path}: #include "{written}" names {resolved}, outside src/')
        if path.endswith(".h") and TORCH_SIDE.match(path) and path not in torch:
            problems.append(f"{path}: in a torch/ folder but brings in no LibTorch: its place is "
                            f"{os.path.dirname(os.path.dirname(path))}/")
    return problems


def check_table(table):
    """Each row's "may include" names only modules of rows above it: the table is the
    layering, from the bottom up."""
    order = {m: i for i, m in enumerate(table)}
    problems = []
    for m, allowed in table.items():
        for other in sorted(allowed):
            if other not in order:
                problems.append(f"docs/architecture.md: {m} may include {other}, which has no row")
            elif order[other] >= order[m]:
                problems.append(f"docs/architecture.md: {m} may include {other}, a row not "
                                f"below it: the table is the layering from the bottom up")
    return problems


def check_includes(files, report):
    arrows = include_arrows(files)
    modules = {m for m in map(module_of, files) if m}
    problems = []
    found = cycles(modules, arrows)
    report["include_cycles"] = found
    for component in found:
        inside = [f"{a} -> {b} ({', '.join(arrows[(a, b)])})"
                  for (a, b) in sorted(arrows) if a in component and b in component]
        problems.append("include cycle between " + ", ".join(component) + ": " +
                        "; ".join(inside))
    table = allowed_includes()
    for m in sorted(modules - table.keys()):
        problems.append(f"docs/architecture.md: module {m} has no row in the module table")
    for m in sorted(table.keys() - modules):
        problems.append(f"docs/architecture.md: module table names {m}, which has no folder")
    for (a, b), where in sorted(arrows.items()):
        if a in table and b not in table[a] and b != EVERYONES:
            problems.append(f"{a} may not include {b} (docs/architecture.md), but "
                            f"{', '.join(where)} does")
    problems += check_table(table)
    problems += check_torch_side(files)
    problems += check_layout(files)
    problems += check_banned_calls(files)
    report["modules"] = len(modules)
    report["module_arrows"] = len(arrows)
    # An arrow to a module that sits higher in the table than the one that includes it.
    order = {m: i for i, m in enumerate(table)}
    report["upward_arrows"] = [f"{a} -> {b}" for (a, b) in sorted(arrows)
                               if a in order and b in order and order[b] > order[a]]
    # One the table allows, too: the table's order and its columns then disagree.
    problems += [f"{a} -> {b} runs back up the layering: docs/architecture.md's module table "
                 f"lists {b} after {a}" for (a, b) in sorted(arrows)
                 if a in order and b in order and order[b] > order[a] and b in table[a]]
    return problems


def function_lengths(files):
    ctags = shutil.which("ctags")
    if not ctags:
        sys.exit("code-structure.py: function lengths need Universal Ctags "
                 "(Debian: apt-get install universal-ctags), or pass --includes-only")
    out = subprocess.run(
        [ctags, "--output-format=json", "--fields=+ne", "--kinds-C++=f", "--language-force=C++",
         "-f", "-"] + files, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    functions = []
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        if tag["name"].startswith("__anon"):  # a lambda: counted in its function
            continue
        scope = re.sub(r"__anon[0-9a-f]+", "(anonymous)", tag.get("scope", ""))
        functions.append((tag["end"] - tag["line"] + 1, tag["path"], tag["line"],
                          scope + ("::" if scope else "") + tag["name"]))
    return sorted(functions, reverse=True)


def class_sizes(files):
    """[(methods, fields, name, path)] for every class and struct of src/ and include/, largest
    first: methods are the member functions it declares or defines (constructors and operators
    included, each name once), fields its data members (Universal Ctags' kinds p, f and m)."""
    ctags = shutil.which("ctags")
    out = subprocess.run(
        [ctags, "--output-format=json", "--fields=+nesZ", "--kinds-C++=+p-d-e-g-n-t-v-h",
         "--language-force=C++", "-f", "-"] + files,
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    classes = {}
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag":
            continue
        kind, scope = tag.get("kind"), tag.get("scope", "")
        if kind in ("class", "struct"):
            name = (scope + "::" if scope else "") + tag["name"]
            classes.setdefault(name, [set(), set(), tag["path"]])
        elif tag.get("scopeKind") in ("class", "struct") and kind in ("prototype", "function",
                                                                      "member"):
            entry = classes.setdefault(scope, [set(), set(), tag["path"]])
            entry[0 if kind != "member" else 1].add(tag["name"])
    sizes = [(len(m), len(f), name, path) for name, (m, f, path) in classes.items()]
    return sorted(sizes, key=lambda c: (c[0] + c[1], c[0]), reverse=True)


def includers_of(files, header):
    """The sources and headers that include `header` ("report/report.h": src/report/report.h,
    or include/ftbench/report/report.h in the old layout)."""
    targets = {os.path.join("src", header), os.path.join("include", "ftbench", header)}
    return [path for path in files if any(r in targets for _, r in quoted_includes(path))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a limit is broken")
    parser.add_argument("--includes-only", action="store_true",
                        help="only the includes between modules (no ctags needed)")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.add_argument("--root", help="the checkout to measure (default: this script's)")
    args = parser.parse_args()
    if args.root:
        global ROOT
        ROOT = os.path.abspath(args.root)
    files = source_files()
    report = {}
    problems = check_includes(files, report)
    if not args.includes_only:
        functions = function_lengths(files)
        lengths = [n for n, *_ in functions]
        report["functions"] = len(lengths)
        report["function_lines_median"] = statistics.median(lengths)
        report["functions_over_100_lines"] = sum(n > 100 for n in lengths)
        report["functions_over_limit"] = [f"{p}:{line} {name} {n}" for n, p, line, name
                                          in functions if n > MAX_FUNCTION_LINES]
        report["longest_functions"] = [f"{p}:{line} {name} {n}" for n, p, line, name
                                       in functions[:10]]
        if report["function_lines_median"] > MAX_MEDIAN_FUNCTION_LINES:
            problems.append(f"median function length {report['function_lines_median']} lines, "
                            f"over {MAX_MEDIAN_FUNCTION_LINES}")
        problems += [f"function over {MAX_FUNCTION_LINES} lines: {f}"
                     for f in report["functions_over_limit"]]
        long_files = []
        for path in files:
            text = read(path)
            n = text.count("\n")
            if n > MAX_FILE_LINES:
                reason = "// Long file:" in "\n".join(text.splitlines()[:40])
                long_files.append(f"{path} {n}" + (" (reason stated)" if reason else ""))
                if not reason:
                    problems.append(f"{path}: {n} lines, over {MAX_FILE_LINES}, no stated "
                                    "reason (a '// Long file:' comment)")
        report["files"] = len(files)
        report["files_over_limit"] = long_files
        report["public_headers"] = sum(path.startswith("include/") for path in files)
        report_h = includers_of(files, "report/report.h")
        report["files_including_report_h"] = len(report_h)
        report["modules_including_report_h"] = len({module_of(p) for p in report_h} - {None})
        report["largest_classes"] = [f"{name} ({path}): {m} methods, {f} fields"
                                     for m, f, name, path in class_sizes(files)[:5]]
    report["problems"] = problems
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            if isinstance(value, list):
                print(f"{key}: {len(value)}")
                for v in value:
                    print(f"  {v}")
            else:
                print(f"{key}: {value}")
    return 1 if args.check and problems else 0


if __name__ == "__main__":
    sys.exit(main())
