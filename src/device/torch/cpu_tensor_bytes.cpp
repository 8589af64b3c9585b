#include "device/cpu_tensor_bytes.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <limits>
#include <mutex>

namespace ftbench::device {
namespace {

std::atomic<int64_t> g_bytes{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

void add(int64_t n) {
  const int64_t now = g_bytes.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

#if defined(FTBENCH_CPU_ALLOCATOR_API_COPY_DATA) || \
    defined(FTBENCH_CPU_ALLOCATOR_API_CONST_ALLOCATE)

// Each allocation carries its size in a header of kHeader bytes in front of the data, which keeps
// LibTorch's 64-byte alignment; the data pointer is also the context ("simple" DataPtrs, as the
// default allocator makes), so raw_allocate, raw_deallocate and clone keep working.
constexpr std::size_t kHeader = 64;

c10::Allocator* g_inner = nullptr;
c10::DeleterFnPtr g_inner_delete = nullptr;

void release(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  int64_t n = 0;
  std::memcpy(&n, base, sizeof n);
  g_bytes.fetch_sub(n, std::memory_order_relaxed);
  g_inner_delete(base);
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
#ifdef FTBENCH_CPU_ALLOCATOR_API_COPY_DATA
  c10::DataPtr allocate(std::size_t n) override { return counted(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(std::size_t n) const override { return counted(n); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  static c10::DataPtr counted(std::size_t n) {
    TORCH_CHECK(n <= std::numeric_limits<std::size_t>::max() - kHeader,
                "ftbench: a CPU allocation of ", n, " bytes");
    void* base = g_inner->raw_allocate(n + kHeader);
    const int64_t bytes = static_cast<int64_t>(n);
    std::memcpy(base, &bytes, sizeof bytes);
    add(bytes);
    void* data = static_cast<char*>(base) + kHeader;
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
};

bool install() {
  c10::Allocator* inner = c10::GetCPUAllocator();
  if (inner == nullptr || inner->raw_deleter() == nullptr) return false;
  g_inner = inner;
  g_inner_delete = inner->raw_deleter();
  // Never destroyed: tensors freed while the program's statics are destroyed still come here.
  static auto* const counter = new CountingCpuAllocator();
  // The highest priority: a later SetCPUAllocator of a lower one does not replace it (one of
  // the same priority would).
  c10::SetCPUAllocator(counter, std::numeric_limits<uint8_t>::max());
  return c10::GetCPUAllocator() == counter;
}

#else

bool install() { return false; }

#endif

}  // namespace

bool install_cpu_tensor_counter() {
  static std::once_flag once;
  std::call_once(once, [] { g_installed = install(); });
  return g_installed;
}

namespace {
// Before main(): LibTorch's libraries (and their allocator) are initialised before this program's
// own objects, and nothing has allocated through them yet.
[[maybe_unused]] const bool g_installed_at_start = install_cpu_tensor_counter();
}  // namespace

void count_cpu_tensor_bytes(int64_t bytes) { add(bytes); }

bool cpu_tensor_counter_installed() { return g_installed; }

int64_t cpu_tensor_bytes() { return g_bytes.load(std::memory_order_relaxed); }

int64_t cpu_tensor_peak_bytes() { return g_peak.load(std::memory_order_relaxed); }

void reset_cpu_tensor_peak() {
  g_peak.store(g_bytes.load(std::memory_order_relaxed));
  add(0);  // an allocation between the load and the store raises the peak to what is held
}

}  // namespace ftbench::device
