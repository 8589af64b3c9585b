# What the found LibTorch offers, decided by its headers rather than by its version number where
# the two can disagree (vendor images ship 2.x.0a0 builds with APIs of the next release).
# Included by FtbenchDependencies.cmake after find_package(Torch); the C++ standard function is
# also included alone by tests/cmake/torch_api_test.cmake.
include_guard(GLOBAL)

# _ftbench_torch_version_defines(<header> <include-dirs> <depth> <major-var> <minor-var>):
# TORCH_VERSION_MAJOR/MINOR as <header> defines them, or as a header it includes does: from
# LibTorch 2.9 on, torch/version.h only includes the generated torch/headeronly/version.h. The
# includes are looked up in <include-dirs>, then beside <header>; <depth> bounds the chain.
function(_ftbench_torch_version_defines header include_dirs depth major_var minor_var)
  set(major "")
  set(minor "")
  file(STRINGS "${header}" lines
       REGEX "^[ \t]*#[ \t]*(define[ \t]+TORCH_VERSION_(MAJOR|MINOR)[ \t]|include[ \t<\"])")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*define[ \t]+TORCH_VERSION_MAJOR[ \t]+\\(?([0-9]+)")
      set(major ${CMAKE_MATCH_1})
    elseif(line MATCHES "#[ \t]*define[ \t]+TORCH_VERSION_MINOR[ \t]+\\(?([0-9]+)")
      set(minor ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if((major STREQUAL "" OR minor STREQUAL "") AND depth GREATER 0)
    get_filename_component(here "${header}" DIRECTORY)
    math(EXPR next "${depth} - 1")
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "#[ \t]*include[ \t]*[<\"]([^>\"]*version[^>\"]*)[>\"]")
        continue()
      endif()
      set(name "${CMAKE_MATCH_1}")
      foreach(dir IN LISTS include_dirs here)
        if(EXISTS "${dir}/${name}" AND NOT IS_DIRECTORY "${dir}/${name}")
          _ftbench_torch_version_defines("${dir}/${name}" "${include_dirs}" ${next} inc_major
                                         inc_minor)
          if(major STREQUAL "")
            set(major "${inc_major}")
          endif()
          if(minor STREQUAL "")
            set(minor "${inc_minor}")
          endif()
          break()
        endif()
      endforeach()
    endforeach()
  endif()
  set(${major_var} "${major}" PARENT_SCOPE)
  set(${minor_var} "${minor}" PARENT_SCOPE)
endfunction()

# ftbench_torch_cxx_standard(<torch/version.h> <out-var> [<include-dir>...]): the C++ standard the
# torch side is compiled with: 20 from LibTorch 2.14 on (its headers require C++20), else 17
# (1.13 needs 17; 2.x up to 2.13 builds with 17). Read from TORCH_VERSION_MAJOR/MINOR, which
# pre-release builds (2.14.0a0) define like the release, following the header's includes of a
# version header through <include-dir>s (default: TORCH_INCLUDE_DIRS).
function(ftbench_torch_cxx_standard version_header out_var)
  if(NOT EXISTS "${version_header}")
    message(FATAL_ERROR "ftbench: no ${version_header}")
  endif()
  set(include_dirs ${ARGN})
  if(NOT include_dirs)
    set(include_dirs ${TORCH_INCLUDE_DIRS})
  endif()
  _ftbench_torch_version_defines("${version_header}" "${include_dirs}" 3 major minor)
  if(major STREQUAL "" OR minor STREQUAL "")
    message(FATAL_ERROR "ftbench: no TORCH_VERSION_MAJOR/MINOR in ${version_header} nor in the "
                        "version headers it includes (searched: ${include_dirs})")
  endif()
  if(major GREATER 2 OR (major EQUAL 2 AND minor GREATER_EQUAL 14))
    set(${out_var} 20 PARENT_SCOPE)
  else()
    set(${out_var} 17 PARENT_SCOPE)
  endif()
endfunction()

# _ftbench_torch_compiles(<out-var> <source>): whether <source> compiles (no link) against the
# found LibTorch with the torch side's standard and definitions (FTBENCH_TORCH_DEFINITIONS).
function(_ftbench_torch_compiles out_var source)
  include(CheckCXXSourceCompiles)
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  set(CMAKE_CXX_STANDARD ${FTBENCH_TORCH_CXX_STANDARD})
  set(CMAKE_REQUIRED_QUIET ON)
  set(CMAKE_REQUIRED_FLAGS "${TORCH_CXX_FLAGS}")
  set(CMAKE_REQUIRED_INCLUDES ${TORCH_INCLUDE_DIRS} ${FTBENCH_TORCH_PROBE_INCLUDES})
  set(CMAKE_REQUIRED_DEFINITIONS ${FTBENCH_TORCH_PROBE_DEFINITIONS})
  check_cxx_source_compiles("${source}" ${out_var})
  set(${out_var} ${${out_var}} PARENT_SCOPE)
endfunction()

# ftbench_torch_allocator_api(<backend> <out-var>): how src/device/torch/allocator_stats.cpp reaches
# the caching allocator of a GPU build, as the name of its FTBENCH_ALLOCATOR_API_* macro:
#   DEVICE_ALLOCATOR  c10::getDeviceAllocator(kCUDA) (2.9+), no vendor headers; ROCm runs as the
#                     cuda device type
#   HIP_NAMESPACE     ROCm up to 2.10: c10/hip/HIPCachingAllocator.h, c10::hip::HIPCachingAllocator
#   HIP_HEADER_CUDA_NAMES  ROCm 2.11+ ("hipify v2"): that header with the c10::cuda names
#   CUDA_HEADER       CUDA: c10/cuda/CUDACachingAllocator.h
# The first that compiles wins; NONE for a CPU build.
function(ftbench_torch_allocator_api backend out_var)
  set(calls "(void)s.allocated_bytes[0].peak; (void)s.num_alloc_retries; (void)s.num_ooms;")
  _ftbench_torch_compiles(FTBENCH_HAVE_DEVICE_ALLOCATOR "
#include <c10/core/CachingDeviceAllocator.h>
int main() {
  c10::DeviceAllocator* a = c10::getDeviceAllocator(c10::DeviceType::CUDA);
  const auto s = a->getDeviceStats(c10::DeviceIndex{0});
  ${calls}
  a->resetPeakStats(c10::DeviceIndex{0});
  a->emptyCache();
}")
  # Probed on a CPU build too (its headers have it from 2.9): tests/CMakeLists.txt then compiles
  # that path with the ROCm definitions.
  set(FTBENCH_HAVE_DEVICE_ALLOCATOR ${FTBENCH_HAVE_DEVICE_ALLOCATOR} PARENT_SCOPE)
  if(backend STREQUAL "cpu")
    set(${out_var} NONE PARENT_SCOPE)
    return()
  endif()
  if(FTBENCH_HAVE_DEVICE_ALLOCATOR)
    set(${out_var} DEVICE_ALLOCATOR PARENT_SCOPE)
    return()
  endif()
  if(backend STREQUAL "rocm")
    foreach(candidate "HIP_NAMESPACE;c10::hip::HIPCachingAllocator"
                      "HIP_HEADER_CUDA_NAMES;c10::cuda::CUDACachingAllocator")
      list(GET candidate 0 name)
      list(GET candidate 1 namespace)
      _ftbench_torch_compiles(FTBENCH_HAVE_ALLOCATOR_${name} "
#include <c10/hip/HIPCachingAllocator.h>
int main() {
  const auto s = ${namespace}::getDeviceStats(c10::DeviceIndex{0});
  ${calls}
  ${namespace}::resetPeakStats(c10::DeviceIndex{0});
  ${namespace}::emptyCache();
}")
      if(FTBENCH_HAVE_ALLOCATOR_${name})
        set(${out_var} ${name} PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endif()
  _ftbench_torch_compiles(FTBENCH_HAVE_ALLOCATOR_CUDA_HEADER "
#include <c10/cuda/CUDACachingAllocator.h>
int main() {
  const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex{0});
  ${calls}
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::DeviceIndex{0});
  c10::cuda::CUDACachingAllocator::emptyCache();
}")
  if(FTBENCH_HAVE_ALLOCATOR_CUDA_HEADER)
    set(${out_var} CUDA_HEADER PARENT_SCOPE)
    return()
  endif()
  message(FATAL_ERROR "ftbench: no caching-allocator API of this ${backend} LibTorch compiles "
                      "(see CMakeFiles/CMakeConfigureLog.yaml for the FTBENCH_HAVE_* checks)")
endfunction()

# ftbench_torch_tf32_api(<out-var>): how src/device/torch/tf32_matmul.cpp turns TF32 matmuls on and off,
# as the name of its FTBENCH_TF32_API_* macro. aten/src/ATen/Context.h (pytorch/pytorch, read in
# its sources, not compiled here): 2.9 added setFloat32Precision(backend, op, precision) with
# strings ("cuda", "matmul", "tf32"/"ieee") and deprecated setAllowTF32CuBLAS; later releases take
# the enums at::Float32Backend/Float32Op/Float32Precision instead.
#   ENUM, STRING   those two forms;   ALLOW_TF32  setAllowTF32CuBLAS (1.13 to 2.8)
function(ftbench_torch_tf32_api out_var)
  _ftbench_torch_compiles(FTBENCH_HAVE_TF32_ENUM "
#include <ATen/Context.h>
int main() {
  at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL,
                                          at::Float32Precision::TF32);
  return at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) ==
         at::Float32Precision::IEEE;
}")
  if(FTBENCH_HAVE_TF32_ENUM)
    set(${out_var} ENUM PARENT_SCOPE)
    return()
  endif()
  _ftbench_torch_compiles(FTBENCH_HAVE_TF32_STRING "
#include <ATen/Context.h>
#include <string>
int main() {
  at::globalContext().setFloat32Precision(\"cuda\", \"matmul\", \"tf32\");
  return at::globalContext().float32Precision(\"cuda\", \"matmul\") == std::string(\"ieee\");
}")
  if(FTBENCH_HAVE_TF32_STRING)
    set(${out_var} STRING PARENT_SCOPE)
  else()
    set(${out_var} ALLOW_TF32 PARENT_SCOPE)
  endif()
endfunction()

# ftbench_torch_cpu_allocator_api(<out-var>): how src/device/torch/cpu_tensor_bytes.cpp derives
# from c10::Allocator, as the name of its FTBENCH_CPU_ALLOCATOR_API_* macro: COPY_DATA (2.x:
# allocate() not const, copy_data() pure virtual), CONST_ALLOCATE (1.13: allocate() const, no
# copy_data), or NONE (neither compiles: CPU runs report no tensor bytes).
function(ftbench_torch_cpu_allocator_api out_var)
  _ftbench_torch_compiles(FTBENCH_HAVE_ALLOCATOR_COPY_DATA "
#include <c10/core/Allocator.h>
struct A final : c10::Allocator {
  c10::DataPtr allocate(size_t) override { return {}; }
  void copy_data(void* d, const void* s, std::size_t n) const override { default_copy_data(d, s, n); }
};
int main() { A a; return a.raw_deleter() == nullptr ? 0 : 1; }")
  _ftbench_torch_compiles(FTBENCH_HAVE_ALLOCATOR_CONST_ALLOCATE "
#include <c10/core/Allocator.h>
struct A final : c10::Allocator {
  c10::DataPtr allocate(size_t) const override { return {}; }
};
int main() { A a; return a.raw_deleter() == nullptr ? 0 : 1; }")
  if(FTBENCH_HAVE_ALLOCATOR_COPY_DATA)
    set(${out_var} COPY_DATA PARENT_SCOPE)
  elseif(FTBENCH_HAVE_ALLOCATOR_CONST_ALLOCATE)
    set(${out_var} CONST_ALLOCATE PARENT_SCOPE)
  else()
    set(${out_var} NONE PARENT_SCOPE)
  endif()
endfunction()

# ftbench_torch_c10d_gloo(<out-var>): whether the found LibTorch has c10d's Gloo process group for
# src/train/dist/torch/communicator.cpp: its ProcessGroupGloo.hpp compiles with USE_C10D_GLOO (which
# LibTorch's torch_cpu target exports where it was built with Gloo) and the gloo headers, which
# neither Debian's libtorch-dev nor PyTorch's wheels ship (libgloo-dev does, from the source
# LibTorch links; FTBENCH_GLOO_INCLUDES where they are not the system's). Without it ftbench runs
# one process only and says so when launched as several.
function(ftbench_torch_c10d_gloo out_var)
  set(FTBENCH_TORCH_PROBE_DEFINITIONS ${FTBENCH_TORCH_PROBE_DEFINITIONS} -DUSE_C10D_GLOO)
  set(FTBENCH_TORCH_PROBE_INCLUDES ${FTBENCH_TORCH_PROBE_INCLUDES} ${FTBENCH_GLOO_INCLUDES})
  _ftbench_torch_compiles(FTBENCH_HAVE_C10D_GLOO_HEADERS "
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
int main() {
  auto o = c10d::ProcessGroupGloo::Options::create();
  o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(\"127.0.0.1\"));
  return 0;
}")
  set(${out_var} ${FTBENCH_HAVE_C10D_GLOO_HEADERS} PARENT_SCOPE)
endfunction()

# ftbench_torch_c10d_nccl(<out-var>): whether a CUDA build of LibTorch has c10d's NCCL group for
# src/train/dist/torch/communicator.cpp: its ProcessGroupNCCL.hpp compiles with USE_C10D_NCCL (which
# torch_cuda exports in 2.x) and nccl.h (the wheel's nvidia-nccl, Debian's libnccl-dev), the very
# header torch was built with (its Options hold an ncclConfig_t for some NCCL versions).
function(ftbench_torch_c10d_nccl out_var)
  set(FTBENCH_TORCH_PROBE_DEFINITIONS ${FTBENCH_TORCH_PROBE_DEFINITIONS} -DUSE_C10D_NCCL)
  _ftbench_torch_compiles(FTBENCH_HAVE_C10D_NCCL_HEADERS "
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
int main() {
  auto o = c10d::ProcessGroupNCCL::Options::create();
  o->timeout = std::chrono::milliseconds(1000);
  return 0;
}")
  set(${out_var} ${FTBENCH_HAVE_C10D_NCCL_HEADERS} PARENT_SCOPE)
endfunction()
