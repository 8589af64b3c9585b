#include "report/report_builder.h"

#include <utility>

#include "device/process_clock.h"
#include "util/text/iso8601.h"

namespace ftbench::report {

void ReportBuilder::resume(EarlierSegments earlier) {
  earlier_ = std::move(earlier);
  rep_.segments = earlier_.segments;
}

double ReportBuilder::time_to_first_step_seconds() const {
  return first_step_end_ > 0.0 ? first_step_end_ + rep_.t0_before_process_seconds : 0.0;
}

std::vector<report::StepRecord> ReportBuilder::segment_steps(
    const train::TrainResult& result) const {
  std::vector<report::StepRecord> out;
  out.reserve(result.steps.size());
  for (const train::StepMeasurement& s : result.steps)
    out.push_back(step_record(s, segment_index()));
  return out;
}

report::Segment ReportBuilder::segment(const std::string& status, const train::TrainResult& result,
                                       std::optional<int64_t> intra_op_threads) const {
  const double now = clock_.now();
  report::Segment g;
  g.index = segment_index();
  g.status = status;
  g.started_at_utc = rep_.started_at_utc;
  g.finished_at_utc = text::iso8601_utc(clock_.start_epoch_seconds() + now);
  if (!result.steps.empty()) {
    g.first_step = result.steps.front().step;
    g.last_step = result.steps.back().step;
  }
  g.run_seconds = rep_.t0_before_process_seconds + now;
  g.time_to_first_step_seconds = time_to_first_step_seconds();
  g.resumed_from = earlier_.resumed_from;
  g.intra_op_threads = intra_op_threads;
  return g;
}

std::vector<report::Segment> ReportBuilder::all_segments(const report::Segment& current) const {
  std::vector<report::Segment> all = earlier_.segments;
  all.push_back(current);
  return all;
}

std::vector<model::StepFlops> ReportBuilder::assemble(const std::string& status,
                                                      const train::TrainResult& result,
                                                      const metrics::SummaryOptions& summary,
                                                      DeviceSections readings) {
  rep_.status = status;
  rep_.time_to_first_step_seconds = time_to_first_step_seconds();
  rep_.steps = earlier_.steps;
  for (const report::StepRecord& s : segment_steps(result)) rep_.steps.push_back(s);
  std::vector<model::StepFlops> flops = earlier_.flops;
  flops.insert(flops.end(), result.flops.begin(), result.flops.end());
  std::vector<report::Fallback> fallbacks;
  for (const train::MicroBatchFallback& f : result.fallbacks)
    fallbacks.push_back(fallback_record(f));
  rep_.batching =
      report::Batching{result.micro_batch_size, result.grad_accum_steps, std::move(fallbacks)};
  rep_.summary = metrics::summarize_run(rep_.steps, flops, summary);
  rep_.memory = std::move(readings.memory);
  rep_.environment = std::move(readings.environment);
  rep_.finished_at_utc = text::iso8601_utc(clock_.start_epoch_seconds() + clock_.now());
  rep_.segments = all_segments(segment(status, result, readings.intra_op_threads));
  return flops;
}

}  // namespace ftbench::report
