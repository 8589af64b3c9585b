#!/usr/bin/env python3
"""Finds, in this project's shell scripts that set pipefail, a pipe into a reader that may stop
reading before the writer is done: `grep -q`, `grep -m N`, `head`. When it stops first, the writer
dies of SIGPIPE (status 141), pipefail makes the pipeline fail, and an `if` takes the wrong branch
or `set -e` ends the script, depending on how the two processes were scheduled: tests/blas/run.sh
failed so on a loaded CI machine (`ldd ... | grep -Eq ...`). Write the writer's output to a
variable first and read that (`grep -q PATTERN <<<"$out"`).

Usage: scripts/check-shell-pipes.py [FILE...]   (no FILE: every tracked shell script)
Exit 0 when none is found, 1 with one line per finding (FILE:LINE: the line).
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A single `|` (not `||`, not `|&`'s second half) and, after it, a reader that may stop early.
EARLY_READER = re.compile(
    r"(?<![|])\|(?![|])\s*(?:"
    r"grep\b[^|;&#]*?\s(?:-[A-Za-z]*[qm][A-Za-z0-9]*|--quiet|--silent|--max-count\b)"
    r"|head\b"
    r")"
)
PIPEFAIL = re.compile(r"^\s*set\s+(?:-[A-Za-z]*o\s+pipefail|.*-o\s+pipefail)", re.M)


def code_of(line):
    """The line without its comment (a `#` at the start of a word, outside quotes) and without
    what single quotes hold (a pattern, a message); what double quotes hold stays, since a
    command substitution there runs."""
    quote = None
    kept = []
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
            elif quote == "'":
                continue
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        kept.append(ch)
    return "".join(kept)


def findings(path, text):
    if not PIPEFAIL.search(text):
        return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if EARLY_READER.search(code_of(line)):
            found.append(f"{path}:{number}: {line.strip()}")
    return found


def is_shell(path):
    if path.endswith(".sh"):
        return True
    try:
        with open(os.path.join(REPO, path), "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return re.match(rb"#!\S*(?:/env\s+)?\S*\b(?:bash|sh)\b", first) is not None


def tracked_scripts():
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], check=True,
                            capture_output=True).stdout.decode().split("\0")
    return [p for p in listed if p and os.path.isfile(os.path.join(REPO, p)) and is_shell(p)]


def main(argv):
    paths = argv[1:] or tracked_scripts()
    found = []
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(REPO, path)
        with open(full, encoding="utf-8", errors="replace") as f:
            found += findings(path, f.read())
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} pipe(s) into a reader that may stop early, under pipefail: read the "
              "writer's output from a variable instead (scripts/check-shell-pipes.py)",
              file=sys.stderr)
        return 1
    print(f"check-shell-pipes: {len(paths)} script(s), none found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
