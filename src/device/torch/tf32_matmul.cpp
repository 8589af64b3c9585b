#include "device/tf32_matmul.h"

#include <ATen/Context.h>

#if defined(FTBENCH_TF32_API_STRING)
#include <string>
#endif

namespace ftbench::device {

#if defined(FTBENCH_TF32_API_ENUM)

void set_tf32_matmul(bool allow) {
  at::globalContext().setFloat32Precision(
      at::Float32Backend::CUDA, at::Float32Op::MATMUL,
      allow ? at::Float32Precision::TF32 : at::Float32Precision::IEEE);
}
bool tf32_matmul_allowed() {
  return at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) ==
         at::Float32Precision::TF32;
}
const char* tf32_matmul_call() {
  return "at::globalContext().setFloat32Precision(Float32Backend::CUDA, Float32Op::MATMUL, ...)";
}

#elif defined(FTBENCH_TF32_API_STRING)

void set_tf32_matmul(bool allow) {
  at::globalContext().setFloat32Precision("cuda", "matmul", allow ? "tf32" : "ieee");
}
bool tf32_matmul_allowed() {
  return std::string(at::globalContext().float32Precision("cuda", "matmul")) == "tf32";
}
const char* tf32_matmul_call() {
  return "at::globalContext().setFloat32Precision(\"cuda\", \"matmul\", ...)";
}

#else

void set_tf32_matmul(bool allow) { at::globalContext().setAllowTF32CuBLAS(allow); }
bool tf32_matmul_allowed() { return at::globalContext().allowTF32CuBLAS(); }
const char* tf32_matmul_call() { return "at::globalContext().setAllowTF32CuBLAS(...)"; }

#endif

}  // namespace ftbench::device
