#include "device/torch/backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "device/allocator_stats.h"
#include "device/cpu_tensor_bytes.h"
#include "device/host_info.h"
#include "device/host_memory.h"
#include "device/torch/dtype.h"
#include "spec/choices.h"

namespace ftbench::device {
namespace {

// LibTorch's CPU pools (pthreadpool, OpenMP) start their threads when the thread count is set
// or at the first parallel region, and do not survive a failed pthread_create: under an
// address-space limit (ulimit -v) too small for the threads' stacks, pthreadpool waits for good
// for a thread that never started (deaf to SIGTERM) and libgomp exits the process with status 1.
// `threads` threads started here first, all at once, then released, find that out while it can
// still be said: a BackendError (exit 3, a failed report).
void check_threads_can_start(int64_t threads) {
  std::mutex mutex;
  std::condition_variable release;
  bool go = false;
  std::vector<std::thread> started;
  std::string failure;
  for (int64_t i = 0; i < threads; ++i) {
    try {
      started.emplace_back([&] {
        std::unique_lock<std::mutex> lock(mutex);
        release.wait(lock, [&] { return go; });
      });
    } catch (const std::system_error& e) {
      failure = e.what();
      break;
    }
  }
  {
    const std::lock_guard<std::mutex> lock(mutex);
    go = true;
  }
  release.notify_all();
  for (std::thread& t : started) t.join();
  if (failure.empty()) return;
  std::string why;
  if (const std::optional<uint64_t> limit = address_space_limit()) {
    why = " under " + describe_address_space_limit(*limit);
  }
  throw BackendError(fmt::format(
      "out of memory: could start only {} of the {} threads of LibTorch's CPU pools{} ({}); "
      "raise the limit{}",
      started.size(), threads, why, failure,
      threads > 1
          ? ", or use fewer threads (backend.threads of a run, --threads of gemm and logits)"
          : ""));
}

std::string cpu_isa() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      if (line.find(" avx512_bf16") != std::string::npos) return "x86-64 avx512_bf16";
      if (line.find(" avx512f") != std::string::npos) return "x86-64 avx512";
      if (line.find(" avx2") != std::string::npos) return "x86-64 avx2";
      return "x86-64";
    }
  }
  return "unknown";
}

// OpenBLAS keeps its own thread pool that at::set_num_threads does not reach. Looked up at
// run time so the build does not depend on which BLAS libblas.so.3 points to.
void set_openblas_threads(int threads) {
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(threads);
  }
}

}  // namespace

std::string torch_build_backend() {
#if defined(FTBENCH_TORCH_ROCM)
  return "rocm";
#elif defined(FTBENCH_TORCH_CUDA)
  return "cuda";
#else
  return "cpu";
#endif
}

namespace {

// A BLAS library's kind from its file's path; "" when the path names none.
std::string blas_kind(const std::string& path) {
  if (path.find("openblas") != std::string::npos) {
    return path.find("pthread") != std::string::npos  ? "openblas-pthread"
           : path.find("openmp") != std::string::npos ? "openblas-openmp"
                                                      : "openblas";
  }
  if (path.find("libblis") != std::string::npos) return "blis";
  if (path.find("libmkl") != std::string::npos) return "mkl";
  if (path.find("/blas/libblas.so") != std::string::npos) return "netlib reference blas";
  return "";
}

}  // namespace

std::string blas_from_build_settings(const std::string& config) {
  const std::string key = "BLAS_INFO=";
  const size_t at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const size_t begin = at + key.size();
  const size_t end = config.find_first_of(", \n", begin);
  const std::string value = config.substr(begin, end == std::string::npos ? end : end - begin);
  if (value == "mkl") return "mkl";
  if (value == "open") return "openblas";
  if (value.empty()) return "unknown";
  return value;
}

std::string resolved_blas() {
  // The library that sgemm_, LibTorch's CPU matmul, resolves to: several BLAS libraries can be
  // loaded at once (LD_LIBRARY_PATH putting the reference libblas first while OpenBLAS's
  // liblapack pulls in libopenblas), and only the one that answers the call matters.
  if (void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_")) {
    Dl_info info{};
    if (dladdr(sgemm, &info) != 0 && info.dli_fname != nullptr) {
      std::error_code error;
      const std::filesystem::path real = std::filesystem::canonical(info.dli_fname, error);
      std::string kind = blas_kind(error ? std::string(info.dli_fname) : real.string());
      if (!kind.empty()) return kind;
    }
  }
  // Otherwise the first BLAS library mapped into the process.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::string found;
  while (std::getline(maps, line)) {
    const std::string kind = blas_kind(line);
    if (kind == "netlib reference blas") {
      found = kind;
    } else if (!kind.empty()) {
      return kind;
    }
  }
  if (!found.empty()) return found;
  // No BLAS library of its own: one linked into LibTorch, as PyPI's x86 wheels link MKL
  // statically (no sgemm_ exported, no libmkl mapped). LibTorch's build settings name it.
  return blas_from_build_settings(at::show_config());
}

