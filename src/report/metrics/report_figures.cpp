#include "report/metrics/report_figures.h"

#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/metrics/run_summary.h"
#include "report/report_io.h"
#include "util/text/json_fields.h"

namespace ftbench::metrics {
namespace {

using report::MfuEntry;
using report::SampleSummary;
using report::Summary;

class SummaryFigures : public text::JsonFields<nlohmann::json, report::ReportError> {
  using Fields = text::JsonFields<nlohmann::json, report::ReportError>;

 public:
  using Fields::fail;
  using Fields::Fields;
  using Fields::index;
  using Fields::join;

  void check(const report::Report& r) const {
    const Summary& s = r.summary;
    const Summary e = summary_of_steps(r);
    check_step_seconds(s.step_seconds, e.step_seconds);
    check_throughput(s, e);
    check_losses(s, e);
  }

 private:
  void check_step_seconds(const SampleSummary& t, const SampleSummary& e) const {
    const std::string tp = "summary.step_seconds";
    if (t.count != e.count) {
      fail(join(tp, "count") + ": expected the " + std::to_string(e.count) +
           " measured steps (summary.measured_steps), found " + std::to_string(t.count));
    }
    const std::string of = " of the measured steps' wall_seconds";
    derived_from(t.mean, e.mean, join(tp, "mean"), "the mean" + of);
    derived_from(t.median, e.median, join(tp, "median"), "the median" + of);
    derived_from(t.p90, e.p90, join(tp, "p90"), "the 90th percentile" + of);
    derived_from(t.p99, e.p99, join(tp, "p99"), "the 99th percentile" + of);
    derived_from(t.min, e.min, join(tp, "min"), "the least" + of);
    derived_from(t.max, e.max, join(tp, "max"), "the largest" + of);
    derived_from(t.stddev, e.stddev, join(tp, "stddev"), "the sample standard deviation" + of);
    derived_from(t.cv, e.cv, join(tp, "cv"), "stddev / mean");
  }

  // Tokens, shares and FLOPs over the measured steps' time; MFU over the peak and the devices.
  void check_throughput(const Summary& s, const Summary& e) const {
    derived_from(s.tokens_per_second_real, e.tokens_per_second_real,
                 "summary.tokens_per_second.real",
                 "the measured steps' real_tokens / wall_seconds");
    derived_from(s.tokens_per_second_padded, e.tokens_per_second_padded,
                 "summary.tokens_per_second.padded",
                 "the measured steps' padded_tokens / wall_seconds");
    derived_from(s.data_wait_fraction, e.data_wait_fraction, "summary.data_wait_fraction",
                 "the measured steps' data_wait_seconds / wall_seconds");
    derived_from(s.padding_fraction, e.padding_fraction, "summary.padding_fraction",
                 "1 - the measured steps' real_tokens / padded_tokens");
    for (std::size_t i = 0; i < s.mfu.size(); ++i) {
      const MfuEntry& found = s.mfu[i];
      const MfuEntry& expected = e.mfu[i];
      const std::string path = index("summary.mfu.entries", i);
      derived_from(found.flops_per_step, expected.flops_per_step, join(path, "flops_per_step"),
                   "the mean of the measured steps' model_flops");
      derived_from(found.achieved_tflops, expected.achieved_tflops, join(path, "achieved_tflops"),
                   "flops_per_step x measured_steps / their wall_seconds / 10^12");
      optional_derived_from(found.mfu, expected.mfu, join(path, "mfu"),
                            "achieved_tflops / (summary.mfu.peak_tflops x run.world_size)");
      optional_derived_from(found.mfu_gemm, expected.mfu_gemm, join(path, "mfu_gemm"),
                            "achieved_tflops / (summary.mfu.gemm_peak_tflops x run.world_size)");
    }
  }

  // The last step's loss, and the mean of the last `window` (every step counts, warm-up too);
  // a diverged run's are null (NaN) in the steps and the summary alike.
  void check_losses(const Summary& s, const Summary& e) const {
    const auto same_loss = [&](double found, double expected, const std::string& path,
                               const std::string& formula) {
      if (std::isnan(found) && std::isnan(expected)) return;
      derived_from(found, expected, path, formula);
    };
    same_loss(s.final_loss, e.final_loss, "summary.loss.final", "the last step's loss");
    same_loss(s.mean_last_losses, e.mean_last_losses, "summary.loss.mean_last",
              "the mean loss of the last summary.loss.window steps");
  }
};

}  // namespace

void check_summary_figures(const report::Report& report, const std::string& source) {
  SummaryFigures(source).check(report);
}

}  // namespace ftbench::metrics
