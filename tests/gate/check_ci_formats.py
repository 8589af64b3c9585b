#!/usr/bin/env python3
"""Checks the gate's CI outputs against their formats, written from the formats' own rules and
not from ftbench's code:

- JUnit XML as Jenkins, GitLab and the JUnit XSD (jenkins-junit.xsd, the Ant JUnit schema) read
  it: a <testsuites> root with <testsuite> children; on each, name, tests, failures, errors,
  skipped, time, timestamp (xs:dateTime without a zone) and hostname; the counts equal to the
  <testcase> children's; each test case with name, classname and time, at most one of failure,
  error or skipped, a failure with message and type.
- GitHub Actions workflow commands (@actions/core's command syntax): "::name key=value,...::data",
  with %25 %0D %0A escaped in the data and also %3A %2C in property values; only the commands
  error, warning and notice, and the property title.

Usage:
  check_ci_formats.py junit FILE RULE=OUTCOME...      OUTCOME: pass, failure, skipped
  check_ci_formats.py annotations FILE RULE=LEVEL...  LEVEL: error, warning (a rule with no
                                                      annotation: RULE=none); the last line is
                                                      the verdict's, LEVEL notice or error, given
                                                      as verdict=LEVEL
"""
import re
import sys
import xml.etree.ElementTree as ET


def fail(message):
    print("check_ci_formats: " + message, file=sys.stderr)
    sys.exit(1)


def count(el, name):
    value = el.get(name)
    if value is None or not re.fullmatch(r"[0-9]+", value):
        fail(f"<{el.tag}> {name}={value!r}: expected a count")
    return int(value)


def seconds(el):
    value = el.get("time")
    try:
        float(value)
    except (TypeError, ValueError):
        fail(f"<{el.tag}> time={value!r}: expected seconds")


def check_junit(path, expected):
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        fail(f"root is <{root.tag}>, expected <testsuites>")
    suites = list(root)
    if not suites or any(s.tag != "testsuite" for s in suites):
        fail("<testsuites> must hold <testsuite> elements only")
    outcomes = {}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for attribute in ("name", "timestamp", "hostname"):
            if not suite.get(attribute):
                fail(f"<testsuite> lacks {attribute}")
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp")):
            fail(f"timestamp {suite.get('timestamp')!r}: expected xs:dateTime without a zone")
        seconds(suite)
        found = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for child in suite:
            if child.tag in ("properties", "system-out", "system-err"):
                if child.tag == "properties":
                    for p in child:
                        if p.tag != "property" or p.get("name") is None or p.get("value") is None:
                            fail("<properties> holds <property name= value=> only")
                continue
            if child.tag != "testcase":
                fail(f"<testsuite> holds <{child.tag}>")
            for attribute in ("name", "classname"):
                if not child.get(attribute):
                    fail(f"<testcase> lacks {attribute}")
            seconds(child)
            found["tests"] += 1
            kinds = [c for c in child if c.tag in ("failure", "error", "skipped")]
            if len(kinds) > 1:
                fail(f"test case {child.get('name')!r} has {len(kinds)} outcomes")
            outcome = "pass"
            if kinds:
                k = kinds[0]
                outcome = k.tag
                if k.tag in ("failure", "error") and (k.get("message") is None or not k.get("type")):
                    fail(f"<{k.tag}> of {child.get('name')!r} lacks message or type")
                found["failures" if k.tag == "failure" else "errors" if k.tag == "error" else "skipped"] += 1
            for c in child:
                if c.tag not in ("failure", "error", "skipped", "system-out", "system-err"):
                    fail(f"<testcase> holds <{c.tag}>")
            outcomes[child.get("name")] = outcome
        for key, value in found.items():
            if count(suite, key) != value:
                fail(f"<testsuite> {key}={suite.get(key)}, but its test cases make {value}")
            totals[key] += value
    for key, value in totals.items():
        if root.get(key) is not None and count(root, key) != value:
            fail(f"<testsuites> {key}={root.get(key)}, but its suites make {value}")
    want = dict(e.rsplit("=", 1) for e in expected)
    if outcomes != want:
        fail(f"test cases {outcomes}, expected {want}")


def unescape(s, prop):
    if prop:
        s = s.replace("%3A", ":").replace("%2C", ",")
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def check_annotations(path, expected):
    lines = [l for l in open(path, encoding="utf-8").read().split("\n") if l.startswith("::")]
    found = {}
    verdict = None
    for line in lines:
        m = re.fullmatch(r"::(error|warning|notice)( [^:]*)?::(.*)", line)
        if not m:
            fail(f"not a workflow command: {line!r}")
        props = {}
        if m.group(2):
            for kv in m.group(2).strip().split(","):
                k, _, v = kv.partition("=")
                props[k] = unescape(v, True)
        if set(props) - {"title", "file", "line", "endLine", "col", "endColumn"}:
            fail(f"unknown property in {line!r}")
        data = unescape(m.group(3), False)
        if "\n" in m.group(3) or not data:
            fail(f"bad data in {line!r}")
        title = props.get("title", "")
        if title == "ftbench gate":
            verdict = m.group(1)
            continue
        rule = re.fullmatch(r"ftbench gate (.+): [A-Z ]+", title)
        if not rule:
            fail(f"title {title!r}: expected 'ftbench gate RULE: OUTCOME'")
        found[rule.group(1)] = m.group(1)
    want = dict(e.rsplit("=", 1) for e in expected)
    want_verdict = want.pop("verdict", None)
    want = {k: v for k, v in want.items() if v != "none"}
    if found != want:
        fail(f"annotations {found}, expected {want}")
    if verdict != want_verdict:
        fail(f"verdict annotation {verdict!r}, expected {want_verdict!r}")
    if lines and not lines[-1].startswith(f"::{verdict} title=ftbench gate::"):
        fail("the verdict's annotation is not the last")


if __name__ == "__main__":
    kind, path, expected = sys.argv[1], sys.argv[2], sys.argv[3:]
    {"junit": check_junit, "annotations": check_annotations}[kind](path, expected)
