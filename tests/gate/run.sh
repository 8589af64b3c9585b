#!/usr/bin/env bash
# `ftbench gate` end to end, as CI runs it: real ci-tiny runs make the baseline (a file, and a
# folder that also holds a non-report, an interrupted run and another job's report, each left
# out and listed); reports made to differ by known amounts (tests/gate/make_variant.py) pass or
# fail each rule with exit code 0 or 6; too few samples, a different job, bad rules and outputs
# that exist are their own outcomes. The JUnit XML and the GitHub annotations are checked against
# their formats by tests/gate/check_ci_formats.py.
#
# Usage: tests/gate/run.sh FTBENCH WORK_DIR
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
variant() { "$python" "$here/make_variant.py" "$@"; }
check() { "$python" "$here/check_ci_formats.py" "$@"; }
rm -rf "$work"
mkdir -p "$work/base"
cd "$root"

# expect CODE LOG ARGS...: runs ftbench gate ARGS, stdout and stderr in LOG, and holds its exit
# code to CODE.
expect() {
  local want=$1 log=$2
  shift 2
  local rc=0
  "$ftbench" gate "$@" >"$log" 2>&1 || rc=$?
  if [[ $rc -ne $want ]]; then
    cat "$log" >&2
    echo "gate $*: exit $rc, expected $want" >&2
    exit 1
  fi
}
has() {
  grep -qF -- "$2" "$1" || { cat "$1" >&2; echo "expected in $1: $2" >&2; exit 1; }
}

# A real run: 3 epochs of ci-tiny (24 steps, 22 measured: enough for the step tests). The
# baseline's three reports are it with its measured steps 2 % slower, as they were, and 2 %
# faster, so that the outcomes below do not hang on this machine's timing noise (ctest runs
# other tests beside this one).
smoke=(configs/ci-tiny.yaml --set train.epochs=3 --set output.progress=off)
"$ftbench" run "${smoke[@]}" -o "$work/new.json" >"$work/new.log" 2>&1
variant "$work/new.json" "$work/base/run-1.json" --steps 1.02 --later -7200
variant "$work/new.json" "$work/base/run-2.json" --later -3600
variant "$work/new.json" "$work/base/run-3.json" --steps 0.98 --later -1800
"$ftbench" run "${smoke[@]}" --stop-after-steps 3 -o "$work/base/stopped.json" \
  --set "train.checkpoint.dir=$work/ckpt" >"$work/stopped.log" 2>&1 || [[ $? -eq 4 ]]
"$ftbench" run "${smoke[@]}" --set data.seq_len=64 --set data.max_tokens=64 \
  -o "$work/base/other-job.json" >"$work/other.log" 2>&1
echo '{"schema": "ftbench.gate/1"}' >"$work/base/gate-output.json"

# Deterministic figures (allocator peak, loss) held tight, times loose: passes, exit 0.
rules=status,step_time:+100%,peak_allocated:+1%,final_loss:+0.001,time_to_first_step:+200%
expect 0 "$work/pass.out" "$work/base" "$work/new.json" --fail-on "$rules" \
  --junit "$work/pass.xml" --github
has "$work/pass.out" "against $work/base (3 reports, the median of each figure)"
has "$work/pass.out" "left out of the baseline: $work/base/gate-output.json: not an ftbench report"
has "$work/pass.out" "left out of the baseline: $work/base/other-job.json: another job: [job] "
has "$work/pass.out" "left out of the baseline: $work/base/stopped.json: status interrupted: a baseline is a completed run"
has "$work/pass.out" "gate passed: 5 rules, 5 passed"
check junit "$work/pass.xml" status=pass step_time:+100%=pass peak_allocated:+1%=pass \
  final_loss:+0.001=pass time_to_first_step:+200%=pass
check annotations "$work/pass.out" verdict=notice

# Each rule fails on a report made worse than its limit: exit 6, the others still pass.
variant "$work/new.json" "$work/slow.json" --steps 5
variant "$work/new.json" "$work/fat.json" --allocated 1.02
variant "$work/new.json" "$work/loss.json" --loss 0.002
variant "$work/new.json" "$work/loss-ok.json" --loss 0.0005
variant "$work/new.json" "$work/late.json" --phases 4
variant "$work/new.json" "$work/diverged.json" --status diverged
expect 6 "$work/slow.out" "$work/base" "$work/slow.json" --fail-on "$rules" \
  --junit "$work/slow.xml" --github --format markdown
