#!/usr/bin/env bash
# The HTML report in a real browser: `ftbench report --html` of the given reports, loaded in
# Debian's headless Chromium (check_html_report.py: no console error, no outside request, every
# chart drawn, a screenshot that is not blank), its plotted values held against the reports
# (check_report_values.py), and the markdown summary written beside it.
#
# Usage: tests/browser/run.sh FTBENCH WORK_DIR CASE
#   CASE  fixtures  the two fixture reports (FIELD.md's reference run, H100 and MI300X)
#         long      a report of 22,500 steps (make_long_report.py) beside the H100 fixture
#         ci-tiny   a fresh run of configs/ci-tiny.yaml (needs ftbench-bin), priced at --rate 1
# Exit 0: every check passed; 1: one failed; 77: skipped because Chromium is missing, except on
# CI, where that is a failure (docs/ci.md, "Skips and CI"). The page, its screenshot and what the
# browser read back stay in WORK_DIR/CASE.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 FTBENCH WORK_DIR fixtures|long|ci-tiny" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$(dirname "$here")")"
ftbench="$1"
work="$2/$3"
chromium="${FTBENCH_CHROMIUM:-/usr/bin/chromium}"
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3

if [[ ! -x "$chromium" ]]; then
  ci="${CI:-}"
  ci="${ci,,}"
  if [[ -n "$ci" && "$ci" != 0 && "$ci" != false ]]; then
    echo "error: $chromium is required for the HTML report's browser test on CI" >&2
    exit 1
  fi
  echo "skipped: $chromium not found (install Debian's chromium, scripts/setup.sh does)"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
fixtures="$root/tests/fixtures/reports"
extra=()
case "$3" in
  fixtures) reports=("$fixtures/h100-reference.json" "$fixtures/mi300x-reference.json") ;;
  long)
    "$python" "$here/make_long_report.py" "$fixtures/h100-reference.json" 22500 "$work/long.json"
    reports=("$work/long.json" "$fixtures/h100-reference.json")
    ;;
  ci-tiny)
    (cd "$root" && "$ftbench" run configs/ci-tiny.yaml --set "output.report=$work/ci-tiny.json" \
      --set output.progress=off >"$work/run.log" 2>&1) || {
      cat "$work/run.log" >&2
      exit 1
    }
    reports=("$work/ci-tiny.json")
    extra=(--rate 1)
    ;;
  *)
    echo "unknown case $3" >&2
    exit 2
    ;;
esac

"$ftbench" report "${reports[@]}" "${extra[@]}" --html "$work/report.html" \
  --markdown "$work/summary.md"
grep -q "^## ftbench: " "$work/summary.md"
"$python" "$here/check_html_report.py" "$work/report.html" --out "$work/result.json" \
  --screenshot "$work/screenshot.png"
"$python" "$here/check_report_values.py" "$work/result.json" "${reports[@]}"
echo "ok: $3 ($(wc -c <"$work/report.html") bytes, screenshot $work/screenshot.png)"
