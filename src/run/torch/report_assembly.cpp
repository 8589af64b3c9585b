#include "run/torch/report_assembly.h"

#include <unistd.h>

#include <cstddef>
#include <optional>
#include <utility>

#include "device/torch/environment.h"
#include "device/torch/memory_meter.h"
#include "report/records.h"
#include "report/report.h"
#include "run/torch/mfu_peaks.h"
#include "run/torch/run_memory_plan.h"
#include "train/dist/launch.h"
#include "util/text/spellings.h"

namespace ftbench::run::detail {

report::Memory run_memory(const std::vector<report::TimedPhase>& phases,
                          const device::MemoryMeter& meter, const device::Backend* backend) {
  return report::run_memory_record(
      phases, meter.run_peak_rss_bytes(),
      backend != nullptr ? backend->memory() : device::DeviceMemoryCounters{});
}

report::RankRecord ReportAssembly::own_rank_record() const {
  report::RankRecord r;
  r.rank = context_.request.launch.rank;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) r.host = host;
  r.device = built_.backend ? built_.backend->device().str() : "";
  for (std::size_t i = 0; i < measured_.result.steps.size(); ++i) {
    const double collective = i < measured_.result.collective_seconds.size()
                                  ? measured_.result.collective_seconds[i]
                                  : 0.0;
    r.steps.push_back({measured_.result.steps[i].wall_seconds, collective});
    r.collective_seconds += collective;
  }
  r.collective_bytes = measured_.result.collective_bytes;
  r.collective_calls = measured_.result.collective_calls;
  // Over the process's life, as the report's memory section counts it (each phase restarts the
  // kernel's peak counter, so the one read now covers the last phase only).
  const report::Memory memory =
      run_memory(measured_.measurements.phases, *measured_.memory, built_.backend.get());
  r.peak_rss_bytes = memory.peak_rss_bytes;
  r.shard_group_size = built_.shard_group_size;
  r.base_bytes = built_.base_bytes;
  r.gathers = measured_.result.gather_calls;
  r.gather_bytes = measured_.result.gather_bytes;
  r.gather_wait_seconds = measured_.result.gather_seconds;
  r.peak_allocated_bytes = memory.peak_allocated_bytes;
  return r;
}

report::Distributed ReportAssembly::distributed_header() const {
  report::Distributed d;
  d.launch =
      std::string(text::spelling_of(dist::kLaunchKindSpellings, context_.request.launch.kind));
  d.backend = built_.comm ? built_.comm->backend_name() : "gloo";
  d.shard_base = context_.spec.distributed.shard_base;
  return d;
}

namespace {

// A rank record as numbers, for the Gloo all-gather of doubles: counts, the steps, then the
// host and device names a character a number (exact in fp64).
std::vector<double> encode(const report::RankRecord& r) {
  std::vector<double> v = {double(r.rank), double(r.steps.size())};
  for (const report::RankStep& s : r.steps) {
    v.push_back(s.wall_seconds);
    v.push_back(s.collective_seconds);
  }
  v.push_back(r.collective_seconds);
  v.push_back(double(r.collective_bytes));
  v.push_back(double(r.collective_calls));
  v.push_back(double(r.shard_group_size));
  for (const std::optional<int64_t>* bytes : {&r.peak_rss_bytes, &r.base_bytes}) {
    v.push_back(*bytes ? double(**bytes) : -1.0);
  }
  v.push_back(double(r.gathers));
  v.push_back(double(r.gather_bytes));
  v.push_back(r.gather_wait_seconds);
  v.push_back(r.peak_allocated_bytes ? double(*r.peak_allocated_bytes) : -1.0);
  for (const std::string* text : {&r.host, &r.device}) {
    v.push_back(double(text->size()));
    for (const char c : *text) v.push_back(double(static_cast<unsigned char>(c)));
  }
  return v;
}

report::RankRecord decode(const std::vector<double>& v) {
  report::RankRecord r;
  std::size_t i = 0;
  const auto next = [&] { return i < v.size() ? v[i++] : 0.0; };
  r.rank = static_cast<int64_t>(next());
  const auto steps = static_cast<std::size_t>(next());
  for (std::size_t k = 0; k < steps; ++k) {
    const double wall = next();
    r.steps.push_back({wall, next()});
  }
  r.collective_seconds = next();
  r.collective_bytes = static_cast<int64_t>(next());
  r.collective_calls = static_cast<int64_t>(next());
  const auto optional_bytes = [&](std::optional<int64_t>& out) {
    const double bytes = next();
    if (bytes >= 0.0) out = static_cast<int64_t>(bytes);
  };
  r.shard_group_size = static_cast<int64_t>(next());
  optional_bytes(r.peak_rss_bytes);
  optional_bytes(r.base_bytes);
  r.gathers = static_cast<int64_t>(next());
  r.gather_bytes = static_cast<int64_t>(next());
  r.gather_wait_seconds = next();
  optional_bytes(r.peak_allocated_bytes);
  for (std::string* text : {&r.host, &r.device}) {
    const auto n = static_cast<std::size_t>(next());
    for (std::size_t k = 0; k < n; ++k) text->push_back(static_cast<char>(int(next())));
  }
  return r;
}

}  // namespace

void ReportAssembly::gather_rank_records() {
  if (!context_.distributed()) return;
  report::Distributed d = distributed_header();
  for (const std::vector<double>& v : built_.comm->all_gather_values(encode(own_rank_record()))) {
    d.ranks.push_back(decode(v));
  }
  measured_.builder.distributed(std::move(d));
  ranks_gathered_ = true;
}

void ReportAssembly::before_write() {
  record_memory_prediction(context_, built_, checkpointing_, measured_.measurements);
  measured_.builder.before_write(
      run_memory(measured_.measurements.phases, *measured_.memory, built_.backend.get()));
}

// This process's record among the run's segments, as of now.
report::Segment ReportAssembly::current_segment(const std::string& status) const {
  return measured_.builder.segment(status, measured_.result, built_.intra_op_threads());
}

// Everything measured so far into the report (report::ReportBuilder::assemble), for the
// final report, a failed or interrupted one, and the partial report a checkpoint carries. Returns
// every step's FLOPs.
std::vector<model::StepFlops> ReportAssembly::assemble(const std::string& status) {
  if (built_.backend) {
    resolve_peak(context_, built_.backend->info(), measured_.summary);
    record_memory_prediction(context_, built_, checkpointing_, measured_.measurements);
  }
  // A job of several processes that ends before the ranks' records were gathered (failed,
  // interrupted) has this rank's own.
  if (context_.distributed() && !ranks_gathered_) {
    report::Distributed d = distributed_header();
    d.ranks.push_back(own_rank_record());
    measured_.builder.distributed(std::move(d));
  }
  return measured_.builder.assemble(
      status, measured_.result, measured_.summary,
      {report::environment_record(device::describe_environment(built_.backend.get())),
       run_memory(measured_.measurements.phases, *measured_.memory, built_.backend.get()),
       built_.intra_op_threads()});
}

}  // namespace ftbench::run::detail
