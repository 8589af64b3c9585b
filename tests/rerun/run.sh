#!/usr/bin/env bash
# A run re-created from its report (ftbench run --from-report): a ci-tiny run on a data file
# given by a relative path, run again from another folder, is the same job by compare's
# fingerprints (exit 0, "same spec fingerprint, same data fingerprint"); once the data file
# changes, the report is refused (exit 2, naming data.path) and no report is written.
#
# Usage: tests/rerun/run.sh FTBENCH WORK_DIR
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 FTBENCH WORK_DIR" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ftbench="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="$2"
rm -rf "$work"
mkdir -p "$work/first/data" "$work/elsewhere"
for i in $(seq 1 80); do
  echo "{\"text\": \"example $i: the quick brown fox jumps over $((i * 7)) lazy dogs\"}"
done >"$work/first/data/train.jsonl"
cd "$work/first"
"$ftbench" run "$root/configs/ci-tiny.yaml" --set data.source=file --set data.path=data/train.jsonl \
  --set output.progress=off -o first.json >run.log 2>&1 || { cat run.log >&2; exit 1; }
cd "$work/elsewhere"
"$ftbench" run --from-report ../first/first.json -o again.json >run.log 2>&1 ||
  { cat run.log >&2; exit 1; }
"$ftbench" compare ../first/first.json again.json >compare.txt
grep -q "^fair: same job (same spec fingerprint, same data fingerprint, same steps)" compare.txt ||
  { cat compare.txt >&2; exit 1; }
# The weights the report's run trained (random here: no fingerprint) are checked too: a report
# that names other weights is another job.
python3 - ../first/first.json other-weights.json <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["weights"]["fingerprint"] = "ab" * 32
json.dump(report, open(sys.argv[2], "w"))
PY
status=0
"$ftbench" run --from-report other-weights.json -o other.json >other.log 2>&1 || status=$?
if [[ $status -ne 2 ]] || ! grep -q "weights fingerprint , the report's run trained abababababab" other.log; then
  cat other.log >&2
  echo "a report of other weights was not refused (exit $status)" >&2
  exit 1
fi
echo '{"text": "one more"}' >>"$work/first/data/train.jsonl"
status=0
"$ftbench" run --from-report ../first/first.json -o changed.json >changed.log 2>&1 || status=$?
if [[ $status -ne 2 ]] || ! grep -q "data.path $work/first/data/train.jsonl: not the file" changed.log ||
  [[ -e changed.json ]]; then
  cat changed.log >&2
  echo "a changed data file was not refused (exit $status)" >&2
  exit 1
fi
echo "ok: the re-created run is the same job; a changed data file is refused"
