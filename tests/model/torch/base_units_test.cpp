// A split base's unit buffers (model/torch/base_units.h): the layout (each tensor at a multiple of
// 64 elements, the length a multiple of the ranks), memory that comes and goes under the same
// tensors, and the host pool that keeps freed buffers for the next gather.
#include "model/torch/base_units.h"

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

namespace ftbench::model {
namespace {

TEST(BaseUnit, LaysTheTensorsOutAlignedAndPaddedForTheRanks) {
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor a = at::empty({0}, f32);
  at::Tensor b = at::empty({0}, f32);
  auto pool = std::make_shared<HostBufferPool>(2);
  // a: 3 x 5 = 15 elements at 0; b: 2 x 2 = 4 at 64; 68 used, padded to a multiple of 3: 69.
  BaseUnit unit({a, b}, {{3, 5}, {2, 2}}, 3, f32, pool);
  EXPECT_EQ(unit.numel(), 69);
  EXPECT_EQ(unit.bytes(), 69 * 4);
  EXPECT_FALSE(unit.whole());
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(b.storage_offset(), 64);
  EXPECT_TRUE(a.storage().is_alias_of(unit.flat().storage()));

  unit.allocate();
  ASSERT_TRUE(unit.whole());
  torch::NoGradGuard no_grad;
  unit.flat().fill_(7.0);
  unit.zero_gaps();
  a.fill_(1.0);
  b.fill_(2.0);
  const at::Tensor flat = unit.flat();
  EXPECT_EQ(flat.narrow(0, 0, 15).sum().item<double>(), 15.0);
  EXPECT_EQ(flat.narrow(0, 15, 49).abs().sum().item<double>(), 0.0);  // the gap
  EXPECT_EQ(flat.narrow(0, 64, 4).sum().item<double>(), 8.0);
  EXPECT_EQ(flat.narrow(0, 68, 1).item<double>(), 0.0);  // the padding

  // Freed and given memory again: the same tensors see what is written through the buffer.
  unit.free();
  EXPECT_FALSE(unit.whole());
  EXPECT_EQ(pool->free_bytes(), 69u * 4u);
  unit.allocate();
  EXPECT_EQ(pool->free_bytes(), 0u);
  unit.flat().fill_(3.0);
  EXPECT_EQ(b.sum().item<double>(), 12.0);
}

TEST(HostBufferPool, KeepsAtMostItsShareOfFreeBuffersAndOutlivesNothing) {
  auto pool = std::make_shared<HostBufferPool>(2);
  void* first = nullptr;
  {
    at::DataPtr one = pool->take(8192);
    first = one.get();
    ASSERT_NE(first, nullptr);
  }
  EXPECT_EQ(pool->free_bytes(), 8192u);
  {
    at::DataPtr again = pool->take(8192);
    EXPECT_EQ(again.get(), first);  // reused, not mapped anew
    EXPECT_EQ(pool->free_bytes(), 0u);
  }
  {
    at::DataPtr a = pool->take(8192);
    at::DataPtr b = pool->take(8192);
    at::DataPtr c = pool->take(8192);
    at::DataPtr other = pool->take(4096);
  }
  EXPECT_EQ(pool->free_bytes(), 2u * 8192u + 4096u);  // the third 8192 was unmapped
  // A buffer still in use when its pool goes is unmapped when it is freed.
  at::DataPtr late = pool->take(4096);
  static_cast<char*>(late.get())[4095] = 1;
  pool.reset();
  late.clear();
}

}  // namespace
}  // namespace ftbench::model