has "$work/slow.out" "gate FAILED: 5 rules, 1 failed (step\\_time:+100%), 4 passed"
has "$work/slow.out" "beyond the limit and significant: Mann-Whitney U "
check junit "$work/slow.xml" status=pass step_time:+100%=failure peak_allocated:+1%=pass \
  final_loss:+0.001=pass time_to_first_step:+200%=pass
check annotations "$work/slow.out" step_time:+100%=error verdict=error
expect 6 "$work/fat.out" "$work/base" "$work/fat.json" --fail-on "$rules" --format json
"$python" - "$work/fat.out" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
assert g["schema"] == "ftbench.gate/1" and g["verdict"] == "failed" and g["exit_code"] == 6, g
out = {r["rule"]: r["outcome"] for r in g["rules"]}
assert out == {"status": "pass", "step_time:+100%": "pass", "peak_allocated:+1%": "fail",
               "final_loss:+0.001": "pass", "time_to_first_step:+200%": "pass"}, out
f = g["rules"][2]["figures"][0]
assert f["new"] == round(f["baseline"] * 1.02) and f["limit"] == f["baseline"] * 1.01, f
PY
expect 6 "$work/loss.out" "$work/base" "$work/loss.json" --fail-on "$rules"
has "$work/loss.out" "final_loss:+0.001: FAIL: smoothed final loss"
expect 0 "$work/loss-ok.out" "$work/base" "$work/loss-ok.json" --fail-on "$rules"
expect 6 "$work/late.out" "$work/base" "$work/late.json" --fail-on "$rules"
has "$work/late.out" "gate FAILED: 5 rules, 1 failed (time_to_first_step:+200%), 4 passed"
# A run that did not complete fails status (exit 6, not 2), listed or not.
expect 6 "$work/diverged.out" "$work/base/run-1.json" "$work/diverged.json" --fail-on step_time:+100%
has "$work/diverged.out" "status: FAIL: the run did not complete: status diverged"
# Cost at a price: 4x the phases bill more at per-second billing; under hourly billing both runs
# fit in the first hour and cost the same.
expect 6 "$work/cost.out" "$work/base" "$work/late.json" --fail-on cost:+5% --rate 3.6
expect 0 "$work/cost-hour.out" "$work/base" "$work/late.json" --fail-on cost:+5% --rate 3.6 \
  --billing per-hour
expect 2 "$work/cost-none.out" "$work/base" "$work/late.json" --fail-on cost:+5%
has "$work/cost-none.out" "the cost rule needs a price"

# Too few samples: ci-tiny as it is (6 measured steps) cannot decide a step rule: exit 6, the
# JUnit case a failure of type undecided; --undecided warn lets it pass with a warning.
"$ftbench" run configs/ci-tiny.yaml --set output.progress=off -o "$work/short-a.json" >/dev/null 2>&1
"$ftbench" run configs/ci-tiny.yaml --set output.progress=off -o "$work/short-b.json" >/dev/null 2>&1
expect 6 "$work/few.out" "$work/short-a.json" "$work/short-b.json" --fail-on step_time:+5% \
  --junit "$work/few.xml" --github
has "$work/few.out" "step_time:+5%: TOO FEW SAMPLES:"
check junit "$work/few.xml" status=pass step_time:+5%=failure
grep -q 'type="undecided"' "$work/few.xml"
check annotations "$work/few.out" step_time:+5%=error verdict=error
expect 0 "$work/few-warn.out" "$work/short-a.json" "$work/short-b.json" --fail-on step_time:+5% \
  --undecided warn --junit "$work/few-warn.xml" --github --summary "$work/summary.md"
