// gpu_kernels.h's parts that need no GPU compiler: the switch, and which tensors the kernel takes
// (the kernel itself and gpu_rope_kernel_built() are in src/model/torch/cuda/, or its stub).
#include "model/torch/gpu_kernels.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "util/text/messages.h"

namespace ftbench::model {
namespace {

bool is_kernel_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
}

bool is_strided_with_unit_last_stride(const at::Tensor& t) {
  return t.layout() == at::kStrided && t.dim() >= 1 && t.stride(-1) == 1;
}

// A table's shape for x [B, S, H, D]: [>= S, D], [B, S, D] or [B, S, 1, D].
bool table_fits(const at::Tensor& table, const at::Tensor& x) {
  const int64_t b = x.size(0);
  const int64_t s = x.size(1);
  const int64_t d = x.size(3);
  switch (table.dim()) {
    case 2:
      return table.size(0) >= s && table.size(1) == d;
    case 3:
      return table.size(0) == b && table.size(1) == s && table.size(2) == d;
    case 4:
      return table.size(0) == b && table.size(1) == s && table.size(2) == 1 && table.size(3) == d;
    default:
      return false;
  }
}

}  // namespace

bool gpu_kernels_enabled_from_environment() {
  const char* value = std::getenv("FTBENCH_GPU_KERNELS");
  if (value == nullptr || std::string_view(value) == "0") return false;
  if (std::string_view(value) == "1") return true;
  throw std::invalid_argument(
      "FTBENCH_GPU_KERNELS: expected 0 (ATen's operators, the default) or 1 (ftbench's own GPU "
      "kernels, model/torch/gpu_kernels.h), found " +
      text::quoted(value));
}

bool gpu_rope_applies(const at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                      const at::Tensor& sin) {
  if (!gpu_rope_kernel_built()) return false;
  if (!out.defined() || !x.defined() || !cos.defined() || !sin.defined()) return false;
  if (!x.is_cuda() || out.device() != x.device() || cos.device() != x.device() ||
      sin.device() != x.device()) {
    return false;
  }
  if (!is_kernel_dtype(x.scalar_type()) || out.scalar_type() != x.scalar_type()) return false;
  if (cos.scalar_type() != sin.scalar_type() ||
      (cos.scalar_type() != at::kFloat && cos.scalar_type() != x.scalar_type())) {
    return false;
  }
  if (x.dim() != 4 || out.sizes() != x.sizes() || x.size(3) % 2 != 0) return false;
  if (!is_strided_with_unit_last_stride(x) || !is_strided_with_unit_last_stride(out)) return false;
  return cos.sizes() == sin.sizes() && cos.strides() == sin.strides() &&
         is_strided_with_unit_last_stride(cos) && table_fits(cos, x);
}

}  // namespace ftbench::model
