# Which compiler builds ftbench's own GPU kernels (model/torch/gpu_kernels.h,
# src/model/torch/cuda/*.cu): FTBENCH_GPU_KERNEL_LANGUAGE is CUDA in a CUDA build of LibTorch with
# nvcc, HIP in a ROCm build with CMake's HIP language (CMake >= 3.21, hipcc's clang), and empty
# otherwise (a CPU build, no such compiler, or -DFTBENCH_GPU_KERNELS=OFF), where
# src/model/torch/cuda/*_stub.cpp say so.
# Included at the top level, after FtbenchDependencies.cmake: enable_language() must be called
# in the folder above every target that compiles or links the language.
#
# Architectures: LibTorch's CMake files decide them. A CUDA LibTorch's Caffe2Config (its
# public/cuda.cmake) has already enabled CUDA, turns TORCH_CUDA_ARCH_LIST into -gencode flags in
# CMAKE_CUDA_FLAGS and sets CMAKE_CUDA_ARCHITECTURES to OFF (with a warning where it was set);
# scripts/device-build.sh sets TORCH_CUDA_ARCH_LIST to the visible GPU's. Only where those flags
# name no architecture does the kernel get CMAKE_CUDA_ARCHITECTURES, or 80;90 (A100, H100/H200;
# CUDA 13 builds nothing below 75). A ROCm LibTorch's LoadHIP.cmake enables HIP with its
# PYTORCH_ROCM_ARCH.
option(FTBENCH_GPU_KERNELS
       "Compile ftbench's own GPU kernels (model/torch/gpu_kernels.h) in a CUDA or ROCm build of LibTorch"
       ON)
set(FTBENCH_GPU_KERNEL_LANGUAGE "")
set(FTBENCH_GPU_KERNEL_CUDA_ARCHITECTURES "")
if(FTBENCH_WITH_TORCH AND FTBENCH_GPU_KERNELS)
  include(CheckLanguage)
  if(FTBENCH_TORCH_BACKEND STREQUAL "cuda")
    if(NOT CMAKE_CUDA_COMPILER)
      check_language(CUDA)
    endif()
    if(CMAKE_CUDA_COMPILER)
      enable_language(CUDA)
      set(FTBENCH_GPU_KERNEL_LANGUAGE CUDA)
      # LibTorch 2.14+ asks for C++20 (cxx_std_20 on its `torch` target, which CMake applies to
      # CUDA sources too), and CMake up to 3.25 knows no C++20 flag for nvcc: nvcc 12+ takes
      # -std=c++20, as newer CMake says.
      if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION
         AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
         AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
        set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
        set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      endif()
      # Without TORCH_CUDA_ARCH_LIST and without a GPU to ask, LibTorch's list ("Common") starts
      # at sm_50, which nvcc 13 no longer builds (nothing below sm_75): those go.
      if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 13.0)
        set(_ftbench_old_arch "-gencode[ =]arch=compute_([1-6][0-9]|7[0-4]),code=[^ ]+")
        string(REGEX MATCHALL "${_ftbench_old_arch}" _ftbench_dropped "${CMAKE_CUDA_FLAGS}")
        if(_ftbench_dropped)
          string(REGEX REPLACE "${_ftbench_old_arch}" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
          message(STATUS "ftbench: GPU kernels: nvcc ${CMAKE_CUDA_COMPILER_VERSION} builds nothing "
                         "below sm_75; dropped from LibTorch's CUDA flags: ${_ftbench_dropped}")
        endif()
      endif()
      if(NOT CMAKE_CUDA_FLAGS MATCHES "(-gencode|--generate-code|-arch[= ]|--gpu-architecture)")
        if(CMAKE_CUDA_ARCHITECTURES)
          set(FTBENCH_GPU_KERNEL_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
        else()
          set(FTBENCH_GPU_KERNEL_CUDA_ARCHITECTURES "80;90")
        endif()
      endif()
    endif()
  elseif(FTBENCH_TORCH_BACKEND STREQUAL "rocm")
    if(CMAKE_VERSION VERSION_LESS 3.21)
      message(STATUS "ftbench: GPU kernels: CMake ${CMAKE_VERSION} has no HIP language (3.21+)")
    else()
      if(NOT CMAKE_HIP_COMPILER)
        check_language(HIP)
      endif()
      if(CMAKE_HIP_COMPILER)
        enable_language(HIP)
        set(FTBENCH_GPU_KERNEL_LANGUAGE HIP)
      endif()
    endif()
  endif()
endif()
if(FTBENCH_GPU_KERNEL_LANGUAGE STREQUAL "CUDA")
  if(FTBENCH_GPU_KERNEL_CUDA_ARCHITECTURES)
    set(_ftbench_archs "CUDA_ARCHITECTURES ${FTBENCH_GPU_KERNEL_CUDA_ARCHITECTURES}")
  else()
    set(_ftbench_archs "LibTorch's CMAKE_CUDA_FLAGS (TORCH_CUDA_ARCH_LIST)")
  endif()
  message(STATUS "ftbench: GPU kernels: CUDA, ${CMAKE_CUDA_COMPILER} "
                 "${CMAKE_CUDA_COMPILER_VERSION}, architectures from ${_ftbench_archs}; used "
                 "only under FTBENCH_GPU_KERNELS=1")
elseif(FTBENCH_GPU_KERNEL_LANGUAGE STREQUAL "HIP")
  message(STATUS "ftbench: GPU kernels: HIP, ${CMAKE_HIP_COMPILER} (${CMAKE_HIP_ARCHITECTURES}); "
                 "used only under FTBENCH_GPU_KERNELS=1")
elseif(FTBENCH_WITH_TORCH)
  message(STATUS "ftbench: GPU kernels: not built (LibTorch ${FTBENCH_TORCH_BACKEND} build, "
                 "option FTBENCH_GPU_KERNELS ${FTBENCH_GPU_KERNELS}); ATen's operators serve")
endif()
