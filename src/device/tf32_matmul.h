// TF32 tensor-core math for fp32 matmuls on CUDA (cuBLAS; on ROCm hipBLASLt also needs
// HIPBLASLT_ALLOW_TF32=1). LibTorch 2.9 deprecated setAllowTF32CuBLAS for
// setFloat32Precision("cuda", "matmul", ...); which call is used is decided at configure time
// (cmake/FtbenchTorchApi.cmake, FTBENCH_TF32_API_*). Process-wide state of LibTorch's global
// context: not thread-safe against matmuls running meanwhile.
#pragma once

namespace ftbench::device {

// Allows (true) or forbids (false, LibTorch's default) TF32 in fp32 matmuls on the GPU.
void set_tf32_matmul(bool allow);

// Whether TF32 matmuls are allowed now.
bool tf32_matmul_allowed();

// The LibTorch call set_tf32_matmul uses, for the gemm sweep's description of fp32 and tf32.
const char* tf32_matmul_call();

}  // namespace ftbench::device