Backend::Backend(const spec::BackendSpec& spec) {
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  intra_op_threads_ = spec.threads > 0 ? spec.threads : hardware;
  // Inter-op parallelism only helps graphs with independent branches; a training step is a
  // chain, so one inter-op thread avoids oversubscribing the cores.
  // LibTorch allows this once per process, before any inter-op work; a second Backend in the
  // same process (tests) keeps what the first set.
  try {
    at::set_num_interop_threads(1);
  } catch (const c10::Error&) {
  }
  check_threads_can_start(intra_op_threads_);
  at::set_num_threads(static_cast<int>(intra_op_threads_));
  set_openblas_threads(static_cast<int>(intra_op_threads_));
  inter_op_threads_ = at::get_num_interop_threads();

  const std::string build = torch_build_backend();
  namespace devices = ftbench::spec::choice::device;
  const bool gpu_available = build != devices::kCpu && torch::cuda::is_available();
  std::string want = spec.device;
  if (want == devices::kAuto) want = gpu_available ? build : devices::kCpu;
  if (want == devices::kCuda || want == devices::kRocm) {
    if (build != want) {
      throw BackendError("backend.device: \"" + want +
                         "\" requested but this ftbench was built "
                         "against a " +
                         build + " LibTorch (" TORCH_VERSION ")");
    }
    if (!gpu_available) {
      throw BackendError("backend.device: \"" + want + "\" requested but no GPU is visible");
    }
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    if (spec.device_index >= count) {
      throw BackendError("backend.device_index: " + std::to_string(spec.device_index) +
                         " but only " + std::to_string(count) + " GPU(s) are visible");
    }
    device_ = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(spec.device_index));
    kind_ = want;
    info_.backend = want;
    info_.count = count;
    info_.index = spec.device_index;
    const GpuRuntime runtime = want == devices::kRocm ? GpuRuntime::kHip : GpuRuntime::kCuda;
    try {
      query_ = GpuQuery::load(runtime);
      fill_device_info(*query_, spec.device_index, info_);
    } catch (const GpuQueryError& e) {
      info_.query_error = e.what();
      spdlog::warn("device facts unavailable, the report leaves them empty: {}", e.what());
    }
  } else {
    device_ = at::Device(at::kCPU);
    kind_ = "cpu";
    info_.backend = "cpu";
    info_.name = host_info().cpu_model;
    info_.arch = cpu_isa();
    info_.count = 1;
    info_.index = 0;
    // A CPU run's tensor bytes (device/cpu_tensor_bytes.h, counting since the program started):
    // the peaks from here on; the model and the data are made after the backend.
    reset_cpu_tensor_peak();
  }
}

void Backend::check_dtype_supported(const std::string& dtype) const {
  const at::ScalarType type = scalar_type_of(dtype);
  try {
    const at::Tensor a = at::ones({2, 2}, at::TensorOptions().dtype(type).device(device_));
    (void)at::mm(a, a);
  } catch (const c10::Error& e) {
    throw BackendError("model.dtype: " + dtype + " is not supported on the " + kind_ +
                       " backend by this LibTorch (" TORCH_VERSION "): " +
                       e.what_without_backtrace() + "; use bf16 or fp32");
  }
}

void Backend::synchronize() const {
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
}

Backend::~Backend() = default;

void Backend::reset_peak_memory() {
  if (device_.is_cpu()) reset_cpu_tensor_peak();
  if (!device_.is_cuda()) return;
  reset_allocator_peaks(device_.index());
  device_used_peak_bytes_.reset();
}

void Backend::release_cached_memory() const {
  if (!device_.is_cuda()) return;
  synchronize();
  empty_gpu_cache();
}

void Backend::sample_memory() {
  if (query_ == nullptr) return;
  try {
    const GpuMemoryInfo m = query_->memory_info(device_.index());
    device_used_peak_bytes_ = std::max(device_used_peak_bytes_.value_or(0), m.used_bytes());
    device_total_bytes_ = m.total_bytes;
  } catch (const GpuQueryError&) {
    // A failed sample leaves the maximum as it was; the run does not depend on it.
  }
}

MemoryReading Backend::phase_memory() {
  MemoryReading out;
  if (device_.is_cpu() && cpu_tensor_counter_installed()) {
    out.peak_allocated_bytes = cpu_tensor_peak_bytes();  // exact: what the tensors asked for
  }
  if (!device_.is_cuda()) return out;
  sample_memory();
  const AllocatorStats a = allocator_stats(device_.index());
  out.peak_allocated_bytes = a.peak_allocated_bytes;
  out.peak_reserved_bytes = a.peak_reserved_bytes;
  out.peak_active_bytes = a.peak_active_bytes;
  out.device_used_peak_bytes = device_used_peak_bytes_;
  return out;
}

DeviceMemoryCounters Backend::memory() const {
  DeviceMemoryCounters out;
  if (!device_.is_cuda()) return out;
  const AllocatorStats a = allocator_stats(device_.index());
  out.allocation_retries = a.allocation_retries;
  out.oom_count = a.oom_count;
  out.device_total_bytes = device_total_bytes_ ? device_total_bytes_ : info_.memory_bytes;
  return out;
}

}  // namespace ftbench::device
