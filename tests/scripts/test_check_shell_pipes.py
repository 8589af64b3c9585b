"""scripts/check-shell-pipes.py on made-up scripts, and the failure it is there for, shown with
bash itself (standard library only; ctest shell_pipes_script)."""
import importlib.util
import os
import shutil
import subprocess
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "check_shell_pipes", os.path.join(REPO, "scripts", "check-shell-pipes.py"))
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

STRICT = "#!/usr/bin/env bash\nset -euo pipefail\n"


class Findings(unittest.TestCase):
    def lines(self, body, head=STRICT):
        return [f.split(":")[1] for f in check.findings("s.sh", head + body)]

    def test_early_readers_after_a_pipe_are_found(self):
        body = ("ldd x | grep -Eq 'blas'\n"          # 3
                "a | grep -q b\n"                    # 4
                "a | grep --quiet b\n"               # 5
                "a | grep -m1 b\n"                   # 6
                "a | grep -E -m 1 b\n"               # 7
                "v=$(find . | head -n 1)\n"          # 8
                "x=$(git status|head -c1)\n")        # 9
        self.assertEqual(self.lines(body), ["3", "4", "5", "6", "7", "8", "9"])

    def test_readers_that_stop_in_other_forms_are_found(self):
        # What a review found the first version of the check missed (device-build.sh's
        # `ldd ... |` continued by `awk '... exit'` failed 20 times in 200 on a loaded machine).
        body = ("r=$(ldd x |\n"                          # 3
                "  awk '$1 == \"a\" {print $3; exit}')\n"   # 4
                "a | awk '{print; exit}'\n"              # 5
                "a | sed -n 1q\n"                        # 6
                "a | sed -n '/x/{p;q}'\n"                # 7
                "a |& head -1\n"                         # 8
                "a | egrep -q b\n"                       # 9
                "a | LC_ALL=C grep -q b\n"               # 10
                "a | command grep -q b\n"                # 11
                "a \\\n"                                 # 12
                "  | head -n 1\n")                       # 13
        self.assertEqual(self.lines(body), ["3", "5", "6", "7", "8", "9", "10", "11", "12"])

    def test_what_reads_everything_is_not_found(self):
        body = ("grep -q b <<<\"$(ldd x)\"\n"
                "a || grep -q b file\n"
                "a | grep -c b\n"
                "a | grep -v q\n"
                "a | sort | uniq\n"
                "grep -q b file\n"
                "head -n 1 file\n"
                "echo 'a | grep -q b'  # quoted\n"
                "a  # | head\n"
                "a | awk '{print $1}'\n"
                "a | sed 's/quit/q/'\n"
                "a | sed -n '/x/p'\n")
        self.assertEqual(self.lines(body), [])

    def test_only_scripts_that_set_pipefail(self):
        body = "a | grep -q b\n"
        self.assertEqual(self.lines(body, head="#!/bin/sh\nset -eu\n"), [])
        self.assertEqual(self.lines(body, head="#!/bin/bash\nset -o pipefail\n"), ["3"])
        self.assertEqual(self.lines(body, head="#!/bin/bash\nset -e -o pipefail\n"), ["3"])


@unittest.skipIf(shutil.which("bash") is None, "no bash")
class TheFailure(unittest.TestCase):
    def status(self, script):
        return subprocess.run(["bash", "-c", script]).returncode

    def test_a_match_found_fails_the_pipeline_when_the_writer_goes_on(self):
        # `yes` writes until it is killed: grep -q stops reading at the first line, yes dies of
        # SIGPIPE, and pipefail reports the pipeline failed although grep matched. With a writer
        # that writes in several pieces (ldd), whether it is still writing is a matter of timing.
        self.assertEqual(self.status("set -o pipefail; yes | grep -q y"), 141)
        self.assertEqual(
            self.status('set -o pipefail; out=$(seq 100000); grep -q 5 <<<"$out"'), 0)


if __name__ == "__main__":
    unittest.main()
