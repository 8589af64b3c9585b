// The CPU tensor byte counter (device/cpu_tensor_bytes.h): exact bytes against the tensors' own
// sizes, the peak and its reset, clones, raw allocations and threads.
#include "device/cpu_tensor_bytes.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace ftbench::device {
namespace {

class CpuTensorBytes : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(install_cpu_tensor_counter()) << "this LibTorch's CPU allocator is not counted";
    reset_cpu_tensor_peak();
  }
};

TEST_F(CpuTensorBytes, CountsWhatEachTensorAskedForAndItsRelease) {
  const int64_t before = cpu_tensor_bytes();
  {
    const at::Tensor a = at::empty({1000}, at::kFloat);  // 4,000 bytes
    EXPECT_EQ(cpu_tensor_bytes() - before, 4000);
    const at::Tensor b = at::zeros({3, 7}, at::kBFloat16);  // 42 bytes
    EXPECT_EQ(cpu_tensor_bytes() - before, 4042);
    EXPECT_EQ(cpu_tensor_peak_bytes() - before, 4042);
    // A result of an operation is a tensor like any other: 4,000 bytes more. (a.mul(2.0) would
    // also allocate the scalar as a tensor for a moment: the peak counts such temporaries too.)
    const at::Tensor c = at::add(a, a);
    EXPECT_EQ(cpu_tensor_bytes() - before, 8042);
  }
  EXPECT_EQ(cpu_tensor_bytes(), before);
  EXPECT_EQ(cpu_tensor_peak_bytes() - before, 8042);  // the peak stays until a reset
  reset_cpu_tensor_peak();
  EXPECT_EQ(cpu_tensor_peak_bytes(), cpu_tensor_bytes());
}

TEST_F(CpuTensorBytes, DataIsAlignedAndRawAllocationsAndResizesAreCounted) {
  const int64_t before = cpu_tensor_bytes();
  at::Tensor t = at::empty({5}, at::kDouble);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  t.resize_({50});  // a new allocation of 400 bytes replaces the 40
  EXPECT_EQ(cpu_tensor_bytes() - before, 400);
  c10::Allocator* allocator = c10::GetCPUAllocator();
  void* raw = allocator->raw_allocate(123);
  EXPECT_EQ(cpu_tensor_bytes() - before, 523);
  std::memset(raw, 1, 123);
  allocator->raw_deallocate(raw);
  EXPECT_EQ(cpu_tensor_bytes() - before, 400);
  t = at::Tensor();
  EXPECT_EQ(cpu_tensor_bytes(), before);
}

TEST_F(CpuTensorBytes, ThreadsAllocatingAtOnceLeaveTheCountWhereItWas) {
  const int64_t before = cpu_tensor_bytes();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([] {
      for (int k = 0; k < 2000; ++k) {
        const at::Tensor x = at::empty({k % 97 + 1}, at::kFloat);
        (void)x;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cpu_tensor_bytes(), before);
  EXPECT_LE(cpu_tensor_peak_bytes() - before, 4 * 97 * 4);
  EXPECT_GE(cpu_tensor_peak_bytes() - before, 97 * 4);
}

}  // namespace
}  // namespace ftbench::device
