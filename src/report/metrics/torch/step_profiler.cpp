#include "report/metrics/step_profiler.h"

#include <set>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>

namespace ftbench::metrics {
namespace {

namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// Kineto's activity types (libkineto's ActivityType, whose first entries have kept their values
// since 2021): what a device event is.
constexpr uint8_t kGpuUserAnnotation = 2;
constexpr uint8_t kGpuMemcpy = 3;
constexpr uint8_t kGpuMemset = 4;
constexpr uint8_t kConcurrentKernel = 5;
constexpr uint8_t kOverhead = 11;

// LibTorch 1.13 times events in microseconds (startUs, durationUs), 2.x in nanoseconds
// (startNs, durationNs): whichever the event has.
template <class E, class = void>
struct HasNanoseconds : std::false_type {};
template <class E>
struct HasNanoseconds<E, std::void_t<decltype(std::declval<const E&>().startNs())>>
    : std::true_type {};

template <class E>
std::pair<int64_t, int64_t> start_and_duration_ns(const E& e) {
  if constexpr (HasNanoseconds<E>::value) {
    return {static_cast<int64_t>(e.startNs()), static_cast<int64_t>(e.durationNs())};
  } else {
    return {static_cast<int64_t>(e.startUs()) * 1000, static_cast<int64_t>(e.durationUs()) * 1000};
  }
}

std::string shapes_text(const prof::KinetoEvent& k) {
  std::string out = "[";
  bool first = true;
  for (const std::vector<int64_t>& shape : k.shapes()) {
    out += first ? "[" : ", [";
    first = false;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
    }
    out += "]";
  }
  return out + "]";
}

// One of Kineto's events as ProfileEvent, or nullopt for what the tables leave out (device
// copies of host annotations, the profiler's own overhead).
std::optional<ProfileEvent> event_of(const prof::KinetoEvent& k) {
  ProfileEvent e;
  e.name = k.name();
  const auto [start, duration] = start_and_duration_ns(k);
  e.start_ns = start;
  e.duration_ns = duration;
  const uint8_t activity = k.activityType();
  if (activity == kOverhead) return std::nullopt;
  if (k.deviceType() == c10::DeviceType::CPU) {
    e.kind = k.scope() == static_cast<uint8_t>(at::RecordScope::USER_SCOPE)
                 ? ProfileEventKind::kScope
                 : ProfileEventKind::kOp;
    e.thread = k.startThreadId();
    e.flops = k.flops();
    if (k.hasShapes()) {
      const std::vector<std::vector<int64_t>> shapes(k.shapes().begin(), k.shapes().end());
      const std::vector<std::string> dtypes(k.dtypes().begin(), k.dtypes().end());
      e.input_bytes = input_bytes_of(shapes, dtypes);
      e.shapes = shapes_text(k);
    } else {
      e.input_bytes.reset();
    }
    return e;
  }
  if (activity == kGpuUserAnnotation) return std::nullopt;
  if (activity == kGpuMemcpy || activity == kGpuMemset) {
    e.kind = ProfileEventKind::kTransfer;
  } else if (activity == kConcurrentKernel) {
    e.kind = ProfileEventKind::kKernel;
  } else {
    return std::nullopt;
  }
  e.thread = static_cast<uint64_t>(k.deviceResourceId());
  e.input_bytes.reset();
  return e;
}

impl::ProfilerConfig profiler_config() {
  return impl::ProfilerConfig(impl::ProfilerState::KINETO, /*report_input_shapes=*/true,
                              /*profile_memory=*/false, /*with_stack=*/false,
                              /*with_flops=*/true, /*with_modules=*/false);
}

}  // namespace

ProfilerSupport profiler_support() {
  // The collection of host operators is part of every LibTorch since 1.13 (with or without
  // Kineto's device tracing): try it on one small operation.
  try {
    const impl::ProfilerConfig config = profiler_config();
    const std::set<impl::ActivityType> activities{impl::ActivityType::CPU};
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
    (void)at::ones({2, 2}).sum();
    const std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
    for (const prof::KinetoEvent& k : result->events()) {
      if (k.name() == "aten::sum") return {true, ""};
    }
    return {false, "its profiler recorded no operator of a trial sum"};
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    return {false, "its profiler cannot record: " + what};
  }
}

StepProfiler::StepProfiler(ProfileWindow window, bool device_activity)
    : window_(window), device_activity_(device_activity) {}

StepProfiler::~StepProfiler() {
  if (!recording_) return;
  try {
    (void)prof::disableProfiler();
  } catch (...) {
    // Ending a process's profiler can fail only when none records: nothing to undo.
  }
}

void StepProfiler::step_begins(int64_t step) {
  if (recording_ || step != window_.first_step) return;
  const impl::ProfilerConfig config = profiler_config();
  std::set<impl::ActivityType> activities{impl::ActivityType::CPU};
  if (device_activity_) activities.insert(impl::ActivityType::CUDA);  // ROCm's too
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  recording_ = true;
}

std::optional<std::vector<ProfileEvent>> StepProfiler::step_ended(int64_t step) {
  if (!recording_ || step < window_.last_step) return std::nullopt;
  return stop();
}

std::optional<std::vector<ProfileEvent>> StepProfiler::stop() {
  if (!recording_) return std::nullopt;
  recording_ = false;
  const std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  std::vector<ProfileEvent> events;
  for (const prof::KinetoEvent& k : result->events()) {
    if (std::optional<ProfileEvent> e = event_of(k)) events.push_back(std::move(*e));
  }
  return events;
}

}  // namespace ftbench::metrics
