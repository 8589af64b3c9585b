#!/usr/bin/env python3
"""scripts/code-structure.py on small made-up trees: the include check finds a cycle, an include
the module table does not allow and a module without a row, and passes a tree that follows it."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "code-structure.py")

TABLE = """# Architecture

## Modules

| module | owns | may include |
|---|---|---|
| `text` | words | |
| `report` | the report | `text` |
| `cost` | dollars | `report`, `text` |

## Targets
"""


def make_tree(root, files, table=TABLE):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    os.makedirs(os.path.join(root, "docs"), exist_ok=True)
    with open(os.path.join(root, "docs", "architecture.md"), "w", encoding="utf-8") as f:
        f.write(table)


def check(root):
    out = subprocess.run([sys.executable, SCRIPT, "--root", root, "--includes-only", "--check",
                          "--json"], capture_output=True, text=True)
    return out.returncode, json.loads(out.stdout)


class IncludeCheck(unittest.TestCase):
    def test_a_tree_that_follows_the_table_passes(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "include/ftbench/text/table.h": "#pragma once\n",
                "src/text/table.cpp": '#include "ftbench/text/table.h"\n',
                "include/ftbench/report/report.h": '#include "ftbench/text/table.h"\n',
                "src/cost/cost.cpp": '#include "ftbench/report/report.h"\n'
                                     '#include "ftbench/version.h"\n',
            })
            code, figures = check(root)
            self.assertEqual(code, 0, figures)
            self.assertEqual(figures["problems"], [])
            self.assertEqual(figures["include_cycles"], [])
            self.assertEqual(figures["modules"], 3)
            self.assertEqual(figures["module_arrows"], 2)  # version.h is no module

    def test_headers_beside_their_sources_included_from_src(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "src/util/error.h": "#pragma once\n",
                "src/text/table.h": '#include "util/error.h"\n',
                "src/text/table.cpp": '#include "text/table.h"\n',
                "src/report/report.h": '#include "text/table.h"\n',
                "src/cost/cost.cpp": '#include "report/report.h"\n#include "util/error.h"\n',
                "src/cost/torch/tensor_price.h": "#include <ATen/ATen.h>\n",
                "src/cost/torch/tensor_price.cpp": '#include "cost/torch/tensor_price.h"\n',
            })
            code, figures = check(root)
            self.assertEqual(figures["problems"], [
                "docs/architecture.md: module util has no row in the module table"])
            table = TABLE.replace("## Targets", "")
            table = table.replace("| `text` | words | |",
                                  "| `util` | everyone's | |\n| `text` | words | |")
            make_tree(root, {"src/cost/price.h": '#include "cost/torch/tensor_price.h"\n'},
                      table)
            code, figures = check(root)
            self.assertEqual(code, 1, figures)
            self.assertEqual(figures["modules"], 4)
            # text -> util, report -> text, cost -> report, cost -> util: util is everyone's
            self.assertEqual(figures["module_arrows"], 4)
            self.assertEqual(figures["problems"], [
                "src/cost/price.h includes LibTorch (through cost/torch/tensor_price.h) but is "
                "not in a torch/ folder: the torch-free targets compile it"])

    def test_an_arrow_up_the_tables_order_is_refused(self):
        with tempfile.TemporaryDirectory() as root:
            table = TABLE.replace("| `text` | words | |\n", "").replace(
                "| `cost` |", "| `text` | words | |\n| `cost` |")
            make_tree(root, {
                "src/text/words.h": "#pragma once\n",
                "src/report/report.h": '#include "text/words.h"\n',
                "src/cost/cost.cpp": '#include "report/report.h"\n',
            }, table)
            code, figures = check(root)
            self.assertEqual(code, 1, figures)
            self.assertEqual(figures["upward_arrows"], ["report -> text"])
            self.assertEqual(figures["problems"], [
                "docs/architecture.md: report may include text, a row not below it: the table "
                "is the layering from the bottom up",
                "report -> text runs back up the layering: docs/architecture.md's module table "
                "lists text after report"])

    def test_a_relative_include_into_another_module_is_an_arrow_too(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "src/cost/price.h": "#pragma once\n",
                "src/cost/price.cpp": '#include "price.h"\n',
                "src/text/words.h": '#include "../cost/price.h"\n',
                "src/report/report.cpp": '#include "./../text/words.h"\n',
            })
            code, figures = check(root)
            self.assertEqual(code, 1, figures)
            self.assertEqual(figures["module_arrows"], 2)  # price.h in its own folder: none
            self.assertEqual(figures["problems"], [
                "text may not include cost (docs/architecture.md), but src/text/words.h does",
                # Each relative include is refused too: includes are written from src/.
                'src/cost/price.cpp: #include "price.h" is written relative to the file; write '
                'it from src/ ("cost/price.h")',
                'src/report/report.cpp: #include "./../text/words.h" is written relative to the '
                'file; write it from src/ ("text/words.h")',
                'src/text/words.h: #include "../cost/price.h" is written relative to the file; '
                'write it from src/ ("cost/price.h")'])

    def test_the_side_of_a_header_is_its_content(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "src/text/torch/words.h": "#pragma once\n",
                "src/text/torch/tensor_words.h": '#include "torch/torch.h"\n',
                "src/text/tensors.h": '#include "text/torch/tensor_words.h"\n',
                "src/loose.h": "#pragma once\n",
                "src/report/report.cpp": "",
                "src/cost/cost.cpp": "",
            })
            code, figures = check(root)
            self.assertEqual(code, 1, figures)
            self.assertEqual(figures["problems"], [
                "src/text/tensors.h includes LibTorch (through text/torch/tensor_words.h) but is "
                "not in a torch/ folder: the torch-free targets compile it",
                "src/loose.h: a file of src/ outside every module's folder",
                "src/text/torch/words.h: in a torch/ folder but brings in no LibTorch: its place "
                "is src/text/"])

    def test_a_part_of_a_module_has_its_own_torch_folder(self):
        # src/<module>/<part>/torch/ is the LibTorch side as src/<module>/torch/ is; a part's
        # folder outside torch/ is torch-free, and the arrows are the module's.
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "src/model/hf/torch/load.h": '#include "torch/torch.h"\n',
                "src/model/hf/torch/load.cpp": '#include "model/hf/torch/load.h"\n',
                "src/model/hf/torch/names.h": "#pragma once\n",
                "src/model/hf/config.h": '#include "model/hf/torch/load.h"\n',
                "src/model/hf/peft.h": "#pragma once\n",
                "src/report/report.cpp": '#include "model/hf/peft.h"\n',
            }, table="# Architecture\n\n## Modules\n\n| module | owns | may include |\n"
                     "|---|---|---|\n| `model` | x | |\n| `report` | y | `model` |\n")
            code, figures = check(root)
            self.assertEqual(code, 1, figures)
            self.assertEqual(figures["problems"], [
                "src/model/hf/config.h includes LibTorch (through model/hf/torch/load.h) but is "
                "not in a torch/ folder: the torch-free targets compile it",
                "src/model/hf/torch/names.h: in a torch/ folder but brings in no LibTorch: its "
                "place is src/model/hf/"])
            self.assertEqual(figures["modules"], 2)
            self.assertEqual(figures["upward_arrows"], [])

    def test_a_cycle_and_an_include_the_table_refuses_fail(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "include/ftbench/report/report.h": '#include "ftbench/cost/price.h"\n',
                "include/ftbench/cost/price.h": '#include "ftbench/report/report.h"\n',
                "src/text/x.cpp": "  #  include \"ftbench/cost/price.h\"\n",
            })
            code, figures = check(root)
            self.assertEqual(code, 1)
            self.assertEqual(figures["include_cycles"], [["cost", "report"]])
            problems = figures["problems"]
            self.assertEqual(len(problems), 3, problems)
            self.assertTrue(problems[0].startswith(
                "include cycle between cost, report: cost -> report "
                "(include/ftbench/cost/price.h); report -> cost"), problems[0])
            self.assertIn("report may not include cost (docs/architecture.md), but "
                          "include/ftbench/report/report.h does", problems)
            self.assertIn("text may not include cost (docs/architecture.md), but "
                          "src/text/x.cpp does", problems)

    def test_modules_and_rows_must_match(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {"src/plan/plan.cpp": "\n", "src/text/t.cpp": "\n",
                             "src/report/r.cpp": "\n"})
            code, figures = check(root)
            self.assertEqual(code, 1)
            self.assertEqual(figures["problems"], [
                "docs/architecture.md: module plan has no row in the module table",
                "docs/architecture.md: module table names cost, which has no folder",
            ])

    def test_libtorch_only_in_torch_folders(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {
                "include/ftbench/report/tensor.h": "#include <ATen/ATen.h>\n",
                "include/ftbench/report/record.h": '#include "ftbench/report/tensor.h"\n',
                "src/report/torch/ok.cpp": '#include "ftbench/report/record.h"\n'
                                           "#include <torch/torch.h>\n",
                "src/report/direct.cpp": "#include <c10/core/ScalarType.h>\n",
                "src/report/through.cpp": '#include "ftbench/report/record.h"\n',
                "src/text/t.cpp": "\n",
                "src/cost/c.cpp": "\n",
            })
            code, figures = check(root)
            self.assertEqual(code, 1)
            self.assertEqual(figures["problems"], [
                "src/report/direct.cpp includes LibTorch but is not in a torch/ folder: the "
                "torch-free targets compile it",
                "src/report/through.cpp includes LibTorch (through ftbench/report/record.h) but "
                "is not in a torch/ folder: the torch-free targets compile it",
            ])

    def test_without_the_table_it_says_so(self):
        with tempfile.TemporaryDirectory() as root:
            make_tree(root, {"src/text/t.cpp": "\n"}, table="# Architecture\n")
            out = subprocess.run([sys.executable, SCRIPT, "--root", root, "--includes-only"],
                                 capture_output=True, text=True)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("no '## Modules' section", out.stderr)


if __name__ == "__main__":
    unittest.main()
