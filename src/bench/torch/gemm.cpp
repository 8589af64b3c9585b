#include "bench/torch/gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include "bench/gemm_check.h"
#include "device/process_clock.h"
#include "device/tf32_matmul.h"
#include "device/torch/backend.h"
#include "device/torch/environment.h"
#include "device/torch/torch_version.h"
#include "report/records.h"
#include "util/text/iso8601.h"

// Device events that time work on the GPU itself need c10::Event::elapsedTime, which LibTorch
// has from 2.5 on (../shared/design/LIBTORCH.md §5); before that, GPU calls are timed on the host
// with a synchronisation on both sides.
#if FTBENCH_TORCH_AT_LEAST(2, 5)
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#define FTBENCH_GEMM_DEVICE_EVENTS 1
#endif

namespace ftbench::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The first line of a LibTorch error (a C++ backtrace follows it).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

std::string torch_error(const c10::Error& e) { return first_line(e.what_without_backtrace()); }

// Largest cache level of cpu0 in bytes from sysfs ("32768K"); 0 when unknown.
int64_t largest_host_cache_bytes() {
  int64_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    int64_t multiplier = 1;
    const char unit = text.back();
    if (unit == 'K') multiplier = int64_t{1} << 10;
    if (unit == 'M') multiplier = int64_t{1} << 20;
    if (unit == 'G') multiplier = int64_t{1} << 30;
    try {
      largest = std::max(largest, static_cast<int64_t>(std::stoll(text)) * multiplier);
    } catch (const std::exception&) {
    }
  }
  return largest;
}

// How one dtype is run: the tensors' element type and the LibTorch settings around the call.
struct DtypePlan {
  std::string reason;  // why it cannot run here; "" when it can
  std::string setting;
  at::ScalarType element = at::kFloat;
  bool tf32 = false;      // fp32 tensors with TF32 tensor-core math allowed
  bool scaled = false;    // fp8 through at::_scaled_mm
  GemmRounding rounding;  // what the check allows for (bench/gemm_check.h)
};

// The CUDA compute capability of an "sm_90"-style arch as 90, 89, 100; -1 when unreadable.
[[maybe_unused]] int compute_capability(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return -1;
  try {
    return std::stoi(arch.substr(3));
  } catch (const std::exception&) {
    return -1;
  }
}

DtypePlan plan_for(const std::string& dtype, const device::Backend& backend) {
  DtypePlan p;
  if (const std::optional<GemmRounding> rounding = gemm_rounding(dtype)) p.rounding = *rounding;
  const std::string& kind = backend.kind();
  if (dtype == "bf16" || dtype == "fp16") {
    p.element = dtype == "bf16" ? at::kBFloat16 : at::kHalf;
    p.setting = fmt::format("at::mm_out, {} inputs and output", dtype);
  } else if (dtype == "fp32") {
    p.setting = kind == "cpu" ? std::string("at::mm_out, fp32 inputs and output")
                              : fmt::format("at::mm_out, fp32 inputs and output, TF32 off ({})",
                                            device::tf32_matmul_call());
  } else if (dtype == "tf32") {
    p.tf32 = true;
    p.setting =
        fmt::format("at::mm_out, fp32 inputs and output, TF32 on ({})", device::tf32_matmul_call());
    if (kind == "cpu") {
      p.reason =
          "TF32 is a GPU tensor-core mode; on CPU fp32 runs in full precision (measure fp32)";
    } else if (kind == "rocm") {
      // LibTorch on ROCm ignores the setting unless hipBLASLt is told so (ATen's Context.cpp);
      // measuring then would label plain fp32 as tf32.
      const char* allow = std::getenv("HIPBLASLT_ALLOW_TF32");
      if (allow == nullptr || std::string(allow) != "1") {
        p.reason =
            "LibTorch on ROCm ignores its TF32 setting unless HIPBLASLT_ALLOW_TF32=1 is set in "
            "the environment";
      }
    }
  } else if (dtype == "fp8") {
    p.scaled = true;
#if FTBENCH_TORCH_AT_LEAST(2, 4)
    // MI300 (gfx94x) runs the "fnuz" variant of e4m3; NVIDIA and later AMD parts the OCP one.
    const bool fnuz = kind == "rocm" && backend.info().arch.rfind("gfx94", 0) == 0;
    p.element = fnuz ? at::kFloat8_e4m3fnuz : at::kFloat8_e4m3fn;
    p.setting = fmt::format(
        "at::_scaled_mm, {} inputs (B column-major), per-tensor scales 1.0, bf16 output, "
        "use_fast_accum false",
        fnuz ? "float8_e4m3fnuz" : "float8_e4m3fn");
    if (kind == "cpu") {
      p.reason = "fp8 matmuls are measured on GPUs only (at::_scaled_mm on CUDA sm_89+ or ROCm)";
    } else if (kind == "cuda") {
      const int cc = compute_capability(backend.info().arch);
      if (cc >= 0 && cc < 89) {
        p.reason =
            fmt::format("fp8 tensor cores need compute capability 8.9 or newer; this device is {}",
                        backend.info().arch);
      }
    }
#else
    p.setting = "at::_scaled_mm (LibTorch 2.4 or newer)";
    p.reason = "fp8 needs at::_scaled_mm of LibTorch 2.4 or newer; this is LibTorch " TORCH_VERSION;
#endif
  } else {
    throw std::invalid_argument("gemm: unknown dtype \"" + dtype + "\"");
  }
  return p;
}

