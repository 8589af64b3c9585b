#!/usr/bin/env bash
# The CI examples of docs/ci.md (docs/examples/github-actions-gate.yml and gitlab-ci-gate.yml)
# run as documented: each file is read as YAML, and its shell steps are run in order, as the CI
# service would, over three pipelines on this machine:
#   1. the first run: no earlier good report, the gate says so and passes (status only);
#   2. a second run: gated against the first (exit 0), JUnit file and job summary written;
#   3. a regression: the same job run with micro-batch 8 x 1 instead of 4 x 2 (same effective
#      batch: a change in how it runs), whose allocator peak grows: the gate fails (exit 6);
#   4. a changed job (5 epochs): no good report of it yet, so it passes with the note and starts
#      its own baseline, rather than failing every pipeline from then on;
#   5. the earlier reports cannot be fetched (no permission, a token the API refuses): the job
#      fails, and does not pass as a first run would;
#   6. (GitHub) good runs are listed but none of their reports downloads: the job fails.
# What only the CI service does is stood in for: `gh run list`/`gh run download` (GitHub) and the
# artifacts API behind curl (GitLab) serve the earlier pipelines' artifacts from a folder; the
# upload steps (actions/upload-artifact, GitLab's artifacts:) copy reports/ there when the job
# succeeded. SPEC is ci-tiny for 4 epochs and RULES the CPU-safe rules of the smoke gate (the
# examples' own are for a GPU's steadier timing); everything else is the files' own.
#
# Usage: tests/gate/ci_examples.sh FTBENCH WORK_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$(dirname "$here")")"
ftbench="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="$2"
python=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work/bin" "$work/artifacts"
ln -s "$ftbench" "$work/bin/ftbench"
spec="$work/smoke.yaml"
sed 's/^  epochs: 1$/  epochs: 4/' "$root/configs/ci-tiny.yaml" >"$spec"
grep -q '^  epochs: 4$' "$spec"
# The regression: same job, micro-batch 8 x accumulation 1.
sed -e 's/^  micro_batch_size: 4$/  micro_batch_size: 8/' -e 's/^  grad_accum_steps: 2$/  grad_accum_steps: 1/' \
  "$spec" >"$work/regressed.yaml"
sed 's/^  epochs: 4$/  epochs: 5/' "$spec" >"$work/changed.yaml"
rules=status,peak_allocated:+5%,final_loss:+0.01,step_time:+900%

# Stand-ins for the CI services' artifact stores: artifacts/<pipeline>/reports/new.json.
cat >"$work/bin/gh" <<'SH'
#!/usr/bin/env bash
# gh run list ... --jq '.[].databaseId' | gh run download ID --name N --dir D. With FAKE_GH_FAIL
# set, fails as gh does without permission.
set -euo pipefail
[[ -z "${FAKE_GH_FAIL:-}" ]] || { echo "HTTP 403: Resource not accessible by integration" >&2; exit 1; }
case "$1 $2" in
  "run list")
    for want in --branch main --event push --status success; do
      [[ " $* " == *" $want "* ]] || { echo "fake gh: expected $want in: $*" >&2; exit 2; }
    done
    ls -1r "$FAKE_ARTIFACTS" ;;
  "run download")
    [[ -z "${FAKE_GH_DOWNLOAD_FAIL:-}" ]] || { echo "error downloading artifact" >&2; exit 1; }
    id=$3; shift 3
    while [[ $# -gt 0 ]]; do case "$1" in --dir) dir=$2; shift 2 ;; *) shift ;; esac; done
    [[ -f "$FAKE_ARTIFACTS/$id/reports/new.json" ]] || exit 1
    mkdir -p "$dir"; cp "$FAKE_ARTIFACTS/$id/reports/new.json" "$dir/" ;;
  *) echo "fake gh: $*" >&2; exit 2 ;;
esac
SH
cat >"$work/bin/curl" <<'SH'
#!/usr/bin/env bash
# GitLab's job-artifacts API: the latest successful pipeline's artifacts as a zip to --output,
# the HTTP code on standard output (--write-out); 404 when there is none, 401 with FAKE_API_401.
set -euo pipefail
header=""
while [[ $# -gt 0 ]]; do
  case "$1" in --output) out=$2; shift 2 ;; --header) header=$2; shift 2 ;; *) shift ;; esac
