#include "model/torch/base_units.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include "device/cpu_tensor_bytes.h"

namespace ftbench::model {
namespace {

// Every tensor starts at a multiple of this many elements (128 bytes of bf16), so that its rows
// are as aligned for the GEMM kernels as a tensor of its own would be.
constexpr int64_t kAlignElements = 64;

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

void* map_host(std::size_t bytes) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) {
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                fmt::format("out of memory: cannot map {} bytes of host memory for "
                                            "a unit of the split base: {}",
                                            bytes, std::strerror(errno)));
  }
  return address;
}

}  // namespace

// A buffer taken from a pool: given back to it when LibTorch frees the storage, or unmapped
// where the pool is gone.
struct PooledBuffer {
  void* address;
  std::size_t bytes;
  std::weak_ptr<HostBufferPool> pool;

  static void release(void* context) {
    auto* buffer = static_cast<PooledBuffer*>(context);
    device::count_cpu_tensor_bytes(-static_cast<int64_t>(buffer->bytes));
    if (const std::shared_ptr<HostBufferPool> pool = buffer->pool.lock()) {
      pool->give_back(buffer->address, buffer->bytes);
    } else {
      munmap(buffer->address, buffer->bytes);
    }
    delete buffer;
  }
};

HostBufferPool::~HostBufferPool() {
  for (const auto& [bytes, address] : free_) munmap(address, bytes);
}

at::DataPtr HostBufferPool::take(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  void* address = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = free_.find(bytes);
    if (found != free_.end()) {
      address = found->second;
      free_.erase(found);
    }
  }
  if (address == nullptr) address = map_host(bytes);
  // Tensor memory as much as the allocator's: a CPU run's tensor bytes count it.
  device::count_cpu_tensor_bytes(static_cast<int64_t>(bytes));
  return at::DataPtr(address, new PooledBuffer{address, bytes, weak_from_this()},
                     &PooledBuffer::release, at::Device(at::kCPU));
}

void HostBufferPool::give_back(void* address, std::size_t bytes) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (free_.count(bytes) < keep_) {
      free_.emplace(bytes, address);
      return;
    }
  }
  munmap(address, bytes);
}

std::size_t HostBufferPool::free_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::size_t total = 0;
  for (const auto& [bytes, address] : free_) total += bytes;
  return total;
}

BaseUnit::BaseUnit(std::vector<at::Tensor> tensors, const std::vector<std::vector<int64_t>>& sizes,
                   int64_t ranks, at::TensorOptions options,
                   std::shared_ptr<HostBufferPool> host_pool)
    : tensors_(std::move(tensors)),
      element_bytes_(static_cast<int64_t>(c10::elementSize(options.dtype().toScalarType()))),
      host_pool_(std::move(host_pool)) {
  if (tensors_.size() != sizes.size() || tensors_.empty() || ranks < 1) {
    throw std::invalid_argument(fmt::format("BaseUnit: {} tensors, {} shapes, {} ranks",
                                            tensors_.size(), sizes.size(), ranks));
  }
  std::vector<int64_t> offsets;
  int64_t end = 0;
  for (const std::vector<int64_t>& shape : sizes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const int64_t start = round_up(end, kAlignElements);
    if (start > end) gaps_.emplace_back(end, start - end);
    offsets.push_back(start);
    end = start + n;
  }
  numel_ = round_up(end, ranks);
  if (numel_ > end) gaps_.emplace_back(end, numel_ - end);

  // A storage of the whole length that has no memory yet: setting a tensor onto it allocates
  // nothing, because the storage already claims enough bytes.
  const at::Tensor probe = at::empty({0}, options);
  at::Storage storage(at::Storage::use_byte_size_t(), static_cast<size_t>(bytes()),
                      at::DataPtr(nullptr, probe.device()),
                      probe.storage().unsafeGetStorageImpl()->allocator(),
                      /*resizable=*/false);
  torch::NoGradGuard no_grad;
  flat_ = at::empty({0}, options).set_(storage, 0, {numel_}, {1});
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].scalar_type() != options.dtype().toScalarType() ||
        tensors_[i].device() != probe.device()) {
      throw std::invalid_argument("BaseUnit: a tensor of another dtype or device");
    }
    std::vector<int64_t> strides(sizes[i].size(), 1);
    for (std::size_t d = sizes[i].size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[i][d];
    tensors_[i].set_(storage, offsets[i], sizes[i], strides);
  }
}

int64_t BaseUnit::bytes() const { return numel_ * element_bytes_; }

bool BaseUnit::whole() const {
  return flat_.storage().unsafeGetStorageImpl()->data_ptr().get() != nullptr;
}

void BaseUnit::allocate() {
  if (whole()) return;
  c10::StorageImpl* storage = flat_.storage().unsafeGetStorageImpl();
  if (flat_.device().is_cpu() && host_pool_) {
    storage->set_data_ptr_noswap(host_pool_->take(static_cast<size_t>(bytes())));
    return;
  }
  const c10::DeviceGuard guard(flat_.device());
  storage->set_data_ptr_noswap(storage->allocator()->allocate(static_cast<size_t>(bytes())));
}

void BaseUnit::zero_gaps() {
  torch::NoGradGuard no_grad;
  for (const auto& [first, count] : gaps_) flat_.narrow(0, first, count).zero_();
}

void BaseUnit::free() {
  flat_.storage().unsafeGetStorageImpl()->set_data_ptr_noswap(at::DataPtr(nullptr, flat_.device()));
}

}  // namespace ftbench::model
