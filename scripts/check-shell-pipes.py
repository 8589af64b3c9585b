#!/usr/bin/env python3
"""Finds, in this project's shell scripts that set pipefail, a pipe into a reader that may stop
reading before the writer is done: `grep -q`, `grep -m N`, `head`, an awk program that exits, a
sed script that quits (a pipe continued on the next line too). When it stops first, the writer
dies of SIGPIPE (status 141), pipefail makes the pipeline fail, and an `if` takes the wrong branch
or `set -e` ends the script, depending on how the two processes were scheduled: tests/blas/run.sh
failed so on a loaded CI machine (`ldd ... | grep -Eq ...`). Write the writer's output to a
variable first and read that (`grep -q PATTERN <<<"$out"`).

Not found: a reader that stops in other ways (`{ read -r x; }`, a program of one's own).

Usage: scripts/check-shell-pipes.py [FILE...]   (no FILE: every tracked shell script; a FILE is
read as given, relative to the current folder)
Exit 0 when none is found, 1 with one line per finding (FILE:LINE: the line).
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A single `|` or `|&` (not `||`) and, after it, a reader that may stop early: grep -q / -m
# (egrep, fgrep too), head, awk whose program exits, sed whose script quits; with a variable
# assignment or `command` before it. Quoted text is blanked before grep and head are looked for
# (a message may name them); awk's and sed's programs are read as written.
PIPE = r"(?<![|])\|&?(?![|])\s*(?:\w+=\S*\s+)*(?:command\s+)?"
EARLY_READER = re.compile(
    PIPE + r"(?:"
    r"[ef]?grep\b[^|;&#]*?\s(?:-[A-Za-z]*[qm][A-Za-z0-9]*|--quiet|--silent|--max-count\b)"
    r"|head\b"
    r")"
)
EARLY_PROGRAM = re.compile(
    PIPE + r"(?:"
    r"awk\b[^|]*\bexit\b"
    r"|sed\b[^|]*?(?:^|[\s'\";{}/0-9$])q(?:\d*)(?=$|[\s'\";}])"
    r")"
)
PIPEFAIL = re.compile(r"^\s*set\s+(?:-[A-Za-z]*o\s+pipefail|.*-o\s+pipefail)", re.M)


def code_of(line, keep_single_quoted=False):
    """The line without its comment (a `#` at the start of a word, outside quotes), and, unless
    `keep_single_quoted`, without what single quotes hold (a pattern, a message); what double
    quotes hold stays, since a command substitution there runs."""
    quote = None
    kept = []
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
            elif quote == "'" and not keep_single_quoted:
                continue
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        kept.append(ch)
    return "".join(kept)


def logical_lines(text):
    """(first line number, the command) with lines continued by a trailing `|` or `\\` joined."""
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        code = code_of(line, keep_single_quoted=True).rstrip()
        if not pending:
            start = number
        if code.endswith("\\"):
            pending += code[:-1] + " "
        elif code.endswith("|") and not code.endswith("||"):
            pending += code + " "
        else:
            yield start, pending + code
            pending = ""
    if pending:
        yield start, pending


def findings(path, text):
    if not PIPEFAIL.search(text):
        return []
    lines = text.splitlines()
    found = []
    for number, command in logical_lines(text):
        if EARLY_READER.search(code_of(command)) or EARLY_PROGRAM.search(command):
            found.append(f"{path}:{number}: {lines[number - 1].strip()}")
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
        full = path if argv[1:] else os.path.join(REPO, path)
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