// Allows or forbids TF32 in fp32 matmuls for the guard's lifetime, then forbids it again,
// LibTorch's default, which ftbench never changes elsewhere (device/tf32_matmul.h).
class Tf32Guard {
 public:
  explicit Tf32Guard(bool allow) { device::set_tf32_matmul(allow); }
  Tf32Guard(const Tf32Guard&) = delete;
  Tf32Guard& operator=(const Tf32Guard&) = delete;
  ~Tf32Guard() { device::set_tf32_matmul(false); }
};

// The operands of one shape and the call that is timed.
class Operands {
 public:
  Operands(const DtypePlan& plan, const GemmShape& s, at::Device device) : plan_(plan) {
    const auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
    // Drawn in fp32 and rounded to the element type: a normal draw in every type on every
    // LibTorch version, and the rounded values are exactly what the kernel multiplies.
    a_ = at::randn({s.m, s.k}, f32).to(plan.element);
    if (plan.scaled) {
      // _scaled_mm takes B column-major: the transpose of a row-major (n x k) matrix.
      b_ = at::randn({s.n, s.k}, f32).to(plan.element).t();
      scale_ = at::ones({}, f32);
    } else {
      b_ = at::randn({s.k, s.n}, f32).to(plan.element);
      out_ = at::empty({s.m, s.n}, f32.dtype(plan.element));
    }
  }

  void call() {
#if FTBENCH_TORCH_AT_LEAST(2, 4)
    if (plan_.scaled) {
      out_ = at::_scaled_mm(a_, b_, scale_, scale_, {}, {}, at::kBFloat16, false);
      return;
    }
#endif
    at::mm_out(out_, a_, b_);
  }

  // Relative Frobenius error of the first rows x columns of the last output against an fp64
  // product of the same inputs.
  double check_error(int64_t rows, int64_t columns) const {
    const at::Tensor a = a_.narrow(0, 0, std::min(rows, a_.size(0))).to(at::kFloat).to(at::kDouble);
    const at::Tensor b =
        b_.narrow(1, 0, std::min(columns, b_.size(1))).to(at::kFloat).to(at::kDouble);
    const at::Tensor reference = at::mm(a, b);
    const at::Tensor got =
        out_.narrow(0, 0, a.size(0)).narrow(1, 0, b.size(1)).to(at::kFloat).to(at::kDouble);
    const double norm = reference.norm().item<double>();
    const double diff = (got - reference).norm().item<double>();
    return norm > 0.0 ? diff / norm : diff;
  }

