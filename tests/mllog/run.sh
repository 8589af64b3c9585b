#!/usr/bin/env bash
# The MLPerf-style event log of real runs against the format's rules (check_mllog.py): a
# completed ci-tiny run on file data with validation passes (status success, every
# eval_accuracy the report's validation loss); one stopped after 3 steps and resumed (one log,
# status success); a resume refused to append to a file that is not a log; a diverged run
# (status aborted).
# Also the dollars of run --rate in its log lines and summary, and none without a rate.
#
# Usage: tests/mllog/run.sh FTBENCH WORK_DIR
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 FTBENCH WORK_DIR" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$(dirname "$here")")"
ftbench="$1"
work="$2"
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
rm -rf "$work"
mkdir -p "$work"
"$python" - "$work/data.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(80):
        f.write(json.dumps({"text": f"example {i}: the quick brown fox jumps over {i * 7} dogs"}) + "\n")
PY
common=(configs/ci-tiny.yaml --set data.source=file --set "data.path=$work/data.jsonl"
  --set data.validation_fraction=0.25 --set train.eval_every_steps=3 --set output.progress=off
  --set "train.checkpoint.dir=$work/checkpoints")
cd "$root"
"$ftbench" run "${common[@]}" -o "$work/done.json" --mllog "$work/done.mllog" --rate 2.97 \
  --billing per-minute >"$work/done.out" 2>&1 || { cat "$work/done.out" >&2; exit 1; }
# With a rate, every log line shows the dollars (a run of seconds is billed one minute at
# $2.97/GPU-h: $0.05) and the summary the run's cost; without one (below), neither.
grep -q 'step 7/7 .* | \$0.05 so far, ~\$0.05 at the end$' "$work/done.out" ||
  { cat "$work/done.out" >&2; echo "no dollars in the log lines" >&2; exit 1; }
grep -q '^  cost  *\$0.0495 at --rate 2.97 (\$2.97/GPU-h, per-minute billing;' "$work/done.out" ||
  { echo "no cost in the summary" >&2; exit 1; }
"$python" "$here/check_mllog.py" "$work/done.mllog" --report "$work/done.json" --status success
grep -q '"key": "eval_accuracy"' "$work/done.mllog"
status=0
"$ftbench" run "${common[@]}" -o "$work/stopped.json" --mllog "$work/stopped.mllog" \
  --stop-after-steps 3 >"$work/stopped.out" 2>&1 || status=$?
if [[ $status -ne 4 ]]; then
  cat "$work/stopped.out" >&2
  echo "expected exit code 4 (interrupted), found $status" >&2
  exit 1
fi
if grep -q 'so far' "$work/stopped.out"; then
  echo "dollars shown without a rate" >&2
  exit 1
fi
# The stop paused the log (no run_stop); the resumed process continues it, and the whole log is
# one run: one preamble, one run_start, one run_stop (success).
if grep -q '"key": "run_stop"' "$work/stopped.mllog"; then
  echo "a stop that a resume continues ended the log" >&2
  exit 1
fi
"$ftbench" run "${common[@]}" -o "$work/stopped.json" --mllog "$work/stopped.mllog" \
  --resume latest >"$work/resumed.out" 2>&1 || { cat "$work/resumed.out" >&2; exit 1; }
"$python" "$here/check_mllog.py" "$work/stopped.mllog" --report "$work/stopped.json" --status success
grep -q '"key": "submission_platform", "value": "1x[^"]' "$work/done.mllog" ||
  { echo "submission_platform does not name the device" >&2; exit 1; }
# A resume appends only to an event log: another file at the path is refused and kept (a report
# there is refused before that, as an ftbench file of another kind: exit 2, --force or not).
cp "$work/done.json" "$work/victim.json"
status=0
"$ftbench" run "${common[@]}" -o "$work/stopped.json" --mllog "$work/victim.json" \
  --resume latest --force >/dev/null 2>&1 || status=$?
cmp -s "$work/done.json" "$work/victim.json" && [[ $status -eq 2 ]] ||
  { echo "a resume appended to a file that is not an event log (exit $status)" >&2; exit 1; }
echo "notes, not an event log" >"$work/victim.txt"
status=0
"$ftbench" run "${common[@]}" -o "$work/stopped.json" --mllog "$work/victim.txt" \
  --resume latest --force >/dev/null 2>&1 || status=$?
[[ "$(cat "$work/victim.txt")" == "notes, not an event log" && $status -eq 5 ]] ||
  { echo "a resume appended to a text file that is not an event log (exit $status)" >&2; exit 1; }
# --billing without --rate is refused, not ignored.
status=0
"$ftbench" run "${common[@]}" -o "$work/x.json" --offer reference-run/H100-SXM --billing bogus \
  >"$work/billing.out" 2>&1 || status=$?
[[ $status -eq 2 ]] && grep -q -- "--billing: goes with --rate" "$work/billing.out" ||
  { cat "$work/billing.out" >&2; exit 1; }
# A failed run ends the log with run_stop aborted.
status=0
"$ftbench" run "${common[@]}" --set train.lr=1e30 -o "$work/diverged.json" \
  --mllog "$work/diverged.mllog" >/dev/null 2>&1 || status=$?
"$python" "$here/check_mllog.py" "$work/diverged.mllog" --status aborted
# Written once: a second run to the same log without --force is refused (exit 5), the log kept.
before=$(sha256sum "$work/done.mllog")
status=0
"$ftbench" run "${common[@]}" -o "$work/again.json" --mllog "$work/done.mllog" >/dev/null 2>&1 ||
  status=$?
[[ $status -eq 5 && "$(sha256sum "$work/done.mllog")" == "$before" ]] ||
  { echo "an existing log was not refused (exit $status) or was changed" >&2; exit 1; }
echo "ok: completed and aborted logs pass the format's rules"
