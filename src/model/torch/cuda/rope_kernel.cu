// Rotate-half RoPE in one pass on the GPU (model/torch/gpu_kernels.h): nvcc compiles this file in a
// CUDA build of LibTorch, and CMake's HIP language (hipcc's clang) the same file in a ROCm build,
// where LibTorch's headers are the hipified ones (ATen/hip, c10/hip) and ROCm tensors are kCUDA
// tensors. The layout is the model's ([B, S, H, D] views of a packed projection), the arithmetic
// fp32 per pair (i, i + D/2), rounded once to the output's dtype.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#if defined(USE_ROCM)
#include <ATen/hip/impl/HIPStreamMasqueradingAsCUDA.h>
#include <hip/hip_runtime.h>
#else
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#endif

#include "model/torch/gpu_kernels.h"

namespace ftbench::model {
namespace {

#if defined(USE_ROCM)
using GpuStream = hipStream_t;
GpuStream current_stream() { return c10::hip::getCurrentHIPStreamMasqueradingAsCUDA().stream(); }
// ROCm's name for C10_CUDA_KERNEL_LAUNCH_CHECK has changed with PyTorch's hipify versions; the
// runtime's own call has not.
void check_launch() {
  const hipError_t error = hipGetLastError();
  TORCH_CHECK(error == hipSuccess,
              "gpu_rope_into: kernel launch failed: ", hipGetErrorString(error));
}
#else
using GpuStream = cudaStream_t;
GpuStream current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }
void check_launch() { C10_CUDA_KERNEL_LAUNCH_CHECK(); }
#endif

// Sizes, and strides in elements, of one call. A row is one (b, s, h): D values, pairs (i,
// i + half). The tables have no head stride (one row serves every head); table_b is 0 for
// [>= S, D] tables.
struct RopeGeometry {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t half = 0;
  int64_t x_b = 0, x_s = 0, x_h = 0;
  int64_t out_b = 0, out_s = 0, out_h = 0;
  int64_t table_b = 0, table_s = 0;
};

// Block shape: threadIdx.x over the pairs of a row (a loop where half > 256), threadIdx.y over
// rows, 256 threads in all; rows beyond the grid's by a grid-stride loop.
constexpr int kThreadsPerBlock = 256;
// 2^20 blocks of 256 threads stay below HIP's 2^32 threads a grid dimension, and fill any GPU.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

template <typename T, typename TableT, bool kTranspose>
__global__ void rope_kernel(T* out, const T* x, const TableT* cos, const TableT* sin,
                            RopeGeometry g) {
  const int64_t rows = g.batch * g.seq * g.heads;
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
       row += row_step) {
    const int64_t h = row % g.heads;
    const int64_t bs = row / g.heads;
    const int64_t s = bs % g.seq;
    const int64_t b = bs / g.seq;
    const T* x_row = x + b * g.x_b + s * g.x_s + h * g.x_h;
    T* out_row = out + b * g.out_b + s * g.out_s + h * g.out_h;
    const TableT* cos_row = cos + b * g.table_b + s * g.table_s;
    const TableT* sin_row = sin + b * g.table_b + s * g.table_s;
    for (int64_t i = threadIdx.x; i < g.half; i += blockDim.x) {
      const float x1 = static_cast<float>(x_row[i]);
      const float x2 = static_cast<float>(x_row[i + g.half]);
      const float c1 = static_cast<float>(cos_row[i]);
      const float c2 = static_cast<float>(cos_row[i + g.half]);
      const float s1 = static_cast<float>(sin_row[i]);
      const float s2 = static_cast<float>(sin_row[i + g.half]);
      // Both values are read before either is written: `out` may be `x` itself.
      if constexpr (kTranspose) {
        out_row[i] = static_cast<T>(x1 * c1 + x2 * s2);
        out_row[i + g.half] = static_cast<T>(x2 * c2 - x1 * s1);
      } else {
        out_row[i] = static_cast<T>(x1 * c1 - x2 * s1);
        out_row[i + g.half] = static_cast<T>(x2 * c2 + x1 * s2);
      }
    }
  }
}

RopeGeometry geometry_of(const at::Tensor& out, const at::Tensor& x, const at::Tensor& table) {
  RopeGeometry g;
  g.batch = x.size(0);
  g.seq = x.size(1);
  g.heads = x.size(2);
  g.half = x.size(3) / 2;
  g.x_b = x.stride(0);
  g.x_s = x.stride(1);
  g.x_h = x.stride(2);
  g.out_b = out.stride(0);
  g.out_s = out.stride(1);
  g.out_h = out.stride(2);
  if (table.dim() == 2) {
    g.table_s = table.stride(0);
  } else {  // [B, S, D] or [B, S, 1, D]
    g.table_b = table.stride(0);
    g.table_s = table.stride(1);
  }
  return g;
}

template <typename T, typename TableT>
void launch(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
            bool transpose) {
  const RopeGeometry g = geometry_of(out, x, cos);
  int threads_x = 32;
  while (threads_x < g.half && threads_x < kThreadsPerBlock) threads_x *= 2;
  const int rows_per_block = kThreadsPerBlock / threads_x;
  const int64_t rows = g.batch * g.seq * g.heads;
  const int64_t blocks = std::min((rows + rows_per_block - 1) / rows_per_block, kMaxBlocks);
  const dim3 grid(static_cast<unsigned>(blocks));
  const dim3 block(static_cast<unsigned>(threads_x), static_cast<unsigned>(rows_per_block));
  const GpuStream stream = current_stream();
  T* out_data = out.data_ptr<T>();
  const T* x_data = x.data_ptr<T>();
  const TableT* cos_data = cos.data_ptr<TableT>();
  const TableT* sin_data = sin.data_ptr<TableT>();
  if (transpose) {
    rope_kernel<T, TableT, true>
        <<<grid, block, 0, stream>>>(out_data, x_data, cos_data, sin_data, g);
  } else {
    rope_kernel<T, TableT, false>
        <<<grid, block, 0, stream>>>(out_data, x_data, cos_data, sin_data, g);
  }
  check_launch();
}

// Tables in fp32 or in x's own dtype (gpu_rope_applies has checked which).
template <typename T>
void launch_for_tables(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, bool transpose) {
  if (cos.scalar_type() == at::kFloat) {
    launch<T, float>(out, x, cos, sin, transpose);
  } else {
    launch<T, T>(out, x, cos, sin, transpose);
  }
}

}  // namespace

bool gpu_rope_kernel_built() { return true; }

void gpu_rope_into(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                   const at::Tensor& sin, bool transpose) {
  if (!gpu_rope_applies(out, x, cos, sin)) {
    throw std::invalid_argument(
        "gpu_rope_into: needs x and out [B, S, H, D] (fp32, bf16 or fp16, D even, last dimension "
        "contiguous) and tables [>= S, D], [B, S, D] or [B, S, 1, D] (fp32 or x's dtype) on one "
        "GPU");
  }
  if (x.numel() == 0) return;
  const c10::DeviceGuard guard(x.device());
  switch (x.scalar_type()) {
    case at::kFloat:
      launch<float, float>(out, x, cos, sin, transpose);
      break;
    case at::kBFloat16:
      launch_for_tables<at::BFloat16>(out, x, cos, sin, transpose);
      break;
    case at::kHalf:
      launch_for_tables<at::Half>(out, x, cos, sin, transpose);
      break;
    default:
      throw std::invalid_argument("gpu_rope_into: unexpected dtype after gpu_rope_applies");
  }
}

}  // namespace ftbench::model