done
[[ "$header" == "JOB-TOKEN: token" ]] || { echo "fake curl: header '$header'" >&2; exit 2; }
[[ -z "${FAKE_API_401:-}" ]] || { echo '{"message":"401 Unauthorized"}' >"$out"; echo -n 401; exit 0; }
latest=$(ls -1 "$FAKE_ARTIFACTS" | sort -n | tail -1)
[[ -n "$latest" ]] || { echo '{"message":"404 Not found"}' >"$out"; echo -n 404; exit 0; }
/usr/bin/python3 -c '
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.write(sys.argv[2], "reports/new.json")' "$out" "$FAKE_ARTIFACTS/$latest/reports/new.json"
echo -n 200
SH
chmod +x "$work/bin/gh" "$work/bin/curl"

# The shell steps of each file, in order, one script per step, under $work/<ci>/steps/.
"$python" - "$root/docs/examples" "$work" <<'PY'
import os, sys, yaml
examples, work = sys.argv[1:]
gh = yaml.safe_load(open(os.path.join(examples, "github-actions-gate.yml")))
job = gh["jobs"]["gate"]
assert "self-hosted" in job["runs-on"], job["runs-on"]
assert set(job["env"]) >= {"SPEC", "RULES", "GH_TOKEN"}, job["env"]
uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
assert [u["with"]["path"] for u in uploads] == ["reports/new.json", "reports/gate.xml"], uploads
assert all(u.get("if") == "always()" for u in uploads)
gl = yaml.safe_load(open(os.path.join(examples, "gitlab-ci-gate.yml")))["finetune-gate"]
assert gl["tags"] == ["gpu"] and gl["artifacts"]["reports"]["junit"] == "reports/gate.xml", gl
assert gl["artifacts"]["when"] == "always" and gl["artifacts"]["paths"] == ["reports/"], gl
# GitHub runs each step in a shell of its own; GitLab runs a job's script lines in one shell.
for ci, steps in (("github", [s["run"] for s in job["steps"] if "run" in s]),
                  ("gitlab", ["\n".join(gl["script"])])):
    os.makedirs(os.path.join(work, ci, "steps"))
    for i, step in enumerate(steps):
        with open(os.path.join(work, ci, "steps", f"{i:02d}.sh"), "w") as f:
            # GitHub's default for `run` is bash -e; GitLab's runner adds pipefail.
            f.write(("set -e\n" if ci == "github" else "set -eo pipefail\n") + step + "\n")
PY

