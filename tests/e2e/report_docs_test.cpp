// The reading of docs/report-schema.md that the "every report field is documented" checks use
// (report_docs.h): full dotted paths from the page's structure, so that a field documented
// only under another object's name does not pass.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report_docs.h"

namespace {

using ftbench::e2e::documented_report_fields;
using ftbench::e2e::read_text;
using ftbench::e2e::undocumented_fields;
using nlohmann::json;
using Paths = std::set<std::string>;
using List = std::vector<std::string>;

// A page shaped like docs/report-schema.md: top level, an object with a subsection and an
// array of elements, a level-3 heading without a name, a table that is not about fields and a
// code block.
const char* const kPage = R"(# Report schema

## Types and numbers

| type in the tables | JSON |
|---|---|
| `integer` | a number |

## Top level

| field | type | meaning |
|---|---|---|
| `schema` | string | the version |
| `steps` | array | the steps |
| `timing` | object | timing |

## `steps`

| field | type | meaning |
|---|---|---|
| `step` | integer | |
| `loss` | number | the `loss_tokens` mean |

## `timing`

| field | type | meaning |
|---|---|---|
| `first_step`, `last_step` | integer | two at once |
| `phases` | array | below |

Each element of `phases`:

| field | type |
|---|---|
| `name` | string |

### `timing.phases[].memory`

| field | meaning |
|---|---|
| `peak_rss_bytes` | bytes |

### Which phases count

| field | meaning |
|---|---|
| `counted.real` | a dotted name |

```
| field | in a code block |
|---|---|
| `ignored` | |
```
)";

TEST(ReportDocs, ReadsFullPathsFromThePageStructure) {
  EXPECT_EQ(documented_report_fields(kPage),
            (Paths{"schema", "steps", "timing", "steps.step", "steps.loss", "timing.first_step",
                   "timing.last_step", "timing.phases", "timing.phases.name",
                   "timing.phases.memory.peak_rss_bytes", "timing.counted.real"}));
}

TEST(ReportDocs, ALastNameDocumentedElsewhereIsNotDocumented) {
  const Paths documented = documented_report_fields(kPage);
  const json report = json::parse(R"({
    "schema": "ftbench.report/1.4",
    "spec": {"anything": 1},
    "steps": [{"step": 1, "loss": 2.5}],
    "timing": {"first_step": 1, "last_step": 1, "loss": 0.5, "step": 3,
               "phases": [{"name": "launch", "memory": {"peak_rss_bytes": 1, "name": "x"}}]},
    "evaluations": [{"loss": 1.0}]
  })");
  // `loss`, `step` and `name` are documented, but under `steps` and `timing.phases[]`.
  EXPECT_EQ(
      undocumented_fields(report, documented),
      (List{"evaluations[].loss", "timing.loss", "timing.phases[].memory.name", "timing.step"}));
}

// The real page documents every field of the reference reports in tests/fixtures (schema 1.1,
// torch-free); the end-to-end tests check the reports this build writes.
TEST(ReportDocs, TheFixtureReportsAreDocumented) {
  const Paths documented = documented_report_fields(
      read_text(std::string(FTBENCH_SOURCE_DIR) + "/docs/report-schema.md"));
  EXPECT_GT(documented.size(), 150u);
  for (const char* path :
       {"run.name", "environment.device.name", "timing.phases.name",
        "summary.tokens_per_second.real", "summary.mfu.entries.mfu", "batching.fallbacks.step",
        "gemm.dtypes.max_tflops", "environment.variables.OMP_NUM_THREADS", "segments.last_step",
        "timing.phases.memory.peak_rss_bytes", "evaluations.loss"}) {
    EXPECT_EQ(documented.count(path), 1u) << path;
  }
  EXPECT_EQ(documented.count("evaluations.step"), 0u) << "step is a field of steps only";
  for (const char* name : {"h100-reference.json", "mi300x-reference.json"}) {
    const json report =
        json::parse(read_text(std::string(FTBENCH_SOURCE_DIR) + "/tests/fixtures/reports/" + name));
    EXPECT_EQ(undocumented_fields(report, documented), List{}) << name;
  }
}

}  // namespace