check junit "$work/few-warn.xml" status=pass step_time:+5%=skipped
check annotations "$work/few-warn.out" step_time:+5%=warning verdict=notice
# The README's gate lines of two reports (reports/last-good.json reports/new.json) pass on two
# ci-tiny runs, as a new user tries them first.
readme_lines=0
while IFS=: read -r number line; do
  line=${line%%   #*}
  read -r -a words <<<"${line#build/src/ftbench gate reports/last-good.json reports/new.json}"
  readme_lines=$((readme_lines + 1))
  rc=0
  "$ftbench" gate "$work/short-a.json" "$work/short-b.json" "${words[@]}" \
    >"$work/readme-$number.out" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { cat "$work/readme-$number.out" >&2
    echo "README.md line $number: gate ${words[*]} on two ci-tiny runs: exit $rc, expected 0" >&2
    exit 1; }
done < <(grep -n '^build/src/ftbench gate reports/last-good.json reports/new.json ' README.md)
[[ $readme_lines -ge 2 ]] ||
  { echo "README.md: expected 2 or more gate lines of two reports, found $readme_lines" >&2; exit 1; }
# The summary is appended (GitHub's job summary file), never replaced.
expect 0 "$work/few-warn2.out" "$work/short-a.json" "$work/short-b.json" --fail-on step_time:+5% \
  --undecided warn --summary "$work/summary.md"
[[ $(grep -c '^### ftbench gate: passed' "$work/summary.md") -eq 2 ]] ||
  { cat "$work/summary.md" >&2; echo "the summary was not appended" >&2; exit 1; }

# Refusals: a different job (exit 2), no baseline of the job left in a folder, a bad rule, a
# JUnit file that exists (exit 5, kept), a JUnit path that is a report (exit 2, kept), compare
# asked to gate.
expect 2 "$work/job.out" "$work/base/run-1.json" "$work/base/other-job.json"
has "$work/job.out" "are of different jobs"
mkdir -p "$work/only-other"
cp "$work/base/other-job.json" "$work/only-other/"
expect 2 "$work/none.out" "$work/only-other" "$work/new.json"
has "$work/none.out" "no completed report of this job"
expect 2 "$work/rule.out" "$work/base" "$work/new.json" --fail-on step_tme:+5%
has "$work/rule.out" 'did you mean "step_time"?'
cp "$work/pass.xml" "$work/kept.xml"
expect 5 "$work/exists.out" "$work/base" "$work/new.json" --junit "$work/kept.xml"
cmp -s "$work/pass.xml" "$work/kept.xml"
cp "$work/new.json" "$work/new-copy.json"
expect 2 "$work/onto.out" "$work/base" "$work/new.json" --junit "$work/new-copy.json" --force
cmp -s "$work/new.json" "$work/new-copy.json"
rc=0
"$ftbench" compare "$work/base/run-1.json" "$work/new.json" --fail-on step_time:+5% \
  >"$work/compare.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -qF "ftbench gate BASELINE NEW --fail-on" "$work/compare.out" ||
  { cat "$work/compare.out" >&2; echo "compare --fail-on: exit $rc" >&2; exit 1; }
# Found by a hostile review, each failing before its fix:
# a report in a folder that cannot be read is bad input naming it, not "not a report";
mkdir -p "$work/broken"
cp "$work/new.json" "$work/broken/good.json"
head -c 3000 "$work/new.json" >"$work/broken/cut.json"
ln -s "$work/nowhere.json" "$work/broken/dangling.json"
expect 2 "$work/broken.out" "$work/broken" "$work/base/run-1.json" --fail-on status
has "$work/broken.out" "$work/broken/cut.json"
rm "$work/broken/cut.json"
# a dangling link is listed as left out, not skipped in silence;
expect 0 "$work/dangling.out" "$work/broken" "$work/base/run-1.json" --fail-on status
has "$work/dangling.out" "left out of the baseline: $work/broken/dangling.json: not a regular file"
# NaN significance levels are refused (CLI11's ranges let them through);
expect 2 "$work/nan.out" "$work/base" "$work/new.json" --alpha nan
has "$work/nan.out" "--alpha: expected a finite number, found nan"
# --force never replaces a FIFO (or a device) with the JUnit file (refused before judging, as
# a folder is);
mkfifo "$work/pipe.xml"
expect 2 "$work/fifo.out" "$work/base" "$work/new.json" --junit "$work/pipe.xml" --force
[[ -p "$work/pipe.xml" ]] || { echo "the FIFO was replaced" >&2; exit 1; }
expect 2 "$work/jdir.out" "$work/base" "$work/new.json" --junit "$work/broken"
has "$work/jdir.out" "--junit $work/broken: not a regular file"
# a FIFO as the summary is refused at once, not waited on for ever;
expect 2 "$work/sfifo.out" "$work/base" "$work/new.json" --summary "$work/pipe.xml"
# --github appends to $GITHUB_STEP_SUMMARY also when --summary names another file;
GITHUB_STEP_SUMMARY="$work/step.md" expect 0 "$work/both.out" "$work/base" "$work/new.json" \
  --fail-on "$rules" --github --summary "$work/mine.md"
grep -q "^### ftbench gate: passed" "$work/step.md"
grep -q "^### ftbench gate: passed" "$work/mine.md"
# --last takes a folder;
expect 2 "$work/lastfile.out" "$work/base/run-1.json" "$work/new.json" --last 2
# --allow-no-baseline: a folder without a report of this job passes with a note (a first run,
# a changed job), but a run that did not complete still fails;
expect 0 "$work/nobase.out" "$work/only-other" "$work/new.json" --allow-no-baseline --github
has "$work/nobase.out" "note: no completed report of this job in the baseline"
has "$work/nobase.out" "::notice title=ftbench gate::gate passed: 1 rule, 1 passed; no completed"
expect 6 "$work/nobase-div.out" "$work/only-other" "$work/diverged.json" --allow-no-baseline
# a copy of a baseline report is the same run, not another night;
cp "$work/base/run-2.json" "$work/base/run-2-copy.json"
expect 0 "$work/copy.out" "$work/base" "$work/new.json" --fail-on "$rules"
grep -qE "left out of the baseline: $work/base/run-2(-copy)?.json: the same run as $work/base/run-2(-copy)?.json" \
  "$work/copy.out" || { cat "$work/copy.out" >&2; echo "the copy was not left out" >&2; exit 1; }
has "$work/copy.out" "(3 reports, the median of each figure)"
rm "$work/base/run-2-copy.json"
# (third review) a cost rule with --allow-no-baseline passes a first run, with its prices;
expect 0 "$work/nobase-cost.out" "$work/only-other" "$work/new.json" --allow-no-baseline \
  --fail-on status,cost:+5% --rate 2.5
# *.JSON in any case is a report, and --last keeps the newest by finish time (not by name);
mkdir -p "$work/window"
variant "$work/new.json" "$work/window/a.json" --later -60
variant "$work/new.json" "$work/window/b.json" --later -180
variant "$work/new.json" "$work/window/c.JSON" --later -120
expect 0 "$work/window.out" "$work/window" "$work/new.json" --fail-on status --last 2 \
  --format json
"$python" - "$work/window.out" "$work/window" <<'PY'
import json, sys
g, w = json.load(open(sys.argv[1])), sys.argv[2]
assert g["baseline"]["reports"] == [w + "/c.JSON", w + "/a.json"], g["baseline"]
assert g["baseline"]["left_out"] == [{"path": w + "/b.json",
                                      "reason": "older than the newest 2 (--last)"}], g["baseline"]
PY
# the markdown lists the comparison's differences;
expect 6 "$work/div-md.out" "$work/base/run-1.json" "$work/diverged.json" --format markdown
has "$work/div-md.out" "- \[job\] run status: A: completed | B: diverged"
# a summary that cannot be appended to stops the gate before it judges (exit 3, nothing out),
# and a missing folder for it is made, as for --junit;
expect 3 "$work/sum-bad.out" "$work/base" "$work/new.json" --summary "$work/new.json/x.md"
if grep -q "gate passed" "$work/sum-bad.out"; then echo "judged before refusing" >&2; exit 1; fi
expect 0 "$work/sum-dir.out" "$work/base" "$work/new.json" --fail-on status \
  --summary "$work/made/here/summary.md"
grep -q "^### ftbench gate: passed" "$work/made/here/summary.md"
# a JUnit file that fails to be written (exit 3) does not take the verdict with it.
FTBENCH_INJECT_WRITE_FAILURE=ENOSPC expect 3 "$work/enospc.out" "$work/base" "$work/new.json" \
  --fail-on status --junit "$work/enospc.xml"
has "$work/enospc.out" "gate passed: 1 rule, 1 passed"
[[ ! -e "$work/enospc.xml" ]]
# and a new run that did not complete is called the same job that did not complete.
has "$work/diverged.out" "the same job, but the new run did not complete (status diverged)"
echo "gate e2e: all cases as expected"