# pipeline CI N SPEC: runs the steps of CI in a fresh checkout-like folder as pipeline N; keeps
# reports/ as its artifacts when every step passed; prints the steps' exit code.
pipeline() {
  local ci=$1 n=$2 spec_file=$3 ws="$work/$1/ws-$2" rc=0
  mkdir -p "$ws"
  for step in "$work/$ci"/steps/*.sh; do
    (cd "$ws" && env PATH="$work/bin:$PATH" FAKE_ARTIFACTS="$work/artifacts-$ci" \
      SPEC="$spec_file" RULES="$rules" GITHUB_STEP_SUMMARY="$ws/step-summary.md" \
      TOKEN_HEADER="JOB-TOKEN: token" \
      CI_JOB_TOKEN=token CI_API_V4_URL=https://gitlab.invalid/api/v4 CI_PROJECT_ID=1 \
      CI_DEFAULT_BRANCH=main CI_JOB_NAME=finetune-gate bash "$step") >>"$ws/log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || break
  done
  if [[ $rc -eq 0 ]]; then
    mkdir -p "$work/artifacts-$ci/$n"
    cp -r "$ws/reports" "$work/artifacts-$ci/$n/"
  fi
  echo "$rc"
}
fail() { echo "ci_examples: $*" >&2; exit 1; }

for ci in github gitlab; do
  mkdir -p "$work/artifacts-$ci"
  rc=$(pipeline "$ci" 1 "$spec")
  [[ $rc -eq 0 ]] || { cat "$work/$ci/ws-1/log" >&2; fail "$ci pipeline 1: exit $rc"; }
  grep -q "this report starts the baseline" "$work/$ci/ws-1/log" || fail "$ci 1: no first-run note"
  "$python" "$here/check_ci_formats.py" junit "$work/$ci/ws-1/reports/gate.xml" status=pass

  rc=$(pipeline "$ci" 2 "$spec")
  [[ $rc -eq 0 ]] || { cat "$work/$ci/ws-2/log" >&2; fail "$ci pipeline 2: exit $rc"; }
  "$python" "$here/check_ci_formats.py" junit "$work/$ci/ws-2/reports/gate.xml" status=pass \
    peak_allocated:+5%=pass final_loss:+0.01=pass step_time:+900%=pass
  grep -q "gate passed: 4 rules, 4 passed" "$work/$ci/ws-2/log" || fail "$ci 2: no verdict"

  rc=$(pipeline "$ci" 3 "$work/regressed.yaml")
  [[ $rc -eq 6 ]] || { cat "$work/$ci/ws-3/log" >&2; fail "$ci pipeline 3: exit $rc, expected 6"; }
  "$python" "$here/check_ci_formats.py" junit "$work/$ci/ws-3/reports/gate.xml" status=pass \
    peak_allocated:+5%=failure final_loss:+0.01=pass step_time:+900%=pass
  [[ ! -d "$work/artifacts-$ci/3" ]] || fail "$ci 3: a failed pipeline's report became a baseline"

  rc=$(pipeline "$ci" 4 "$work/changed.yaml")
  [[ $rc -eq 0 ]] || { cat "$work/$ci/ws-4/log" >&2; fail "$ci pipeline 4: exit $rc"; }
  grep -q "this report starts the baseline" "$work/$ci/ws-4/log" || fail "$ci 4: no note"

  # 5. The baseline cannot be fetched (gh without permission; the API refusing the token): the
  # job fails, rather than an empty baseline passing as a first run.
  rc=$(FAKE_GH_FAIL=1 FAKE_API_401=1 pipeline "$ci" 5 "$spec")
  [[ $rc -ne 0 && $rc -ne 6 ]] || { cat "$work/$ci/ws-5/log" >&2; fail "$ci pipeline 5: exit $rc"; }
  if grep -q "this report starts the baseline" "$work/$ci/ws-5/log"; then
    fail "$ci 5: passed as a first run"
  fi
done
# 6. GitHub: runs listed, but every download fails (an artifact-service error): the job fails.
rc=$(FAKE_GH_DOWNLOAD_FAIL=1 pipeline github 6 "$spec")
[[ $rc -eq 1 ]] || { cat "$work/github/ws-6/log" >&2; fail "github pipeline 6: exit $rc"; }
grep -q "but no report downloaded" "$work/github/ws-6/log" || fail "github 6: no error"
# GitHub: annotations in the log and the job summary file; GitLab: the markdown beside the JUnit.
"$python" "$here/check_ci_formats.py" annotations "$work/github/ws-3/log" \
  peak_allocated:+5%=error verdict=error
grep -q "^### ftbench gate: passed" "$work/github/ws-2/step-summary.md" || fail "no job summary"
grep -q "^### ftbench gate: FAILED" "$work/gitlab/ws-3/reports/gate.md" || fail "no gate.md"
# GitHub's pipeline 2 was gated against pipeline 1 only; pipeline 3 against 1 and 2.
grep -q "against baseline (1 report, the median of each figure)" "$work/github/ws-2/log" ||
  fail "github 2: baseline"
grep -q "against baseline (2 reports, the median of each figure)" "$work/github/ws-3/log" ||
  fail "github 3: baseline"
echo "ci examples: both ran as documented"