 private:
  const DtypePlan& plan_;
  at::Tensor a_;
  at::Tensor b_;
  at::Tensor out_;
  at::Tensor scale_;
};

// Times calls: device events around each call on a GPU (LibTorch 2.5+), else the host's
// steady_clock (on a GPU with a synchronisation before and after the call).
class CallTimer {
 public:
  CallTimer(at::Device device, int64_t calls) : device_(device) {
    host_seconds_.resize(static_cast<std::size_t>(calls));
#ifdef FTBENCH_GEMM_DEVICE_EVENTS
    if (device_.is_cuda()) {
      for (int64_t i = 0; i < calls; ++i) {
        starts_.emplace_back(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
        ends_.emplace_back(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
      }
    }
#endif
  }

  static std::string description(at::Device device) {
    if (!device.is_cuda()) return "steady_clock";
#ifdef FTBENCH_GEMM_DEVICE_EVENTS
    return "device events";
#else
    return "steady_clock, device synchronised around each call";
#endif
  }

  void start([[maybe_unused]] int64_t i) {
#ifdef FTBENCH_GEMM_DEVICE_EVENTS
    if (device_.is_cuda()) {
      starts_[static_cast<std::size_t>(i)].record(stream());
      return;
    }
#endif
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
    start_ = Clock::now();
  }

  void stop(int64_t i) {
#ifdef FTBENCH_GEMM_DEVICE_EVENTS
    if (device_.is_cuda()) {
      ends_[static_cast<std::size_t>(i)].record(stream());
      return;
    }
#endif
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
    host_seconds_[static_cast<std::size_t>(i)] = seconds_since(start_);
  }

  // Every call's seconds; waits for the device first.
  std::vector<double> seconds() const {
#ifdef FTBENCH_GEMM_DEVICE_EVENTS
    if (device_.is_cuda()) {
      torch::cuda::synchronize(device_.index());
      std::vector<double> out;
      for (std::size_t i = 0; i < starts_.size(); ++i) {
        out.push_back(starts_[i].elapsedTime(ends_[i]) / 1000.0);  // milliseconds
      }
      return out;
    }
#endif
    return host_seconds_;
  }

 private:
#ifdef FTBENCH_GEMM_DEVICE_EVENTS
  c10::Stream stream() const {
    return c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(device_);
  }
  std::vector<c10::Event> starts_;
  std::vector<c10::Event> ends_;
#endif
  at::Device device_;
  Clock::time_point start_;
  std::vector<double> host_seconds_;
};

// Warm-up calls, then the timed ones, each after the cache flush; then the check.
GemmShapeResult measure_shape(const DtypePlan& plan, const GemmShape& shape,
                              const GemmRunOptions& o, at::Tensor& flush, at::Device device) {
  Operands operands(plan, shape, device);
  CallTimer timer(device, o.iterations);
  for (int64_t i = 0; i < o.warmup_iterations + o.iterations; ++i) {
    if (flush.defined()) flush.zero_();
    const int64_t timed = i - o.warmup_iterations;
    if (timed >= 0) timer.start(timed);
    operands.call();
    if (timed >= 0) timer.stop(timed);
  }
  GemmShapeResult r = summarize_shape(shape, timer.seconds());
  r.check_error = operands.check_error(kGemmCheckRows, kGemmCheckColumns);
  r.check_tolerance = gemm_check_tolerance(plan.rounding, shape.k);
  return r;
}

}  // namespace

int64_t default_cache_flush_bytes(const device::Backend& backend) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (backend.kind() == "cpu") return std::max(2 * largest_host_cache_bytes(), 64 * kMiB);
  const std::optional<int64_t> l2 = backend.info().l2_cache_bytes;  // from the query module
  if (backend.kind() == "rocm") return std::max(l2 ? 2 * *l2 : 0, 512 * kMiB);
  return l2 ? 2 * *l2 : 256 * kMiB;
}

