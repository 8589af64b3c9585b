#!/usr/bin/env python3
"""`ftbench gate --junit` against Jenkins' own JUnit schema (tests/fixtures/junit/junit-10.xsd,
the xunit plugin's, which Jenkins validates a JUnit file with before it reads it), for each
outcome a test case can have: passed, failed (a regression), failed as undecided (too few
samples under --undecided fail) and skipped (--undecided warn), and a run name with XML's
special characters. The gate's reports come from one real ci-tiny run and copies of it made to
differ by known amounts (make_variant.py).

Run with FTBENCH_PYTHON, the pinned environment's interpreter (tests/reference/with_python.sh),
which has xmlschema. Without xmlschema: exit 77 (skipped), on CI a failure (docs/ci.md, "Skips
and CI").

Usage: test_junit_schema.py FTBENCH WORK_DIR
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
XSD = os.path.join(ROOT, "tests", "fixtures", "junit", "junit-10.xsd")


def on_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


try:
    import xmlschema
except ImportError:
    if on_ci():
        print("error: xmlschema is required for this test on CI (scripts/python-env.sh)",
              file=sys.stderr)
        sys.exit(1)
    print("skipped: xmlschema is missing (scripts/python-env.sh makes an environment with it)")
    sys.exit(77)


def fail(message):
    print("test_junit_schema: " + message, file=sys.stderr)
    sys.exit(1)


def run(args, want):
    p = subprocess.run(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != want:
        fail(f"{' '.join(args)}: exit {p.returncode}, expected {want}\n{p.stdout}")
    return p.stdout


def main():
    if len(sys.argv) != 3:
        print("usage: test_junit_schema.py FTBENCH WORK_DIR", file=sys.stderr)
        sys.exit(2)
    ftbench, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    schema = xmlschema.XMLSchema10(XSD)

    # The schema is strict where it matters here: an attribute it does not declare is an error.
    bad = os.path.join(work, "undeclared.xml")
    with open(bad, "w") as f:
        f.write('<testsuites skipped="1"><testsuite name="s" tests="0" failures="0" '
                'errors="0"/></testsuites>\n')
    if schema.is_valid(bad):
        fail(f"{XSD} accepted <testsuites skipped=...>: not the schema expected")

    # ci-tiny as it is: 6 measured steps, too few for step_time's test (undecided).
    base = os.path.join(work, "base.json")
    run([ftbench, "run", "configs/ci-tiny.yaml", "--set", "output.progress=off", "-o", base], 0)
    variant = [sys.executable, os.path.join(HERE, "make_variant.py"), base]
    new = os.path.join(work, "new.json")
    fat = os.path.join(work, "fat.json")
    run(variant + [new, "--later", "3600", "--run-name", 'tiny <&> "quoted"'], 0)
    run(variant + [fat, "--later", "3600", "--allocated", "1.02"], 0)

    rules = "status,peak_allocated:+1%,final_loss:+0.001"
    cases = [  # name, new report, gate options, exit code, an outcome the file must hold
        ("pass", new, ["--fail-on", rules], 0, None),
        ("failure", fat, ["--fail-on", rules], 6, 'type="regression"'),
        ("undecided", new, ["--fail-on", "status,step_time:+5%"], 6, 'type="undecided"'),
        ("skipped", new, ["--fail-on", "status,step_time:+5%", "--undecided", "warn"], 0,
         "<skipped "),
    ]
    for name, report, options, code, holds in cases:
        xml = os.path.join(work, name + ".xml")
        run([ftbench, "gate", base, report, "--junit", xml] + options, code)
        text = open(xml, encoding="utf-8").read()
        if holds is not None and holds not in text:
            fail(f"{xml}: expected {holds!r} in it\n{text}")
        errors = list(schema.iter_errors(xml))
        if errors:
            e = errors[0]
            fail(f"{xml}: {len(errors)} error(s) against {XSD}; the first at {e.path}: "
                 f"{e.reason}\n{text}")
    print(f"test_junit_schema: {len(cases)} JUnit files valid against {XSD}")


if __name__ == "__main__":
    main()