GemmResult run_gemm_sweep(const GemmRunOptions& o, const device::Backend& backend) {
  if (o.shapes.empty()) throw std::invalid_argument("gemm: no shapes to measure");
  if (o.dtypes.empty()) throw std::invalid_argument("gemm: no dtypes to measure");
  if (o.iterations < 1) throw std::invalid_argument("gemm: iterations must be at least 1");
  if (o.warmup_iterations < 0) throw std::invalid_argument("gemm: warm-up must be at least 0");

  const Clock::time_point start = Clock::now();
  GemmResult result;
  result.started_at_utc = text::iso8601_utc(device::epoch_seconds_now());
  const at::Device device = backend.device();
  GemmSettings& st = result.settings;
  st.shapes = o.shapes_spec;
  st.shape_count = static_cast<int64_t>(o.shapes.size());
  st.warmup_iterations = o.warmup_iterations;
  st.iterations = o.iterations;
  st.cache_flush_bytes = o.cache_flush_bytes.value_or(default_cache_flush_bytes(backend));
  st.max_seconds = o.max_seconds;
  st.timer = CallTimer::description(device);
  st.check_rows = kGemmCheckRows;
  st.check_columns = kGemmCheckColumns;

  at::Tensor flush;
  if (st.cache_flush_bytes > 0) {
    flush = at::empty({st.cache_flush_bytes}, at::TensorOptions().device(device).dtype(at::kByte));
  }
  at::manual_seed(o.seed);
  const int64_t total = static_cast<int64_t>(o.dtypes.size() * o.shapes.size());
  int64_t done = 0;
  for (const std::string& dtype : o.dtypes) {
    const DtypePlan plan = plan_for(dtype, backend);
    GemmDtypeResult d;
    d.dtype = dtype;
    d.setting = plan.setting;
    d.check_rule = gemm_check_rule(dtype);
    d.unsupported_reason = plan.reason;
    const Tf32Guard tf32(plan.tf32);
    if (d.unsupported_reason.empty()) {
      // The smallest shape every kernel accepts (fp8 wants multiples of 16): whatever this
      // LibTorch or device cannot do fails here, once, rather than on every shape.
      try {
        Operands probe(plan, {16, 16, 16}, device);
        probe.call();
        backend.synchronize();
      } catch (const c10::Error& e) {
        d.unsupported_reason = torch_error(e);
      }
    }
    d.supported = d.unsupported_reason.empty();
    if (!d.supported) {
      if (o.progress) o.progress(fmt::format("{}: not supported: {}", dtype, d.unsupported_reason));
      done += static_cast<int64_t>(o.shapes.size());
      result.dtypes.push_back(std::move(d));
      continue;
    }
    for (const GemmShape& shape : o.shapes) {
      ++done;
      if (o.max_seconds > 0.0 && seconds_since(start) > o.max_seconds) {
        ++d.shapes_skipped;
        continue;
      }
      GemmShapeResult r;
      try {
        r = measure_shape(plan, shape, o, flush, device);
      } catch (const c10::Error& e) {
        r = summarize_shape(shape, {});
        r.error = torch_error(e);
      }
      if (o.progress) {
        o.progress(r.error.empty()
                       ? fmt::format("{} {}: median {:.4g} TFLOP/s, max {:.4g} ({}/{}, {:.1f} s)",
                                     dtype, shape_text(shape), r.median_tflops, r.max_tflops, done,
                                     total, seconds_since(start))
                       : fmt::format("{} {}: failed: {} ({}/{})", dtype, shape_text(shape), r.error,
                                     done, total));
      }
      d.shapes.push_back(std::move(r));
    }
    if (d.shapes_skipped > 0 && o.progress) {
      o.progress(fmt::format("{}: {} shapes skipped, the {:.0f} s budget is spent", dtype,
                             d.shapes_skipped, o.max_seconds));
    }
    summarize_dtype(d);
    result.dtypes.push_back(std::move(d));
  }
  result.environment = report::environment_record(device::describe_environment(&backend));
  result.total_seconds = seconds_since(start);
  result.finished_at_utc = text::iso8601_utc(device::epoch_seconds_now());
  return result;
}

}  // namespace ftbench::bench
